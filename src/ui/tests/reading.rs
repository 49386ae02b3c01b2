//! How a reader moves through the screens: titles fitted at a word, the log from its newest
//! line (search, previous container, follow), local time and the `z` toggle, the timeline's
//! order.

use spark_triage_core::model::ExecutorState;

use super::{draw, etl_exec, session};
use crate::app::{App, Effect, LogView, Mode, Msg, Popup, update};
use crate::{app, effect, ui};

#[test]
fn fit_cuts_at_a_word_boundary() {
    assert_eq!(
        ui::fit("Container spark-kubernetes-executor was", 20),
        "Container…"
    );
    assert_eq!(ui::fit("short", 20), "short");
    assert_eq!(ui::fit("abcdefghij", 5), "abcd…");
}

/// No title is cut mid-word at a box's corner, in any stored frame (every pane and popup at
/// 80×24, 120×40 and 200×50): titles are fitted with `…` at a word boundary.
#[test]
fn no_title_is_cut_at_a_corner() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut cut = Vec::new();
    let mut frames = 0;
    for dir in ["src/ui/snapshots", "src/ui/tests/snapshots"] {
        let Ok(entries) = std::fs::read_dir(format!("{root}/{dir}")) else {
            continue;
        };
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            frames += 1;
            for row in text
                .lines()
                .filter_map(|l| l.strip_prefix('"')?.strip_suffix('"'))
            {
                let chars: Vec<char> = row.chars().collect();
                for (i, c) in chars.iter().enumerate() {
                    if matches!(c, '┐' | '┘') && i > 0 && chars[i - 1].is_alphanumeric() {
                        cut.push(format!("{}: {row}", entry.file_name().to_string_lossy()));
                    }
                }
            }
        }
    }
    assert!(frames > 50, "the frames were found ({frames})");
    assert!(
        cut.is_empty(),
        "titles cut at a corner:\n{}",
        cut.join("\n")
    );
}

/// A long log opens at its newest line; ↑ moves back from the end.
#[test]
fn a_long_log_opens_at_its_end() {
    let mut app = session();
    etl_exec(&mut app, 8);
    app.log_view = Some(LogView {
        pod: "etl-nightly-exec-8".into(),
        captured: true,
        lines: Ok((1..=300).map(|i| format!("log line {i}")).collect()),
        ..Default::default()
    });
    app.popup = Some(Popup::Log);
    app.scroll = 0;
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("log line 300") && !frame.contains("log line 250 "),
        "{frame}"
    );
    let key = |app: &mut App, c| {
        update(
            app,
            Msg::Key(crossterm::event::KeyEvent::new(
                c,
                crossterm::event::KeyModifiers::NONE,
            )),
        )
    };
    key(&mut app, crossterm::event::KeyCode::Up);
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("log line 299") && !frame.contains("log line 300"),
        "{frame}"
    );
}

