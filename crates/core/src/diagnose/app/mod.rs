//! Findings about a whole application rather than one executor: a crash loop measured
//! against Spark's own failure budget, pods that break Spark's snapshot of the app, and
//! Spark 4.2's OOM recovery mode.
//!
//! Ref: `ExecutorFailureTracker` / `spark.executor.maxNumFailures` (4.0+; default
//! max(2 × executors, 3), exit 11 once passed; kubeflow/spark-operator#1803 for the crash
//! loop users see), `ExecutorPodsSnapshot` (a non-numeric `spark-exec-id` makes `toLong`
//! throw for the whole snapshot), `KubernetesClusterSchedulerBackend` 4.2 (recovery mode).

use std::collections::BTreeMap;

use super::budget::FailureBudget;
use super::{Code, Finding, Severity};
use crate::model::cost::AppCost;
use crate::model::driver_state::{Allocation, StreamingQuery};
use crate::model::{Refusal, Related, Time, fmt_time};
use crate::version::SparkVersion;

mod allocation;
mod cost;
mod preempted;
mod quota;
mod refused;

pub use allocation::STALL_AFTER;
pub use cost::COSTLY;
pub use refused::refused_creation;

/// What the tool knows about one application.
#[derive(Debug, Default)]
pub struct AppFacts<'a> {
    /// The app's Spark version (from its pods), if known.
    pub spark_version: Option<SparkVersion>,
    /// The primary finding of each executor failure Spark counted, oldest first.
    pub counted: &'a [Code],
    /// `spark.executor.maxNumFailures`, when set.
    pub max_failures: Option<u32>,
    /// `spark.executor.instances`, when set (Spark's default is 2).
    pub executor_instances: Option<u32>,
    /// `spark.dynamicAllocation.enabled`.
    pub dynamic_allocation: bool,
    /// `spark.dynamicAllocation.maxExecutors`, when set (Spark's default: unlimited).
    pub max_executors: Option<u32>,
    /// Executor pods whose `spark-exec-id` is not a number: (pod, value).
    pub invalid_ids: &'a [(String, String)],
    /// Executor pods with no phase and no deletion (Spark's `toState` throws on them).
    pub no_phase: &'a [String],
    /// Executors the driver removed with a reason naming an OOM.
    pub oom_removals: usize,
    /// `spark.kubernetes.allocation.recoveryMode.enabled`, when set (unset: Spark turns it on
    /// by itself after an OOM).
    pub recovery_mode: Option<bool>,
    /// The app's configuration was read (from the driver); else the settings above are
    /// unknown, not Spark's defaults.
    pub config_known: bool,
    /// The driver is running (a finished app asks for no more executors).
    pub driver_running: bool,
    /// Executors with a pod that is pending or running (Spark's count toward its target).
    pub live_executors: u32,
    /// Why the namespace's quotas would refuse one more executor pod: (quota, refusal).
    pub quota_refusals: &'a [(String, Refusal)],
    /// The settings read from the driver's properties (when `config_known`).
    pub settings: Option<&'a super::config::Settings>,
    /// Executors preempted, each with its preemptor (as its event names it) and its own priority.
    pub preempted: &'a [Preemption],
    /// The cause of each pending executor that waits on a gate, a gang, a queue or a
    /// silent scheduler (not the nodes).
    pub held: &'a [Finding],
    /// The cause of every failure (Spark counted it, or failed it and blamed the app),
    /// forgotten executors' included, oldest first.
    pub failed: &'a [Code],
    /// The app's executors grouped by cause, in the one order ([`super::advice::groups`]).
    pub advice: &'a [super::advice::Group],
    /// Executors that vanished with no deletion seen.
    pub missing: usize,
    /// Pending executors the nodes do not take, by why they wait (`Insufficient memory`,
    /// `ImagePullBackOff`), most first; held ones (a gate, a gang, a queue) are not here.
    pub waiting: &'a [(String, usize)],
    /// Since when the oldest of them waits (a time, not an age: a finding is not redone as
    /// the clock moves).
    pub waiting_since: Option<Time>,
    /// The running driver's log line saying the API server refused an executor pod (RBAC,
    /// a webhook, an invalid pod), when its log was read for it.
    pub driver_refusal: Option<&'a str>,
    /// Dynamic allocation as the running driver's metrics have it (read only with it on;
    /// none once the driver stops answering).
    pub allocation: Option<Allocation>,
    /// Executors with a running pod.
    pub running_executors: u32,
    /// Since when its target has stood above the executors the app has, once that has lasted
    /// [`STALL_AFTER`] (a time, not an age).
    pub scale_up_short_since: Option<Time>,
    /// The Structured Streaming query the app runs, when its driver's jobs named one.
    pub streaming: Option<&'a StreamingQuery>,
    /// The driver pod preempted: by whom, and its own priority.
    pub driver_preempted: Option<&'a Preemption>,
    /// What its executor losses cost it (from its event log), when read.
    pub cost: Option<&'a AppCost>,
    /// The cause of each lost executor the cost names, as the strip says it
    /// ("OOMKilled (137)").
    pub loss_causes: &'a [(i64, String)],
}

