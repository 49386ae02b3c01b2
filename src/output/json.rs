//! JSON to stdout, streamed: written as it is serialized (a 10,000-executor `status` is tens
//! of megabytes of text that is never held whole), and safe for a terminal: serde_json
//! escapes the controls below 0x20 but writes DEL and the C1 range (which some terminals
//! read as escape sequences) raw; here they become JSON `\u` escapes, so the output is
//! still valid JSON and cluster data cannot drive the terminal.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

use crate::failure::Failure;

/// `value` as pretty JSON and a newline on stdout; a closed pipe is not an error.
pub(crate) fn write<T: Serialize>(value: &T) -> Result<(), Failure> {
    let out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    match write_to(out, value) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Failure::Runtime(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

fn write_to<W: Write, T: Serialize>(mut out: W, value: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Safe(PrettyFormatter::new()));
    value.serialize(&mut ser).map_err(io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// A character serde_json leaves raw that a terminal may act on.
fn unsafe_char(c: char) -> bool {
    c.is_control() && !matches!(c, '\n' | '\t' | '\r') && c >= '\u{7f}'
}

/// The pretty formatter, with string fragments checked for `unsafe_char`s.
struct Safe<'a>(PrettyFormatter<'a>);

impl Formatter for Safe<'_> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some(i) = rest.find(unsafe_char) {
            writer.write_all(&rest.as_bytes()[..i])?;
            let c = rest[i..].chars().next().unwrap_or_default();
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[i + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(v: &T) -> String {
        let mut out = Vec::new();
        write_to(&mut out, v).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn pretty_as_serde_json_and_a_newline() {
        let v = serde_json::json!({"a": [1, {"b": "c"}], "d": "é\n"});
        assert_eq!(
            json(&v),
            serde_json::to_string_pretty(&v).expect("json") + "\n"
        );
    }

    #[test]
    fn every_terminal_control_is_a_json_escape_and_the_json_stays_valid() {
        let text = "a\u{1b}]0;pwned\u{7}b\u{9b}2Jc\u{7f}d\u{85}e";
        let out = json(&serde_json::json!({ "message": text }));
        assert!(
            !out.chars().any(|c| c.is_control() && c != '\n' && c != ' '),
            "{out:?}"
        );
        assert!(out.contains("\\u009b") && out.contains("\\u007f") && out.contains("\\u001b"));
        let back: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(back["message"], text);
    }
}