/// Times are local unless --utc; `z` toggles; UTC keeps RFC 3339.
#[test]
fn times_follow_the_local_zone_and_z_toggles() {
    let mut app = session();
    etl_exec(&mut app, 7);
    app.popup = Some(Popup::Detail);
    app.local_offset = chrono::FixedOffset::east_opt(3600);
    let local = draw(&mut app, 200, 50);
    assert!(local.contains(" +01:00"), "{local}");
    update(
        &mut app,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('z'),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
    let utc = draw(&mut app, 200, 50);
    assert!(!utc.contains(" +01:00") && utc.contains("Z"), "{utc}");
}

/// The timeline lists the newest first and, within one instant, executors by id (1, 2, 10,
/// not 1, 10, 2 as pod names sort).
#[test]
fn the_timeline_is_newest_first_and_ordered_by_id_within_an_instant() {
    let mut app = session();
    etl_exec(&mut app, 7);
    app.popup = Some(Popup::Timeline);
    let frame = draw(&mut app, 200, 50);
    let rows: Vec<&str> = frame.lines().filter(|l| l.contains(" executor ")).collect();
    let times: Vec<&str> = rows
        .iter()
        .filter_map(|l| l.find("202").and_then(|i| l.get(i..i + 20)))
        .collect();
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted, "newest first:\n{frame}");
    // The first instant's executors, by id.
    let first = times.last().copied().unwrap_or_default();
    let ids: Vec<i64> = rows
        .iter()
        .filter(|l| l.contains(first))
        .filter_map(|l| {
            l.split(" executor ")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let mut by_id = ids.clone();
    by_id.sort_unstable();
    assert!(ids.len() > 2, "{frame}");
    assert_eq!(ids, by_id, "{frame}");
}

/// The log popup: `/` finds the newest match and `n` the next older one; `p` asks for the
/// previous container and `f` follows (fetched again on each tick).
#[test]
fn log_search_previous_and_follow() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = session();
    app.ctx.mode = Mode::Live;
    etl_exec(&mut app, 8);
    app.log_view = Some(LogView {
        pod: "etl-nightly-exec-8".into(),
        lines: Ok((1..=300)
            .map(|i| {
                if i % 100 == 0 {
                    format!("line {i} OutOfMemoryError")
                } else {
                    format!("line {i}")
                }
            })
            .collect()),
        namespace: "spark-jobs".into(),
        container: "spark-kubernetes-executor".into(),
        ..Default::default()
    });
    app.popup = Some(Popup::Log);
    let key =
        |app: &mut App, c: KeyCode| update(app, Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)));
    key(&mut app, KeyCode::Char('/'));
    for c in "OutOfMemory".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        app.scroll, 0,
        "the newest match (line 300) is the bottom line"
    );
    key(&mut app, KeyCode::Char('n'));
    assert_eq!(app.scroll, 100, "line 200 at the bottom");
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("line 200 OutOfMemoryError") && !frame.contains("line 201"),
        "{frame}"
    );
    assert!(frame.contains("/OutOfMemory"), "{frame}");
    let fx = key(&mut app, KeyCode::Char('p'));
    assert!(
        matches!(fx.as_slice(), [Effect::FetchLog { previous: true, .. }]),
        "{fx:?}"
    );
    key(&mut app, KeyCode::Char('f'));
    assert!(app.log_view.as_ref().unwrap().follow);
    let fx = update(&mut app, Msg::Tick(chrono::Utc::now()));
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::FetchLog {
                previous: false,
                ..
            }
        )),
        "{fx:?}"
    );
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.popup, None, "Esc still closes the log");
}

/// Long log lines wrap by default (`w` unwraps, then `→` scrolls sideways); the search
/// prompt and its count have a line of their own, whole at 80 columns; a gone pod's log
/// says so (no API error) and `f`/`p` refuse.
#[test]
fn a_log_wraps_searches_on_its_own_line_and_a_gone_pod_says_so() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = session();
    app.ctx.mode = Mode::Live;
    etl_exec(&mut app, 8);
    let long = format!("START {} END", "x".repeat(150));
    app.log_view = Some(LogView {
        pod: "etl-nightly-a83c0ccd92120d16-exec-8".into(),
        lines: Ok(vec![
            "first".into(),
            long,
            "java.lang.OutOfMemoryError".into(),
        ]),
        namespace: "spark-jobs".into(),
        container: "spark-kubernetes-executor".into(),
        ..Default::default()
    });
    app.popup = Some(Popup::Log);
    let key =
        |app: &mut App, c: KeyCode| update(app, Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)));
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("START") && frame.contains("END"),
        "wrapped:\n{frame}"
    );
    key(&mut app, KeyCode::Char('w'));
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("START") && !frame.contains("END"),
        "unwrapped:\n{frame}"
    );
    for _ in 0..15 {
        key(&mut app, KeyCode::Right);
    }
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("END") && !frame.contains("START"),
        "scrolled:\n{frame}"
    );
    key(&mut app, KeyCode::Char('/'));
    for c in "OutOfMemory".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    let frame = draw(&mut app, 80, 24);
    assert!(frame.contains("/OutOfMemory▏ 1 matching"), "{frame}");
    key(&mut app, KeyCode::Enter);
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("/OutOfMemory: 1 matching · n older"),
        "{frame}"
    );
    key(&mut app, KeyCode::Esc);
    // A gone pod with nothing captured: said, and nothing is fetched.
    let e = app.selected().cloned().expect("selected");
    assert!(e.gone.is_some(), "executor 8 is gone in this session");
    assert!(
        e.log_tail.is_none(),
        "nothing captured for it in this session"
    );
    let fx = update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Char('l'), KeyModifiers::NONE)),
    );
    // No fetch of its log (it cannot be had); its events, which outlive it, are read once —
    // except from a recording, which has what it has.
    assert!(
        fx.iter().all(|e| matches!(e, Effect::ReadEvents { .. })),
        "no fetch of a gone pod's log: {fx:?}"
    );
    let frame = draw(&mut app, 80, 24);
    assert!(
        frame.contains("no log was captured") && frame.contains("deleted at"),
        "when it went and that nothing was captured: {frame}"
    );
    key(&mut app, KeyCode::Char('f'));
    assert_eq!(
        app.notice.as_deref(),
        Some("the pod is gone: nothing more to fetch")
    );
    assert!(!app.log_view.as_ref().unwrap().follow);
}