/// One preempted executor: who took its place, and its own priority.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preemption {
    /// The preemptor, when its `Preempted` event (or condition) names it.
    pub by: Option<Related>,
    /// The executor pod's `priorityClassName`.
    pub own_class: Option<String>,
    /// The executor pod's `priority`.
    pub own_priority: Option<i32>,
}

/// How many failed executors Spark tolerates before it aborts the app.
pub fn failure_budget(f: &AppFacts<'_>) -> FailureBudget {
    if f.spark_version
        .is_some_and(|v| !v.counts_executor_failures())
    {
        return FailureBudget::NoneBeforeSpark4;
    }
    if let Some(m) = f.max_failures {
        return FailureBudget::Limit(m);
    }
    if !f.config_known {
        return FailureBudget::Unknown;
    }
    let executors = if f.dynamic_allocation {
        match f.max_executors {
            Some(m) => m,
            None => return FailureBudget::Unlimited, // Int.MaxValue
        }
    } else {
        f.executor_instances.unwrap_or(2)
    };
    FailureBudget::Limit(executors.saturating_mul(2).max(3))
}

/// Where [`failure_budget`]'s answer comes from.
pub fn budget_from(f: &AppFacts<'_>) -> super::budget::BudgetFrom {
    use super::budget::BudgetFrom as B;
    match failure_budget(f) {
        FailureBudget::NoneBeforeSpark4 => B::NoneBeforeSpark4,
        FailureBudget::Unknown => B::Unknown,
        FailureBudget::Unlimited => B::Unlimited,
        FailureBudget::Limit(_) if f.max_failures.is_some() => B::MaxNumFailures,
        FailureBudget::Limit(_) if f.dynamic_allocation => B::DefaultMaxExecutors,
        FailureBudget::Limit(_) => B::DefaultInstances,
    }
}

/// The application's findings, worst first.
pub fn app_findings(f: &AppFacts<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(x) = snapshot_broken(f) {
        out.push(x);
    }
    if let Some(x) = failures(f) {
        out.push(x);
    }
    if let Some(x) = missing(f) {
        out.push(x);
    }
    if let Some(x) = waiting(f) {
        out.push(x);
    }
    if let Some(x) = recovery_mode(f) {
        out.push(x);
    }
    if let Some(x) = quota::quota_exhausted(f) {
        out.push(x);
    }
    if let Some(x) = refused::executors_refused(f) {
        out.push(x);
    }
    if let Some(x) = preempted::preemptions(f.preempted, f.driver_preempted, f.streaming) {
        out.push(x);
    }
    if let Some(x) = allocation::scale_up_stalled(f) {
        out.push(x);
    }
    if let Some(x) = cost::losses_recomputed(f) {
        out.push(x);
    }
    if let Some(x) = held(f.held) {
        out.push(x);
    }
    if let Some(s) = f.settings.filter(|_| f.config_known) {
        out.extend(super::config::config_findings(
            s,
            f.spark_version,
            failure_budget(f),
            f.counted.len(),
        ));
    }
    // The app verdict's order, so every pane that shows the first agrees with the verdict.
    out.sort_by_key(super::app_verdict::order);
    out
}

