//! What a kubeflow `ScheduledSparkApplication` says: a schedule that fails validation runs
//! nothing, and a run that is due and not started was skipped. The operator leaves
//! `status.nextRun` in the past while it skips (it requeues without writing), so a
//! `nextRun` older than [`GRACE`] is the witness; why it skips comes from the policy and
//! the last run's own object.
//!
//! Ref (the documented API and behaviour of kubeflow/spark-operator 2.x,
//! `internal/controller/scheduledsparkapplication`): `shouldStartNextRun` starts a run
//! under `Allow`, under `Forbid` only once the last run is `COMPLETED` or `FAILED`, under
//! `Replace` after deleting the last run, and under an unset `concurrencyPolicy` (its
//! defaulting webhook sets none) only while no earlier run's `SparkApplication` exists; an
//! object in `FailedValidation` (a schedule or time zone it cannot parse) is never
//! validated again.

use super::{Code, Finding, OperatorFacts, Severity, Witness, reference, safe};
use crate::model::{OperatorApp, Schedule, Time, fmt_time};

/// How late a due run may start before it counts as skipped (the operator starts it
/// within seconds of `nextRun`).
pub const GRACE: chrono::Duration = chrono::Duration::minutes(1);

/// The run due and not started, as of the copy's read (else `now`): its due time. The
/// operator writes nothing while it skips, and its object is read every poll: a copy read
/// more than [`GRACE`] after the due time that still names it is the witness.
pub fn overdue(app: &OperatorApp, now: Time) -> Option<Time> {
    let s = app.schedule.as_deref()?;
    if app.suspended || app.state != "Scheduled" {
        return None;
    }
    let as_of = s.read_at.map_or(now, |r| r.min(now));
    s.next_run.filter(|due| as_of - *due > GRACE)
}

/// Whether a read of this object at `now` is itself evidence that a read at `since` (the
/// list last sent) was not, so the list is sent again though unchanged: the operator writes
/// nothing while it skips, so an unchanged copy read after the due time's grace (or five
/// minutes after it was made, with no operator's word) is what says the run has not
/// started. Once per such moment, whatever the poll interval.
pub fn read_is_witness(app: &OperatorApp, since: Option<Time>, now: Time) -> bool {
    let Some(s) = app.schedule.as_deref() else {
        return false;
    };
    let judgeable = if app.state == "Scheduled" {
        s.next_run.map(|due| due + GRACE)
    } else if matches!(app.state.as_str(), "" | "Validating") {
        app.created_at.map(|made| made + UNSEEN)
    } else {
        None
    };
    !app.suspended && judgeable.is_some_and(|t| t < now && since.is_none_or(|s| s <= t))
}

/// How long a new schedule may wait for the operator's first word (`scheduleState`).
pub const UNSEEN: chrono::Duration = chrono::Duration::minutes(5);

/// A schedule no operator has taken up (no `scheduleState` [`UNSEEN`] after it was made):
/// since when.
pub fn unscheduled(app: &OperatorApp, now: Time) -> Option<Time> {
    let s = app.schedule.as_deref()?;
    let made = app.created_at?;
    let as_of = s.read_at.map_or(now, |r| r.min(now));
    (!app.suspended && matches!(app.state.as_str(), "" | "Validating") && as_of - made > UNSEEN)
        .then_some(made)
}

/// `ScheduledSparkApplication etl/nightly: schedule "0 2 * * *" (UTC), concurrencyPolicy
/// Forbid, state Scheduled`.
fn schedule_line(app: &OperatorApp, s: &Schedule) -> String {
    format!(
        "{}: schedule {:?}{}, concurrencyPolicy {}, state {}",
        app.title(),
        s.cron.as_deref().unwrap_or(""),
        s.time_zone
            .as_deref()
            .map_or_else(String::new, |z| format!(" ({})", safe(z))),
        s.concurrency
            .as_deref()
            .map_or_else(|| "(not set)".to_owned(), safe),
        if app.state.is_empty() {
            "(none yet)"
        } else {
            &app.state
        }
    )
}

