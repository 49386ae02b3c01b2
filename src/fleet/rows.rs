//! The rows of the fleet tables, from the store: pure. One row per ended executor
//! (`executor_endings`), per ended application (`app_runs`), per executor whose wait for a
//! node or a container is over (`pending_waits`). Each row has a key (app id + executor id,
//! or the app id) and a date (its partition, UTC): the same row always lands in the same
//! partition, so a writer that restarts finds what it wrote there.

use std::collections::BTreeMap;

use spark_triage_core::diagnose::Severity;
use spark_triage_core::diagnose::budget::FailureBudget;
use spark_triage_core::model::cost::Loss;
use spark_triage_core::model::{ExecutorState, Time, quantity};
use spark_triage_core::version::SparkVersion;

pub use super::columns::Table;
use super::columns::table_row;
use crate::redact;
use crate::store::times::Clock;
use crate::store::{AppRecord, ExecutorRecord, Snapshot, times};

table_row! {
    /// One ended executor.
    pub struct EndingRow in Table::Endings => {
        pub namespace: String,
        pub app_id: String,
        pub app_name: Option<String>,
        pub spark_version: Option<String>,
        pub executor_id: i64,
        /// The verdict's cause (a finding code), `none` when it names none. A name, not a
        /// `Code`: codes are added, and an older reader must still read a newer table.
        pub cause: String,
        pub severity: Severity,
        pub state: String,
        pub pod: String,
        pub node: Option<String>,
        pub started_at: Option<Time>,
        pub ended_at: Time,
        /// Whose clock `ended_at` is (`container`, `driver`, `event`, `deletion`, `seen`).
        pub ended_clock: String,
        pub exit_code: Option<i32>,
        pub container_reason: Option<String>,
        /// Spark counted it toward `spark.executor.maxNumFailures`.
        pub counted: bool,
        /// A failure, as `report` counts them (counted, or failed and blamed on the app).
        pub failure: bool,
        pub missing: bool,
        pub ending: String,
        pub witness: Option<String>,
        pub summary: Option<String>,
        pub memory_limit_bytes: Option<i64>,
        pub memory_request_bytes: Option<i64>,
        pub executor_memory: Option<String>,
        pub executor_memory_overhead: Option<String>,
        pub executor_cores: Option<String>,
        pub max_failures: Option<i32>,
        pub dynamic_allocation: bool,
        /// What its loss cost the app (its event log's stages and tasks; null when none
        /// was read): task time redone (its running tasks and the stage attempts its lost
        /// shuffle output added), the wall-clock time of those attempts, how many.
        pub recomputed_task_seconds: Option<f64>,
        pub recompute_wall_seconds: Option<f64>,
        pub stage_attempts_added: Option<i32>,
    }
}

table_row! {
    /// One ended application.
    pub struct RunRow in Table::Runs => {
        pub namespace: String,
        pub app_id: String,
        pub app_name: Option<String>,
        pub spark_version: Option<String>,
        pub driver_pod: Option<String>,
        pub driver_node: Option<String>,
        pub driver_phase: Option<String>,
        pub started_at: Option<Time>,
        pub ended_at: Time,
        /// The app verdict's cause (a finding code's name, as `cause` above) and severity.
        pub verdict: String,
        pub severity: Severity,
        pub summary: String,
        pub executors: i64,
        pub failures: i64,
        pub failures_counted: i64,
        /// Spark's limit on counted failures, when it has one.
        pub failures_allowed: Option<i64>,
        pub missing: i64,
        /// Ended executors by cause, as JSON (`{"container-oom-killed":3,…}`).
        pub by_cause: String,
        pub executor_memory: Option<String>,
        pub executor_memory_overhead: Option<String>,
        pub executor_cores: Option<String>,
        pub max_failures: Option<i32>,
        pub dynamic_allocation: bool,
        /// What its losses cost it and what it left idle (its event log; null when none was
        /// read): wall-clock time redone, task time redone, executor core time paid for,
        /// task time used, dynamic allocation's idle tail (executor time).
        pub recompute_wall_seconds: Option<f64>,
        pub recomputed_task_seconds: Option<f64>,
        pub allocated_core_seconds: Option<f64>,
        pub busy_task_seconds: Option<f64>,
        pub idle_tail_executor_seconds: Option<f64>,
        /// Idle executors shuffle tracking held past the idle timeout, executor time (its
        /// event log).
        pub held_by_shuffle_executor_seconds: Option<f64>,
        /// Executor pods deleted before any container ran, and their time pending (its
        /// pods).
        pub pods_never_ran: i64,
        pub never_ran_pending_seconds: f64,
        /// The highest share of its memory limit one executor's peak reached, as its
        /// driver measured (null when none was).
        pub memory_peak_percent: Option<i64>,
    }
}

