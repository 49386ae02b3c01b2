//! What a command that fails tells its user: one line (its cause's own text, never a
//! chain) and the exit code. At the bottom of the layers: each layer turns its own error
//! into a `Failure` where that error is defined, so any layer may return one.

use spark_triage_core::input::InputError;
use spark_triage_sim::SimError;

/// A failure the user should read: one line, exit code attached.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A layer's own error (connecting, an action, reading a recording), said as it is.
    #[error(transparent)]
    Cause(Box<dyn std::error::Error + Send + Sync>),
    /// The command was given something it cannot take (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Runtime(String),
}

impl Failure {
    /// 2 for a usage error, 1 for everything else (the stable exit codes).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            _ => 1,
        }
    }
}
