//! An application's incident in a few words: how its executors ended (by cause), what is
//! missing or waiting, its failure budget, the last failure and the change to make. The
//! executors pane's strip, the apps pane's order and `status` read it from here.

use std::collections::BTreeMap;

use spark_triage_core::diagnose::Severity;
use spark_triage_core::diagnose::app::{AppFacts, failure_budget};
use spark_triage_core::diagnose::budget::FailureBudget;
use spark_triage_core::model::{ExecutorState, Time};

use super::{AppRecord, ExecutorRecord};

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

/// Spark's failure budget as numbers (`status`, `report`, MCP): what it counted, what it
/// allows, where the limit comes from and the Spark version whose rules apply.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct BudgetView {
    /// Executor failures Spark counted (distinct ids first seen failed, Spark 4.0+;
    /// forgotten executors' included).
    pub failures_counted: usize,
    /// How many failures Spark allows before it aborts the app with exit 11 (it aborts when
    /// the count passes this); null when no limit applies or it is not known.
    pub failures_allowed: Option<u32>,
    /// Where the limit comes from: `max-num-failures` (the setting), `default-instances`
    /// (max(2 × spark.executor.instances, 3)), `default-max-executors` (the same with dynamic
    /// allocation's maxExecutors), `unlimited` (dynamic allocation without maxExecutors),
    /// `none-before-spark4`, `unknown` (the driver's configuration was not read).
    pub limit_from: BudgetFrom,
    /// The Spark version whose rules were applied (the pods' label, else the event log's).
    pub spark_version: Option<String>,
}

/// How much trouble an app is in: the one order of every list of apps (the apps pane,
/// `status`, `report`, MCP's `list_apps`; `/metrics` has the same severity). Worst first:
/// the app verdict's severity, then failures (counted by Spark or blamed on the app), then
/// executors missing, then executors waiting with a warning or an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trouble {
    pub severity: Severity,
    pub failures: usize,
    pub missing: usize,
    pub waiting: usize,
}

impl Ord for Trouble {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.severity
            .cmp(&o.severity)
            .then(o.failures.cmp(&self.failures))
            .then(o.missing.cmp(&self.missing))
            .then(o.waiting.cmp(&self.waiting))
    }
}

impl PartialOrd for Trouble {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// Apps in the one order: most trouble first ([`Trouble`]), then namespace, name and id,
/// each in natural order (`scale-app-2` before `scale-app-10`).
pub fn by_trouble<A: AsRef<AppRecord>>(apps: &mut [A]) {
    apps.sort_by_cached_key(|a| {
        let a = a.as_ref();
        (
            a.trouble(),
            Natural(a.namespace.to_string()),
            a.app_name.clone().map(Natural),
            Natural(a.app_id.clone()),
        )
    });
}

/// A name compared as people read it: runs of digits by their value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Natural(pub String);

impl Ord for Natural {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        alphanumeric_sort::compare_str(&self.0, &o.0).then_with(|| self.0.cmp(&o.0))
    }
}

