//! One verdict per application, the executor verdict's sibling.
//!
//! [`app_verdict`] turns all of an application's evidence (its driver pod with its events
//! and log tail, the app-level findings over its executors' verdicts, the executors that
//! ended with the driver or outlived it) into one answer: the cause first, with its
//! witness, then the supporting findings. Every output (apps pane, strip, `status`,
//! `report`, `explain`) reads it; nothing else computes an app's cause.
//!
//! The driver pod is read by the executor rules and each finding is then said as the
//! driver's (`driver_pod/`). When the driver has ended, [`DriverEnd`] is what the
//! executors' verdicts are told: an executor deleted by Spark's stop or by the garbage
//! collector after its driver ended is `ended-with-driver`, not counted, and never "Spark
//! still counts it running" (no Spark is left to count it).
//!
//! Pure and deterministic: `now` is an input.

mod driver_pod;
mod phases;

pub use driver_pod::final_condition_at;
use phases::{driver_not_seen, executors_part, running_or_unknown, weigh_predictions};
use serde::{Deserialize, Serialize};

use super::operator::OperatorFacts;
use super::{Code, Finding, Severity, Witness, operator};
use crate::classify;
use crate::classify::ClassifyOptions;
use crate::model::{Deletion, ExecutorPod, ExecutorState, PodEvent, Time, fmt_time};
#[cfg(test)]
mod tests;

/// How long before the driver's end an executor's end still counts as the driver's:
/// `SparkContext.stop()` deletes the executor pods before the driver's JVM exits.
pub const STOP_SLACK_SECS: i64 = 30;
/// How long executors may outlive their driver before they are orphans (the garbage
/// collector deletes pods the driver owns within seconds).
pub const ORPHAN_GRACE_SECS: i64 = 60;

/// When a deletion was asked for: `deletionTimestamp` less its grace (clamped to a day).
pub fn requested_at(d: &Deletion) -> Time {
    d.at - chrono::Duration::try_seconds(d.grace_period_seconds.unwrap_or(30).clamp(0, 86_400))
        .unwrap_or_default()
}

/// Whether and how the driver pod is gone, as the store saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriverGone {
    /// Still there (or an offline file: as given).
    #[default]
    No,
    /// A watch DELETED event.
    Deleted,
    /// Absent from a full LIST with no deletion seen.
    Missing,
}

/// Everything known about the driver pod.
#[derive(Debug, Clone, Copy)]
pub struct DriverEvidence<'a> {
    /// The driver pod as last seen.
    pub pod: &'a ExecutorPod,
    /// Its first final (failed/succeeded) observation.
    pub ended: Option<&'a ExecutorPod>,
    /// When the tool first saw it final, deleting or gone (its own clock).
    pub ended_seen: Option<Time>,
    /// Events about the driver pod, oldest first.
    pub events: &'a [PodEvent],
    /// Whether and how the pod is gone.
    pub gone: DriverGone,
    /// When it went away.
    pub gone_at: Option<Time>,
    /// The captured tail of the driver's log (taken when it ends badly).
    pub log_tail: Option<&'a [String]>,
    /// The batch schedulers' group objects read.
    pub groups: &'a super::GroupIndex,
}

/// What the executors' verdicts say, for the app's.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExecutorTally<'a> {
    /// Executors Spark counts running.
    pub running: usize,
    /// Executors pending.
    pub pending: usize,
    /// Executors whose own verdict is an error (failed, missing, disagreeing).
    pub errors: usize,
    /// Executors whose verdict is `ended-with-driver`.
    pub ended_with_driver: usize,
    /// Executor pods still running or pending although their driver ended (see [`is_orphan`]).
    pub orphans: &'a [String],
    /// Executors known at all (any state): the driver's SparkContext started if it made any.
    pub known: usize,
}

/// Everything known about one application.
#[derive(Debug, Clone, Copy)]
pub struct AppEvidence<'a> {
    /// The driver pod; `None` when none was seen (scope, selector, RBAC).
    pub driver: Option<DriverEvidence<'a>>,
    /// The driver's phase when only that is known (a recording made before its pod was kept).
    pub driver_phase: Option<&'a str>,
    /// What the app's Spark event log says of its end (`application ended, exit code 1`),
    /// when the app is known from its event log: there is no driver pod then.
    pub logged_end: Option<&'a str>,
    /// Its event log ends without the application's end (still written, or the driver died
    /// without stopping).
    pub unfinished: bool,
    /// The findings over its executors (crash loop, quota, snapshot, recovery mode).
    pub app_findings: &'a [Finding],
    /// What its executors' verdicts say.
    pub executors: ExecutorTally<'a>,
    /// Its operator's `SparkApplication`, when it was submitted through one.
    pub operator: Option<OperatorFacts<'a>>,
    /// The time the verdict is made at.
    pub now: Time,
}