/// Whether an executor's cause is a wait on something other than the nodes (a gate, a
/// gang, a queue, a silent scheduler), not merely for the record.
pub fn is_held(f: &Finding) -> bool {
    f.severity != Severity::Info && is_held_code(f.code)
}

/// A wait on something other than the nodes: a gate, a gang, a queue, a silent scheduler.
pub fn is_held_code(code: Code) -> bool {
    matches!(
        code,
        Code::SchedulingGated | Code::GangWaiting | Code::QueueWaiting | Code::SchedulerSilent
    )
}

/// "3 executors pending: Waiting for its gang: …": the largest group of one cause.
fn held(all: &[Finding]) -> Option<Finding> {
    let mut groups: BTreeMap<Code, Vec<&Finding>> = BTreeMap::new();
    for f in all.iter().filter(|f| is_held(f)) {
        groups.entry(f.code).or_default().push(f);
    }
    let (_, group) = groups.into_iter().max_by_key(|(_, g)| g.len())?;
    let n = group.len();
    let first = group[0];
    let mut f = Finding::new(
        Code::ExecutorsWaiting,
        first.severity,
        format!(
            "{n} executor{} pending: {}",
            if n == 1 { "" } else { "s" },
            first.summary
        ),
    )
    .witness(first.witness)
    .hint(first.hint.clone());
    f.reference = first.reference.clone();
    f.evidence = first.evidence.clone();
    if all.len() > n {
        f.evidence.push(format!(
            "{} more pending executor(s) wait for other reasons",
            all.len() - n
        ));
    }
    Some(f)
}

/// Repeated failures with one cause: this many make a loop.
const LOOP_AFTER: usize = 3;

/// The failures against Spark's budget: what Spark counted and how much is left, its
/// severity (an error once a quarter of the budget or less is left, else a warning).
fn budget_words(f: &AppFacts<'_>) -> (Severity, String) {
    let used = f.counted.len() as u32;
    let version = f
        .spark_version
        .map_or_else(|| "Spark".to_owned(), |v| format!("Spark {v}"));
    match failure_budget(f) {
        FailureBudget::Limit(limit) => {
            // Spark stops the app when the count passes the limit (`numFailedExecutors >
            // maxNumExecutorFailures`, ExecutorPodsLifecycleManager 4.3.0 bytecode).
            let left = limit.saturating_add(1).saturating_sub(used);
            let severity = if left.saturating_mul(4) <= limit { Severity::Error } else { Severity::Warn };
            let text = match left {
                0 => format!(
                    "past the failure limit of {limit} ({used} counted): {version} aborts the app with exit 11"
                ),
                1 => format!(
                    "{used} of {limit} allowed failures used: the next one makes {version} abort the app with exit 11"
                ),
                _ => format!(
                    "{used} of {limit} allowed failures used; {version} aborts the app with exit 11 after {left} more"
                ),
            };
            (severity, text)
        }
        FailureBudget::NoneBeforeSpark4 => (
            Severity::Warn,
            format!("{version} has no executor-failure limit on Kubernetes: it keeps replacing them"),
        ),
        FailureBudget::Unlimited => (
            Severity::Warn,
            "no limit applies (dynamic allocation without maxExecutors): Spark keeps replacing them"
                .to_owned(),
        ),
        FailureBudget::Unknown => (
            Severity::Warn,
            format!(
                "{used} counted; Spark's limit is unknown (the driver's configuration was not \
                 read; spark.executor.maxNumFailures defaults to max(2 × executors, 3))"
            ),
        ),
    }
}

