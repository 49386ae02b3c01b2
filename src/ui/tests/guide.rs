//! The text screenshots of docs/guide.md (and the README's, the top of the first one),
//! rendered here from the recorded session (tests/fixtures/mixed-session.ndjson), so the docs
//! show the screens the tool draws today. Each sits between `<!-- screen:NAME -->` and
//! `<!-- /screen -->`; a screen that differs fails the test, and
//! `UPDATE_GUIDE=1 cargo test --lib guide` rewrites them.

use super::{draw, etl_exec, session};
use crate::app::{App, Popup, View};

const GUIDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide.md");
const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
/// The README shows the first lines of the first screen.
const README_LINES: usize = 9;

/// A screen: its name, how to get there, width and height.
type Screen = (&'static str, fn(&mut App), u16, u16);

/// The screens.
fn screens() -> Vec<Screen> {
    vec![
        ("first-look", |_| {}, 100, 30),
        (
            "detail",
            |a| {
                etl_exec(a, 7);
                a.popup = Some(Popup::Detail);
            },
            100,
            30,
        ),
        (
            "table",
            |a| {
                etl_exec(a, 7);
                a.view = View::Table;
            },
            100,
            30,
        ),
        (
            "timeline",
            |a| {
                etl_exec(a, 7);
                a.popup = Some(Popup::Timeline);
            },
            100,
            30,
        ),
    ]
}

/// The frame as plain lines (the test backend quotes each line).
fn text(frame: &str) -> String {
    frame
        .lines()
        .map(|l| {
            l.strip_prefix('"')
                .and_then(|l| l.strip_suffix('"'))
                .unwrap_or(l)
        })
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

/// Puts each (name, screen) between its markers in `doc`; the names that changed.
fn place(doc: &mut String, path: &str, screens: &[(&str, String)]) -> Vec<String> {
    let mut stale = Vec::new();
    for (name, screen) in screens {
        let open = format!("<!-- screen:{name} -->\n");
        let close = "<!-- /screen -->";
        let start = doc
            .find(&open)
            .unwrap_or_else(|| panic!("{path} has no {open:?}"))
            + open.len();
        let end = start + doc[start..].find(close).expect("a closing marker");
        let want = format!("```text\n{screen}```\n");
        if doc[start..end] != want {
            stale.push(format!("{path}: {name}"));
            doc.replace_range(start..end, &want);
        }
    }
    stale
}

#[test]
fn the_guide_shows_the_screens_the_tool_draws() {
    let screens: Vec<(&str, String)> = screens()
        .into_iter()
        .map(|(name, setup, w, h)| {
            let mut app = session();
            setup(&mut app);
            (name, text(&draw(&mut app, w, h)))
        })
        .collect();
    let top: String = screens[0]
        .1
        .lines()
        .take(README_LINES)
        .map(|l| format!("{l}\n"))
        .collect();
    let mut guide = std::fs::read_to_string(GUIDE).expect("docs/guide.md");
    let mut readme = std::fs::read_to_string(README).expect("README.md");
    let mut stale = place(&mut guide, "docs/guide.md", &screens);
    stale.extend(place(&mut readme, "README.md", &[("first-look", top)]));
    if stale.is_empty() {
        return;
    }
    if std::env::var("UPDATE_GUIDE").as_deref() == Ok("1") {
        std::fs::write(GUIDE, guide).expect("write docs/guide.md");
        std::fs::write(README, readme).expect("write README.md");
        return;
    }
    panic!(
        "screens differ from what the tool draws: {stale:?}; \
         UPDATE_GUIDE=1 cargo test --lib guide rewrites them"
    );
}