/// The driver, in a few fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriverSummary {
    /// The driver pod's name.
    pub pod: String,
    /// Its state by Spark's pod rules (pending, running, succeeded, failed, deleted, …).
    pub state: ExecutorState,
    /// `status.phase`, verbatim.
    pub phase: Option<String>,
    /// `spec.nodeName`.
    pub node: Option<String>,
    /// The driver container's exit (its current state, else before its last restart).
    pub exit_code: Option<i32>,
    /// Its terminated reason (`OOMKilled`, `Error`, …).
    pub reason: Option<String>,
    /// `restartCount` of the driver container.
    pub restarts: i32,
    /// When the driver ended, from the cluster's own clocks where it has one.
    pub ended_at: Option<String>,
}

/// The one answer about an application.
#[derive(Debug, Clone, PartialEq)]
pub struct AppVerdict {
    /// The driver, when its pod was seen.
    pub driver: Option<DriverSummary>,
    /// The cause first, then the supporting findings. Never empty.
    pub findings: Vec<Finding>,
    /// When the driver ended: what the executors' verdicts are told.
    pub end: Option<DriverEnd>,
}

impl AppVerdict {
    /// The cause.
    pub fn cause(&self) -> &Finding {
        &self.findings[0]
    }

    /// The cause's severity.
    pub fn severity(&self) -> Severity {
        self.cause().severity
    }

    /// The cause is the driver's (it ended, waits, restarted, left orphans), not a pattern of
    /// the executors that their own lines already show.
    pub fn about_driver(&self) -> bool {
        let cause = self.cause();
        cause.code.ends_driver()
            // An operator's object speaks of the whole application (a submission, an
            // admission, a rerun, a schedule).
            || cause.witness == Witness::Operator
            || matches!(
                cause.code,
                Code::DriverPending | Code::DriverRestarted | Code::OrphanedExecutors
            )
    }

    /// The cause in a few words for narrow places: `driver OOMKilled (137)`.
    pub fn label(&self) -> String {
        let c = self.cause();
        let exit = self
            .driver
            .as_ref()
            .and_then(|d| d.exit_code)
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        match c.code {
            Code::DriverOomKilled => format!("driver OOMKilled{exit}"),
            Code::DriverJvmOom => format!("driver JVM OOM{exit}"),
            Code::ExecutorFailuresExceeded => "too many executor failures (11)".to_owned(),
            Code::DriverFailed => format!("driver failed{exit}"),
            Code::DriverStopped => format!("driver stopped{exit}"),
            Code::AppSucceeded => "succeeded".to_owned(),
            Code::AppRunning => "running".to_owned(),
            Code::DriverPending => match c
                .scheduling
                .iter()
                .max_by_key(|r| r.nodes.unwrap_or(0))
                .map(|r| r.text.clone())
                .or_else(|| {
                    // "The driver waits: ImagePullBackOff: …" → ImagePullBackOff
                    let rest = c.summary.strip_prefix("The driver waits: ")?;
                    Some(rest.split([':', '(']).next()?.trim().to_owned())
                }) {
                Some(why) => format!("driver pending: {why}"),
                None => "driver pending".to_owned(),
            },
            // "2 executors failed: OOMKilled (137) ×1, JVM OOM (52) ×1; …" → the causes (and
            // "… ended badly, not counted by Spark: killed by driver ×4" → the same).
            Code::ExecutorsFailed => c
                .summary
                .split_once("failed: ")
                .or_else(|| c.summary.split_once("by Spark: "))
                .and_then(|(_, rest)| rest.split(';').next())
                .map(once_each)
                .unwrap_or_else(|| "executors failed".to_owned()),
            // "3 × container-oom-killed: …" → "3× OOMKilled".
            Code::CrashLoop => c
                .summary
                .split_once(" × ")
                .and_then(|(n, rest)| {
                    let code = Code::parse(rest.split(':').next()?)?;
                    Some(format!("{n}× {}", code.label().0))
                })
                .unwrap_or_else(|| "crash loop".to_owned()),
            // "2 executors pending: ImagePullBackOff ×1, … (the longest …)" → the reasons.
            Code::ExecutorsPending => c
                .summary
                .split_once("pending: ")
                .and_then(|(_, rest)| rest.split(" (the oldest").next())
                .map(|why| format!("pending: {}", once_each(why)))
                .unwrap_or_else(|| "executors pending".to_owned()),
            // "1 executor vanished …" → "1 missing".
            Code::ExecutorsMissing => c
                .summary
                .split_once(' ')
                .map_or_else(|| "missing".to_owned(), |(n, _)| format!("{n} missing")),
            other => other.as_str().replace('-', " "),
        }
    }
}