/// The executors' failures in one finding: a crash loop when one cause repeats
/// ([`LOOP_AFTER`] or more), else `executors-failed` by cause; the advice of the cause that
/// leads ([`super::advice`]'s order) is its hint, so the app's first recommendation is the
/// one its headline names.
fn failures(f: &AppFacts<'_>) -> Option<Finding> {
    // Endings whose cause is a warning Spark neither counted nor blamed on the app (a kill
    // by the driver with dynamic allocation off, a drain): not failures, but not healthy
    // churn either. Not a mechanism (a deletion kept by a finalizer — the tool's own hold —,
    // a SIGTERM): how a pod went is no cause. Missing and preempted executors have findings
    // of their own.
    let uncounted: Vec<&super::advice::Group> = f
        .advice
        .iter()
        .filter(|g| {
            !g.failure
                && !g.pending
                && g.ended
                && g.code.standing() != super::code::Standing::Mechanism
                && !matches!(g.code, Code::Missing | Code::Preempted)
        })
        .collect();
    if f.failed.is_empty() {
        return ended_badly(&uncounted);
    }
    let mut by_cause: BTreeMap<Code, usize> = BTreeMap::new();
    for c in f.failed {
        *by_cause.entry(*c).or_default() += 1;
    }
    // On equal counts, the code ranked first (the code table's order) names the loop.
    let (top, n) = by_cause
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(c, n)| (*c, *n))?;
    let (severity, budget) = budget_words(f);
    let failed: Vec<&super::advice::Group> = f.advice.iter().filter(|g| g.failure).collect();
    // A loop is led by its own cause's advice (none when only forgotten executors had it);
    // else the first failure group in the one order.
    let lead = if n >= LOOP_AFTER {
        failed.iter().find(|g| g.code == top)
    } else {
        failed.first()
    };
    let total = f.failed.len();
    // By cause, as the executors' labels say it (exit codes included), in the advice's
    // order (the lead first); the failures of executors no longer held (forgotten) after,
    // by their code.
    let mut labels = group_counts(&failed);
    let held: usize = labels.iter().map(|(_, n)| n).sum();
    if total > held {
        let mut rest = by_cause.clone();
        for g in &failed {
            if let Some(n) = rest.get_mut(&g.code) {
                *n = n.saturating_sub(g.executors.len());
            }
        }
        for (c, n) in rest.into_iter().filter(|(_, n)| *n > 0) {
            labels.push((c.label().0.to_owned(), n));
        }
    }
    let causes = by_name(&labels);
    let lead_hint = lead.map(|g| g.hint.as_str()).unwrap_or_default();
    let mut x = if n >= LOOP_AFTER {
        Finding::new(
            Code::CrashLoop,
            severity,
            // The cause and the budget first: on a narrow screen the rest is cut.
            format!("{n} × {top}: {budget}"),
        )
        .hint(format!(
            "The replacements die the same way: fix the cause rather than waiting. {lead_hint} \
             spark.executor.maxNumFailures sets the budget (spark.executor.failuresValidityInterval \
             makes old failures expire)."
        ))
        .reference("https://github.com/kubeflow/spark-operator/issues/1803")
    } else {
        Finding::new(
            Code::ExecutorsFailed,
            severity,
            format!(
                "{total} executor{} failed: {}; {budget}",
                if total == 1 { "" } else { "s" },
                causes.join(", ")
            ),
        )
        .hint(lead_hint)
        .reference("https://spark.apache.org/docs/latest/running-on-kubernetes.html")
    };
    x = x.evidence(format!(
        "failures by cause: {} (of {total}; {} counted by Spark)",
        causes.join(", "),
        f.counted.len()
    ));
    let also: usize = uncounted.iter().map(|g| g.executors.len()).sum();
    if also > 0 {
        x.evidence.push(format!(
            "{also} more ended badly, not counted by Spark: {}",
            by_name(&group_counts(&uncounted)).join(", ")
        ));
    }
    for g in failed.iter().take(5) {
        x.evidence.extend(g.examples.iter().cloned());
    }
    if let Some(g) = lead {
        x.witness = g.witness;
    }
    Some(x)
}

/// Advice groups as (label, executors).
fn group_counts(groups: &[&super::advice::Group]) -> Vec<(String, usize)> {
    groups
        .iter()
        .map(|g| (g.label.clone(), g.executors.len()))
        .collect()
}

/// `OOMKilled (137) ×2`, …: at most six causes by name (hints can split one cause into
/// groups), the rest counted.
fn by_name(labels: &[(String, usize)]) -> Vec<String> {
    let shown = labels.len().min(6);
    let mut out: Vec<String> = labels[..shown]
        .iter()
        .map(|(l, n)| format!("{l} ×{n}"))
        .collect();
    if labels.len() > shown {
        let rest: usize = labels[shown..].iter().map(|(_, n)| n).sum();
        out.push(format!("{rest} more of other causes"));
    }
    out
}

