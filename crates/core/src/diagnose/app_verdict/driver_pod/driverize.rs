//! An executor rule's finding about the driver pod, said as the driver's: the code table's
//! driver column, with the exceptions (an exit before a restart, exit 11, a SIGTERM after a
//! deletion) and the driver's own words.

use super::*;

/// One executor-rule finding about the driver pod, said as the driver's.
pub(super) fn driverize(
    f: Finding,
    pod: &ExecutorPod,
    container: &str,
    state: ExecutorState,
    disrupted: bool,
    d: &DriverEvidence<'_>,
) -> Option<Finding> {
    let restarted_only = driver_exit(pod).is_some_and(|(_, before_restart)| before_restart);
    // The driver code this one becomes (the code table's column); the arms below make the
    // exceptions (exit 11, a SIGTERM after a deletion) and the driver's words.
    let target = f.code.as_driver()?;
    let g = match f.code {
        // An exit before a restart is the restart finding's, not the app's end.
        Code::ContainerOomKilled
        | Code::JvmOom
        | Code::GenericError
        | Code::UncaughtException
        | Code::Sigterm
        | Code::NodeSigkill
        | Code::Succeeded
        | Code::Sigsegv
        | Code::Sigabrt
        | Code::NotExecutable
        | Code::ClassNotFound
        | Code::HeartbeatFailure
        | Code::LocalDirFailure
        | Code::TaskReaper
        | Code::BlockManagerReregistration
            if restarted_only =>
        {
            return None;
        }
        Code::ContainerOomKilled => {
            // The limit it had when it died (an in-place resize may have left the spec ahead).
            let limit = pod.memory_limit(container).map(|l| l.had.to_string());
            let at = limit
                .as_deref()
                .map(|l| format!(" at its {l} memory limit"))
                .unwrap_or_default();
            retitle(
                f,
                target,
                Severity::Error,
                format!(
                    "The driver's container was OOMKilled{at} (exit {}): the kernel's cgroup OOM killer ended the application",
                    driver_exit(pod).map_or(137, |(t, _)| t.exit_code)
                ),
                oom_killed_hint(limit.as_deref()),
            )
            .reference(REF_DRIVER_MEMORY)
        }
        Code::JvmOom => {
            let summary = format!(
                "The driver's JVM ran out of heap ({})",
                exit_words(pod, container)
            );
            let mut g = jvm_oom(summary);
            g.evidence = f.evidence;
            g
        }
        Code::Succeeded => retitle(
            f,
            target,
            Severity::Info,
            "The driver finished (exit 0): the application completed".to_owned(),
            "Nothing to fix. Executors Spark deleted at the end are normal endings, not failures."
                .to_owned(),
        ),
        Code::Sigterm => stopped(f, target, pod, d, disrupted)?,
        Code::NodeSigkill | Code::ContainerStatusUnknown if disrupted => return None,
        Code::ContainerStatusUnknown => retitle(
            f,
            target,
            Severity::Error,
            format!(
                "The driver's container was lost with its node or runtime ({})",
                exit_words(pod, container)
            ),
            "The driver's node or its container runtime went away; this is not an OOM whatever \
             \"137\" suggests. Run drivers on on-demand (non-spot) nodes and give them a \
             PriorityClass."
                .to_owned(),
        ),
        Code::GenericError
        | Code::UncaughtException
        | Code::NodeSigkill
        | Code::Sigsegv
        | Code::Sigabrt
        | Code::NotExecutable
        | Code::ClassNotFound
        | Code::HeartbeatFailure
        | Code::LocalDirFailure
        | Code::TaskReaper
        | Code::BlockManagerReregistration => failed(f, target, pod, container, d),
        Code::Evicted
        | Code::LocalStorageExceeded
        | Code::NodeShutdown
        | Code::Preempted
        | Code::NodeLost => disrupted_end(f, target),
        Code::Deleted => {
            if state.is_final() {
                return None; // its exit says how it ended
            }
            let del = pod.deletion.as_ref()?;
            deleted(pod, del, state)
        }
        Code::SchedulerRejected
        | Code::WorkloadEvicted
        | Code::Unschedulable
        | Code::SchedulingGated
        | Code::GangWaiting
        | Code::QueueWaiting
        | Code::SchedulerSilent
        | Code::ImagePull
        | Code::ContainerConfigError
        | Code::ContainerCreatingStuck
        | Code::InitContainerFailed
        | Code::AdmissionRejected => before_running(f, target),
        Code::SidecarFailed | Code::StuckRunning => {
            let mut g = f;
            g.hint = for_driver(&g.hint);
            g.summary = format!("The driver pod: {}", g.summary);
            g
        }
        _ => return None,
    };
    Some(g)
}