/// "A ×1, B ×12" → "A, B ×12": a count of one said by its absence.
fn once_each(list: &str) -> String {
    list.split(", ")
        .map(|p| p.strip_suffix(" ×1").unwrap_or(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An app's verdict as every output prints it (`status`, `report`, `explain` JSON).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct VerdictView {
    /// The cause's code.
    pub cause: Code,
    /// The cause's severity.
    pub severity: Severity,
    /// The cause in one line.
    pub summary: String,
    /// Which witness the cause rests on.
    pub witness: Witness,
    /// What to change.
    pub hint: String,
    /// The cause's evidence.
    pub evidence: Vec<String>,
    /// The cause in a few words (`driver OOMKilled (137)`).
    pub label: String,
    /// The supporting findings, after the cause.
    pub supporting: Vec<Finding>,
    /// The driver, when its pod was seen.
    pub driver: Option<DriverSummary>,
}

impl From<&AppVerdict> for VerdictView {
    fn from(v: &AppVerdict) -> Self {
        let c = v.cause();
        Self {
            cause: c.code,
            severity: c.severity,
            summary: c.summary.clone(),
            witness: c.witness,
            hint: c.hint.clone(),
            evidence: c.evidence.clone(),
            label: v.label(),
            supporting: v.findings[1..].to_vec(),
            driver: v.driver.clone(),
        }
    }
}

/// The driver pod's own findings, said as the driver's, in the app verdict's order.
pub fn driver_findings(d: &DriverEvidence<'_>, now: Time) -> Vec<Finding> {
    let mut f = driver_pod::findings(d, now);
    f.sort_by_key(order);
    f
}

/// The driver's end, as the executors' verdicts are told it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverEnd {
    /// The driver pod's name.
    pub pod: String,
    /// Its uid: executors another driver owns (a resubmission under the same app id) did
    /// not end with this one.
    #[serde(default)]
    pub uid: Option<String>,
    /// When it ended (its container's `finishedAt`, its deletion, when it went).
    pub at: Time,
    /// The same from the cluster's clocks only (`finishedAt`, `deletionTimestamp`, a
    /// condition's transition), compared with the executors' own cluster times.
    pub cluster_at: Option<Time>,
    /// When the tool saw it end (its own clock), compared with when executors went.
    pub seen_at: Time,
    /// The driver's finding that says how.
    pub code: Code,
    /// For people: `OOMKilled, 137`.
    pub label: String,
    /// The driver's end was a failure (not a success or a stop).
    pub failed: bool,
}

/// The driver's end, if it has ended.
pub fn driver_end(d: &DriverEvidence<'_>, now: Time) -> Option<DriverEnd> {
    let findings = driver_pod::findings(d, now);
    let end = findings
        .iter()
        .filter(|f| f.code.ends_driver())
        .min_by_key(|f| (rank(f.code), f.severity))?;
    let (cluster_at, seen) = driver_pod::end_times(d);
    // The tool's own sight of the end; a file (explain) has none: the cluster's time then.
    let seen_at = seen.or(cluster_at).unwrap_or(now);
    let at = cluster_at.unwrap_or(seen_at);
    let exit = driver_pod::driver_exit(d.ended.unwrap_or(d.pod))
        .filter(|(_, before_restart)| !before_restart)
        .map(|(t, _)| t);
    let label = match (end.code, exit) {
        (Code::DriverOomKilled, Some(t)) => format!("OOMKilled, {}", t.exit_code),
        (Code::DriverJvmOom, Some(t)) => format!("JVM OOM, {}", t.exit_code),
        (Code::ExecutorFailuresExceeded, _) => "too many executor failures, 11".to_owned(),
        (Code::DriverFailed | Code::DriverStopped, Some(t)) => format!("exit {}", t.exit_code),
        (Code::AppSucceeded, _) => "succeeded".to_owned(),
        (code, _) => code
            .as_str()
            .trim_start_matches("driver-")
            .replace('-', " "),
    };
    Some(DriverEnd {
        pod: d.pod.name.clone(),
        uid: d.pod.uid.clone(),
        at,
        cluster_at,
        seen_at,
        code: end.code,
        label,
        failed: end.severity == Severity::Error
            || matches!(end.code, Code::DriverDeleted | Code::DriverVanished),
    })
}

/// An executor pod that still runs (or waits) after its driver ended, past the grace the
/// garbage collector needs.
pub fn is_orphan(
    end: &DriverEnd,
    state: ExecutorState,
    deleting: bool,
    gone: bool,
    now: Time,
) -> bool {
    !gone
        && !deleting
        && matches!(state, ExecutorState::Running | ExecutorState::Pending)
        && now - end.seen_at > chrono::Duration::seconds(ORPHAN_GRACE_SECS)
}

/// When an executor ended, as far as its own pod says: (exit code, `OOMKilled`,
/// `finishedAt`) of the Spark container, the deletion request, when it went.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExecutorEnd<'a> {
    /// The Spark container's exit: code, `OOMKilled`, `finishedAt`.
    pub exit: Option<(i32, bool, Option<Time>)>,
    /// When the pod became final by the cluster's clock without an exit (an eviction: its
    /// `DisruptionTarget` or `Ready=False` transition).
    pub final_at: Option<Time>,
    /// Its own failure is known from another witness (the driver's reason, its log).
    pub own_failure: bool,
    /// The uid of the driver pod that owns it (its controller reference).
    pub owner_uid: Option<&'a str>,
    /// When its deletion was requested (`deletionTimestamp` − grace).
    pub deletion_requested: Option<Time>,
    /// When its pod went away.
    pub gone_at: Option<Time>,
}

