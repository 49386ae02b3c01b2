//! The order of findings: the primary cause first, by witness strength, then class and rule.

use super::*;
use crate::diagnose::code::Kind;

/// Codes read from the Spark container's exit (the code table's `Exit`).
pub(super) fn is_exit_code(code: Code) -> bool {
    code.kind() == Kind::Exit
}

/// A finding about how the pod itself ended (an exit, or the kubelet ending it): what
/// Spark's removal reason can carry, so what a pod rebuilt from it can show.
pub(super) fn is_pod_ending(code: Code) -> bool {
    code.kind() != Kind::Other
}

/// Primary first: causes before disagreements before mechanisms, then by witness
/// precedence, observed before reconstructed, then severity, then the rule order.
pub(super) fn order(findings: &mut Vec<Finding>) {
    // One finding per code: the best-witnessed copy (the pod's over the driver's rebuild).
    findings.sort_by_key(|f| (f.code, f.witness, f.reconstructed));
    findings.dedup_by_key(|f| f.code);
    findings.sort_by_key(|f| {
        (
            f.code.standing(),
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
