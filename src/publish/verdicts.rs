//! The verdicts as Prometheus metrics: executor endings by cause, the failure budget, missing
//! and pending executors, the app's verdict and its driver (docs/metrics.md). Served on the
//! recorder's `/metrics` and on the live view's `--metrics-addr`.
//!
//! Cardinality is bounded: the labels are the namespace, the app's name (its id when it has
//! none), a cause or pending reason (a finding's code: a closed set), a severity or a state;
//! never an executor id, a pod or a node. At most [`MAX_APPS`] app names have series of
//! their own; the others share `app="other"` (and `spark_triage_metrics_apps_folded` says
//! how many do). A name that left the store gives its place up to a new one only when the
//! places are all taken, so a nightly job keeps its series from run to run.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::diagnose::budget::FailureBudget;
use spark_triage_core::model::cost::CostFrom;
use spark_triage_core::model::{ExecutorState, Time};

use crate::store::{AppRecord, ExecutorRecord, Snapshot, times};

/// App names with series of their own; the rest are `app="other"`.
pub(crate) const MAX_APPS: usize = 200;
/// The label of the apps beyond [`MAX_APPS`].
pub(crate) const OTHER: &str = "other";
/// An ending is counted once it has been over this long: a verdict can still change in the
/// first seconds (the kubelet's OOM reason after the exit, the driver's removal reason), and
/// a counter cannot take a count back.
pub(crate) const SETTLE: Duration = Duration::from_secs(15);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AppLabels {
    namespace: String,
    app: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndingLabels {
    namespace: String,
    app: String,
    cause: String,
    severity: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    namespace: String,
    app: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    namespace: String,
    app: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabels {
    namespace: String,
    app: String,
    cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    namespace: String,
    app: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespaceLabels {
    namespace: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The prefix of the verdicts' families.
pub(crate) const PREFIX: &str = "spark_triage";

families!(FAMILIES, register_families for Verdicts {
    endings => "executor_endings":
        "Executors seen ending, by the cause of their verdict (a finding's code) and its severity",
    counted => "app_failures_counted":
        "Executor failures Spark counted toward spark.executor.maxNumFailures",
    allowed => "app_failures_allowed":
        "Spark's executor failure budget (spark.executor.maxNumFailures or its default); absent when Spark has none or it is not known",
    missing => "app_executors_missing":
        "Executors whose pods vanished from a full LIST with no deletion seen",
    pending => "app_executors_pending":
        "Pending executors by what holds them (a finding's code, or container-creating, pending)",
    pending_oldest => "app_pending_oldest_seconds":
        "How long the oldest pending executor has waited, by the cluster's clock",
    severity => "app_verdict_severity": "The app verdict's severity: 0 info, 1 warn, 2 error",
    runs => "app_runs":
        "Runs of the app in view, by their driver's state (not-seen when no driver pod was seen)",
    verdicts => "app_verdict":
        "Runs of the app in view by their verdict's cause (a finding's code: driver-oom-killed, app-running…)",
    executors => "app_executors": "Executors in view by Spark's state",
    kept_drivers => "finished_driver_pods":
        "Finished driver pods still present, by namespace (nothing deletes a spark-submit driver)",
    recomputed => "app_recomputed_task_seconds":
        "Task time spent again because executors were lost (their running tasks, and the stage attempts their lost shuffle output added), by the lost executor's cause (a finding's code; none when not known): from the app's event log, else its running driver's REST API",
    idle => "app_idle_executor_seconds":
        "Executor time paid for and left idle, by kind: dynamic-allocation-tail (from an idle executor's last task to its removal), never-used (executors that ran no task; core-seconds), shuffle-tracking-hold (idle executors held past the idle timeout by their shuffle output; part of the tail for those removed): from the app's event log",
    folded => "metrics_apps_folded":
        "Runs (apps in the store) whose series are under app=\"other\" (more names than the metrics keep)",
});

/// The verdict metrics; [`Verdicts::publish`] brings them up to a snapshot.
#[derive(Default)]
pub(crate) struct Verdicts {
    endings: Family<EndingLabels, Counter>,
    counted: Family<AppLabels, Gauge>,
    allowed: Family<AppLabels, Gauge>,
    missing: Family<AppLabels, Gauge>,
    pending: Family<ReasonLabels, Gauge>,
    pending_oldest: Family<AppLabels, FloatGauge>,
    severity: Family<AppLabels, Gauge>,
    runs: Family<StateLabels, Gauge>,
    verdicts: Family<CauseLabels, Gauge>,
    executors: Family<StateLabels, Gauge>,
    kept_drivers: Family<NamespaceLabels, Gauge>,
    recomputed: Family<CauseLabels, FloatGauge>,
    idle: Family<KindLabels, FloatGauge>,
    folded: Gauge,
    memo: Mutex<Memo>,
}

impl std::fmt::Debug for Verdicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Verdicts")
    }
}

/// Endings remembered as counted, at most (the oldest are forgotten first): 8 bytes each and
/// the set's overhead, a few MiB.
const COUNTED_MAX: usize = 200_000;

/// What publishing remembers between rounds.
#[derive(Default)]
struct Memo {
    /// Endings counted (or over before these metrics began, when the store was resumed):
    /// hashes of namespace, app id and executor id, and their order (oldest first).
    counted: HashSet<u64>,
    counted_order: std::collections::VecDeque<u64>,
    /// Ended executors not counted yet, and when they were first seen ended.
    settling: HashMap<u64, Instant>,
    /// The app names with series of their own, and the round they were last in the store.
    named: HashMap<(String, String), u64>,
    /// The ending series of each named app (removed with its place).
    ending_series: HashMap<(String, String), HashSet<EndingLabels>>,
    round: u64,
    /// The gauges' label sets last published: those no longer true are removed.
    last: Last,
}

#[derive(Default)]
struct Last {
    counted: HashSet<AppLabels>,
    allowed: HashSet<AppLabels>,
    missing: HashSet<AppLabels>,
    pending: HashSet<ReasonLabels>,
    pending_oldest: HashSet<AppLabels>,
    severity: HashSet<AppLabels>,
    runs: HashSet<StateLabels>,
    verdicts: HashSet<CauseLabels>,
    executors: HashSet<StateLabels>,
    kept_drivers: HashSet<NamespaceLabels>,
    recomputed: HashSet<CauseLabels>,
    idle: HashSet<KindLabels>,
}

/// What one label's runs add up to in a round.
#[derive(Default)]
struct AppSums {
    /// The run with the most counted failures: (counted, its budget when Spark has one).
    budget: Option<(usize, Option<u32>)>,
    missing: i64,
    pending: HashMap<String, i64>,
    pending_oldest: Option<f64>,
    severity: i64,
    runs: HashMap<&'static str, i64>,
    causes: HashMap<&'static str, i64>,
    executors: HashMap<&'static str, i64>,
    /// Task seconds redone, by the lost executor's cause; idle executor seconds by kind.
    recomputed: HashMap<&'static str, f64>,
    idle: HashMap<&'static str, f64>,
}

impl Verdicts {
    /// Registers the metrics (names, help texts, units: docs/metrics.md).
    pub fn register(&self, r: &mut Registry) {
        self.register_families(r, PREFIX);
    }

    /// The store was resumed from a recording: the endings it holds were counted by the run
    /// that recorded them, and are not counted again (their series start at 0, so Prometheus
    /// sees the next one as an increase).
    pub fn resumed(&self, snap: &Snapshot) {
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        let memo = &mut *memo;
        memo.round += 1;
        memo.mark_present(snap);
        for a in snap.apps.values() {
            let label = memo.label(a, &self.endings);
            for e in a.executors.values() {
                if times::ended(e).is_some() {
                    memo.count(key(a, e));
                    let l = ending_labels(&label, e);
                    let _ = self.endings.get_or_create(&l);
                    memo.remember(&label, l);
                }
            }
        }
    }

    /// Brings every metric up to `snap`; `now` is the wall clock (for [`SETTLE`]), `at`
    /// the cluster's (waits are as long as they are then).
    pub fn publish(&self, snap: &Snapshot, now: Instant, at: Time) {
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        let memo = &mut *memo;
        memo.round += 1;
        // Every name in the store keeps its place before any new name looks for one.
        memo.mark_present(snap);
        let mut sums: HashMap<AppLabels, AppSums> = HashMap::new();
        let mut present = HashSet::new();
        let mut folded = 0;
        for a in snap.apps.values() {
            let label = memo.label(a, &self.endings);
            if label.app == OTHER {
                folded += 1;
            }
            for e in a.executors.values() {
                let k = key(a, e);
                if memo.counted.contains(&k) || times::ended(e).is_none() {
                    continue;
                }
                present.insert(k);
                let l = ending_labels(&label, e);
                let since = match memo.settling.get(&k) {
                    Some(t) => *t,
                    None => {
                        // The series exists (at 0) before its first ending is counted, so
                        // Prometheus sees that ending as an increase.
                        let _ = self.endings.get_or_create(&l);
                        memo.remember(&label, l.clone());
                        memo.settling.insert(k, now);
                        now
                    }
                };
                if now.saturating_duration_since(since) >= SETTLE {
                    memo.settling.remove(&k);
                    memo.count(k);
                    self.endings.get_or_create(&l).inc();
                    memo.remember(&label, l);
                }
            }
            // Waits are as long as they are now on the cluster's clock (the store's own `now`
            // is its newest event's time, which can be unset or behind).
            sums.entry(label).or_default().add(a, Some(at));
        }
        // Endings that left the store before they settled are not counted. Counted ones are
        // remembered (up to COUNTED_MAX) even when the store drops them: a scope switched
        // away and back (`:ns`) must not count them again.
        memo.settling.retain(|k, _| present.contains(k));
        self.folded.set(folded);
        let last = &mut memo.last;
        let of = |l: &AppLabels| l.clone();
        sync(
            &self.counted,
            &mut last.counted,
            sums.iter()
                .filter_map(|(l, s)| Some((of(l), as_i64(s.budget?.0)))),
            |g, v| g.set(v),
        );
        sync(
            &self.allowed,
            &mut last.allowed,
            sums.iter()
                .filter_map(|(l, s)| Some((of(l), i64::from(s.budget?.1?)))),
            |g, v| g.set(v),
        );
        sync(
            &self.missing,
            &mut last.missing,
            sums.iter().map(|(l, s)| (of(l), s.missing)),
            |g, v| g.set(v),
        );
        sync(
            &self.pending,
            &mut last.pending,
            series(
                &sums,
                |s| &s.pending,
                |l, reason| ReasonLabels {
                    namespace: l.namespace.clone(),
                    app: l.app.clone(),
                    reason: reason.to_owned(),
                },
            ),
            |g, v| g.set(v),
        );
        sync(
            &self.pending_oldest,
            &mut last.pending_oldest,
            sums.iter()
                .filter_map(|(l, s)| Some((of(l), s.pending_oldest?))),
            |g, v| g.set(v),
        );
        sync(
            &self.severity,
            &mut last.severity,
            sums.iter().map(|(l, s)| (of(l), s.severity)),
            |g, v| g.set(v),
        );
        let state = |l: &AppLabels, state: &str| StateLabels {
            namespace: l.namespace.clone(),
            app: l.app.clone(),
            state: state.to_owned(),
        };
        let runs = series(&sums, |s| &s.runs, state);
        sync(&self.runs, &mut last.runs, runs, |g, v| g.set(v));
        let executors = series(&sums, |s| &s.executors, state);
        sync(&self.executors, &mut last.executors, executors, |g, v| {
            g.set(v)
        });
        let verdicts = series(&sums, |s| &s.causes, cause_labels);
        sync(&self.verdicts, &mut last.verdicts, verdicts, |g, v| {
            g.set(v)
        });
        self.publish_cost(&sums, last);
        self.publish_kept(snap, &mut last.kept_drivers);
    }

    /// What the apps' losses cost and what they idled (their event logs).
    fn publish_cost(&self, sums: &HashMap<AppLabels, AppSums>, last: &mut Last) {
        let kind = |l: &AppLabels, kind: &str| KindLabels {
            namespace: l.namespace.clone(),
            app: l.app.clone(),
            kind: kind.to_owned(),
        };
        let (recomputed, idle) = (
            series(sums, |s| &s.recomputed, cause_labels),
            series(sums, |s| &s.idle, kind),
        );
        sync(
            &self.recomputed,
            &mut last.recomputed,
            recomputed,
            |g, v| g.set(v),
        );
        sync(&self.idle, &mut last.idle, idle, |g, v| g.set(v));
    }

    /// The namespaces' finished driver pods (`drivers-kept`).
    fn publish_kept(&self, snap: &Snapshot, last: &mut HashSet<NamespaceLabels>) {
        let now = snap.kept_drivers.iter().map(|(ns, pods)| {
            let l = NamespaceLabels {
                namespace: ns.clone(),
            };
            (l, as_i64(pods.len()))
        });
        sync(&self.kept_drivers, last, now, |g, v| g.set(v));
    }
}

impl Memo {
    fn count(&mut self, k: u64) {
        if self.counted.insert(k) {
            self.counted_order.push_back(k);
            while self.counted_order.len() > COUNTED_MAX {
                if let Some(old) = self.counted_order.pop_front() {
                    self.counted.remove(&old);
                }
            }
        }
    }

    /// The names in the store keep their places this round.
    fn mark_present(&mut self, snap: &Snapshot) {
        let round = self.round;
        for a in snap.apps.values() {
            if let Some(r) = self.named.get_mut(&name_of(a)) {
                *r = round;
            }
        }
    }

    /// The app's labels: its name's own place, or `other` when the places are all taken by
    /// names in the store ([`Memo::mark_present`] first).
    fn label(&mut self, a: &AppRecord, endings: &Family<EndingLabels, Counter>) -> AppLabels {
        let k = name_of(a);
        let round = self.round;
        if let Some(r) = self.named.get_mut(&k) {
            *r = round;
        } else if self.named.len() < MAX_APPS {
            self.named.insert(k.clone(), round);
        } else if let Some(gone) = self
            .named
            .iter()
            .filter(|(_, r)| **r < round)
            .min_by_key(|(n, r)| (**r, (*n).clone()))
            .map(|(n, _)| n.clone())
        {
            // The name longest gone gives its place (and its series) up.
            self.named.remove(&gone);
            for l in self.ending_series.remove(&gone).unwrap_or_default() {
                endings.remove(&l);
            }
            self.named.insert(k.clone(), round);
        } else {
            return AppLabels {
                namespace: a.namespace.clone(),
                app: OTHER.to_owned(),
            };
        }
        AppLabels {
            namespace: k.0,
            app: k.1,
        }
    }

    fn remember(&mut self, app: &AppLabels, l: EndingLabels) {
        if app.app != OTHER {
            self.ending_series
                .entry((app.namespace.clone(), app.app.clone()))
                .or_default()
                .insert(l);
        }
    }
}

impl AppSums {
    fn add(&mut self, a: &AppRecord, now: Option<Time>) {
        let (used, budget) = a.failure_budget();
        let limit = match budget {
            FailureBudget::Limit(l) => Some(l),
            _ => None,
        };
        if self.budget.is_none_or(|(u, _)| used > u) {
            self.budget = Some((used, limit));
        }
        let v = a.verdict();
        self.severity = self.severity.max(severity_value(v.severity()));
        let driver = v.driver.as_ref().map_or("not-seen", |d| d.state.as_str());
        *self.runs.entry(driver).or_default() += 1;
        *self.causes.entry(v.cause().code.as_str()).or_default() += 1;
        // Every state present, 0 when none is in it (a panel's series does not vanish).
        for state in ExecutorState::ALL {
            self.executors.entry(state.as_str()).or_insert(0);
        }
        if let Some(cost) = a.cost.as_deref() {
            let causes: HashMap<i64, &'static str> = a
                .loss_causes()
                .into_iter()
                .map(|(id, code, _)| (id, code.as_str()))
                .collect();
            for l in &cost.losses {
                let cause = causes.get(&l.executor).copied().unwrap_or("none");
                *self.recomputed.entry(cause).or_default() +=
                    (l.rerun_task_ms + l.task_ms_lost) as f64 / 1000.0;
            }
            // A driver's REST API tells no idle time: no series rather than a 0.
            let w = &cost.waste;
            if cost.from == CostFrom::EventLog {
                *self.idle.entry("dynamic-allocation-tail").or_default() +=
                    w.idle_tail_ms as f64 / 1000.0;
                *self.idle.entry("never-used").or_default() += w.never_used_core_ms as f64 / 1000.0;
                *self.idle.entry("shuffle-tracking-hold").or_default() +=
                    w.held_by_shuffle_ms as f64 / 1000.0;
            }
        }
        for e in a.executors.values() {
            if e.is_missing() {
                self.missing += 1;
                continue;
            }
            let state = e.state();
            *self.executors.entry(state.as_str()).or_default() += 1;
            if state != ExecutorState::Pending || e.verdict.ending.is_gone() {
                continue;
            }
            *self.pending.entry(pending_reason(e)).or_default() += 1;
            if let Some(now) = now {
                let (created, _) = times::created(e);
                let waited = (now - created).num_milliseconds().max(0) as f64 / 1000.0;
                self.pending_oldest = Some(self.pending_oldest.unwrap_or(0.0).max(waited));
            }
        }
    }
}

/// What holds a pending executor, as a closed set: its verdict's code when it has one that
/// says (unschedulable, image-pull, quota…), else where it is.
fn pending_reason(e: &ExecutorRecord) -> String {
    match e.verdict.cause() {
        Some(f) if f.severity != Severity::Info => f.code.as_str().to_owned(),
        _ if e.pod.node_name.is_some() => "container-creating".to_owned(),
        _ => "pending".to_owned(),
    }
}

/// An app's (namespace, name) key: its name, its id when it has none.
fn name_of(a: &AppRecord) -> (String, String) {
    (
        a.namespace.clone(),
        a.app_name.clone().unwrap_or_else(|| a.app_id.clone()),
    )
}

fn severity_value(s: Severity) -> i64 {
    match s {
        Severity::Info => 0,
        Severity::Warn => 1,
        Severity::Error => 2,
    }
}

fn ending_labels(app: &AppLabels, e: &ExecutorRecord) -> EndingLabels {
    let cause = e.verdict.cause();
    EndingLabels {
        namespace: app.namespace.clone(),
        app: app.app.clone(),
        cause: e.verdict.cause_code().to_owned(),
        severity: cause
            .map_or(Severity::Info, |f| f.severity)
            .as_str()
            .to_owned(),
    }
}

/// One executor of one run, as a number (the memo holds tens of thousands of them).
fn key(a: &AppRecord, e: &ExecutorRecord) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&a.namespace, &a.app_id, e.id).hash(&mut h);
    h.finish()
}

