//! Spark's executor states (`ExecutorPodStates.scala`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The seven states Spark's driver puts an executor pod in. The names are Spark's, lower-cased,
/// and are part of the tool's stable output.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorState {
    /// Not running yet.
    Pending,
    /// Running.
    Running,
    /// Ended with exit 0.
    Succeeded,
    /// Ended with a failure.
    Failed,
    /// Deleted while not running.
    Deleted,
    /// Being deleted while running.
    Terminating,
    /// No phase, or one Spark does not know.
    Unknown,
}

impl ExecutorState {
    /// Every state, in the order of the documentation.
    pub const ALL: [Self; 7] = [
        Self::Pending,
        Self::Running,
        Self::Succeeded,
        Self::Failed,
        Self::Deleted,
        Self::Terminating,
        Self::Unknown,
    ];

    /// The lower-case name every output uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Deleted => "deleted",
            Self::Terminating => "terminating",
            Self::Unknown => "unknown",
        }
    }

    /// Spark's `FinalPodState`: succeeded, failed, deleted and terminating.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::Deleted | Self::Terminating
        )
    }
}

impl fmt::Display for ExecutorState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
