//! Cluster data in text output: the one place that decides how a value from the cluster
//! (a termination message, a pod name, an event's text) is made safe to print. A value may
//! not forge a row (line breaks), drive the terminal (C0/C1 controls, escape sequences) or
//! reverse a line (bidirectional overrides and isolates).

use std::borrow::Cow;

/// A character that changes how the text around it is laid out or shown: Unicode's
/// bidirectional formatting characters, and the line and paragraph separators.
fn is_layout(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
            | '\u{2028}' | '\u{2029}'
    )
}

/// Escapes every control character except line feeds and tabs, and every layout character,
/// as `\u{…}` (for a whole text whose line breaks are its own).
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let bad = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_layout(c);
    escape(text, bad)
}

fn escape(text: &str, bad: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.contains(&bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if bad(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` cut to at most `most` bytes at a character boundary, an ellipsis (within the
/// `most`) saying so: the one bound on a text kept or shown from the cluster.
pub fn clipped(text: &str, most: usize) -> Cow<'_, str> {
    if text.len() <= most {
        return Cow::Borrowed(text);
    }
    let end = floor_boundary(text, most.saturating_sub('…'.len_utf8()));
    Cow::Owned(format!("{}…", &text[..end]))
}

/// The largest character boundary of `text` at or before byte `at` (`str`'s own is newer
/// than this crate's Rust version).
pub fn floor_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// What a redacted value reads as (Spark's `Utils.REDACTION_REPLACEMENT_TEXT`).
pub const REDACTED: &str = "*********(redacted)";

/// Credentials that may turn up in a text from the cluster or an error message: bearer
/// tokens, JWTs, a `token`, `password` or `secret` field (JSON, YAML or `key=value`), basic
/// auth in a URL.
static CREDENTIAL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    #[allow(clippy::unwrap_used)] // a constant that compiles (tested)
    regex::Regex::new(concat!(
        r#"(?i)(bearer\s+)[^\s"',;]+"#,
        r#"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"#,
        r#"|("?(?:token|password|secret|clientKeyData|client-key-data)"?\s*[:=]\s*"?)[^\s"',}]+"#,
        r#"|(://[^/@\s:]+:)[^/@\s]+@"#,
    ))
    .unwrap()
});

/// Whether `text` holds anything [`credentials`] would redact.
pub fn has_credentials(text: &str) -> bool {
    CREDENTIAL.is_match(text)
}

/// `text` with anything that looks like a credential replaced by [`REDACTED`].
pub fn credentials(text: &str) -> String {
    CREDENTIAL
        .replace_all(text, |c: &regex::Captures<'_>| {
            let keep = c
                .get(1)
                .or_else(|| c.get(2))
                .or_else(|| c.get(3))
                .map_or("", |m| m.as_str());
            let at = if c.get(3).is_some() { "@" } else { "" };
            format!("{keep}{REDACTED}{at}")
        })
        .into_owned()
}

/// One value in a line of text output: its lines joined with " / " (blank ones dropped),
/// tabs as spaces, every other control and layout character escaped.
pub fn field(text: &str) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() || is_layout(c);
    if !text.contains(bad) {
        return Cow::Borrowed(text);
    }
    let joined: Vec<&str> = text
        .split(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    Cow::Owned(escape(&joined.join(" / ").replace('\t', " "), bad).into_owned())
}

/// A finding as one line of text output: `  [severity] code: summary`, the summary through
/// [`field`] (`status`, `explain` and its app block print findings alike).
pub fn finding_line(severity: &str, code: impl std::fmt::Display, summary: &str) -> String {
    format!("  [{severity}] {code}: {}", field(summary))
}

/// A `std` duration for people, the same way (request timeouts, poll intervals).
pub fn human_std_duration(d: std::time::Duration) -> String {
    human_duration(chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX))
}

/// A duration for people: `45s`, `3m20s`, `2h05m`, from two days `3d04h`. The one format
/// every output uses.
pub fn human_duration(d: chrono::Duration) -> String {
    let secs = d.num_seconds().max(0);
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        // Two days on, days (kubectl's AGE says `40d`): hours of hours mean nothing.
        3600..172_800 => format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60),
        _ => format!("{}d{:02}h", secs / 86_400, (secs % 86_400) / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clipped_text_stays_within_its_bound_at_a_character_boundary() {
        assert!(matches!(clipped("short", 5), Cow::Borrowed("short")));
        // 'é' is two bytes: a cut inside one goes before it, the ellipsis within the bound.
        let long = "é".repeat(10);
        let c = clipped(&long, 8);
        assert_eq!(c, "éé…");
        assert!(c.len() <= 8);
        assert_eq!(clipped("abcdef", 4), "a…");
        assert_eq!(floor_boundary("aé", 2), 1);
        assert_eq!(floor_boundary("aé", 9), 3);
    }

    #[test]
    fn a_value_cannot_forge_a_row_drive_the_terminal_or_reverse_a_line() {
        assert_eq!(field("OOM\n  3   failed   137"), "OOM / 3   failed   137");
        assert_eq!(field("a\r\nb\u{2028}c"), "a / b / c");
        assert_eq!(field("\u{1b}[2Jx"), "\\u{1b}[2Jx");
        assert_eq!(field("evil\u{202E}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(field("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(field("a\tb"), "a b");
        assert!(matches!(field("plain text"), Cow::Borrowed(_)));
        // A whole text keeps its own lines and tabs, never the rest.
        assert_eq!(
            escape_controls("a\n\tb\u{202E}\u{7}"),
            "a\n\tb\\u{202e}\\u{7}"
        );
    }
}
