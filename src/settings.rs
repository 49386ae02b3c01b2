//! Settings as values: what the command line and the configuration file decided, handed
//! down to the one place that reads each (no statics, no thread-locals).

/// Whether writes are refused, and what said so (`--readonly`, a configuration file): a
/// refusal names it, so nobody hunts for a flag they never gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ReadOnly {
    #[default]
    Off,
    On(String),
}

impl ReadOnly {
    /// Set by the `--readonly` flag.
    pub fn flag() -> Self {
        Self::On("--readonly".to_owned())
    }

    pub fn on(&self) -> bool {
        matches!(self, Self::On(_))
    }
}
