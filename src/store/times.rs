//! An executor's times by the cluster's own clocks, not by when this process first saw it:
//! a tool opened after the failures must say "ended 9m ago", not "0s ago". Each time says
//! which clock it came from; when only this process's first sight is known it says so.

use serde::{Deserialize, Serialize};
use spark_triage_core::model::{ContainerState, DriverExecutor, ExecutorPod, ExecutorState, Time};
use spark_triage_core::text;

use super::{ExecutorRecord, Gone};

/// Whose clock a time is from.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// The pod's `creationTimestamp` (the API server's).
    Pod,
    /// The container's `finishedAt` (the kubelet's).
    Container,
    /// The driver's `addTime` / `removeTime` (its REST API).
    Driver,
    /// The kubelet's event of the ending (`Evicted`, `Killing`, `NodeNotReady`,
    /// `Shutdown`): its `lastTimestamp`.
    Event,
    /// When the pod's deletion was asked (`deletionTimestamp` less its grace period).
    Deletion,
    /// Only when this process saw it (first sight): the true time is earlier.
    #[default]
    Seen,
}

impl Clock {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pod => "pod",
            Self::Container => "container",
            Self::Driver => "driver",
            Self::Event => "event",
            Self::Deletion => "deletion",
            Self::Seen => "seen",
        }
    }

    /// Whether the time is a bound only (the process saw it then; it happened before).
    pub fn is_bound(self) -> bool {
        self == Self::Seen
    }

    /// [`Self::is_bound`] by reference (serde's `skip_serializing_if`).
    pub fn is_seen(&self) -> bool {
        self.is_bound()
    }
}

/// When the executor's pod was created: its `creationTimestamp`, else the driver's
/// `addTime`, else (a bound) when this process first saw it.
pub fn created(e: &ExecutorRecord) -> (Time, Clock) {
    if let Some(t) = e.pod.created_at {
        return (t, Clock::Pod);
    }
    if let Some(t) = e
        .driver
        .as_ref()
        .and_then(|d| d.exec.as_ref())
        .and_then(|x| x.add_time)
    {
        return (t, Clock::Driver);
    }
    (e.first_seen, Clock::Seen)
}

/// When the executor ended (`None` while it runs): its container's `finishedAt`, else the
/// driver's `removeTime`, else when its deletion was asked, else (a bound) when this
/// process saw it end. A cluster time more than [`SKEW_TOLERANCE`] later than the sighting
/// (a node clock far ahead) gives way to the sighting; closer than that it is the sighting
/// that is late (the cluster clock is read from one-second `Date` headers between requests,
/// and a simulator's runs faster than real time), and the witness's time stands.
pub fn ended(e: &ExecutorRecord) -> Option<(Time, Clock)> {
    if !e.state().is_final() && e.gone.is_none() {
        return None;
    }
    // Known only from the driver, which still counts it active: it runs.
    if matches!(e.gone, Some(Gone::DriverOnly { .. }))
        && !e.state().is_final()
        && e.driver
            .as_ref()
            .and_then(|d| d.exec.as_ref())
            .is_some_and(|x| x.active)
    {
        return None;
    }
    // When this process saw it end (a transition's own time may be the cluster's).
    let from_history = e
        .history
        .iter()
        .rev()
        .take_while(|t| t.state.is_final())
        .last()
        .map(super::Transition::seen_at);
    let seen = from_history.or_else(|| e.gone.as_ref().map(Gone::at));
    let cluster = finished(e)
        .map(|t| (t, Clock::Container))
        .or_else(|| removed(e).map(|t| (t, Clock::Driver)))
        .or_else(|| kubelet_event(e).map(|t| (t, Clock::Event)))
        .or_else(|| deletion_asked(e).map(|t| (t, Clock::Deletion)));
    match (cluster, seen) {
        (Some((c, clock)), Some(s)) if c <= s + SKEW_TOLERANCE => Some((c, clock)),
        (Some(_), Some(s)) | (None, Some(s)) => Some((s, Clock::Seen)),
        (Some(c), None) => Some(c),
        (None, None) => None,
    }
}

/// How much later than this process's sighting a cluster time may be and still be taken.
pub const SKEW_TOLERANCE: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

fn finished(e: &ExecutorRecord) -> Option<Time> {
    e.ended
        .as_deref()
        .unwrap_or(&e.pod)
        .container_status(&e.spark_container)
        .and_then(|c| c.terminated())
        .and_then(|t| t.finished_at)
}

/// Only the kubelet's events of an ending (a pod's newest event may be its start).
fn kubelet_event(e: &ExecutorRecord) -> Option<Time> {
    e.events
        .iter()
        .filter(|ev| ev.host.is_some())
        .filter(|ev| {
            ["Evicted", "Killing", "NodeNotReady", "Shutdown"]
                .iter()
                .any(|r| ev.reason_is(r))
        })
        .filter_map(|ev| ev.last_seen)
        .max()
}