table_row! {
    /// One executor's wait, over.
    pub struct WaitRow in Table::Waits => {
        pub namespace: String,
        pub app_id: String,
        pub app_name: Option<String>,
        pub executor_id: i64,
        pub pod: String,
        pub node: Option<String>,
        /// What held it, as a closed set (`unschedulable`, `image-pull`, `volume`,
        /// `admission-rejected`, `pending`).
        pub reason: String,
        /// The newest scheduler or kubelet message of it (one line, at most 300 characters).
        pub message: Option<String>,
        pub waited_from: Time,
        pub waited_until: Time,
        pub seconds: f64,
        /// The state it went to (`running`, or how it ended while waiting).
        pub then: String,
    }
}

/// What one round writes: the rows, each with its key.
#[derive(Debug, Default, Clone)]
pub struct Rows {
    pub endings: Vec<EndingRow>,
    pub runs: Vec<RunRow>,
    pub waits: Vec<WaitRow>,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.endings.len() + self.runs.len() + self.waits.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A row's key: app id + executor id (`app_runs`: the app id, executor -1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub app_id: String,
    pub executor_id: i64,
}

impl Key {
    /// FNV-1a of the key: what a writer remembers of it.
    pub fn hash64(&self) -> u64 {
        Self::hash_of(&self.app_id, self.executor_id)
    }

    /// [`Key::hash64`] of an app id and executor id, without making the key.
    pub fn hash_of(app_id: &str, executor_id: i64) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in app_id
            .as_bytes()
            .iter()
            .chain(&[0])
            .chain(&executor_id.to_le_bytes())
        {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
}

impl EndingRow {
    pub fn key(&self) -> Key {
        Key {
            app_id: self.app_id.clone(),
            executor_id: self.executor_id,
        }
    }
}

impl RunRow {
    pub fn key(&self) -> Key {
        Key {
            app_id: self.app_id.clone(),
            executor_id: -1,
        }
    }
}

impl WaitRow {
    pub fn key(&self) -> Key {
        Key {
            app_id: self.app_id.clone(),
            executor_id: self.executor_id,
        }
    }
}

/// A time's partition: its UTC date.
pub fn date(t: &Time) -> String {
    t.format("%Y-%m-%d").to_string()
}

/// Whether an executor's ending is to be a row now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// Not settled yet (its app's row waits too).
    No,
    /// Settled: its row.
    Yes,
    /// Settled, and its row was taken before (not made again).
    Taken,
}

