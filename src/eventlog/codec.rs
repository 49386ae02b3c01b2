//! The codecs Spark writes event logs with (`spark.eventLog.compression.codec`), told by
//! their first bytes, never by the file's name: none, zstd (standard frames, one per flush),
//! lz4 (lz4-java's `LZ4BlockOutputStream`, not the LZ4 frame format), snappy (xerial's
//! `SnappyOutputStream`, not the snappy framing format) and lzf (ning's `ZV` chunks).
//!
//! The block formats are read here over maintained crates' raw block decoders (`lz4_flex`,
//! `snap::raw`, `lzf-rust`, `twox-hash` for lz4-java's checksum): no crate reads Java's
//! framings except ones that pin old versions of those. A log that is still being written
//! (`.inprogress`, or a driver that crashed) ends mid-block: that is a cut, said as such,
//! and everything before it is read.

use std::io::{self, Read};

/// A codec Spark writes event logs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Plain,
    Zstd,
    Lz4,
    Snappy,
    Lzf,
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
const LZ4_MAGIC: &[u8; 8] = b"LZ4Block";
const SNAPPY_MAGIC: &[u8; 8] = b"\x82SNAPPY\0";
/// The most a block may claim to hold: lz4-java's largest block is 32 MiB, xerial's and
/// ning's are smaller. A length past it is damage, never an allocation.
const MAX_BLOCK: usize = 32 << 20;

impl Codec {
    /// The codec of a stream that starts with `head` (at least 8 bytes when there are).
    pub fn sniff(head: &[u8]) -> Self {
        if head.starts_with(&ZSTD_MAGIC) {
            Self::Zstd
        } else if head.starts_with(LZ4_MAGIC) {
            Self::Lz4
        } else if head.starts_with(SNAPPY_MAGIC) {
            Self::Snappy
        } else if head.len() >= 3 && head[..2] == *b"ZV" && head[2] <= 1 {
            Self::Lzf
        } else {
            Self::Plain
        }
    }

    /// Spark's short name for it (`spark.io.compression.codec`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plain => "none",
            Self::Zstd => "zstd",
            Self::Lz4 => "lz4",
            Self::Snappy => "snappy",
            Self::Lzf => "lzf",
        }
    }

    /// The decompressed bytes of `input`.
    pub fn decoder<'a>(self, input: impl Read + 'a) -> io::Result<Box<dyn Read + 'a>> {
        Ok(match self {
            Self::Plain => Box::new(input),
            Self::Zstd => Box::new(zstd::stream::read::Decoder::new(input)?),
            Self::Lz4 => Box::new(Blocks::new(input, lz4_block)),
            Self::Snappy => Box::new(Blocks::new(input, snappy_block)),
            Self::Lzf => Box::new(Blocks::new(input, lzf_block)),
        })
    }
}

/// A stream of blocks, each decoded whole by `next` into the buffer handed to it; `Ok(false)`
/// is the clean end of the stream.
struct Blocks<R, F> {
    input: R,
    next: F,
    block: Vec<u8>,
    pos: usize,
    done: bool,
}