/// The driver stopped by SIGTERM: after its pod's deletion (said as the deletion), else
/// from outside (a drain, a preemption, the operator), never a failure of its code.
fn stopped(
    f: Finding,
    target: Code,
    pod: &ExecutorPod,
    d: &DriverEvidence<'_>,
    disrupted: bool,
) -> Option<Finding> {
    if let Some(del) = pod.deletion.as_ref().or(d.pod.deletion.as_ref()) {
        let mut g = deleted(pod, del, ExecutorState::Running);
        g.summary = format!(
            "{}; it stopped with SIGTERM (exit 143): stopped from outside, not failed by its code",
            g.summary
        );
        g.evidence.splice(0..0, f.evidence);
        return Some(g);
    }
    Some(
        retitle(
            f,
            target,
            if disrupted {
                Severity::Info
            } else {
                Severity::Warn
            },
            "The driver was stopped by SIGTERM (exit 143): a stop from outside, not a failure \
             of the application"
                .to_owned(),
            "Something asked the driver to stop: a deletion of the pod or of its \
             SparkApplication, a drain, a preemption. A driver that exits 143 because \
             spark.stop() ran past the pod's grace period finished its work \
             (kubeflow/spark-operator#2775); raise terminationGracePeriodSeconds in the \
             driver's pod template if the operator reports such runs as failed."
                .to_owned(),
        )
        .reference(REF_STOP),
    )
}

/// The driver failed by its own exit (not a stop from outside): Spark's give-up after too
/// many executor failures (exit 11), else its own last words (the exit exception, the
/// termination message) before the log's last exception.
fn failed(
    f: Finding,
    target: Code,
    pod: &ExecutorPod,
    container: &str,
    d: &DriverEvidence<'_>,
) -> Finding {
    let code = driver_exit(pod).map(|(t, _)| t.exit_code);
    if code == Some(11) {
        retitle(
            f,
            Code::ExecutorFailuresExceeded,
            Severity::Error,
            "The driver gave up after too many executor failures (exit 11, spark.executor.maxNumFailures)".to_owned(),
            "Spark aborts the application once more executors failed than \
             spark.executor.maxNumFailures allows (default max(2 × \
             spark.executor.instances, 3)). Fix what ended the executors (their causes \
             below); raising the budget only delays the abort."
                .to_owned(),
        )
        .reference(REF_EXIT)
    } else {
        let words = exit_words(pod, container);
        let hint = match code {
            Some(1) => "The application's main code threw (Spark's driver exits 1 on an \
                        uncaught exception in the user's main): the driver log's last \
                        exception says why."
                .to_owned(),
            Some(137) => "SIGKILL without OOMKilled: the node killed the driver (memory \
                          pressure outside the container's limit, a runtime kill). Set \
                          the driver's requests equal to its limits and keep drivers off \
                          overcommitted nodes."
                .to_owned(),
            _ => "Read the driver's log: its last exception or error names the cause.".to_owned(),
        };
        let mut g = retitle(
            f,
            target,
            Severity::Error,
            format!("The driver failed ({words})"),
            hint,
        )
        .reference(REF_EXIT);
        // Its own words first (what ended the main, said by Spark or the
        // container); the log's last exception is a guess beside them.
        match last_words(pod, d) {
            Some(w) => {
                let head = w.headline();
                g.summary = format!("The driver failed ({words}): {head}");
                // The exit finding quotes the termination message's first line.
                if w.from == EXIT_EXCEPTION_ANNOTATION {
                    g = g.evidence(format!("{}: {head}", w.from));
                }
                let cause = w.root_cause().filter(|c| *c != head);
                if let Some(cause) = &cause {
                    g = g.evidence(format!("{}: root cause: {cause}", w.from));
                }
                // Exit 1 is the main's exception: the hint says what failed first.
                if code == Some(1) {
                    g.hint = match cause {
                        Some(cause) => format!(
                            "The application's main threw the exception above; what \
                             failed first ({}, its {} Caused by): {cause}. The \
                             driver's log has the whole stack.",
                            w.from,
                            if w.text.ends_with('…') {
                                "last kept"
                            } else {
                                "innermost"
                            }
                        ),
                        None => format!(
                            "The application's main threw the exception above ({}); \
                             the driver's log has the whole stack.",
                            w.from
                        ),
                    };
                }
            }
            None => {
                if let Some(line) = d.log_tail.and_then(last_exception) {
                    g = g.evidence(format!("log: {}", line.trim()));
                }
            }
        }
        g
    }
}