/// Every row the snapshot has: ended executors, ended apps (once none of their executors
/// runs and every ending settled), waits that are over. `ready` says whether an executor's
/// ending is a row now.
pub fn of(snap: &Snapshot, mut ready: impl FnMut(&AppRecord, &ExecutorRecord) -> Ready) -> Rows {
    let mut rows = Rows::default();
    for a in snap.apps.values() {
        let version = spark_version(a);
        let sizing = &a.config.sizing;
        let max_failures = a.config.max_failures.and_then(|n| i32::try_from(n).ok());
        // The executors that ended first, let go past the store's bound: in the app's row,
        // not in the endings (a recorder wrote theirs as they ended).
        let t = &a.trimmed;
        let mut by_cause: BTreeMap<&str, i64> = t
            .by_cause
            .iter()
            .map(|(c, n)| (c.as_str(), i64::try_from(*n).unwrap_or(i64::MAX)))
            .collect();
        let mut ended = i64::try_from(t.executors).unwrap_or(i64::MAX);
        let mut failures = i64::try_from(t.failures).unwrap_or(i64::MAX);
        let mut all_settled = true;
        let losses = losses_of(a);
        for e in a.executors.values() {
            if let Some(w) = wait(a, e) {
                rows.waits.push(w);
            }
            let Some((at, clock)) = times::ended(e) else {
                // Still running: the app's row waits for it.
                all_settled = false;
                continue;
            };
            let cause = e.verdict.cause();
            *by_cause.entry(e.verdict.cause_code()).or_default() += 1;
            ended += 1;
            let failure = e.verdict.is_failure();
            failures += i64::from(failure);
            match ready(a, e) {
                Ready::Yes => {}
                Ready::Taken => continue,
                Ready::No => {
                    all_settled = false;
                    continue;
                }
            }
            let spec = e.pod.container_spec(&e.spark_container);
            // A run's cost read whole (a log still being written may not know this end yet).
            let loss = losses.as_ref().map(|by| by.get(&e.id).copied());
            rows.endings.push(EndingRow {
                namespace: a.namespace.clone(),
                app_id: a.app_id.clone(),
                app_name: a.app_name.clone(),
                spark_version: version.clone(),
                executor_id: e.id,
                cause: e.verdict.cause_code().to_owned(),
                severity: cause.map_or(Severity::Info, |f| f.severity),
                state: e.state().as_str().to_owned(),
                pod: e.pod.name.clone(),
                node: e.pod.node_name.as_deref().map(str::to_owned),
                started_at: match times::created(e) {
                    (_, Clock::Seen) => None,
                    (t, _) => Some(t),
                },
                ended_at: at,
                ended_clock: clock.as_str().to_owned(),
                exit_code: e.exit_code(),
                container_reason: e.container_reason().map(str::to_owned),
                counted: e.verdict.counted(),
                failure,
                missing: e.is_missing(),
                ending: e.verdict.ending.as_str().to_owned(),
                witness: cause.map(|f| f.witness.as_str().to_owned()),
                summary: cause.map(|f| redact::one_line(&f.summary)),
                memory_limit_bytes: e
                    .pod
                    .memory_limit(&e.spark_container)
                    .and_then(|m| bytes(&m.had)),
                memory_request_bytes: spec
                    .and_then(|c| c.requests.memory.as_deref())
                    .and_then(bytes),
                executor_memory: sizing.memory.clone(),
                executor_memory_overhead: sizing.memory_overhead.clone(),
                executor_cores: sizing.cores.clone(),
                max_failures,
                dynamic_allocation: a.config.dynamic_allocation,
                // A run whose cost was read: 0 for an ending that cost nothing.
                recomputed_task_seconds: loss
                    .map(|l| l.map_or(0.0, |l| secs(l.rerun_task_ms + l.task_ms_lost))),
                recompute_wall_seconds: loss.map(|l| l.map_or(0.0, |l| secs(l.wall_ms))),
                stage_attempts_added: loss
                    .map(|l| l.map_or(0, |l| i32::try_from(l.attempts_added).unwrap_or(i32::MAX))),
            });
        }
        // An app's row once it is over and every ending of it settled.
        let end = a
            .driver_end
            .as_ref()
            .map(|d| (Some(d.pod.clone()), d.cluster_at.unwrap_or(d.at)))
            .or_else(|| a.logged_end_at.map(|t| (None, t)));
        if let Some(end) = end.filter(|_| all_settled) {
            rows.runs
                .push(run_row(a, version, (ended, failures, &by_cause), end));
        }
    }
    rows
}

/// An app's row, once it is over and every ending of it settled: `counted` its ended
/// executors, failures and their causes; `end` its driver pod and when it ended.
fn run_row(
    a: &AppRecord,
    version: Option<String>,
    (ended, failures, by_cause): (i64, i64, &BTreeMap<&str, i64>),
    (driver_pod, ended_at): (Option<String>, Time),
) -> RunRow {
    let sizing = &a.config.sizing;
    let max_failures = a.config.max_failures.and_then(|n| i32::try_from(n).ok());
    let v = a.verdict();
    let (used, budget) = a.failure_budget();
    // A cost read whole; one read while the log was written says too little.
    let whole = a.cost.as_deref().filter(|c| !c.in_progress);
    let pods = a.pod_cost();
    let driver = a.driver.as_ref();
    RunRow {
        namespace: a.namespace.clone(),
        app_id: a.app_id.clone(),
        app_name: a.app_name.clone(),
        spark_version: version,
        driver_pod: driver_pod.or_else(|| driver.map(|d| d.pod.clone())),
        driver_node: driver.and_then(|d| d.node.clone()),
        driver_phase: driver.and_then(|d| d.phase.clone()),
        started_at: driver
            .and_then(|d| d.last.as_ref().or(d.ended.as_ref()))
            .and_then(|p| p.created_at),
        ended_at,
        verdict: v.cause().code.as_str().to_owned(),
        severity: v.severity(),
        summary: redact::one_line(&v.cause().summary),
        executors: ended,
        failures,
        failures_counted: i64::try_from(used).unwrap_or(i64::MAX),
        failures_allowed: match budget {
            FailureBudget::Limit(l) => Some(i64::from(l)),
            _ => None,
        },
        missing: a.executors.values().filter(|e| e.is_missing()).count() as i64,
        by_cause: serde_json::to_string(&by_cause).unwrap_or_default(),
        executor_memory: sizing.memory.clone(),
        executor_memory_overhead: sizing.memory_overhead.clone(),
        executor_cores: sizing.cores.clone(),
        max_failures,
        dynamic_allocation: a.config.dynamic_allocation,
        recompute_wall_seconds: whole.map(|c| secs(c.wall_ms())),
        recomputed_task_seconds: whole.map(|c| {
            secs(
                c.losses
                    .iter()
                    .map(|l| l.rerun_task_ms + l.task_ms_lost)
                    .sum(),
            )
        }),
        allocated_core_seconds: whole.map(|c| secs(c.waste.allocated_core_ms)),
        busy_task_seconds: whole.map(|c| secs(c.waste.busy_ms)),
        idle_tail_executor_seconds: whole.map(|c| secs(c.waste.idle_tail_ms)),
        held_by_shuffle_executor_seconds: whole.map(|c| secs(c.waste.held_by_shuffle_ms)),
        pods_never_ran: i64::from(pods.never_ran),
        never_ran_pending_seconds: secs(pods.never_ran_pending_ms),
        memory_peak_percent: pods.memory.as_ref().map(|m| i64::from(m.peak_percent)),
    }
}