/// Only endings Spark did not count, with warnings: said as such, the first one's advice.
fn ended_badly(uncounted: &[&super::advice::Group]) -> Option<Finding> {
    let lead = uncounted.first()?;
    let n: usize = uncounted.iter().map(|g| g.executors.len()).sum();
    let causes = by_name(&group_counts(uncounted));
    let mut x = Finding::new(
        Code::ExecutorsFailed,
        Severity::Warn,
        format!(
            "{n} executor{} ended badly, not counted by Spark: {}",
            if n == 1 { "" } else { "s" },
            causes.join(", ")
        ),
    )
    .hint(lead.hint.clone())
    .reference("https://spark.apache.org/docs/latest/running-on-kubernetes.html");
    x.witness = lead.witness;
    for g in uncounted.iter().take(5) {
        x.evidence.extend(g.examples.iter().cloned());
    }
    Some(x)
}

/// Executors that vanished with no deletion seen.
fn missing(f: &AppFacts<'_>) -> Option<Finding> {
    if f.missing == 0 {
        return None;
    }
    let n = f.missing;
    let group = f.advice.iter().find(|g| g.code == Code::Missing);
    let ids = group
        .map(|g| {
            let mut ids: Vec<String> = g.executors.iter().take(5).map(i64::to_string).collect();
            if g.executors.len() > 5 {
                ids.push(format!("and {} more", g.executors.len() - 5));
            }
            format!(" (executor {})", ids.join(", "))
        })
        .unwrap_or_default();
    let mut x = Finding::new(
        Code::ExecutorsMissing,
        Severity::Warn,
        format!(
            "{n} executor{} vanished with no deletion seen{ids}: Spark does not count {} and replaces {}",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it" } else { "them" },
        ),
    )
    .witness(super::Witness::Inference)
    .hint(group.map(|g| g.hint.clone()).unwrap_or_else(|| {
        "Something removed the pods without a deletion event (a force delete during a watch \
         gap, a node or namespace cleanup)."
            .to_owned()
    }));
    if let Some(g) = group {
        x.evidence.extend(g.examples.iter().cloned());
    }
    Some(x)
}

/// Pending executors the nodes do not take: why, and for how long.
fn waiting(f: &AppFacts<'_>) -> Option<Finding> {
    let n: usize = f.waiting.iter().map(|(_, n)| n).sum();
    if n == 0 {
        return None;
    }
    let why: Vec<String> = f.waiting.iter().map(|(r, n)| format!("{r} ×{n}")).collect();
    let longest = f
        .waiting_since
        .map(|t| format!(" (the oldest since {})", fmt_time(&t)))
        .unwrap_or_default();
    let lead = f.advice.iter().find(|g| g.pending && !is_held_code(g.code));
    let pending = format!(
        "{n} executor{} pending: {}{longest}",
        if n == 1 { "" } else { "s" },
        why.join(", ")
    );
    // Under dynamic allocation, what it asks for against what runs leads: the scale-up is
    // what waits.
    let target = allocation::target_words(f);
    let summary = match &target {
        Some((t, _)) if *t > f.running_executors => format!(
            "{} of {t} executors dynamic allocation asks for running; {pending}",
            f.running_executors
        ),
        _ => pending,
    };
    let mut x = Finding::new(Code::ExecutorsPending, Severity::Warn, summary)
        .hint(lead.map(|g| g.hint.clone()).unwrap_or_default());
    if let Some(g) = lead {
        x.witness = g.witness;
        x.evidence.extend(g.examples.iter().cloned());
    }
    x.evidence.extend(target.into_iter().flat_map(|(_, e)| e));
    Some(x)
}