/// The `/` filter finds what the screen shows: an id whole, and the words of the pending
/// reasons (the strip says "Insufficient memory").
#[test]
fn the_filter_takes_ids_whole_and_the_words_on_screen() {
    let mut app = super::session();
    super::select_app(&mut app, "etl-nightly");
    app.filter = "12".into();
    assert_eq!(
        app.visible().iter().map(|e| e.id).collect::<Vec<_>>(),
        [12],
        "an id, not every pod whose hash holds 12"
    );
    for word in ["Insufficient", "memory"] {
        app.filter = word.into();
        let shown: Vec<i64> = app.visible().iter().map(|e| e.id).collect();
        assert!(!shown.is_empty(), "{word} matches the pending executors");
        assert!(
            app.visible()
                .iter()
                .any(|e| e.state() == ExecutorState::Pending),
            "{word}: the pending ones among {shown:?}"
        );
        for e in app.visible() {
            let w = word.to_lowercase();
            assert!(
                e.findings()
                    .iter()
                    .any(|f| f.summary.to_lowercase().contains(&w) || f.code.as_str().contains(&w)),
                "executor {} has {word:?}",
                e.id
            );
        }
    }
    app.filter = "exec-1".into();
    assert!(
        app.visible().iter().any(|e| e.id == 1),
        "pod names still match"
    );
}

/// Replay's `:` takes `app NAME` as the live view's does, and a time as `--at` reads it; a
/// notice about the moment left does not stay across a seek.
#[test]
fn replays_prompt_takes_an_app_and_a_moment_as_at_does() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = super::replay_at(Some(30));
    let press = |app: &mut App, c: KeyCode| {
        app::update(app, Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)))
    };
    let typed = |app: &mut App, text: &str| {
        press(app, KeyCode::Char(':'));
        for c in text.chars() {
            press(app, KeyCode::Char(c));
        }
        press(app, KeyCode::Enter);
    };
    typed(&mut app, "app adhoc-analysis");
    assert_eq!(
        app.current_app().and_then(|a| a.app_name.as_deref()),
        Some("adhoc-analysis"),
        "{:?}",
        app.notice
    );
    // "-10s": ten seconds before the recording's end, as `--at -10s`.
    typed(&mut app, "-10s");
    let r = app.replay.as_ref().expect("a replay");
    assert_eq!(
        r.position,
        r.end - chrono::Duration::seconds(10),
        "{:?}",
        app.notice
    );
    // Past the last failure: said; a seek back clears it.
    press(&mut app, KeyCode::Char('f'));
    assert_eq!(app.notice.as_deref(), Some("no failure after this moment"));
    press(&mut app, KeyCode::Char('N'));
    assert_eq!(app.notice, None);
    // `:q` quits a replay as it does the live view.
    press(&mut app, KeyCode::Char(':'));
    press(&mut app, KeyCode::Char('q'));
    assert_eq!(press(&mut app, KeyCode::Enter), vec![effect::Effect::Quit]);
}