/// Each loss by its executor, once per app (not a search per ending); none unless the
/// run's cost was read whole.
fn losses_of(a: &AppRecord) -> Option<std::collections::HashMap<i64, &Loss>> {
    a.cost
        .as_deref()
        .filter(|c| !c.in_progress)
        .map(|c| c.losses.iter().map(|l| (l.executor, l)).collect())
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn spark_version(a: &AppRecord) -> Option<String> {
    a.executors
        .values()
        .find_map(|e| SparkVersion::of(&e.pod))
        .map(|v| v.to_string())
        .or_else(|| a.logged_version.clone())
}

/// A Kubernetes quantity in bytes.
fn bytes(q: &str) -> Option<i64> {
    quantity::parse(q)
        .filter(|b| b.is_finite() && *b >= 0.0)
        .map(|b| b as i64)
}

/// The executor's wait, once it is over: from its first pending transition to the next.
fn wait(a: &AppRecord, e: &ExecutorRecord) -> Option<WaitRow> {
    let p = e
        .history
        .iter()
        .position(|t| t.state == ExecutorState::Pending)?;
    let from = e.history[p].at;
    let next = e
        .history
        .iter()
        .skip(p + 1)
        .find(|t| t.state != ExecutorState::Pending)?;
    let (reason, message) = wait_reason(e);
    Some(WaitRow {
        namespace: a.namespace.clone(),
        app_id: a.app_id.clone(),
        app_name: a.app_name.clone(),
        executor_id: e.id,
        pod: e.pod.name.clone(),
        node: e.pod.node_name.as_deref().map(str::to_owned),
        reason: reason.to_owned(),
        message,
        waited_from: from,
        waited_until: next.at,
        seconds: (next.at - from).num_milliseconds().max(0) as f64 / 1000.0,
        then: next.state.as_str().to_owned(),
    })
}

/// What held a wait, from the pod's events (they outlive the wait; the verdict does not).
fn wait_reason(e: &ExecutorRecord) -> (&'static str, Option<String>) {
    let mut found: Option<(&'static str, Option<String>)> = None;
    for ev in &e.events {
        let reason = ev.reason.as_deref().unwrap_or_default();
        let message = ev.message.as_deref().unwrap_or_default();
        let what = match reason {
            "FailedScheduling" => "unschedulable",
            "FailedMount" | "FailedAttachVolume" => "volume",
            "FailedCreate" | "FailedAdmission" => "admission-rejected",
            "Failed" | "BackOff" | "ErrImagePull" | "ImagePullBackOff"
                if message.to_ascii_lowercase().contains("image") =>
            {
                "image-pull"
            }
            _ => continue,
        };
        let line = redact::one_line(message);
        let line: String = line.chars().take(300).collect();
        found = Some((what, (!line.is_empty()).then_some(line)));
    }
    found.unwrap_or(("pending", None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quantity_is_bytes() {
        assert_eq!(bytes("4505Mi"), Some(4505 * 1024 * 1024));
        assert_eq!(bytes("1G"), Some(1_000_000_000));
        assert_eq!(bytes("nonsense"), None);
    }

    #[test]
    fn a_partition_is_the_utc_date() {
        let t: Time = "2026-12-03T23:59:59Z".parse().expect("time");
        assert_eq!(date(&t), "2026-12-03");
    }
}
