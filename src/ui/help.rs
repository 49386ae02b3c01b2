//! The help popup, generated from the keymap: sized to its content (wrapped, never cut at a
//! border) and scrolled with the arrows when the screen is smaller. A replay lists the
//! replay's keys and leaves out the actions a read-only recording cannot take.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use spark_triage_core::diagnose::Severity;

use super::{centered, theme};
use crate::app::App;
use crate::app::keymap::Action;

/// Replay's own keys (handled before the keymap while replaying).
const REPLAY_KEYS: &[(&str, &str)] = &[
    ("Space", "play / pause"),
    ("+ -", "faster / slower"),
    ("n N", "next / previous executor change"),
    ("f F", "next / previous failure (selects what failed)"),
    (
        ":",
        "go to a time (as --at: HH:MM:SS, RFC 3339, 90s after the start, -2m before the end), or :app NAME",
    ),
];

/// The log popup's own keys (handled before the keymap while it is open).
const LOG_KEYS: &[(&str, &str)] = &[
    ("↑↓ g G", "scroll, oldest, newest line"),
    ("/ n", "search (Enter), next older match"),
    (
        "w",
        "wrap long lines or not (unwrapped: ← → scroll sideways)",
    ),
    ("p", "the previous container's log"),
    ("f", "follow (fetched again every second)"),
];

/// The prompts' editing (`/`, `:`), as readline's.
const PROMPT_KEYS: &[(&str, &str)] = &[
    ("←→ ^A ^E", "a character; the line's start, end (Home, End)"),
    ("Alt-B/F", "a word back, forward (Ctrl-← →)"),
    ("^W ^U ^K", "cut the word before, to the start, to the end"),
    (
        "Tab ↑↓",
        "complete (commands, contexts, namespaces, apps); history",
    ),
];

const LEGEND: &str = "Map letters: R running, P pending, F failed, S succeeded, D deleted, \
    T terminating, U unknown, M missing. Marks: * marked, ! pod and driver disagree, h held.";

fn lines(app: &App) -> Vec<Line<'static>> {
    let replay = app.replay.is_some();
    let row = |label: &str, help: &str| {
        Line::from(vec![
            Span::styled(format!(" {label:<9}"), theme::title()),
            Span::raw(help.to_owned()),
        ])
    };
    let mut out = Vec::new();
    // A failing source's whole error (the header has its last clause).
    let bad = super::status_bar::troubles(app);
    if !bad.is_empty() {
        out.push(Line::styled(" Sources failing", theme::title()));
        for (k, what, err) in bad {
            let text = match err {
                Some(e) => format!(" {k}: {what}: {e}"),
                None => format!(" {k}: {what}"),
            };
            out.push(Line::styled(text, app.theme.severity(Severity::Error)));
        }
        out.push(Line::raw(""));
    }
    if replay {
        out.push(Line::styled(" Replay", theme::title()));
        out.extend(REPLAY_KEYS.iter().map(|(k, h)| row(k, h)));
        out.push(Line::raw(""));
        out.push(Line::styled(" Everywhere", theme::title()));
    }
    out.extend(
        app.keymap
            .entries()
            .iter()
            .filter(|e| {
                !(replay
                    && matches!(
                        e.action(),
                        Action::Mark | Action::Kill | Action::Hold | Action::Command
                    ))
            })
            .map(|e| row(&e.label, e.binding.help)),
    );
    out.push(Line::raw(""));
    out.push(Line::styled(" In a prompt (/ and :)", theme::title()));
    out.extend(PROMPT_KEYS.iter().map(|(k, h)| row(k, h)));
    out.push(Line::raw(""));
    out.push(Line::styled(" In the log popup", theme::title()));
    out.extend(LOG_KEYS.iter().map(|(k, h)| row(k, h)));
    out.push(Line::raw(""));
    out.push(Line::styled(format!(" {LEGEND}"), app.theme.dim()));
    out
}

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    // Between the header and the footer: the context, namespace and keys stay in view.
    let area = Rect {
        y: area.y + 1.min(area.height),
        height: area.height.saturating_sub(2),
        ..area
    };
    let lines = lines(app);
    let widest = lines.iter().map(Line::width).max().unwrap_or(0).min(100) as u16;
    let w = (widest + 3).min(area.width.saturating_sub(2));
    let inner_w = usize::from(w.saturating_sub(2)).max(1);
    // Wrapped height: each line takes ceil(width / inner) rows.
    let rows: usize = lines
        .iter()
        .map(|l| l.width().div_ceil(inner_w).max(1))
        .sum();
    let h = (rows as u16 + 2).min(area.height);
    let r = centered(area, w, h);
    if r.width < 3 || r.height < 3 {
        return;
    }
    let more = rows > usize::from(r.height.saturating_sub(2));
    let title = if more {
        " Help · ↑↓ scroll · Esc close "
    } else {
        " Help · Esc close "
    };
    super::scrolled_popup(f, r, title, lines, app);
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use crate::app::keymap::{Action, Keymap, Keys};
    use crate::app::{App, Context, Mode, Msg, Popup, update};
    use crate::settings::ReadOnly;
    use crate::ui;

    /// The configuration file's `[keys]` reach the help, the footer and the dispatch alike.
    #[test]
    fn rebound_keys_show_in_the_help_and_the_footer_and_work() {
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let mut app = App::new(Context {
            context: "c".into(),
            scope: "s".into(),
            readonly: ReadOnly::Off,
            mode: Mode::Live,
        });
        let overrides = [
            (Action::Kill, Keys(vec![KeyCode::Char('X')])),
            (Action::Help, Keys(vec![KeyCode::F(1)])),
        ]
        .into();
        app.keymap = Keymap::with(&overrides).expect("no clash");
        update(&mut app, Msg::Resize(200, 50));
        update(
            &mut app,
            Msg::Key(KeyEvent::new(KeyCode::F(1), KeyModifiers::NONE)),
        );
        assert_eq!(app.popup, Some(Popup::Help), "F1 opens the help");
        let mut t = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
        t.draw(|f| ui::render(&app, f)).expect("draw");
        let screen = format!("{}", t.backend());
        assert!(screen.contains(" X        kill the marked"), "{screen}");
        assert!(screen.contains(" F1       this help"), "{screen}");
        assert!(!screen.contains(" K        kill"), "{screen}");
        let footer = screen.lines().last().unwrap_or_default();
        assert!(
            footer.contains("X kill") && footer.contains("F1 "),
            "{footer}"
        );
    }
}