/// The driver ended by a disruption (an eviction, a preemption, its node lost): the app
/// ends with it, and nothing replaces it.
fn disrupted_end(f: Finding, target: Code) -> Finding {
    match f.code {
        Code::Evicted | Code::LocalStorageExceeded | Code::NodeShutdown => retitle(
            f.clone(),
            target,
            Severity::Error,
            format!("The driver was evicted: {}", f.summary),
            "An evicted driver ends the application (nothing replaces it): keep drivers on \
         stable nodes (no spot), set the driver's requests equal to its limits, give it a \
         PriorityClass and a PodDisruptionBudget, or let the operator restart it \
         (restartPolicy in the SparkApplication)."
                .to_owned(),
        )
        .reference(REF_DISRUPTION),
        Code::Preempted => retitle(
            f.clone(),
            target,
            Severity::Error,
            format!("The driver was preempted: {}", f.summary),
            "A preempted driver ends the application: give drivers a higher PriorityClass \
         (spark.kubernetes.driver.podTemplateFile, or the operator's driver priorityClassName) \
         than the workloads that preempt them."
                .to_owned(),
        )
        .reference(REF_DISRUPTION),
        // Its node lost.
        _ => retitle(
            f.clone(),
            target,
            Severity::Error,
            format!("The driver's node was lost: {}", f.summary),
            "The driver's node stopped reporting; the application is lost with it. Run drivers \
         on stable nodes."
                .to_owned(),
        ),
    }
}

/// The driver before it ran: refused (by the scheduler, its node, the admission), stopped
/// by its queue, or waiting.
fn before_running(f: Finding, target: Code) -> Finding {
    match f.code {
        Code::SchedulerRejected | Code::WorkloadEvicted => {
            let summary = if f.code == Code::SchedulerRejected {
                format!(
                    "The driver never ran: {}",
                    f.summary.trim_end_matches(": the pod never ran")
                )
            } else {
                format!("The driver was stopped: {}", f.summary)
            };
            let hint = for_driver(&f.hint);
            let severity = f.severity;
            retitle(f, target, severity, summary, hint)
        }
        // Unschedulable, gated, queued, an image or a config error, stuck creating, an init
        // container failed, the admission rejected it.
        _ => {
            // A refusal by the node ended it (the table's column); the others wait.
            let failed = target != Code::DriverPending;
            let summary = if failed {
                format!("The driver was refused by its node: {}", f.summary)
            } else {
                format!("The driver waits: {}", f.summary)
            };
            let hint = for_driver(&f.hint);
            let severity = if failed { Severity::Error } else { f.severity };
            retitle(f, target, severity, summary, hint)
        }
    }
}

fn retitle(
    mut f: Finding,
    code: Code,
    severity: Severity,
    summary: String,
    hint: String,
) -> Finding {
    f.code = code;
    f.severity = severity;
    f.summary = summary;
    f.hint = hint;
    f
}
