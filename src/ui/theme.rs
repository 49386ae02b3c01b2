//! Colours and letters per state: the map reads without colour too (each cell has a letter).

use ratatui::style::{Color, Modifier, Style};

use crate::{diagnose::Severity, model::ExecutorState, store::ExecutorRecord};

/// The letter and colour of an executor in the state map: the letter is the verdict's
/// state, the colour its severity for ended executors, so a death looks the same whether it
/// was watched or rebuilt from the driver's reason.
pub fn cell(e: &ExecutorRecord) -> (char, Style) {
    if e.is_missing() {
        return (
            'M',
            Style::default()
                .fg(Color::Magenta)
                .add_modifier(Modifier::BOLD),
        );
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
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
        }
        Some(Severity::Warn) if !live => Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD),
        _ if state == ExecutorState::Failed => {
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
        }
        _ => state_style(state),
    };
    (letter, style)
}

pub fn state_style(s: ExecutorState) -> Style {
    match s {
        ExecutorState::Running => Style::default().fg(Color::Green),
        ExecutorState::Pending => Style::default().fg(Color::Yellow),
        ExecutorState::Succeeded => Style::default().fg(Color::Blue),
        ExecutorState::Failed => Style::default().fg(Color::Red),
        ExecutorState::Deleted => Style::default().fg(Color::DarkGray),
        ExecutorState::Terminating => Style::default().fg(Color::Cyan),
        ExecutorState::Unknown => Style::default().fg(Color::Magenta),
    }
}

pub fn severity(s: Severity) -> Style {
    match s {
        Severity::Error => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        Severity::Warn => Style::default().fg(Color::Yellow),
        Severity::Info => Style::default().fg(Color::Gray),
    }
}

pub fn title() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn focused_border() -> Style {
    Style::default().fg(Color::Cyan)
}

pub fn selected() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

pub fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}
