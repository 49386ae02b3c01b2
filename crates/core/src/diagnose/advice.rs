//! What to change, one group per cause: the executors of an app grouped by their verdict's
//! cause, so that each piece of advice names only the executors it applies to.
//!
//! Only an executor's cause counts (its primary finding): the findings beside it (Spark's
//! `driver-removed` of an OOM-killed executor, the `deleted` of its pod) are its evidence,
//! never a recommendation of their own. A cause said for the record (severity info: a
//! scale-down, an end with the driver, a kill through spark-triage) is no advice. Groups are
//! keyed by cause, label and hint: two executors whose hints differ (another memory limit)
//! are two pieces of advice.
//!
//! One order for every place that shows advice — the app verdict's failures finding, the
//! incident strip's change to make, `report`'s recommendations: failures first (what Spark
//! counted or blamed on the app), then by severity, then by how many executors, then the
//! code table's order.

use std::collections::BTreeMap;

use super::{Code, Finding, Severity, Witness};
use crate::model::Time;

/// One executor's cause, for grouping.
#[derive(Debug, Clone, Copy)]
pub struct Case<'a> {
    /// The executor id.
    pub id: i64,
    /// Its verdict's cause.
    pub cause: &'a Finding,
    /// The exit code the verdict rests on.
    pub exit: Option<i32>,
    /// A failure: Spark counted it, or failed it and blamed the app.
    pub failure: bool,
    /// It is pending (it waits; it has not ended).
    pub pending: bool,
    /// When it ended, by the cluster's clock where known (newest first within a group); none
    /// while it runs or waits.
    pub at: Option<Time>,
}

/// Executors with one cause and one piece of advice.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The cause.
    pub code: Code,
    /// The cause as on-call engineers say it: `OOMKilled (137)`.
    pub label: String,
    /// The worst severity among them.
    pub severity: Severity,
    /// Any of them a failure.
    pub failure: bool,
    /// They wait (pending executors), rather than ended.
    pub pending: bool,
    /// Any of them ended (its pod final or gone).
    pub ended: bool,
    /// The executors, newest first.
    pub executors: Vec<i64>,
    /// The advice (the cause's hint, with its concrete value when a witness had one).
    pub hint: String,
    /// The witness of the newest one's cause.
    pub witness: Witness,
    /// Up to three `executor N: summary` lines, newest first.
    pub examples: Vec<String>,
}

impl Group {
    /// The `--conf key=value` its advice carries, if any.
    pub fn setting(&self) -> Option<String> {
        suggestion(&self.hint)
    }
}

/// A cause worth advice: not said for the record only.
pub fn is_advice(cause: &Finding) -> bool {
    cause.severity != Severity::Info
}

/// A cause as on-call engineers say it: the container's words and the exit code.
pub fn cause_label(code: Code, exit: Option<i32>) -> String {
    match (code.label(), exit) {
        ((label, true), Some(c)) => format!("{label} ({c})"),
        ((label, _), _) => label.to_owned(),
    }
}

/// The first `--conf key=value` a hint suggests.
pub fn suggestion(hint: &str) -> Option<String> {
    let at = hint.find("--conf ")?;
    let rest = &hint[at + "--conf ".len()..];
    let token: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ',' && *c != ')')
        .collect();
    let token = token.trim_end_matches('.');
    token.contains('=').then(|| format!("--conf {token}"))
}

