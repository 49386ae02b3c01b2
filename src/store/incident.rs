//! An application's incident in a few words: how its executors ended (by cause), what is
//! missing or waiting, its failure budget, the last failure and the change to make. The
//! executors pane's strip, the apps pane's order and `status` read it from here.

use std::collections::BTreeMap;

use super::{AppRecord, ExecutorRecord};
use spark_triage_core::{
    diagnose::{
        Code, Severity,
        app::{AppFacts, failure_budget},
        budget::FailureBudget,
    },
    model::{ExecutorState, Time},
};

/// What went wrong with an app, summarised.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Incident {
    /// Ended executors by cause, most frequent first: ("OOMKilled (137)", 2).
    pub causes: Vec<(String, usize)>,
    pub missing: usize,
    /// Pending executors by why they wait, most frequent first.
    pub pending: Vec<(String, usize)>,
    /// "failures 2/20 (maxNumFailures)" and the like; `None` when nothing was counted.
    pub budget: Option<String>,
    /// The newest failure: executor id, its cause, when it ended.
    pub last_failure: Option<(i64, String, Time)>,
    /// A concrete change from the newest failure whose hint has one: the failure's cause
    /// and the `--conf key=value`.
    pub suggestion: Option<(String, String)>,
    /// Executor pods the tool holds, and the ones Spark keeps (`spark-exec-inactive`).
    pub held: usize,
    pub kept: usize,
}

impl Incident {
    /// Nothing to report.
    pub fn is_quiet(&self) -> bool {
        self.causes.is_empty() && self.missing == 0 && self.pending.is_empty()
    }
}

/// A cause as on-call engineers say it: the container's words and the exit code.
pub fn cause_label(code: Code, exit: Option<i32>) -> String {
    match (code.label(), exit) {
        ((label, true), Some(c)) => format!("{label} ({c})"),
        ((label, _), _) => label.to_owned(),
    }
}

/// When an executor ended, by the cluster's clock where it is known ([`super::times::ended`]).
pub fn ended_at(e: &ExecutorRecord) -> Option<Time> {
    super::times::ended(e).map(|(t, _)| t)
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

impl AppRecord {
    pub(super) fn compute_incident(&self) -> Incident {
        let mut causes: BTreeMap<String, usize> = BTreeMap::new();
        let mut ended: Vec<(Time, &ExecutorRecord)> = Vec::new();
        let mut missing = 0;
        for e in self.executors.values() {
            if e.is_missing() {
                missing += 1;
                continue;
            }
            let Some(f) = e.verdict.cause() else {
                continue;
            };
            if !e.state().is_final() || f.severity == Severity::Info {
                continue;
            }
            *causes
                .entry(cause_label(f.code, e.exit_code()))
                .or_default() += 1;
            if let Some(at) = ended_at(e) {
                ended.push((at, e));
            }
        }
        let mut causes: Vec<(String, usize)> = causes.into_iter().collect();
        causes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut pending = self.pending_reasons();
        pending.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        // Newest first (a later id first within one instant).
        ended.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.id.cmp(&a.1.id)));
        let last_failure = ended.first().and_then(|(at, e)| {
            let f = e.verdict.cause()?;
            Some((e.id, cause_label(f.code, e.exit_code()), *at))
        });
        // The newest failure whose hint has a concrete value to copy.
        let suggestion = ended.iter().find_map(|(_, e)| {
            let f = e.verdict.cause()?;
            Some((cause_label(f.code, e.exit_code()), suggestion(&f.hint)?))
        });
        Incident {
            causes,
            missing,
            pending,
            budget: self.budget_text(),
            last_failure,
            suggestion,
            held: self.executors.values().filter(|e| e.pod.is_held()).count(),
            kept: self
                .executors
                .values()
                .filter(|e| e.pod.is_inactive())
                .count(),
        }
    }

    /// The failure budget in a few words, when Spark counted anything.
    pub fn budget_text(&self) -> Option<String> {
        let (used, budget) = self.failure_budget();
        if used == 0 {
            return None;
        }
        Some(match budget {
            FailureBudget::Limit(l) => format!("failures {used}/{l} allowed (maxNumFailures)"),
            FailureBudget::NoneBeforeSpark4 => {
                format!("failures {used} (no limit before Spark 4)")
            }
            FailureBudget::Unlimited => format!("failures {used} (no limit: dynamic allocation)"),
            FailureBudget::Unknown => {
                format!("failures {used} (limit unknown: driver config not read)")
            }
        })
    }

    /// The failures Spark counted (forgotten executors' included) and Spark's budget.
    pub fn failure_budget(&self) -> (usize, FailureBudget) {
        let facts = AppFacts {
            spark_version: self
                .executors
                .values()
                .find_map(|e| spark_triage_core::version::SparkVersion::of(&e.pod)),
            max_failures: self.config.max_failures,
            executor_instances: self.config.executor_instances,
            dynamic_allocation: self.config.dynamic_allocation,
            max_executors: self.config.max_executors,
            config_known: self.config.from_driver,
            ..AppFacts::default()
        };
        (self.counted_failures(), failure_budget(&facts))
    }

    pub(super) fn compute_trouble(&self) -> (usize, usize) {
        // The app verdict holds the app findings and the driver's.
        let app_findings = &self.verdict().findings;
        let errors = self.alerts()
            + app_findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .count();
        let warnings = self
            .executors
            .values()
            .filter(|e| {
                e.verdict.severity() == Some(Severity::Warn)
                    || (e.state() == ExecutorState::Pending && e.verdict.severity().is_some())
            })
            .count()
            + app_findings
                .iter()
                .filter(|f| f.severity == Severity::Warn)
                .count();
        (errors, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