/// The findings of a schedule.
pub(super) fn findings(f: &OperatorFacts<'_>, now: Time) -> Vec<Finding> {
    let app = f.app;
    let Some(s) = app.schedule.as_deref() else {
        return Vec::new();
    };
    let base = |code, summary: String| {
        let mut x = Finding::new(code, Severity::Error, summary)
            .witness(Witness::Operator)
            .evidence(schedule_line(app, s))
            .reference(reference(app.kind));
        if let Some(name) = &s.last_run_name {
            x = x.evidence(format!(
                "last run: SparkApplication {name}{}{}",
                s.last_run
                    .map_or_else(String::new, |t| format!(", started {}", fmt_time(&t))),
                s.last_run_state
                    .as_deref()
                    .map_or_else(String::new, |st| format!(", state {st}"))
            ));
        }
        if !s.past_failed.is_empty() {
            x = x.evidence(format!(
                "past failed runs: {}",
                s.past_failed
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        x
    };
    if app.state == "FailedValidation" {
        let why = app
            .message
            .as_deref()
            .map_or_else(|| "no reason given".to_owned(), safe);
        return vec![
            base(
                Code::ScheduleInvalid,
                format!(
                    "{} runs nothing: its schedule failed validation ({why})",
                    app.title()
                ),
            )
            .hint(
                "Fix spec.schedule (five cron fields, or @every 1h) or spec.timeZone (an IANA \
                 name such as Europe/Paris). The operator never validates an object in \
                 FailedValidation again: after the fix, delete and re-apply it.",
            ),
        ];
    }
    if let Some(since) = unscheduled(app, now) {
        return vec![
            base(
                Code::RunsSkipped,
                format!(
                    "{} was never scheduled: no scheduleState since it was created at {}; no \
                     operator has taken it up",
                    app.title(),
                    fmt_time(&since)
                ),
            )
            .hint(
                "Is the kubeflow operator running, and does it watch this namespace \
                 (spark.jobNamespaces)? kubectl describe the object: no event from the \
                 operator means it never saw it.",
            ),
        ];
    }
    let Some(due) = overdue(app, now) else {
        return Vec::new();
    };
    let last = s.last_run_name.as_deref();
    let policy = s.concurrency.as_deref().filter(|p| !p.is_empty());
    // The last run's state, when its object was read ("" is kubeflow's new).
    let state = s
        .last_run_state
        .as_deref()
        .map(|st| if st.is_empty() { "NEW" } else { st });
    let mut severity = Severity::Error;
    let (cause, hint) = match (policy, last, s.last_run_finished()) {
        (Some("Forbid"), Some(run), Some(false)) => (
            format!(
                "the last run {run} is still {} and concurrencyPolicy is Forbid, so the \
                 operator skips every run due until it ends",
                state.unwrap_or("running")
            ),
            format!(
                "Find why {run} runs longer than the schedule's interval (its own verdict, \
                 below or in the apps pane); Replace would kill it for the next run, Allow \
                 would run both."
            ),
        ),
        // Skipped while the last run ran; the operator looks again only at the next slot.
        (Some("Forbid"), Some(run), Some(true))
            if s.last_run_ended.is_some_and(|end| end > due) =>
        {
            severity = Severity::Warn;
            (
                format!(
                    "the last run {run} still ran then (it ended {} at {}) and \
                     concurrencyPolicy is Forbid: the operator skipped it, and starts the next \
                     run at the next scheduled time",
                    state.unwrap_or("ended"),
                    s.last_run_ended.map_or_else(String::new, |t| fmt_time(&t))
                ),
                format!(
                    "{run} ran past the schedule's interval: find why (its own verdict), or \
                     space the schedule wider; Replace would kill a late run for the next."
                ),
            )
        }
        // Only while a run's object exists (without one, the operator starts the next).
        (None, Some(_), _) if s.run_present.is_some() => (
            format!(
                "concurrencyPolicy is not set, and the operator starts no run while an \
                 earlier run's SparkApplication ({}) exists",
                s.run_present.as_deref().unwrap_or_default()
            ),
            "Set spec.concurrencyPolicy (Allow, Forbid or Replace): unset, only the first run \
             ever starts while the operator keeps past runs (successfulRunHistoryLimit, \
             failedRunHistoryLimit)."
                .to_owned(),
        ),
        _ => (
            match (last, state) {
                (Some(run), None) => format!(
                    "the operator did not start it (its last run {run} is not among the \
                     SparkApplications read)"
                ),
                _ => "the operator did not start it".to_owned(),
            },
            "Is the operator running and watching this namespace (spark.jobNamespaces)? Its \
             events on the object (kubectl describe) say when it could not create the run's \
             SparkApplication (a webhook, a quota on objects)."
                .to_owned(),
        ),
    };
    let mut x = base(
        Code::RunsSkipped,
        format!("The run due at {} has not started: {cause}", fmt_time(&due)),
    )
    .hint(hint);
    x.severity = severity;
    vec![x]
}
