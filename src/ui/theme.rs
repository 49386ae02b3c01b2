//! Colours and letters per state: the map reads without colour too (each cell has a letter).
//!
//! Three themes: `dark` (the default: no colour is the background of a dark terminal, so
//! dead executors and hints are never dark grey), `light` (no yellow or light grey on
//! white), and `mono` (no colour at all, for `NO_COLOR` and monochrome terminals: letters,
//! bold, underline and reverse carry everything). The styles are the theme's methods
//! (`app.theme.dim()`): the theme is the app's value, handed to whatever draws.

use ratatui::style::{Color, Modifier, Style};
use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::ExecutorState;

pub use crate::app::Theme;
use crate::store::ExecutorRecord;

impl Theme {
    /// A foreground colour, or nothing in `mono`.
    fn fg(self, dark: Color, light: Color) -> Style {
        match self {
            Theme::Dark => Style::default().fg(dark),
            Theme::Light => Style::default().fg(light),
            Theme::Mono => Style::default(),
        }
    }

    /// The letter and colour of an executor in the state map: the letter is the verdict's
    /// state, the colour its severity for ended executors, so a death looks the same whether it
    /// was watched or rebuilt from the driver's reason.
    pub fn cell(self, e: &ExecutorRecord) -> (char, Style) {
        if e.is_missing() {
            return ('M', self.missing());
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
                self.severity(Severity::Error)
            }
            Some(Severity::Warn) if !live => {
                self.severity(Severity::Warn).add_modifier(Modifier::BOLD)
            }
            _ if state == ExecutorState::Failed => self.severity(Severity::Error),
            _ => self.state_style(state),
        };
        (letter, style)
    }

    pub fn state_style(self, s: ExecutorState) -> Style {
        match s {
            ExecutorState::Running => self.fg(Color::Green, Color::Green),
            ExecutorState::Pending => self.fg(Color::Yellow, Color::Rgb(0x9a, 0x67, 0x00)),
            ExecutorState::Succeeded => self.fg(Color::LightBlue, Color::Blue),
            ExecutorState::Failed => self
                .fg(Color::LightRed, Color::Red)
                .add_modifier(Modifier::BOLD),
            // Ended without blame (Spark deleted a finished executor): readable, not loud.
            ExecutorState::Deleted => self.fg(Color::Gray, Color::Rgb(0x55, 0x55, 0x55)),
            ExecutorState::Terminating => self.fg(Color::Cyan, Color::Rgb(0x00, 0x6f, 0x7a)),
            ExecutorState::Unknown => self.fg(Color::Magenta, Color::Magenta),
        }
    }

    pub fn severity(self, s: Severity) -> Style {
        match s {
            Severity::Error => self
                .fg(Color::LightRed, Color::Red)
                .add_modifier(Modifier::BOLD),
            Severity::Warn => match self {
                Theme::Mono => Style::default().add_modifier(Modifier::UNDERLINED),
                _ => self.fg(Color::Yellow, Color::Rgb(0x9a, 0x67, 0x00)),
            },
            Severity::Info => self.fg(Color::Gray, Color::Rgb(0x55, 0x55, 0x55)),
        }
    }

    /// A missing executor (vanished with no deletion seen).
    pub fn missing(self) -> Style {
        self.fg(Color::LightMagenta, Color::Magenta)
            .add_modifier(Modifier::BOLD)
    }

    /// All is well.
    pub fn ok(self) -> Style {
        self.fg(Color::Green, Color::Green)
    }

    pub fn focused_border(self) -> Style {
        match self {
            Theme::Mono => bold(),
            _ => self.fg(Color::Cyan, Color::Blue),
        }
    }

    /// Secondary text (hints, timestamps, pod names): quieter than the text, still readable on
    /// the theme's background.
    pub fn dim(self) -> Style {
        self.fg(Color::Gray, Color::Rgb(0x55, 0x55, 0x55))
    }

    /// A label on a coloured background (the mode badge, a replay position): reversed in `mono`.
    pub fn badge(self, bg: Color) -> Style {
        match self {
            Theme::Mono => Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            _ => Style::default().fg(Color::Black).bg(bg),
        }
    }

    /// Something that needs attention now (STALE, a force kill): black on red, reversed in
    /// `mono`.
    pub fn alarm(self) -> Style {
        self.badge(Color::Red).add_modifier(Modifier::BOLD)
    }
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn title() -> Style {
    bold()
}

pub fn selected() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}
