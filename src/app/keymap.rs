//! The keymap as data: it drives dispatch, the help popup and the footer hints, so the three
//! can never disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Everything a key can do. The configuration file's `[keys]` table names them in
/// kebab-case (`next-pane`, `copy-command`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "kebab-case")]
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
        help: "filter executors (an id whole, or words: pod, cause, reason, state)",
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
        help: "copy kubectl describe for the executor (its events once gone) or the app's SparkApplication",
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
        help: "command: :app NAME, :ns NAME|all, :ctx NAME, :q (Tab completes, ↑↓ history)",
        hint: None,
    },
];

/// The keymap in force: the built-in one, with the configuration file's `[keys]` overrides
/// (an override replaces that action's keys). Ctrl-C always quits.
#[derive(Debug, Clone)]
pub struct Keymap {
    entries: Vec<Entry>,
}

/// One action's keys in a keymap.
#[derive(Debug, Clone)]
pub struct Entry {
    pub keys: Vec<KeyCode>,
    /// How the keys are written in help and the footer.
    pub label: String,
    pub binding: &'static Binding,
}

impl Entry {
    pub fn action(&self) -> Action {
        self.binding.action
    }
}

impl Default for Keymap {
    fn default() -> Self {
        Self {
            entries: KEYMAP
                .iter()
                .map(|b| Entry {
                    keys: b.keys.to_vec(),
                    label: b.label.to_owned(),
                    binding: b,
                })
                .collect(),
        }
    }
}

impl Keymap {
    /// The built-in keymap with these actions' keys replaced; an error names a key left
    /// bound to two actions.
    pub fn with(overrides: &std::collections::BTreeMap<Action, Keys>) -> Result<Self, String> {
        let mut map = Self::default();
        for e in &mut map.entries {
            if let Some(Keys(keys)) = overrides.get(&e.action()) {
                e.keys.clone_from(keys);
                e.label = keys
                    .iter()
                    .map(|k| key_name(*k))
                    .collect::<Vec<_>>()
                    .join("/");
            }
        }
        let mut seen: Vec<(KeyCode, Action)> = Vec::new();
        for e in &map.entries {
            for k in &e.keys {
                if let Some((_, other)) = seen.iter().find(|(s, _)| s == k) {
                    return Err(format!(
                        "[keys]: {:?} is bound to both {} and {}",
                        key_name(*k),
                        action_name(*other),
                        action_name(e.action())
                    ));
                }
                seen.push((*k, e.action()));
            }
        }
        Ok(map)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The action for a key, if any.
    pub fn action_for(&self, key: KeyEvent) -> Option<Action> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(Action::Quit);
        }
        self.entries
            .iter()
            .find(|e| e.keys.contains(&key.code))
            .map(Entry::action)
    }
}

/// An action's name in the configuration file.
pub fn action_name(a: Action) -> String {
    serde_json::to_value(a)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Named keys, as the configuration file writes them (any case); anything else is one
/// character.
const NAMED: &[(&str, KeyCode)] = &[
    ("Space", KeyCode::Char(' ')),
    ("Enter", KeyCode::Enter),
    ("Esc", KeyCode::Esc),
    ("Tab", KeyCode::Tab),
    ("BackTab", KeyCode::BackTab),
    ("Backspace", KeyCode::Backspace),
    ("Delete", KeyCode::Delete),
    ("Insert", KeyCode::Insert),
    ("Up", KeyCode::Up),
    ("Down", KeyCode::Down),
    ("Left", KeyCode::Left),
    ("Right", KeyCode::Right),
    ("PgUp", KeyCode::PageUp),
    ("PgDn", KeyCode::PageDown),
    ("Home", KeyCode::Home),
    ("End", KeyCode::End),
];

/// A key from its name: `K`, `/`, `Space`, `PgDn`, `F5`.
pub fn parse_key(s: &str) -> Result<KeyCode, String> {
    let mut chars = s.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Ok(KeyCode::Char(c));
    }
    if let Some((_, k)) = NAMED.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
        return Ok(*k);
    }
    match s
        .strip_prefix(['F', 'f'])
        .and_then(|n| n.parse::<u8>().ok())
    {
        Some(n @ 1..=12) => Ok(KeyCode::F(n)),
        _ => Err(format!(
            "unknown key {s:?}: one character, F1-F12 or one of {}",
            NAMED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// How a key is written in help and the footer.
pub fn key_name(k: KeyCode) -> String {
    if let Some((n, _)) = NAMED.iter().find(|(_, c)| *c == k) {
        return (*n).to_owned();
    }
    match k {
        KeyCode::Char(c) => c.to_string(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    }
}

/// An action's keys in the configuration file: one key (`"K"`) or a list (`["l", "L"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys(pub Vec<KeyCode>);

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key (\"K\", \"Space\", \"F5\") or a list of keys")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Keys, E> {
                parse_key(s).map(|k| Keys(vec![k])).map_err(E::custom)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    keys.push(parse_key(&s).map_err(serde::de::Error::custom)?);
                }
                if keys.is_empty() {
                    return Err(serde::de::Error::custom("an action needs at least one key"));
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_any(V)
    }
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

    fn key(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    #[test]
    fn ctrl_c_quits() {
        let map = Keymap::default();
        assert_eq!(
            map.action_for(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(map.action_for(key('x')), None);
    }

    #[test]
    fn an_override_replaces_the_actions_keys_and_its_label() {
        let overrides = [(Action::Kill, Keys(vec![KeyCode::Char('X'), KeyCode::F(8)]))].into();
        let map = Keymap::with(&overrides).unwrap();
        assert_eq!(map.action_for(key('X')), Some(Action::Kill));
        assert_eq!(
            map.action_for(KeyEvent::new(KeyCode::F(8), KeyModifiers::NONE)),
            Some(Action::Kill)
        );
        assert_eq!(map.action_for(key('K')), None, "the old key is free");
        let kill = map.entries().iter().find(|e| e.action() == Action::Kill);
        assert_eq!(kill.map(|e| e.label.as_str()), Some("X/F8"));
        // Ctrl-C still quits whatever `quit` is bound to.
        let quit = [(Action::Quit, Keys(vec![KeyCode::F(10)]))].into();
        let map = Keymap::with(&quit).unwrap();
        assert_eq!(
            map.action_for(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(map.action_for(key('q')), None);
    }

    #[test]
    fn a_key_left_on_two_actions_is_refused() {
        let overrides = [(Action::Kill, Keys(vec![KeyCode::Char('l')]))].into();
        let e = Keymap::with(&overrides).unwrap_err();
        assert!(e.contains("\"l\" is bound to both kill and logs"), "{e}");
    }

    #[test]
    fn keys_are_named_as_the_file_writes_them() {
        for (s, k) in [
            ("K", KeyCode::Char('K')),
            ("/", KeyCode::Char('/')),
            ("space", KeyCode::Char(' ')),
            ("PgDn", KeyCode::PageDown),
            ("F5", KeyCode::F(5)),
        ] {
            assert_eq!(parse_key(s), Ok(k), "{s}");
            assert_eq!(parse_key(&key_name(k)), Ok(k), "{s} round trip");
        }
        assert!(parse_key("F13").is_err());
        assert!(parse_key("Ctrl-x").unwrap_err().contains("unknown key"));
        assert_eq!(action_name(Action::CopyCommand), "copy-command");
    }
}
