//! The view in ASCII, for terminals that cannot show more: a locale that is not UTF-8
//! (`LANG=C`, as tmux decides: the first of `LC_ALL`, `LC_CTYPE`, `LANG` that is set) or
//! `TERM=dumb`. Each frame is drawn as usual, then every cell is mapped to ASCII in one
//! place: borders, the separators and marks the panes use, and cluster text alike (a
//! character with no ASCII look-alike becomes `?`, as many `?` as the columns it took).
//! `SPARK_TRIAGE_ASCII=1` forces it, `=0` turns it off.

use ratatui::buffer::Buffer;

/// Whether the terminal gets ASCII only, from the environment (`var` reads a variable).
pub fn ascii_wanted(var: impl Fn(&str) -> Option<String>) -> bool {
    match var("SPARK_TRIAGE_ASCII").as_deref().map(str::trim) {
        Some("1" | "true" | "yes") => return true,
        Some("0" | "false" | "no") => return false,
        _ => {}
    }
    if dumb_terminal(&var) {
        return true;
    }
    let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
        .into_iter()
        .find_map(|k| var(k).filter(|v| !v.is_empty()));
    match locale {
        // Nothing set is the C locale.
        None => true,
        Some(l) => {
            let l = l.to_ascii_lowercase();
            !(l.contains("utf-8") || l.contains("utf8"))
        }
    }
}

/// `TERM=dumb`: no colour either.
pub fn dumb_terminal(var: impl Fn(&str) -> Option<String>) -> bool {
    var("TERM").is_some_and(|t| t.trim() == "dumb")
}

/// The columns a symbol takes (at least one).
fn width(symbol: &str) -> usize {
    ratatui::text::Span::raw(symbol).width().max(1)
}

/// The ASCII look-alike of one drawn symbol.
fn ascii_of(symbol: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    if symbol.is_ascii() {
        return Cow::Borrowed(symbol);
    }
    let mut chars = symbol.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        // A grapheme of several characters (an accent, an emoji sequence).
        return Cow::Owned("?".repeat(width(symbol)));
    };
    let one = match c {
        '│' | '┃' | '║' | '▏' | '▕' | '╎' | '┆' => '|',
        '─' | '━' | '═' | '╌' | '┄' | '—' | '–' | '‐' | '▀' | '▄' => '-',
        '┌' | '┐' | '└' | '┘' | '├' | '┤' | '┬' | '┴' | '┼' | '╭' | '╮' | '╰' | '╯' | '┏' | '┓'
        | '┗' | '┛' | '╔' | '╗' | '╚' | '╝' => '+',
        '·' | '•' | '●' | '∙' => '.',
        '…' => '~',
        '↑' | '▲' | '^' => '^',
        '↓' | '▼' => 'v',
        '←' | '◀' => '<',
        '→' | '▶' | '▸' => '>',
        '×' | '✗' | '✕' => 'x',
        '✓' | '✔' => '+',
        '⚠' => '!',
        '⏸' => '=',
        '░' | '▒' => ':',
        '▓' | '█' => '#',
        '\u{a0}' => ' ',
        '‘' | '’' => '\'',
        '“' | '”' => '"',
        _ => return Cow::Owned("?".repeat(width(symbol))),
    };
    Cow::Owned(one.to_string())
}

/// Maps every cell of a drawn frame to ASCII (the widths stay as drawn).
pub fn to_ascii(buf: &mut Buffer) {
    for cell in &mut buf.content {
        let sym = cell.symbol();
        if !sym.is_ascii() {
            let a = ascii_of(sym).into_owned();
            cell.set_symbol(&a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_locale_and_the_terminal_decide_as_tmux_does() {
        assert!(!ascii_wanted(env(&[("LANG", "en_US.UTF-8")])));
        assert!(!ascii_wanted(env(&[("LC_ALL", "C.utf8"), ("LANG", "C")])));
        assert!(ascii_wanted(env(&[("LANG", "C")])));
        assert!(ascii_wanted(env(&[
            ("LC_ALL", "POSIX"),
            ("LANG", "en_US.UTF-8")
        ])));
        assert!(ascii_wanted(env(&[("LC_CTYPE", "de_DE.ISO-8859-1")])));
        assert!(ascii_wanted(env(&[])), "no locale is the C locale");
        assert!(ascii_wanted(env(&[
            ("LANG", "en_US.UTF-8"),
            ("TERM", "dumb")
        ])));
        assert!(ascii_wanted(env(&[
            ("SPARK_TRIAGE_ASCII", "1"),
            ("LANG", "en_US.UTF-8")
        ])));
        assert!(!ascii_wanted(env(&[("SPARK_TRIAGE_ASCII", "0")])));
        assert!(dumb_terminal(env(&[("TERM", "dumb")])));
        assert!(!dumb_terminal(env(&[("TERM", "xterm-256color")])));
    }

    #[test]
    fn every_cell_becomes_ascii_with_its_width() {
        use ratatui::layout::Rect;
        let mut b = Buffer::empty(Rect::new(0, 0, 12, 1));
        b.set_string(0, 0, "│a·b…日x⚠", ratatui::style::Style::default());
        to_ascii(&mut b);
        let line: String = b.content.iter().map(|c| c.symbol()).collect();
        assert!(line.is_ascii(), "{line}");
        // 日 took two columns: two `?`, and the cell after it (its trailing half) is kept.
        assert!(line.starts_with("|a.b~??"), "{line}");
    }
}