/// The cases grouped, in the one order (see the module's documentation). Cases whose cause
/// is no advice ([`is_advice`]) are left out.
pub fn groups<'a>(cases: impl IntoIterator<Item = Case<'a>>) -> Vec<Group> {
    let mut by: BTreeMap<(Code, String, bool, &str), Vec<Case<'a>>> = BTreeMap::new();
    for c in cases.into_iter().filter(|c| is_advice(c.cause)) {
        by.entry((
            c.cause.code,
            cause_label(c.cause.code, c.exit),
            c.pending,
            c.cause.hint.as_str(),
        ))
        .or_default()
        .push(c);
    }
    let mut out: Vec<Group> = by
        .into_iter()
        .map(|((code, label, pending, hint), mut cases)| {
            // Newest first; an unknown time after the known ones, a later id first.
            cases.sort_by(|a, b| b.at.cmp(&a.at).then(b.id.cmp(&a.id)));
            Group {
                code,
                label,
                severity: cases
                    .iter()
                    .map(|c| c.cause.severity)
                    .min()
                    .unwrap_or(Severity::Info),
                failure: cases.iter().any(|c| c.failure),
                pending,
                ended: cases.iter().any(|c| c.at.is_some()),
                executors: cases.iter().map(|c| c.id).collect(),
                hint: hint.to_owned(),
                witness: cases[0].cause.witness,
                examples: cases
                    .iter()
                    .take(3)
                    .map(|c| format!("executor {}: {}", c.id, c.cause.summary))
                    .collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (
            !a.failure,
            a.severity,
            std::cmp::Reverse(a.executors.len()),
            a.code,
        )
            .cmp(&(
                !b.failure,
                b.severity,
                std::cmp::Reverse(b.executors.len()),
                b.code,
            ))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(code: Code, severity: Severity, hint: &str) -> Finding {
        Finding::new(code, severity, format!("{code}")).hint(hint)
    }

    fn case(id: i64, cause: &Finding, failure: bool, at: i64) -> Case<'_> {
        Case {
            id,
            cause,
            exit: None,
            failure,
            pending: false,
            at: chrono::DateTime::from_timestamp(1_800_000_000 + at, 0),
        }
    }

    #[test]
    fn failures_lead_then_severity_then_count_and_each_names_only_its_executors() {
        let oom = f(Code::ContainerOomKilled, Severity::Error, "raise overhead");
        let jvm = f(Code::JvmOom, Severity::Error, "raise heap");
        let missing = f(Code::Missing, Severity::Error, "look for a force delete");
        let unsched = f(Code::Unschedulable, Severity::Warn, "add nodes");
        let scale_down = f(Code::DriverRemoved, Severity::Info, "normal");
        let g = groups([
            case(7, &oom, true, 10),
            case(8, &jvm, true, 20),
            case(10, &missing, false, 30),
            case(11, &missing, false, 31),
            case(12, &unsched, false, 0),
            case(13, &unsched, false, 0),
            case(14, &unsched, false, 0),
            case(15, &scale_down, false, 40),
        ]);
        let order: Vec<(Code, Vec<i64>)> =
            g.iter().map(|g| (g.code, g.executors.clone())).collect();
        assert_eq!(
            order,
            vec![
                (Code::ContainerOomKilled, vec![7]),
                (Code::JvmOom, vec![8]),
                (Code::Missing, vec![11, 10]),
                (Code::Unschedulable, vec![14, 13, 12]),
            ]
        );
        assert_eq!(g[0].hint, "raise overhead");
    }

    #[test]
    fn two_values_for_one_cause_are_two_pieces_of_advice() {
        let small = f(
            Code::ContainerOomKilled,
            Severity::Error,
            "try --conf spark.executor.memoryOverhead=768m.",
        );
        let big = f(
            Code::ContainerOomKilled,
            Severity::Error,
            "try --conf spark.executor.memoryOverhead=2g.",
        );
        let g = groups([
            case(1, &small, true, 1),
            case(2, &big, true, 2),
            case(3, &big, true, 3),
        ]);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].executors, vec![3, 2]);
        assert_eq!(
            g[0].setting().as_deref(),
            Some("--conf spark.executor.memoryOverhead=2g")
        );
        assert_eq!(g[1].executors, vec![1]);
    }

    #[test]
    fn labels_and_suggestions() {
        assert_eq!(
            cause_label(Code::ContainerOomKilled, Some(137)),
            "OOMKilled (137)"
        );
        assert_eq!(cause_label(Code::JvmOom, Some(52)), "JVM OOM (52)");
        assert_eq!(cause_label(Code::Evicted, None), "evicted");
        assert_eq!(
            suggestion("overhead: try --conf spark.executor.memoryOverhead=1g. More"),
            Some("--conf spark.executor.memoryOverhead=1g".to_owned())
        );
        assert_eq!(suggestion("set --conf without a value"), None);
        assert_eq!(suggestion("nothing"), None);
    }
}
