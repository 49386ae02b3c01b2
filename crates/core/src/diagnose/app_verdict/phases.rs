//! The phases of [`app_verdict`](super::app_verdict) after the driver pod's findings: the
//! predictions weighed, the executors' part, a driver not seen, running or unknown.

use super::*;

/// A configuration Spark refuses at start, from a driver that started: the version (and so
/// the defaults) the tool read is not the one that ran. Said, not asserted.
pub(super) fn weigh_predictions(findings: &mut [Finding], started: bool, ended: bool) {
    for f in findings
        .iter_mut()
        .filter(|f| f.witness == Witness::Config && f.severity == Severity::Error)
    {
        if started {
            f.severity = Severity::Info;
            f.summary = format!(
                "Predicted a refusal at start, but the driver started (the settings in effect \
                 are not the ones read: set in the application's code, or another Spark \
                 version's defaults): {}",
                f.summary
            );
        } else if !ended {
            // A driver still waiting to start: what blocks it now leads, this follows.
            f.severity = Severity::Warn;
        }
    }
}

/// The executors' part: exit 11's causes named, those that ended with the driver counted
/// on its end, and executors still running after it (orphans).
pub(super) fn executors_part(
    findings: &mut Vec<Finding>,
    tally: &ExecutorTally,
    end: Option<&DriverEnd>,
) {
    // Exit 11: the executors' own causes are the reason; name them in the verdict.
    if let Some(loop_summary) = findings
        .iter()
        .find(|f| f.code == Code::CrashLoop)
        .map(|f| f.summary.clone())
        && let Some(f) = findings
            .iter_mut()
            .find(|f| f.code == Code::ExecutorFailuresExceeded)
    {
        f.evidence.push(format!("crash-loop: {loop_summary}"));
    }
    findings.sort_by_key(order);
    if tally.ended_with_driver > 0
        && let Some(f) = findings.iter_mut().find(|f| f.code.ends_driver())
    {
        f.evidence.push(format!(
            "{} executor{} ended with the driver (not failures of their own)",
            tally.ended_with_driver,
            if tally.ended_with_driver == 1 {
                ""
            } else {
                "s"
            }
        ));
    }
    if !tally.orphans.is_empty() {
        let n = tally.orphans.len();
        let mut named: Vec<String> = tally.orphans.iter().take(5).cloned().collect();
        if n > 5 {
            named.push(format!("and {} more", n - 5));
        }
        findings.push(
            Finding::new(
                Code::OrphanedExecutors,
                Severity::Warn,
                format!(
                    "{n} executor pod{} still run{} after the driver ended: {}",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "s" } else { "" },
                    named.join(", ")
                ),
            )
            .witness(Witness::Pod)
            .evidence_all(
                end.map(|e| format!("the driver ended at {} ({})", fmt_time(&e.at), e.label)),
            )
            .hint(
                "Nothing will use them: the garbage collector deletes executors that name the \
                 driver pod as their owner, so these have none (or it was removed, or the \
                 driver was deleted with --cascade=orphan). Delete them (kubectl delete pod) \
                 to free their nodes.",
            )
            .reference("https://kubernetes.io/docs/concepts/architecture/garbage-collection/"),
        );
    }
}

/// A driver not seen: from an older recording, known from its event log only, or unknown.
pub(super) fn driver_not_seen(ev: &AppEvidence<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    if ev.driver.is_none()
        && let Some(phase) = ev.driver_phase
    {
        out.push(
            Finding::new(
                Code::DriverNotSeen,
                Severity::Info,
                format!(
                    "Driver {phase}: its pod's details were not recorded (a recording from an \
                     older spark-triage), so the driver is not judged"
                ),
            )
            .witness(Witness::Inference)
            .hint("Record again with this version to judge the driver."),
        );
    } else if ev.driver.is_none()
        && let Some(end) = ev.logged_end
    {
        if ev.unfinished {
            out.push(
                Finding::new(
                    Code::AppUnfinished,
                    Severity::Warn,
                    format!("The application never ended by its event log: {end}"),
                )
                .witness(Witness::EventLog)
                .hint(
                    "No SparkListenerApplicationEnd: the driver is still running, or it died \
                     without stopping (OOM-killed, evicted, deleted: no listener ran to write the \
                     end). Read the driver pod's status and events while they last (kubectl get \
                     pod -l spark-role=driver,spark-app-selector=APP_ID -o yaml), and keep a \
                     flight recorder running (spark-triage record DIR --rotate 1h) to keep them.",
                )
                .reference(
                    "https://spark.apache.org/docs/latest/monitoring.html#viewing-after-the-fact",
                ),
            );
        }
        out.push(
            Finding::new(
                Code::DriverNotSeen,
                Severity::Info,
                format!("Driver known from its event log only (an event log holds no pods): {end}"),
            )
            .witness(Witness::EventLog)
            .hint(
                "The event log says when the application started and ended and, from Spark 4.0, \
                 its exit code; how its driver pod ended (OOMKilled, evicted, deleted) is not in \
                 it: read the driver pod's status and events while they last, or keep a flight \
                 recorder running (spark-triage record DIR --rotate 1h).",
            ),
        );
    } else if ev.driver.is_none() && ev.operator.is_none() {
        // (An operator's object says where the driver is: `operator::findings`.)
        out.push(
            Finding::new(
                Code::DriverNotSeen,
                Severity::Info,
                "Driver unknown: no driver pod seen (outside the namespace or label selector, \
                 or not readable); the verdict rests on the executors alone",
            )
            .witness(Witness::Inference)
            .hint(
                "Include the driver pod (spark-role=driver, the same spark-app-selector) to judge \
                 the driver too: live, widen the scope (-n, -A, -l) to its namespace and labels; \
                 for explain, add it to the file.",
            ),
        );
    }
    out
}

/// Nothing but notes about a running driver: "running" leads; nothing at all: unknown.
pub(super) fn running_or_unknown(
    findings: &mut Vec<Finding>,
    driver: Option<&DriverSummary>,
    ended: bool,
    tally: &ExecutorTally,
) {
    let running = driver.is_some_and(|d| d.state == ExecutorState::Running) && !ended;
    // Predictions from the configuration do not make a running app anything but running.
    let quiet = findings
        .iter()
        .all(|f| f.severity == Severity::Info || f.witness == Witness::Config);
    if running && quiet {
        let d = driver.expect("running implies a driver");
        let on = d
            .node
            .as_deref()
            .map(|n| format!(" on {n}"))
            .unwrap_or_default();
        findings.insert(
            0,
            Finding::new(
                Code::AppRunning,
                Severity::Info,
                format!(
                    "Running: the driver runs{on}; {} executor{} running, {} pending{}",
                    tally.running,
                    if tally.running == 1 { "" } else { "s" },
                    tally.pending,
                    match tally.errors {
                        0 => String::new(),
                        1 => "; 1 executor in error (its verdict says why)".to_owned(),
                        n => format!("; {n} executors in error (their verdicts say why)"),
                    }
                ),
            )
            .evidence(format!("driver pod {}: status.phase=Running", d.pod)),
        );
    }
    if findings.is_empty() {
        // A driver seen with no phase and no status: say so rather than nothing.
        let pod = driver.map_or("?", |d| d.pod.as_str());
        findings.push(
            Finding::new(
                Code::DriverPending,
                Severity::Info,
                format!("Driver state unknown: the pod {pod} reports no status yet"),
            )
            .hint("Wait for the API server to report the pod's status."),
        );
    }
}