/// Whether an executor's end is its driver's: it ended from shortly before the driver did
/// on (Spark's stop deletes executors first), and not by a failure of its own before that
/// (an OOM of its own stays its own, whenever). Times of the cluster's clocks are compared
/// with the driver's cluster time, times of the tool's with when it saw the driver end: a
/// skewed clock never makes an earlier ending look later.
pub fn ended_with(end: &DriverEnd, ex: &ExecutorEnd<'_>) -> bool {
    let slack = chrono::Duration::seconds(STOP_SLACK_SECS);
    if ex.own_failure {
        return false;
    }
    if let (Some(owner), Some(uid)) = (ex.owner_uid, end.uid.as_deref())
        && owner != uid
    {
        return false; // another run's driver owns it
    }
    if let (Some(f), Some(c)) = (ex.final_at, end.cluster_at)
        && f < c - slack
    {
        return false; // it had ended before, its own way
    }
    if let Some((code, oom, finished)) = ex.exit {
        // Its own: not a clean exit, not a stop, not a kill from outside (137 without OOMKilled).
        let own = !matches!(code, 0 | 143) && (code != 137 || oom);
        let memory = oom || code == 52;
        match (finished, end.cluster_at) {
            _ if own && memory => return false,
            (Some(f), Some(c)) if own && f < c => return false,
            // Any exit well before the driver ended (a node's kill, a stop) was its own.
            (Some(f), Some(c)) if f < c - slack => return false,
            (Some(_), Some(_)) => return true,
            (None, _) | (_, None) if own => return false,
            _ => {}
        }
    }
    if let (Some(d), Some(c)) = (ex.deletion_requested, end.cluster_at) {
        return d >= c - slack;
    }
    ex.gone_at.is_some_and(|g| g >= end.seen_at - slack)
}

/// Findings an ended-with-driver executor no longer has: its deletion as "Spark still
/// counts it", the driver's disagreements (no driver is left), missing (the garbage
/// collector's deletion may be missed by a watch), the kill's mechanics.
fn superseded(code: Code) -> bool {
    matches!(
        code,
        Code::DriverLostPod
            | Code::Unregistered
            | Code::Zombie
            | Code::Missing
            | Code::Sigterm
            | Code::Succeeded
            | Code::NodeSigkill
            | Code::HeartbeatFailure
            | Code::HeartbeatTimeout
            | Code::RpcDisassociated
            | Code::DriverUnreachable
            | Code::GenericError
            | Code::UncaughtException
    )
}