fn snapshot_broken(f: &AppFacts<'_>) -> Option<Finding> {
    let first = match (f.invalid_ids.first(), f.no_phase.first()) {
        (Some((pod, value)), _) => {
            format!("executor pod {pod} has spark-exec-id {value:?}, which is not a number")
        }
        (None, Some(pod)) => format!("executor pod {pod} has no status.phase"),
        (None, None) => return None,
    };
    let mut x = Finding::new(
        Code::SnapshotUpdateFails,
        Severity::Error,
        format!("Spark cannot update its view of this app: {first}"),
    )
    .hint(
        "Spark parses every executor pod's spark-exec-id as a number and lower-cases every \
         phase; a pod where either fails makes the whole snapshot update throw, so the driver \
         stops seeing any executor change (failures, deletions, new pods) while the pod is \
         like this. Delete or relabel the pod; look for whatever copies Spark's labels onto \
         other pods, or writes pods without a status.",
    )
    .reference("https://github.com/apache/spark/blob/master/resource-managers/kubernetes/core/src/main/scala/org/apache/spark/scheduler/cluster/k8s/ExecutorPodsSnapshot.scala");
    for (p, v) in f.invalid_ids {
        x = x.evidence(format!("{p}: spark-exec-id={v:?}"));
    }
    for p in f.no_phase {
        x = x.evidence(format!("{p}: no status.phase, no deletionTimestamp"));
    }
    Some(x)
}

