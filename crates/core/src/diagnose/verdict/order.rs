//! The order of findings: the primary cause first, by witness strength, then class and rule.

use super::*;

/// Codes read from the Spark container's exit.
pub(super) fn is_exit_code(code: Code) -> bool {
    matches!(
        code,
        Code::ContainerOomKilled
            | Code::NodeSigkill
            | Code::JvmOom
            | Code::UncaughtException
            | Code::LocalDirFailure
            | Code::HeartbeatFailure
            | Code::TaskReaper
            | Code::Sigterm
            | Code::Sigsegv
            | Code::Sigabrt
            | Code::NotExecutable
            | Code::GenericError
            | Code::Succeeded
            | Code::ContainerStatusUnknown
            | Code::BlockManagerReregistration
            | Code::ClassNotFound
    )
}

/// A finding about how the pod itself ended (an exit, or the kubelet ending it): what
/// Spark's removal reason can carry, so what a pod rebuilt from it can show.
pub(super) fn is_pod_ending(code: Code) -> bool {
    is_exit_code(code)
        || matches!(
            code,
            Code::Evicted
                | Code::LocalStorageExceeded
                | Code::NodeShutdown
                | Code::AdmissionRejected
        )
}

/// What a finding says about the executor, for ordering: 0 a cause, 1 a weak cause (a
/// generic exit that a log line can name better), 2 a pod × driver disagreement (a
/// consequence worth acting on), 3 how it ended rather than why (never primary while
/// anything else is known).
pub(super) fn class(code: Code) -> u8 {
    match code {
        Code::GenericError => 1,
        Code::DriverLostPod | Code::Unregistered | Code::Zombie => 2,
        Code::Deleted | Code::Sigterm | Code::DriverRemoved => 3,
        _ => 0,
    }
}

/// Primary first: causes before disagreements before mechanisms, then by witness
/// precedence, observed before reconstructed, then severity, then the rule order.
pub(super) fn order(findings: &mut Vec<Finding>) {
    // One finding per code: the best-witnessed copy (the pod's over the driver's rebuild).
    findings.sort_by_key(|f| (f.code, f.witness, f.reconstructed));
    findings.dedup_by_key(|f| f.code);
    findings.sort_by_key(|f| {
        (
            class(f.code),
            f.witness,
            f.reconstructed,
            f.severity,
            rule_rank(f.code),
        )
    });
}

/// The order rules list their findings in (`Code::ALL`).
pub(super) fn rule_rank(code: Code) -> usize {
    Code::ALL
        .iter()
        .position(|c| *c == code)
        .unwrap_or(usize::MAX)
}