/// Says an executor's findings as an end caused by its driver's: `ended-with-driver`
/// first, the deletion kept as evidence without "Spark still counts".
pub fn attribute_to_driver(findings: &mut Vec<Finding>, end: &DriverEnd) {
    let mut evidence = vec![format!(
        "driver pod {} ended at {} ({})",
        end.pod,
        fmt_time(&end.at),
        end.label
    )];
    for f in findings
        .iter()
        .filter(|f| superseded(f.code) || f.code == Code::Deleted)
    {
        evidence.extend(f.evidence.iter().take(2).cloned());
    }
    findings.retain(|f| !superseded(f.code));
    for f in findings.iter_mut().filter(|f| f.code == Code::Deleted) {
        if let Some(i) = f.summary.find("; Spark still counts") {
            f.summary.truncate(i);
        }
        f.hint = "Deleted when its application ended (Spark's stop, or the garbage collector \
                  deleting the pods the driver owned)."
            .to_owned();
    }
    let how = if end.failed {
        "the driver ended"
    } else {
        "the application ended"
    };
    let mut f = Finding::new(
        Code::EndedWithDriver,
        Severity::Info,
        format!("Ended with its driver: {how} ({})", end.label),
    )
    .hint(
        "Not a failure of this executor and not counted: its application was over. The \
         application's verdict says why the driver ended.",
    )
    .reference("https://kubernetes.io/docs/concepts/architecture/garbage-collection/");
    f.evidence = evidence;
    f.witness = Witness::Pod;
    findings.insert(0, f);
}

/// The order the app verdict lists findings in: what happened before what the
/// configuration predicts (a prediction never leads over an event), and both before a note
/// that the driver was not seen; then worst first, then by
/// the code table's app rank (the driver's end, what blocks it, the executors' patterns —
/// failures, missing, waits —, the rest).
pub fn order(f: &Finding) -> (u8, Severity, u8) {
    // What happened, then what the configuration predicts, then notes on what is not known
    // (the driver not seen): a prediction never leads an event, a note never leads either.
    let class = match (f.witness, f.code) {
        (Witness::Config, _) => 1,
        (_, Code::DriverNotSeen) => 2,
        _ => 0,
    };
    (class, f.severity, rank(f.code))
}

fn rank(code: Code) -> u8 {
    code.app_rank().unwrap_or(u8::MAX)
}

/// The application's verdict, in phases: the driver pod's findings and the app's own,
/// predictions weighed against what started, the executors' part (exit 11's causes, those
/// ended with the driver, orphans), a driver not seen, then running or unknown when nothing
/// else is said.
pub fn app_verdict(ev: &AppEvidence<'_>) -> AppVerdict {
    let mut findings: Vec<Finding> = Vec::new();
    let mut end = None;
    let driver = ev.driver.as_ref().map(|d| {
        findings.extend(driver_pod::findings(d, ev.now));
        end = driver_end(d, ev.now);
        summary(d, end.as_ref())
    });
    if end.is_some() {
        // A driver that ended (deleted while it waited) no longer waits.
        findings.retain(|f| f.code != Code::DriverPending);
    }
    findings.extend(ev.app_findings.iter().cloned());
    let started = driver
        .as_ref()
        .is_some_and(|d| matches!(d.state, ExecutorState::Running | ExecutorState::Succeeded))
        || ev.executors.known > 0;
    weigh_predictions(&mut findings, started, end.is_some());
    executors_part(&mut findings, &ev.executors, end.as_ref());
    if let Some(op) = &ev.operator {
        findings.extend(operator::findings(op, ev.now));
    }
    findings.extend(driver_not_seen(ev));
    findings.sort_by_key(order);
    findings.dedup_by_key(|f| f.code);
    running_or_unknown(&mut findings, driver.as_ref(), end.is_some(), &ev.executors);
    AppVerdict {
        driver,
        findings,
        end,
    }
}

fn summary(d: &DriverEvidence<'_>, end: Option<&DriverEnd>) -> DriverSummary {
    let pod = d.ended.unwrap_or(d.pod);
    let resolved = ClassifyOptions::default().resolve(pod);
    let mut state = classify::classify(pod, &resolved.config);
    if d.gone != DriverGone::No && !state.is_final() {
        state = ExecutorState::Deleted;
    }
    let exit = driver_pod::driver_exit(pod).map(|(t, _)| t);
    let restarts = d
        .pod
        .container_status(&resolved.config.spark_container)
        .map_or(0, |c| c.restart_count);
    DriverSummary {
        pod: d.pod.name.clone(),
        state,
        phase: d.pod.phase().map(str::to_owned),
        node: d.pod.node_name.as_deref().map(str::to_owned),
        exit_code: exit.map(|t| t.exit_code),
        reason: exit.and_then(|t| t.reason.as_deref().map(str::to_owned)),
        restarts,
        ended_at: end.map(|e| fmt_time(&e.at)),
    }
}