impl<R: Read, F: FnMut(&mut R, &mut Vec<u8>) -> io::Result<bool>> Blocks<R, F> {
    fn new(input: R, next: F) -> Self {
        Self {
            input,
            next,
            block: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl<R: Read, F: FnMut(&mut R, &mut Vec<u8>) -> io::Result<bool>> Read for Blocks<R, F> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.block.len() {
            if self.done {
                return Ok(0);
            }
            self.block.clear();
            self.pos = 0;
            if !(self.next)(&mut self.input, &mut self.block)? {
                self.done = true;
            }
        }
        let n = out.len().min(self.block.len() - self.pos);
        out[..n].copy_from_slice(&self.block[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn damaged(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn cut(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the {what} stream is cut short (a log still being written, or its writer died)"),
    )
}

/// Fills `buf` from `r`: `Ok(false)` when the stream ended before its first byte, a cut
/// when it ended inside.
fn fill(r: &mut impl Read, buf: &mut [u8], what: &str) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(cut(what)),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// `n` bytes of a block's payload (its length read from the header, bounded).
fn payload(r: &mut impl Read, n: usize, what: &str) -> io::Result<Vec<u8>> {
    if n > MAX_BLOCK {
        return Err(damaged(format!("{what} block of {n} bytes: damaged")));
    }
    let mut buf = vec![0; n];
    if n > 0 && !fill(r, &mut buf, what)? {
        return Err(cut(what));
    }
    Ok(buf)
}

/// lz4-java's seed for the block checksum (`LZ4BlockOutputStream.DEFAULT_SEED`).
const LZ4_SEED: u32 = 0x9747_b28c;

/// One block of lz4-java's `LZ4BlockOutputStream`: `LZ4Block`, a token (method | level),
/// compressed and original lengths and the masked xxhash32 of the original, little-endian;
/// an all-zero block ends one stream (another may follow: Spark reads on).
fn lz4_block(r: &mut impl Read, out: &mut Vec<u8>) -> io::Result<bool> {
    let mut head = [0u8; 21];
    if !fill(r, &mut head, "lz4")? {
        return Ok(false);
    }
    if &head[..8] != LZ4_MAGIC {
        return Err(damaged(
            "lz4 stream: a block without its LZ4Block magic".into(),
        ));
    }
    let int = |i: usize| i32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    let (token, clen, olen, check) = (head[8], int(9), int(13), int(17));
    let (Ok(clen), Ok(olen)) = (usize::try_from(clen), usize::try_from(olen)) else {
        return Err(damaged("lz4 stream: a negative block length".into()));
    };
    if olen > MAX_BLOCK || clen > MAX_BLOCK {
        return Err(damaged(format!("lz4 block of {olen} bytes: damaged")));
    }
    let data = payload(r, clen, "lz4")?;
    match token & 0xf0 {
        0x10 if clen == olen => out.extend_from_slice(&data),
        0x20 => {
            out.resize(olen, 0);
            let n = lz4_flex::block::decompress_into(&data, out)
                .map_err(|e| damaged(format!("lz4 block: {e}")))?;
            if n != olen {
                return Err(damaged(format!("lz4 block: {n} bytes, not {olen}")));
            }
        }
        _ => return Err(damaged(format!("lz4 block: unknown method {token:#04x}"))),
    }
    if olen > 0 {
        let sum = twox_hash::XxHash32::oneshot(LZ4_SEED, out) & 0x0fff_ffff;
        if sum != check as u32 {
            return Err(damaged("lz4 block: checksum mismatch".into()));
        }
    }
    Ok(true)
}

/// One block of xerial's `SnappyOutputStream`: a big-endian length and a raw snappy
/// block. The 16-byte stream header (`\x82SNAPPY\0`, version, compatible version) may come
/// again where a length would (concatenated streams).
fn snappy_block(r: &mut impl Read, out: &mut Vec<u8>) -> io::Result<bool> {
    let mut len = [0u8; 4];
    if !fill(r, &mut len, "snappy")? {
        return Ok(false);
    }
    if len == SNAPPY_MAGIC[..4] {
        let mut rest = [0u8; 12];
        if !fill(r, &mut rest, "snappy")? || rest[..4] != SNAPPY_MAGIC[4..] {
            return Err(damaged("snappy stream: a damaged header".into()));
        }
        return Ok(true);
    }
    let n = u32::from_be_bytes(len) as usize;
    let data = payload(r, n, "snappy")?;
    let size =
        snap::raw::decompress_len(&data).map_err(|e| damaged(format!("snappy block: {e}")))?;
    if size > MAX_BLOCK {
        return Err(damaged(format!("snappy block of {size} bytes: damaged")));
    }
    out.resize(size, 0);
    snap::raw::Decoder::new()
        .decompress(&data, out)
        .map_err(|e| damaged(format!("snappy block: {e}")))?;
    Ok(true)
}

/// One chunk of ning's LZF stream: `ZV`, then 0 and a length and the bytes as they are, or
/// 1, the compressed and the original length and an LZF block (all big-endian u16).
fn lzf_block(r: &mut impl Read, out: &mut Vec<u8>) -> io::Result<bool> {
    let mut head = [0u8; 5];
    if !fill(r, &mut head, "lzf")? {
        return Ok(false);
    }
    if head[..2] != *b"ZV" {
        return Err(damaged("lzf stream: a chunk without its ZV magic".into()));
    }
    let len = usize::from(u16::from_be_bytes([head[3], head[4]]));
    match head[2] {
        0 => out.extend_from_slice(&payload(r, len, "lzf")?),
        1 => {
            let mut olen = [0u8; 2];
            if !fill(r, &mut olen, "lzf")? {
                return Err(cut("lzf"));
            }
            let olen = usize::from(u16::from_be_bytes(olen));
            let data = payload(r, len, "lzf")?;
            out.resize(olen, 0);
            let n = lzf_rust::decompress(&data, out)
                .map_err(|e| damaged(format!("lzf chunk: {e:?}")))?;
            if n != olen {
                return Err(damaged(format!("lzf chunk: {n} bytes, not {olen}")));
            }
        }
        t => return Err(damaged(format!("lzf chunk: unknown type {t}"))),
    }
    Ok(true)
}

#[cfg(test)]
mod tests;
