//! The keymap as data: it drives dispatch, the help popup and the footer hints, so the three
//! can never disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Everything a key can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    Close,
    NextPane,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Top,
    Bottom,
    ToggleView,
    Detail,
    Timeline,
    Filter,
    StateFilter,
    Sort,
    Mark,
    Kill,
    Hold,
    Logs,
    ToggleUtc,
    CopyName,
    CopyCommand,
    Describe,
    Command,
}

/// One binding.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [KeyCode],
    /// How the keys are written in help.
    pub label: &'static str,
    pub action: Action,
    pub help: &'static str,
    /// The footer's word for it, when it is shown in the footer.
    pub hint: Option<&'static str>,
}

pub const KEYMAP: &[Binding] = &[
    Binding {
        keys: &[KeyCode::Char('q')],
        label: "q",
        action: Action::Quit,
        help: "quit (Ctrl-C too)",
        hint: Some("quit"),
    },
    Binding {
        keys: &[KeyCode::Char('?')],
        label: "?",
        action: Action::Help,
        help: "this help",
        hint: Some("help"),
    },
    Binding {
        keys: &[KeyCode::Esc],
        label: "Esc",
        action: Action::Close,
        help: "close a popup, clear the filter",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Tab, KeyCode::BackTab],
        label: "Tab",
        action: Action::NextPane,
        help: "switch between apps and executors",
        hint: Some("apps/executors"),
    },
    Binding {
        keys: &[KeyCode::Up, KeyCode::Char('k')],
        label: "↑/k",
        action: Action::Up,
        help: "move up",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Down, KeyCode::Char('j')],
        label: "↓/j",
        action: Action::Down,
        help: "move down",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Left],
        label: "←",
        action: Action::Left,
        help: "move left (map)",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Right],
        label: "→",
        action: Action::Right,
        help: "move right (map)",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::PageUp],
        label: "PgUp",
        action: Action::PageUp,
        help: "page up",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::PageDown],
        label: "PgDn",
        action: Action::PageDown,
        help: "page down",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        label: "g/Home",
        action: Action::Top,
        help: "first",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::End, KeyCode::Char('G')],
        label: "G/End",
        action: Action::Bottom,
        help: "last",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Char('v')],
        label: "v",
        action: Action::ToggleView,
        help: "state map / table",
        hint: Some("map/table"),
    },
    Binding {
        keys: &[KeyCode::Enter, KeyCode::Char('d')],
        label: "Enter/d",
        action: Action::Detail,
        help: "executor detail: findings, evidence, hint, Spark's view, events",
        hint: Some("detail"),
    },
    Binding {
        keys: &[KeyCode::Char('t')],
        label: "t",
        action: Action::Timeline,
        help: "application timeline",
        hint: Some("timeline"),
    },
    Binding {
        keys: &[KeyCode::Char('/')],
        label: "/",
        action: Action::Filter,
        help: "filter executors (id, pod, finding, reason)",
        hint: Some("filter"),
    },
    Binding {
        keys: &[KeyCode::Char('s')],
        label: "s",
        action: Action::StateFilter,
        help: "cycle state filter (all, problems, each state)",
        hint: Some("states"),
    },
    Binding {
        keys: &[KeyCode::Char('o')],
        label: "o",
        action: Action::Sort,
        help: "cycle table sort (id, state, age)",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Char(' ')],
        label: "Space",
        action: Action::Mark,
        help: "mark/unmark the executor (for kill)",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Char('K')],
        label: "K",
        action: Action::Kill,
        help: "kill the marked executors (or the selected one), after a confirm",
        hint: Some("kill"),
    },
    Binding {
        keys: &[KeyCode::Char('H')],
        label: "H",
        action: Action::Hold,
        help: "hold on/off: keep this app's executor pods after Spark deletes them",
        hint: Some("hold"),
    },
    Binding {
        keys: &[KeyCode::Char('l')],
        label: "l",
        action: Action::Logs,
        help: "the executor's log (captured tail, else fetched)",
        hint: Some("log"),
    },
    Binding {
        keys: &[KeyCode::Char('z')],
        label: "z",
        action: Action::ToggleUtc,
        help: "times in UTC / local time",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Char('y')],
        label: "y",
        action: Action::CopyName,
        help: "copy the executor's pod name (to the clipboard, through the terminal)",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Char('Y')],
        label: "Y",
        action: Action::CopyCommand,
        help: "copy a kubectl command for the executor (describe, or its events when gone)",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Char('D')],
        label: "D",
        action: Action::Describe,
        help: "describe the executor's pod (spec, conditions, containers, events), also once gone",
        hint: None,
    },
    Binding {
        keys: &[KeyCode::Char(':')],
        label: ":",
        action: Action::Command,
        help: "command: :app NAME, :ns NAME (or :ns all), :ctx NAME, :q",
        hint: None,
    },
];

/// The action for a key, if any.
pub fn action_for(key: KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    KEYMAP
        .iter()
        .find(|b| b.keys.contains(&key.code))
        .map(|b| b.action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = Vec::new();
        for b in KEYMAP {
            for k in b.keys {
                assert!(!seen.contains(k), "{k:?} bound twice");
                seen.push(*k);
            }
        }
    }

    #[test]
    fn ctrl_c_quits() {
        assert_eq!(
            action_for(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            action_for(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)),
            None
        );
    }
}
