//! The only code that touches the cluster on the user's behalf: kill executors, hold and
//! release their pods, fetch logs, ask what the user may do, and point the driver view at
//! an app. The app asks for these as [`Effect`]s; one [`Runner`] carries them out and says
//! what happened as an [`Outcome`], which the TUI turns into a message and the CLI into
//! lines of text. Every write passes one gate (read-only mode, then the permission the API
//! granted through a SelfSubjectAccessReview) and is written to the actions log.
//!
//! Holding: the tool's finalizer `spark-triage.dev/hold` keeps an executor pod after Spark
//! deletes it (it stays Terminating with its final status), with an expiry annotation so any
//! instance can release it later. The app-level hold lives on the driver pod as the same
//! annotation, so every instance watching the app holds its new executors too. Releasing
//! removes only the tool's own finalizer, with a JSON patch whose `test` op guarantees no
//! other finalizer is touched.

mod log;
pub mod ownership;
mod permissions;
mod runner;
mod writes;

use chrono::Utc;
pub use log::{ActionLog, ActionRecord};
pub use ownership::{
    DriverId, FORCE_STATEFULSET, Via, any_statefulset, by_owner, owner_of, replacements,
};
pub use permissions::{Denied, Permissions};
pub use runner::{Captures, Runner};
use spark_triage_core::model::{ExecutorPod, Time, fmt_time};
use tokio::sync::mpsc;
pub use writes::{
    WriteError, hold_pod, kill, mark_app_hold, mark_killed, release_pod, unmark_killed,
};

use crate::source::SourceEvent;
use crate::source::connection::DriverFocus;
use crate::source::switch::SwitchTo;

/// One pod an action targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub namespace: String,
    pub app_id: String,
    pub pod: String,
    pub executor: i64,
    /// The pod's uid as seen: the write touches that pod only, not one recreated under
    /// its name.
    pub uid: Option<String>,
    /// Owned through a controller of Spark's allocator: verified before the write.
    pub via: Option<Via>,
}

/// One pod a hold is put on (or taken off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldTarget {
    pub pod: String,
    /// The pod's uid as seen (see [`Target::uid`]).
    pub uid: Option<String>,
    /// Owned through a controller of Spark's allocator: verified before the finalizer goes on.
    pub via: Option<Via>,
}

impl HoldTarget {
    /// A hold on this pod as seen, with how it is the app's.
    pub fn of(pod: &ExecutorPod, via: Option<Via>) -> Self {
        Self {
            pod: pod.name.clone(),
            uid: pod.uid.clone(),
            via,
        }
    }
}

/// What the app asks the world to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Quit,
    Kill {
        targets: Vec<Target>,
        grace: Option<u32>,
    },
    /// Hold on (until) or off (None) for an app: driver mark plus its executor pods.
    SetHold {
        namespace: String,
        app_id: String,
        driver: Option<String>,
        pods: Vec<HoldTarget>,
        until: Option<Time>,
    },
    HoldPod {
        namespace: String,
        pod: HoldTarget,
        until: Time,
    },
    /// Removes the hold; `expired` when it is released because its time is up.
    ReleasePod {
        namespace: String,
        pod: String,
        expired: bool,
    },
    /// `capture`: keep it as evidence (a `LogCaptured` source event); else show it.
    FetchLog {
        namespace: String,
        pod: String,
        container: String,
        previous: bool,
        capture: bool,
    },
    /// Read every event about this pod into the store (evidence of an executor that ended
    /// badly or waits too long; `app::evidence` decides which).
    ReadEvents {
        namespace: String,
        pod: String,
    },
    /// Ask the API what the user may do in these namespaces.
    CheckPermissions {
        namespaces: Vec<String>,
    },
    /// Read this app's driver REST API first (the one in view); `None`: no preference.
    FocusDriver(Option<(String, String)>),
    /// Put this text on the clipboard through the terminal (OSC 52: works over SSH and in
    /// tmux); the TUI writes it, the runner has nothing to do.
    Copy(String),
    /// Rebuild the sources in another namespace or context (the terminal loop runs it).
    Switch(SwitchTo),
    /// List the cluster's namespaces (the `:` prompt completes them).
    ListNamespaces,
}

impl Effect {
    /// The pods a write touches, as (namespace, pod).
    pub fn targets(&self) -> Vec<(String, String)> {
        match self {
            Effect::Kill { targets, .. } => targets
                .iter()
                .map(|t| (t.namespace.clone(), t.pod.clone()))
                .collect(),
            Effect::SetHold {
                namespace, pods, ..
            } => pods
                .iter()
                .map(|p| (namespace.clone(), p.pod.clone()))
                .collect(),
            Effect::HoldPod { namespace, pod, .. } => vec![(namespace.clone(), pod.pod.clone())],
            Effect::ReleasePod { namespace, pod, .. } => vec![(namespace.clone(), pod.clone())],
            _ => Vec::new(),
        }
    }

    /// How many pods a write touches (a driver's hold mark counts as one).
    pub fn pods(&self) -> usize {
        match self {
            Effect::Kill { targets, .. } => targets.len(),
            Effect::SetHold { driver, pods, .. } => pods.len() + usize::from(driver.is_some()),
            Effect::HoldPod { .. } | Effect::ReleasePod { .. } => 1,
            _ => 0,
        }
    }
}

/// What a write did, for both faces: one line for the TUI's status bar, one line per pod
/// for the CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// One line for the user.
    pub text: String,
    /// One line per pod written ("deleted ns/pod", a skipped pod's reason, a warning).
    pub lines: Vec<String>,
    /// How many pods changed.
    pub changed: usize,
    /// The pods it concerned (the TUI clears their in-flight mark).
    pub pods: Vec<(String, String)>,
    /// The first failure, if any (the CLI's exit status).
    pub error: Option<WriteError>,
    /// How many pods failed (each has its line).
    pub failed: usize,
    /// A 403 met: the namespace and verb it denied, so the app stops offering it.
    pub denied: Option<(String, String)>,
}

/// What running an effect came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to report (quit, a focus change, a log kept as evidence).
    Nothing,
    Done(Done),
    /// A log fetched to be shown.
    Log {
        pod: String,
        lines: Result<Vec<String>, String>,
    },
    Permissions(Permissions),
    /// The cluster's namespaces (none when not allowed or not answered).
    Namespaces(Vec<String>),
    /// A pod's events read from the cluster (they went to the store): how many, or why not.
    EventsRead {
        namespace: String,
        pod: String,
        result: Result<usize, String>,
    },
}