impl PartialOrd for Natural {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Incident {
    /// Nothing to report.
    pub fn is_quiet(&self) -> bool {
        self.causes.is_empty() && self.missing == 0 && self.pending.is_empty()
    }
}

pub use spark_triage_core::diagnose::advice::{cause_label, suggestion};
use spark_triage_core::diagnose::app;
use spark_triage_core::diagnose::budget::BudgetFrom;
use spark_triage_core::version::SparkVersion;

/// When an executor ended, by the cluster's clock where it is known ([`super::times::ended`]).
pub fn ended_at(e: &ExecutorRecord) -> Option<Time> {
    super::times::ended(e).map(|(t, _)| t)
}

impl AppRecord {
    pub(super) fn compute_incident(&self) -> Incident {
        // Those let go past the store's bound, counted as they were.
        let mut causes: BTreeMap<String, usize> = self.trimmed.by_label.clone();
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
        // In the advice's order (failures first, then severity and count): the strip's
        // first cause is the one the app's headline and first recommendation name.
        let advice = self.advice();
        let rank = |label: &str| {
            advice
                .iter()
                .position(|g| g.label == label)
                .unwrap_or(usize::MAX)
        };
        let mut causes: Vec<(String, usize)> = causes.into_iter().collect();
        causes.sort_by(|a, b| {
            rank(&a.0)
                .cmp(&rank(&b.0))
                .then(b.1.cmp(&a.1))
                .then_with(|| a.0.cmp(&b.0))
        });
        let mut pending = self.pending_reasons();
        pending.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        // Newest first (a later id first within one instant).
        ended.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.id.cmp(&a.1.id)));
        let last_failure = ended.first().and_then(|(at, e)| {
            let f = e.verdict.cause()?;
            Some((e.id, cause_label(f.code, e.exit_code()), *at))
        });
        // The first advice (the one order: failures first, then severity and count) with a
        // concrete value to copy: what the app verdict's headline and `report` lead with.
        let suggestion = self
            .advice()
            .iter()
            .find_map(|g| Some((g.label.clone(), g.setting()?)));
        Incident {
            causes,
            missing,
            pending,
            budget: self.budget_text(),
            last_failure,
            suggestion,
            held: self.held(),
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

    /// What Spark's budget is read from: the app's version and settings.
    fn budget_facts(&self) -> AppFacts<'static> {
        AppFacts {
            spark_version: self.spark_version(),
            max_failures: self.config.max_failures,
            executor_instances: self.config.executor_instances,
            dynamic_allocation: self.config.dynamic_allocation,
            max_executors: self.config.max_executors,
            config_known: self.config.from_driver,
            ..AppFacts::default()
        }
    }

    /// The app's Spark version: its pods' label, else its event log's.
    pub fn spark_version(&self) -> Option<SparkVersion> {
        self.executors
            .values()
            .find_map(|e| SparkVersion::of(&e.pod))
            .or_else(|| self.logged_version.as_deref().and_then(SparkVersion::parse))
    }

    /// The failures Spark counted (forgotten executors' included) and Spark's budget.
    pub fn failure_budget(&self) -> (usize, FailureBudget) {
        (
            self.counted_failures(),
            failure_budget(&self.budget_facts()),
        )
    }

    /// The failure budget as numbers, for every machine output.
    pub fn budget_view(&self) -> BudgetView {
        let facts = self.budget_facts();
        let (used, budget) = self.failure_budget();
        BudgetView {
            failures_counted: used,
            failures_allowed: match budget {
                FailureBudget::Limit(l) => Some(l),
                _ => None,
            },
            limit_from: app::budget_from(&facts),
            spark_version: facts.spark_version.map(|v| v.to_string()),
        }
    }

    pub(super) fn compute_trouble(&self) -> Trouble {
        let failures = self.forgotten_counted.values().sum::<usize>()
            + self
                .executors
                .values()
                .filter(|e| e.verdict.is_failure())
                .count();
        let c = self.counts();
        let waiting = self
            .executors
            .values()
            .filter(|e| e.state() == ExecutorState::Pending && e.gone.is_none())
            .filter(|e| e.verdict.severity().is_some_and(|s| s != Severity::Info))
            .count();
        Trouble {
            severity: self.verdict().severity(),
            failures,
            missing: c.missing,
            waiting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Natural;

    /// Names sort as people read them (`scale-app-2` before `scale-app-10`; `a1` before
    /// `a01`, as alphanumeric-sort has it), one order for every pair.
    #[test]
    fn names_sort_naturally() {
        let mut v: Vec<Natural> = ["scale-app-10", "scale-app-2", "scale-app-1", "a01", "a1"]
            .into_iter()
            .map(|s| Natural(s.to_owned()))
            .collect();
        v.sort();
        let names: Vec<&str> = v.iter().map(|n| n.0.as_str()).collect();
        assert_eq!(
            names,
            ["a1", "a01", "scale-app-1", "scale-app-2", "scale-app-10"]
        );
    }
}
