//! The readers against event logs real Spark wrote (tests/fixtures/eventlog/codecs/, made by
//! scripts/eventlog-fixtures.py with pyspark 4.3.0: zstd-jni, lz4-java, xerial snappy and
//! ning lzf), whole, cut short and damaged.

use std::io::Read;

use super::Codec;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/eventlog/codecs"
);

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DIR}/{name}")).expect("fixture")
}

const ALL: [(&str, Codec); 5] = [
    ("codec-none", Codec::Plain),
    ("codec-zstd.zstd", Codec::Zstd),
    ("codec-lz4.lz4", Codec::Lz4),
    ("codec-snappy.snappy", Codec::Snappy),
    ("codec-lzf.lzf", Codec::Lzf),
];

/// Decodes as far as it goes: the text, and the error it stopped on.
fn decode(codec: Codec, bytes: &[u8]) -> (String, Option<std::io::Error>) {
    let mut r = codec.decoder(bytes).expect("decoder");
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&out).into_owned(), None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (String::from_utf8_lossy(&out).into_owned(), Some(e)),
        }
    }
}

#[test]
fn every_codec_spark_writes_is_told_by_its_bytes_and_read_whole() {
    let plain = String::from_utf8(fixture("codec-none")).expect("UTF-8");
    for (name, codec) in ALL {
        let bytes = fixture(name);
        assert_eq!(Codec::sniff(&bytes[..8]), codec, "{name}");
        let (text, err) = decode(codec, &bytes);
        assert!(err.is_none(), "{name}: {err:?}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.first().copied(),
            Some(r#"{"Event":"SparkListenerLogStart","Spark Version":"4.3.0"}"#),
            "{name}"
        );
        assert!(
            lines
                .last()
                .is_some_and(|l| l.contains("SparkListenerApplicationEnd")),
            "{name}: {:?}",
            lines.last()
        );
        for l in &lines {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("{name}: {e}: {l:.80}"));
        }
        // The same application in each: as many events.
        assert_eq!(lines.len(), plain.lines().count(), "{name}");
    }
}

#[test]
fn a_log_cut_short_reads_up_to_the_cut_and_says_so() {
    for (name, codec) in ALL {
        let bytes = fixture(name);
        let whole = decode(codec, &bytes).0;
        for cut in [bytes.len() / 3, bytes.len() * 2 / 3, bytes.len() - 1] {
            let (text, err) = decode(codec, &bytes[..cut]);
            assert!(
                whole.starts_with(&text),
                "{name} cut at {cut}: not a prefix of the whole"
            );
            if codec == Codec::Plain {
                assert!(err.is_none(), "{name}");
                continue;
            }
            let err = err.unwrap_or_else(|| panic!("{name} cut at {cut}: no error"));
            if codec != Codec::Zstd {
                assert_eq!(
                    err.kind(),
                    std::io::ErrorKind::UnexpectedEof,
                    "{name}: {err}"
                );
                assert!(err.to_string().contains("cut short"), "{name}: {err}");
            }
        }
    }
}

#[test]
fn damaged_bytes_are_an_error_never_a_panic_or_a_huge_allocation() {
    let mut rng = fastrand::Rng::with_seed(7);
    for (name, codec) in ALL {
        let bytes = fixture(name);
        for _ in 0..200 {
            let mut bad = bytes.clone();
            for _ in 0..rng.usize(1..8) {
                let i = rng.usize(..bad.len());
                bad[i] = rng.u8(..);
            }
            let _ = decode(codec, &bad);
        }
    }
    // A block that claims more than any block Spark writes.
    let mut lz4 = b"LZ4Block\x20".to_vec();
    lz4.extend_from_slice(&i32::MAX.to_le_bytes());
    lz4.extend_from_slice(&i32::MAX.to_le_bytes());
    lz4.extend_from_slice(&[0; 4]);
    let (_, err) = decode(Codec::Lz4, &lz4);
    assert!(err.is_some_and(|e| e.to_string().contains("damaged")));
    // A checksum that does not match its block.
    let mut bytes = fixture("codec-lz4.lz4");
    bytes[17] ^= 1;
    let (text, err) = decode(Codec::Lz4, &bytes);
    assert!(text.is_empty());
    assert!(err.is_some_and(|e| e.to_string().contains("checksum")));
}