fn as_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn cause_labels(l: &AppLabels, cause: &str) -> CauseLabels {
    CauseLabels {
        namespace: l.namespace.clone(),
        app: l.app.clone(),
        cause: cause.to_owned(),
    }
}

/// Each app label's map (`pick`) as series, named by `make` from the label and the key.
fn series<K: AsRef<str>, V: Copy, L>(
    sums: &HashMap<AppLabels, AppSums>,
    pick: impl Fn(&AppSums) -> &HashMap<K, V>,
    make: impl Fn(&AppLabels, &str) -> L,
) -> Vec<(L, V)> {
    sums.iter()
        .flat_map(|(l, s)| pick(s).iter().map(|(k, v)| (make(l, k.as_ref()), *v)))
        .collect()
}

/// Sets a family's series to `now`'s values and removes those `last` had that are gone, so
/// a scrape never sees a family emptied half-way.
fn sync<L, M, V, R>(
    family: &Family<L, M>,
    last: &mut HashSet<L>,
    now: impl IntoIterator<Item = (L, V)>,
    set: impl Fn(&M, V) -> R,
) where
    L: Clone + Hash + Eq,
    M: Default,
{
    let mut seen = HashSet::new();
    for (l, v) in now {
        set(&family.get_or_create(&l), v);
        seen.insert(l);
    }
    for gone in last.difference(&seen) {
        family.remove(gone);
    }
    *last = seen;
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;
    use spark_triage_core::model::testing::pod;

    use super::*;
    use crate::eventlog;
    use crate::record::Recording;
    use crate::source::SourceEvent;
    use crate::store::Store;

    pub(crate) fn t(s: i64) -> Time {
        chrono::DateTime::from_timestamp(1_800_000_000 + s, 0).expect("time")
    }

    /// Executor `id` of app `n` (named `app-n`), OOM-killed or running.
    pub(crate) fn exec(n: usize, id: i64, oom: bool) -> SourceEvent {
        let state = if oom {
            json!({"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2027-01-15T08:00:05Z"}})
        } else {
            json!({"running": {"startedAt": "2027-01-15T08:00:05Z"}})
        };
        let p = pod(json!({
            "metadata": {"name": format!("app-{n}-exec-{id}"), "namespace": "spark-jobs", "uid": format!("u-{n}-{id}"),
                "resourceVersion": "1",
                "labels": {"spark-app-selector": format!("spark-{n}"), "spark-role": "executor",
                    "spark-exec-id": id.to_string(), "spark-app-name": format!("app-{n}")}},
            "spec": {"restartPolicy": "Never", "nodeName": "n1", "containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": if oom { "Failed" } else { "Running" }, "containerStatuses": [{
                "name": "spark-kubernetes-executor", "image": "spark", "imageID": "", "ready": !oom,
                "restartCount": 0, "state": state}]}
        }));
        SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(p),
            at: t(0),
        }
    }

    fn text(v: &Verdicts) -> String {
        let mut r = Registry::default();
        v.register(&mut r);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).expect("encodes");
        out
    }

    fn endings(v: &Verdicts, app: &str) -> Option<f64> {
        let prefix = format!(
            "spark_triage_executor_endings_total{{namespace=\"spark-jobs\",app=\"{app}\",cause=\"container-oom-killed\""
        );
        text(v)
            .lines()
            .find(|l| l.starts_with(&prefix))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    }

    /// A real Spark 4.3 log's loss (an executor SIGKILLed under a shuffle): the task time it
    /// cost, by its cause, and the executors' idle time.
    #[test]
    fn the_cost_of_losses_is_a_gauge_by_cause() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/eventlog/cost/shuffle-loss.json"
        );
        let rec = eventlog::open(std::path::Path::new(path), 1 << 20, None)
            .map(Recording::from)
            .expect("the log reads");
        let mut s = Store::new();
        for ev in rec.events {
            s.apply(ev);
        }
        let a = s.view().apps.values().next().expect("an app").clone();
        let loss = &a.cost.as_deref().expect("a cost").losses[0];
        let v = Verdicts::default();
        v.publish(s.view(), Instant::now(), chrono::Utc::now());
        let want = format!(
            "spark_triage_app_recomputed_task_seconds{{namespace=\"default\",app=\"cost-shuffle-loss\",cause=\"driver-removed\"}} {}",
            (loss.rerun_task_ms + loss.task_ms_lost) as f64 / 1000.0
        );
        assert!(text(&v).contains(&want), "{want} in {}", text(&v));
        assert!(
            text(&v).contains(
                "spark_triage_app_idle_executor_seconds{namespace=\"default\",app=\"cost-shuffle-loss\",kind=\"dynamic-allocation-tail\"} 0.0"
            ),
            "{}",
            text(&v)
        );
    }

    /// Finished driver pods by namespace: the gauge follows them, and goes with the last.
    #[test]
    fn finished_driver_pods_are_a_gauge_by_namespace() {
        let driver = |phase: &str| SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(pod(json!({
                "metadata": {"name": "etl-driver", "namespace": "nightly",
                    "labels": {"spark-app-selector": "spark-9", "spark-role": "driver"}},
                "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
                "status": {"phase": phase}
            }))),
            at: t(0),
        };
        let mut s = Store::new();
        s.apply(driver("Succeeded"));
        let v = Verdicts::default();
        v.publish(s.view(), Instant::now(), chrono::Utc::now());
        assert!(
            text(&v).contains("spark_triage_finished_driver_pods{namespace=\"nightly\"} 1"),
            "{}",
            text(&v)
        );
        s.apply(SourceEvent::PodDeleted {
            pod: match driver("Succeeded") {
                SourceEvent::PodUpserted { pod, .. } => pod,
                _ => unreachable!(),
            },
            at: t(1),
        });
        v.publish(s.view(), Instant::now(), chrono::Utc::now());
        assert!(!text(&v).contains("finished_driver_pods{"), "{}", text(&v));
    }

    #[test]
    fn an_ending_is_counted_once_settled_and_never_twice() {
        let mut s = Store::new();
        s.apply(exec(1, 1, true));
        let v = Verdicts::default();
        let t0 = Instant::now();
        v.publish(s.view(), t0, chrono::Utc::now());
        assert_eq!(
            endings(&v, "app-1"),
            Some(0.0),
            "not settled yet: the series at 0, so the first count is an increase"
        );
        v.publish(s.view(), t0 + SETTLE, chrono::Utc::now());
        assert_eq!(endings(&v, "app-1"), Some(1.0));
        s.apply(exec(1, 2, true));
        v.publish(s.view(), t0 + SETTLE * 2, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE * 3, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE * 4, chrono::Utc::now());
        assert_eq!(endings(&v, "app-1"), Some(2.0), "each ending once");
    }

    #[test]
    fn a_resumed_recorder_does_not_count_the_endings_it_resumed_but_counts_new_ones() {
        let mut s = Store::new();
        s.apply(exec(1, 1, true));
        s.apply(exec(1, 2, false));
        let v = Verdicts::default();
        v.resumed(s.view());
        assert_eq!(
            endings(&v, "app-1"),
            Some(0.0),
            "the series exists at 0, so the next ending is an increase"
        );
        let t0 = Instant::now();
        v.publish(s.view(), t0, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE, chrono::Utc::now());
        assert_eq!(endings(&v, "app-1"), Some(0.0));
        s.apply(exec(1, 2, true));
        v.publish(s.view(), t0 + SETTLE * 2, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE * 3, chrono::Utc::now());
        assert_eq!(endings(&v, "app-1"), Some(1.0));
    }

    #[test]
    fn names_beyond_the_cap_are_other_until_a_name_gone_gives_its_place_up() {
        let mut s = Store::new();
        for n in 0..=MAX_APPS {
            s.apply(exec(n, 1, true));
        }
        let v = Verdicts::default();
        let t0 = Instant::now();
        v.publish(s.view(), t0, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE, chrono::Utc::now());
        let out = text(&v);
        assert!(out.contains("spark_triage_metrics_apps_folded 1"), "{out}");
        let named = out
            .lines()
            .filter(|l| l.starts_with("spark_triage_executor_endings_total{"))
            .count();
        assert_eq!(named, MAX_APPS + 1, "200 names and other");
        let other = endings(&v, OTHER).expect("other");
        assert_eq!(other, 1.0);
        // Every app but app-0 goes; a new one takes a place (the oldest gone, app-0's is not
        // gone: app-0 stays).
        let mut s2 = Store::new();
        s2.apply(exec(0, 1, true));
        s2.apply(exec(999, 1, true));
        v.publish(s2.view(), t0 + SETTLE * 2, chrono::Utc::now());
        v.publish(s2.view(), t0 + SETTLE * 3, chrono::Utc::now());
        assert_eq!(endings(&v, "app-999"), Some(1.0), "{}", text(&v));
        assert_eq!(endings(&v, "app-0"), Some(1.0));
        assert!(text(&v).contains("spark_triage_metrics_apps_folded 0"));
    }

    #[test]
    fn a_new_name_never_takes_the_place_of_a_name_still_in_the_store() {
        let mut s = Store::new();
        // App ids sort spark-1, spark-10, spark-100, …: the new app (spark-0) sorts first.
        for n in 1..=MAX_APPS {
            s.apply(exec(n, 1, true));
        }
        let v = Verdicts::default();
        let t0 = Instant::now();
        v.publish(s.view(), t0, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE, chrono::Utc::now());
        s.apply(exec(0, 1, true));
        v.publish(s.view(), t0 + SETTLE * 2, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE * 3, chrono::Utc::now());
        for n in 1..=MAX_APPS {
            assert_eq!(
                endings(&v, &format!("app-{n}")),
                Some(1.0),
                "app-{n} kept its series"
            );
        }
        assert_eq!(endings(&v, "app-0"), None, "no place for it");
        assert_eq!(endings(&v, OTHER), Some(1.0));
    }

    #[test]
    fn an_ending_forgotten_by_the_store_and_seen_again_is_not_counted_twice() {
        let mut s = Store::new();
        s.apply(exec(1, 1, true));
        let v = Verdicts::default();
        let t0 = Instant::now();
        v.publish(s.view(), t0, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE, chrono::Utc::now());
        // A scope switched away (an empty store) and back.
        v.publish(Store::new().view(), t0 + SETTLE * 2, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE * 3, chrono::Utc::now());
        v.publish(s.view(), t0 + SETTLE * 4, chrono::Utc::now());
        assert_eq!(endings(&v, "app-1"), Some(1.0));
    }
}