fn removed(e: &ExecutorRecord) -> Option<Time> {
    e.driver
        .as_ref()
        .and_then(|d| d.exec.as_ref())
        .filter(|x| !x.active)
        .and_then(|x| x.remove_time)
}

/// `deletionTimestamp` is when the grace period ends: the deletion was asked that much
/// earlier. An unreadable timestamp (parsed as the epoch) says nothing.
fn deletion_asked(e: &ExecutorRecord) -> Option<Time> {
    let d = e.first_deletion.as_ref()?;
    if d.at.timestamp() <= 0 {
        return None;
    }
    let grace = chrono::TimeDelta::seconds(d.grace_period_seconds.unwrap_or(0).clamp(0, 86_400));
    Some(d.at - grace)
}

/// When a pod reached `state`, by its own clocks: a deletion when it was asked
/// (`deletionTimestamp` less its grace), an end at its container's `finishedAt`, a start at
/// its `startedAt`, a pending pod at its `creationTimestamp`; else (a bound) `seen`, when this
/// process saw it. A cluster time later than the sighting by more than [`SKEW_TOLERANCE`]
/// gives way to the sighting, as in [`ended`].
pub fn transition(
    pod: &ExecutorPod,
    container: &str,
    state: ExecutorState,
    deleted: bool,
    seen: Time,
) -> (Time, Clock) {
    let status = pod.container_status(container).map(|c| &c.state);
    let cluster = if deleted || state == ExecutorState::Deleted {
        pod.deletion
            .as_ref()
            .filter(|d| d.at.timestamp() > 0)
            .map(|d| {
                let grace = chrono::TimeDelta::seconds(
                    d.grace_period_seconds.unwrap_or(0).clamp(0, 86_400),
                );
                (d.at - grace, Clock::Deletion)
            })
    } else {
        match (state, status) {
            (
                ExecutorState::Failed | ExecutorState::Succeeded,
                Some(ContainerState::Terminated(t)),
            ) => t.finished_at.map(|f| (f, Clock::Container)),
            (ExecutorState::Running, Some(ContainerState::Running { started_at })) => {
                started_at.map(|s| (s, Clock::Container))
            }
            (ExecutorState::Pending, _) => pod.created_at.map(|c| (c, Clock::Pod)),
            _ => None,
        }
    };
    match cluster {
        Some((c, clock)) if c <= seen + SKEW_TOLERANCE => (c, clock),
        _ => (seen, Clock::Seen),
    }
}

/// When an executor known only from the driver reached its state: its removal, else its
/// addition, by the driver's clock (else, a bound, when this process read it).
pub fn from_driver(d: &DriverExecutor, seen: Time) -> (Time, Clock) {
    // Removed: when the driver removed it, whatever its rebuilt pod's state; else added.
    let t = if d.active {
        d.add_time
    } else {
        d.remove_time.or(d.add_time)
    };
    match t {
        Some(c) if c <= seen + SKEW_TOLERANCE => (c, Clock::Driver),
        _ => (seen, Clock::Seen),
    }
}

/// When the executor's pod went away: its deletion as asked, else the driver's removal,
/// else (a bound) when this process saw it gone.
pub fn gone(e: &ExecutorRecord) -> Option<(Time, Clock)> {
    let seen = e.gone.as_ref()?.at();
    let cluster = deletion_asked(e)
        .map(|t| (t, Clock::Deletion))
        .or_else(|| removed(e).map(|t| (t, Clock::Driver)));
    Some(match cluster {
        Some((c, clock)) if c <= seen + SKEW_TOLERANCE => (c, clock),
        _ => (seen, Clock::Seen),
    })
}

/// A time as the screens show it: the clock's own, or marked as this view's first sight.
pub fn shown(when: &str, clock: Clock) -> String {
    if clock.is_bound() {
        format!("{when} (first seen by this view)")
    } else {
        when.to_owned()
    }
}

/// `3m12s` from `at` to `now`, with `≥` when `at` is only when this process saw it.
/// An executor's AGE (the live view's column, `status`'s table): how long it has run, or
/// how long ago it ended ("3m05s ago"), by the cluster's clocks as of `now`.
pub fn age(e: &ExecutorRecord, now: Option<Time>) -> String {
    match (now, ended(e)) {
        (Some(n), Some(end)) => format!("{} ago", span(n, end)),
        (Some(n), None) => span(n, created(e)),
        (None, _) => "-".to_owned(),
    }
}

pub fn span(now: Time, (at, clock): (Time, Clock)) -> String {
    let d = text::human_duration(now - at);
    match clock.is_bound() {
        true => format!("≥{d}"),
        false => d,
    }
}