/// SPARK-55639 (4.2): with `spark.kubernetes.allocation.recoveryMode.enabled` unset, the
/// driver turns recovery mode on when it sees an executor lost to an OOM; `true` has it on
/// from the start, `false` never.
fn recovery_mode(f: &AppFacts<'_>) -> Option<Finding> {
    let v = f.spark_version?;
    if !v.has_oom_recovery_mode() {
        return None;
    }
    let why = match f.recovery_mode {
        Some(false) => return None,
        Some(true) => "spark.kubernetes.allocation.recoveryMode.enabled=true".to_owned(),
        None if f.oom_removals > 0 => format!(
            "{} executor(s) removed with a reason naming an OOM, and \
             spark.kubernetes.allocation.recoveryMode.enabled is not set",
            f.oom_removals
        ),
        None => return None,
    };
    Some(
        Finding::new(
            Code::OomRecoveryMode,
            Severity::Info,
            format!("Spark {v} runs recovery-mode executors: new executors run one task at a time"),
        )
        .evidence(why)
        .hint(
            "Each new executor keeps its pod's CPU and memory but runs a single task, so a \
             skewed task gets the whole heap; throughput drops. Fix the memory settings (see \
             the OOM finding's hint); set spark.kubernetes.allocation.recoveryMode.enabled=false \
             to fail fast instead.",
        )
        .reference("https://github.com/apache/spark/pull/54558"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::advice::{Case, groups};

    fn facts<'a>(counted: &'a [Code], version: &str) -> AppFacts<'a> {
        AppFacts {
            spark_version: SparkVersion::parse(version),
            counted,
            failed: counted,
            executor_instances: Some(10),
            config_known: true,
            ..AppFacts::default()
        }
    }

    /// Two causes at equal counts: the one the code table ranks first names the loop (a
    /// specific exit over the generic one), whichever order the failures came in.
    #[test]
    fn a_crash_loop_tie_is_named_by_the_code_ranked_first() {
        use Code::{ClassNotFound, GenericError};
        for counted in [
            [
                ClassNotFound,
                ClassNotFound,
                ClassNotFound,
                GenericError,
                GenericError,
                GenericError,
            ],
            [
                GenericError,
                GenericError,
                GenericError,
                ClassNotFound,
                ClassNotFound,
                ClassNotFound,
            ],
        ] {
            let f = app_findings(&facts(&counted, "4.0.1"));
            assert!(
                f[0].summary.starts_with("3 × class-not-found"),
                "{}",
                f[0].summary
            );
        }
    }

    #[test]
    fn a_crash_loop_is_measured_against_sparks_budget() {
        let oom = [Code::ContainerOomKilled; 3];
        let f = app_findings(&facts(&oom, "4.0.1"));
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].summary,
            "3 × container-oom-killed: 3 of 20 allowed failures used; Spark 4.0.1 aborts the \
             app with exit 11 after 18 more"
        );
        assert_eq!(f[0].severity, Severity::Warn);
        let many = [Code::JvmOom; 16];
        assert_eq!(
            app_findings(&facts(&many, "4.0.1"))[0].severity,
            Severity::Error
        );
        // Spark 3.5: no limit.
        let f = app_findings(&facts(&oom, "3.5.7"));
        assert!(
            f[0].summary
                .contains("Spark 3.5.7 has no executor-failure limit"),
            "{}",
            f[0].summary
        );
        // Mixed causes under the threshold: no loop, the failures by cause.
        let mixed = [Code::JvmOom, Code::JvmOom, Code::Evicted];
        let f = app_findings(&facts(&mixed, "4.0.1"));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, Code::ExecutorsFailed);
        assert_eq!(
            f[0].summary,
            "3 executors failed: JVM OOM ×2, evicted ×1; 3 of 20 allowed \
             failures used; Spark 4.0.1 aborts the app with exit 11 after 18 more"
        );
        assert_eq!(f[0].severity, Severity::Warn);
        // The largest limit a driver's configuration can say is no overflow (a panic in the
        // live view once, with the `scale` scenario's maxNumFailures of 4294967295).
        let mut huge = facts(&oom, "4.0.1");
        huge.max_failures = Some(u32::MAX);
        let f = app_findings(&huge);
        assert!(
            f[0].summary.contains("of 4294967295 allowed failures used"),
            "{}",
            f[0].summary
        );
    }

    /// A warning Spark did not count is said when its cause is one (a kill by the driver with
    /// dynamic allocation off), never when it is how the pod went (a deletion a finalizer —
    /// the tool's own hold — keeps past its grace).
    #[test]
    fn endings_spark_did_not_count_are_said_by_their_cause_not_their_mechanism() {
        let kill = Finding::new(Code::KilledByDriver, Severity::Warn, "not a scale-down")
            .hint("read the driver's log");
        let held = Finding::new(Code::Deleted, Severity::Warn, "kept by finalizers");
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0);
        let case = |id, cause| Case {
            id,
            cause,
            exit: None,
            failure: false,
            pending: false,
            at,
        };
        let only_held = groups([case(1, &held), case(2, &held)]);
        let f = AppFacts {
            advice: &only_held,
            ..AppFacts::default()
        };
        assert!(app_findings(&f).is_empty(), "{:?}", app_findings(&f));
        let killed = groups([case(1, &held), case(3, &kill), case(4, &kill)]);
        let f = AppFacts {
            advice: &killed,
            ..AppFacts::default()
        };
        let got = app_findings(&f);
        assert_eq!(got[0].code, Code::ExecutorsFailed);
        assert_eq!(
            got[0].summary,
            "2 executors ended badly, not counted by Spark: killed by driver ×2"
        );
        assert_eq!(got[0].hint, "read the driver's log");
    }

    #[test]
    fn the_budget_follows_sparks_defaults() {
        let mut f = facts(&[], "4.0.1");
        assert_eq!(failure_budget(&f), FailureBudget::Limit(20));
        f.executor_instances = None;
        assert_eq!(failure_budget(&f), FailureBudget::Limit(4));
        f.max_failures = Some(7);
        assert_eq!(failure_budget(&f), FailureBudget::Limit(7));
        f.max_failures = None;
        f.dynamic_allocation = true;
        assert_eq!(
            failure_budget(&f),
            FailureBudget::Unlimited,
            "maxExecutors unset"
        );
        f.max_executors = Some(1);
        assert_eq!(failure_budget(&f), FailureBudget::Limit(3));
        f.config_known = false;
        assert_eq!(failure_budget(&f), FailureBudget::Unknown);
        assert_eq!(
            failure_budget(&facts(&[], "3.5.7")),
            FailureBudget::NoneBeforeSpark4
        );
    }

    #[test]
    fn a_non_numeric_id_breaks_the_apps_snapshot_and_42_says_recovery_mode() {
        let bad = [("etl-exec-x".to_owned(), "abc".to_owned())];
        let f = AppFacts {
            invalid_ids: &bad,
            ..AppFacts::default()
        };
        let got = app_findings(&f);
        assert_eq!(got[0].code, Code::SnapshotUpdateFails);
        assert_eq!(got[0].severity, Severity::Error);
        let phaseless = ["etl-exec-4".to_owned()];
        let f = AppFacts {
            no_phase: &phaseless,
            ..AppFacts::default()
        };
        let got = app_findings(&f);
        assert_eq!(
            got[0].summary,
            "Spark cannot update its view of this app: executor pod etl-exec-4 has no status.phase"
        );
        let f = AppFacts {
            spark_version: SparkVersion::parse("4.2.0"),
            oom_removals: 1,
            ..AppFacts::default()
        };
        assert_eq!(app_findings(&f)[0].code, Code::OomRecoveryMode);
        let off = AppFacts {
            recovery_mode: Some(false),
            ..f
        };
        assert!(app_findings(&off).is_empty(), "turned off by configuration");
        let f = AppFacts {
            spark_version: SparkVersion::parse("4.1.0"),
            oom_removals: 1,
            ..AppFacts::default()
        };
        assert!(app_findings(&f).is_empty());
    }

    #[test]
    fn preemptions_are_grouped_by_the_preemptors_app_with_both_priorities() {
        let urgent = Related {
            name: Some("urgent-sql-driver".into()),
            app: Some("urgent-sql".into()),
            priority_class: Some("spark-interactive".into()),
            priority: Some(1000),
            ..Related::default()
        };
        let mine = |by: Option<Related>| Preemption {
            by,
            own_class: Some("spark-batch".into()),
            own_priority: Some(100),
        };
        let all = [
            mine(Some(urgent.clone())),
            mine(Some(urgent.clone())),
            mine(Some(urgent)),
            mine(None),
        ];
        let f = app_findings(&AppFacts {
            preempted: &all,
            ..AppFacts::default()
        });
        assert_eq!(f[0].code, Code::ExecutorsPreempted);
        assert_eq!(
            f[0].summary,
            "3 executors preempted by urgent-sql (spark-interactive = 1000 > spark-batch = 100); \
             1 more by others"
        );
        assert_eq!(
            f[0].evidence[1],
            "1 executor preempted by higher-priority pods the events do not name"
        );
        // A Structured Streaming app's preemptions are an error of their own, with the
        // priority to change.
        let query = StreamingQuery::new("3f1c", Some("clicks"));
        let f = app_findings(&AppFacts {
            preempted: &all,
            streaming: Some(&query),
            ..AppFacts::default()
        });
        assert_eq!(
            (f[0].code, f[0].severity),
            (Code::StreamingPreemptible, Severity::Error)
        );
        assert_eq!(
            f[0].summary,
            "streaming app (query clicks): 3 executors preempted by urgent-sql \
             (spark-interactive = 1000 > spark-batch = 100); 1 more by others"
        );
        assert!(
            f[0].hint.contains("PriorityClass above the batch apps'")
                && f[0].hint.contains("urgent-sql's pods"),
            "{}",
            f[0].hint
        );
        // Its driver preempted stops the query: said first, its executors' after.
        let driver = Preemption {
            by: Some(Related {
                app: Some("backfill".into()),
                priority_class: Some("batch-high".into()),
                priority: Some(1000),
                ..Related::default()
            }),
            own_class: None,
            own_priority: Some(0),
        };
        let f = app_findings(&AppFacts {
            preempted: &all,
            driver_preempted: Some(&driver),
            streaming: Some(&query),
            ..AppFacts::default()
        });
        assert_eq!(f[0].code, Code::StreamingPreemptible);
        assert_eq!(
            f[0].summary,
            "streaming app (query clicks): its driver preempted by backfill (batch-high = 1000 > priority 0)"
        );
        assert_eq!(f[0].evidence.len(), 3, "{:?}", f[0].evidence);
        // A batch app's driver preempted is its own verdict (driver-preempted), not this.
        assert!(
            app_findings(&AppFacts {
                driver_preempted: Some(&driver),
                ..AppFacts::default()
            })
            .is_empty()
        );
        // A streaming app nothing preempted has no such finding.
        assert!(
            app_findings(&AppFacts {
                streaming: Some(&query),
                ..AppFacts::default()
            })
            .is_empty()
        );
    }
}
