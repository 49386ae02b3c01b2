//! Colours and letters per state: the map reads without colour too (each cell has a letter).
//!
//! Three themes: `dark` (the default: no colour is the background of a dark terminal, so
//! dead executors and hints are never dark grey), `light` (no yellow or light grey on
//! white), and `mono` (no colour at all, for `NO_COLOR` and monochrome terminals: letters,
//! bold, underline and reverse carry everything). `render` sets the app's theme for the
//! frame it draws; the style functions read it.

use std::cell::Cell;

use ratatui::style::{Color, Modifier, Style};

pub use crate::app::Theme;
use crate::store::ExecutorRecord;
use spark_triage_core::{diagnose::Severity, model::ExecutorState};

thread_local! {
    static CURRENT: Cell<Theme> = const { Cell::new(Theme::Dark) };
}

/// Draws with this theme from now on (on this thread).
pub fn set(t: Theme) {
    CURRENT.with(|c| c.set(t));
}

fn current() -> Theme {
    CURRENT.with(Cell::get)
}

/// A foreground colour, or nothing in `mono`.
fn fg(dark: Color, light: Color) -> Style {
    match current() {
        Theme::Dark => Style::default().fg(dark),
        Theme::Light => Style::default().fg(light),
        Theme::Mono => Style::default(),
    }
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// The letter and colour of an executor in the state map: the letter is the verdict's
/// state, the colour its severity for ended executors, so a death looks the same whether it
/// was watched or rebuilt from the driver's reason.
pub fn cell(e: &ExecutorRecord) -> (char, Style) {
    if e.is_missing() {
        return ('M', missing());
    }
    let state = e.state();
    let letter = match state {
        ExecutorState::Running => 'R',
        ExecutorState::Pending => 'P',
        ExecutorState::Succeeded => 'S',
        ExecutorState::Failed => 'F',
        ExecutorState::Deleted => 'D',
        ExecutorState::Terminating => 'T',
        ExecutorState::Unknown => 'U',
    };
    let live = matches!(state, ExecutorState::Running | ExecutorState::Pending);
    let style = match e.verdict.severity() {
        Some(Severity::Error) if !live || state == ExecutorState::Running => {
            severity(Severity::Error)
        }
        Some(Severity::Warn) if !live => severity(Severity::Warn).add_modifier(Modifier::BOLD),
        _ if state == ExecutorState::Failed => severity(Severity::Error),
        _ => state_style(state),
    };
    (letter, style)
}

pub fn state_style(s: ExecutorState) -> Style {
    match s {
        ExecutorState::Running => fg(Color::Green, Color::Green),
        ExecutorState::Pending => fg(Color::Yellow, Color::Rgb(0x9a, 0x67, 0x00)),
        ExecutorState::Succeeded => fg(Color::LightBlue, Color::Blue),
        ExecutorState::Failed => fg(Color::LightRed, Color::Red).add_modifier(Modifier::BOLD),
        // Ended without blame (Spark deleted a finished executor): readable, not loud.
        ExecutorState::Deleted => fg(Color::Gray, Color::Rgb(0x55, 0x55, 0x55)),
        ExecutorState::Terminating => fg(Color::Cyan, Color::Rgb(0x00, 0x6f, 0x7a)),
        ExecutorState::Unknown => fg(Color::Magenta, Color::Magenta),
    }
}

pub fn severity(s: Severity) -> Style {
    match s {
        Severity::Error => fg(Color::LightRed, Color::Red).add_modifier(Modifier::BOLD),
        Severity::Warn => match current() {
            Theme::Mono => Style::default().add_modifier(Modifier::UNDERLINED),
            _ => fg(Color::Yellow, Color::Rgb(0x9a, 0x67, 0x00)),
        },
        Severity::Info => fg(Color::Gray, Color::Rgb(0x55, 0x55, 0x55)),
    }
}

/// A missing executor (vanished with no deletion seen).
pub fn missing() -> Style {
    fg(Color::LightMagenta, Color::Magenta).add_modifier(Modifier::BOLD)
}

/// All is well.
pub fn ok() -> Style {
    fg(Color::Green, Color::Green)
}

pub fn title() -> Style {
    bold()
}

pub fn focused_border() -> Style {
    match current() {
        Theme::Mono => bold(),
        _ => fg(Color::Cyan, Color::Blue),
    }
}

pub fn selected() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

/// Secondary text (hints, timestamps, pod names): quieter than the text, still readable on
/// the theme's background.
pub fn dim() -> Style {
    fg(Color::Gray, Color::Rgb(0x55, 0x55, 0x55))
}

/// A label on a coloured background (the mode badge, a replay position): reversed in `mono`.
pub fn badge(bg: Color) -> Style {
    match current() {
        Theme::Mono => Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        _ => Style::default().fg(Color::Black).bg(bg),
    }
}

/// Something that needs attention now (STALE, a force kill): black on red, reversed in
/// `mono`.
pub fn alarm() -> Style {
    badge(Color::Red).add_modifier(Modifier::BOLD)
}
