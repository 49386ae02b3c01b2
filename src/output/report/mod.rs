//! `spark-triage report FILE`: a written post-mortem of a recording, per application:
//! failures on a timeline with their findings, counts by finding, the OOM breakdown, pending
//! time and reasons, missing executors, churn windows, actions taken, and recommendations
//! (the setting to change, with the evidence). Pure: recording in, report out.

use std::collections::BTreeMap;

use serde::Serialize;
use spark_triage_core::diagnose::app_verdict::VerdictView;
use spark_triage_core::diagnose::code::Oom;
use spark_triage_core::diagnose::{Code, Severity, advice};
use spark_triage_core::model::{ExecutorState, Time, fmt_time};

use crate::output::cost::{CostView, PodCostView};
use crate::output::{AppOrder, OperatorStatus};
use crate::record::{ForgetRule, Gap, Header, Item, Keyframe, Recording, Sink, State};
use crate::store;
use crate::store::{AppRecord, BudgetView, Counts, ExecutorRecord, Gone};

mod markdown;
mod svg;

pub use markdown::markdown;
pub use svg::svg;

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report<'a> {
    pub source: String,
    pub started_at: String,
    pub ended_at: String,
    pub duration_seconds: i64,
    pub scope: String,
    /// Read from Spark's event logs, not a recording: no pods, nodes, Kubernetes events,
    /// pending reasons or log tails, so what they would say is absent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub event_log: bool,
    /// Where nothing was recorded (a directory whose recorder was down): executors that
    /// ended then may be missing from the report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
    pub apps: Vec<AppReport<'a>>,
    /// What the namespaces kept at the end that nobody reads (finished driver pods).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub housekeeping: Vec<super::Housekeeping>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct AppReport<'a> {
    pub namespace: String,
    pub app_id: String,
    pub app_name: Option<String>,
    pub driver_phase: Option<String>,
    /// Its Spark operator's `SparkApplication`, when submitted through one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<OperatorStatus>,
    /// The application's verdict at the end of the window: the cause first.
    pub verdict: VerdictView,
    pub executors_seen: usize,
    /// Executors that ended by a failure: Spark counted it, or Spark's state is failed
    /// and it blames the app. Endings that are normal (scale-down, the app's end, a
    /// replaced executor) and vanishings are not failures.
    pub failures_counted: usize,
    /// Spark's failure budget at the end of the window, as numbers (its `failures_counted`
    /// is Spark's own count; the one above is the report's failures).
    pub failure_budget: BudgetView,
    pub counts: Counts,
    /// Findings about the whole app at the end (`crash-loop`, …): `code: summary`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub app_findings: Vec<String>,
    pub failures: Vec<FailureEntry<'a>>,
    /// Ended executors not listed above: past the most a store keeps whole (25,000), the
    /// first to end are counted, not kept. `executors_seen`, `failures_counted`,
    /// `by_finding`, `by_cause` and `oom` count them (when `counted`); the state counts,
    /// the churn windows and the recommendations do not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_listed: Option<NotListed>,
    /// Findings of the executors, by code (each key is a finding code).
    #[schemars(extend("propertyNames" = {"$ref": "#/$defs/Code"}))]
    pub by_finding: BTreeMap<Code, usize>,
    /// Ended executors by their verdict's cause (a finding code, `none` when it names
    /// none): one per executor, as the fleet tables' `executor_endings.cause` counts them.
    #[schemars(extend("propertyNames" = {"anyOf": [{"$ref": "#/$defs/Code"}, {"const": "none"}]}))]
    pub by_cause: BTreeMap<String, usize>,
    pub oom: OomBreakdown,
    pub pending: PendingSummary,
    pub missing: Vec<MissingEntry>,
    pub churn_windows: Vec<ChurnWindow>,
    pub actions: Vec<String>,
    pub recommendations: Vec<Recommendation>,
    /// What its executor losses cost it and what it left idle (from its event log): the
    /// whole run's, whatever the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostView>,
    /// What its pods cost beside: pods deleted before they ran, memory limited against the
    /// peak used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_cost: Option<PodCostView>,
}

/// Ended executors counted but not listed (see `AppReport::not_listed`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct NotListed {
    pub executors: usize,
    pub failures: usize,
    /// When the first and the last of them ended.
    pub ended_from: Option<String>,
    pub ended_to: Option<String>,
    /// Counted in the app's figures: they all ended in the window (a window that starts
    /// among them cannot tell which did: then they are named here only).
    pub counted: bool,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FailureEntry<'a> {
    pub at: String,
    pub executor: i64,
    pub state: ExecutorState,
    pub exit_code: Option<i32>,
    pub finding: Option<Code>,
    pub summary: Option<String>,
    /// Spark counted it toward `spark.executor.maxNumFailures` (the verdict's account).
    pub counted: bool,
    /// How the pod ended (`deleted-by-spark`, `vanished`, …).
    pub ending: &'static str,
    /// Spark's own reason, from the driver's executor list (when it was read).
    // The store's text, not a copy: a log of long reasons doubles no memory for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_remove_reason: Option<&'a str>,
    /// A failure (see `AppReport::failures_counted`); else a normal ending or a vanish.
    pub failure: bool,
}

#[derive(Debug, Serialize, Default, schemars::JsonSchema)]
pub struct OomBreakdown {
    pub container: usize,
    pub jvm: usize,
    pub node: usize,
}

impl OomBreakdown {
    /// One ending of this cause: the container's OOM kill, the JVM's heap, or a node-level
    /// SIGKILL that is an error (the node's OOM killer).
    pub fn add(&mut self, cause: Code, severity: Severity) {
        self.add_n(cause.oom(severity), 1);
    }

    fn add_n(&mut self, oom: Option<Oom>, n: usize) {
        match oom {
            Some(Oom::Container) => self.container += n,
            Some(Oom::Jvm) => self.jvm += n,
            Some(Oom::Node) => self.node += n,
            None => {}
        }
    }
}

#[derive(Debug, Serialize, Default, schemars::JsonSchema)]
pub struct PendingSummary {
    pub executors: usize,
    pub median_seconds: Option<i64>,
    pub max_seconds: Option<i64>,
    pub still_pending: usize,
    pub reasons: Vec<(String, usize)>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct MissingEntry {
    pub executor: i64,
    pub at: String,
    pub spark_verdict: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ChurnWindow {
    pub from: String,
    pub to: String,
    pub failures: usize,
}

/// One piece of advice: the executors whose cause it is (only they), in the one order
/// (failures first, then severity, then how many: `spark_triage_core::diagnose::advice`).
/// Findings beside a cause (`driver-removed`, `deleted`) are its evidence, never advice.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    /// The cause.
    pub finding: Code,
    /// The cause as on-call engineers say it: `OOMKilled (137)`.
    pub label: String,
    pub severity: Severity,
    /// Any of them a failure (counted by Spark, or failed and blamed on the app).
    pub failure: bool,
    /// How many executors it applies to.
    pub executors: usize,
    /// Which, newest first.
    pub executor_ids: Vec<i64>,
    /// The cause's hint, with its concrete value when a witness held one.
    pub advice: String,
    pub evidence: Vec<String>,
}

/// Failures in one minute that make a churn window.
const CHURN_PER_MINUTE: usize = 3;

impl Report<'_> {
    /// In the order asked for (`--sort`): trouble is how it is built.
    pub fn sorted(mut self, order: AppOrder) -> Self {
        order.apply(&mut self.apps);
        self
    }
}

/// What a report covers: executors that ended from `from` to `to` (and those still there
/// at `to`), of every app or of the one named.
#[derive(Debug, Default, Clone)]
pub struct Window {
    pub from: Option<Time>,
    pub to: Option<Time>,
    /// An app's name or id.
    pub app: Option<String>,
}

/// The state a recording arrives at, read in memory for window `w` (the report of it is
/// [`from_state`]'s, borrowing from it).
pub fn state_of(rec: &Recording, w: &Window) -> State {
    let mut state = w.state();
    if let Some(k) = Keyframe::opening(&rec.keyframes) {
        state.take(Item::Keyframe(k.clone()));
    }
    for ev in &rec.events {
        state.take(Item::Event(ev.clone()));
    }
    state.gaps.clone_from(&rec.gaps);
    state
}

impl Window {
    /// The state a streaming read for this window arrives at: events up to `to`, and what
    /// a long-running recorder forgot kept as far as the window needs it.
    pub fn state(&self) -> State {
        State {
            until: self.to,
            forget: ForgetRule::KeepFrom(self.from),
            ..Default::default()
        }
    }
}

/// The report of a window from the state a (streaming) read arrived at.
pub fn from_state<'a>(source: &str, header: &Header, state: &'a State, w: &Window) -> Report<'a> {
    let store = &state.store;
    // After a switch of scope (`:ns`, `:ctx` while recording) the store holds the last
    // scope only, from the switch on: the report says so.
    let switched = store.view().scope.as_ref();
    let start = w
        .from
        .unwrap_or(header.started_at)
        .max(switched.map_or(Time::MIN_UTC, |s| s.since));
    let end = store
        .view()
        .now
        .unwrap_or(start)
        .min(w.to.unwrap_or(Time::MAX_UTC));
    let mut records: Vec<&std::sync::Arc<AppRecord>> = store
        .view()
        .apps
        .values()
        .filter(|a| {
            w.app
                .as_deref()
                .is_none_or(|n| a.app_id.as_str() == n || a.app_name.as_deref() == Some(n))
        })
        .collect();
    // The most trouble first (the live view's order); `--sort name` re-sorts.
    store::by_trouble(&mut records);
    let apps: Vec<AppReport<'_>> = records
        .into_iter()
        .filter_map(|a| app_report(a, w.from, end))
        .collect();
    Report {
        source: source.to_owned(),
        started_at: fmt_time(&start),
        ended_at: fmt_time(&end),
        duration_seconds: (end - start).num_seconds(),
        event_log: header.is_converted(),
        scope: match switched {
            Some(s) => format!(
                "{} of context {} (switched to at {}; `--to {}` reports what came before)",
                s.scope,
                s.context,
                fmt_time(&s.since),
                fmt_time(&s.since)
            ),
            None => header.scope.clone(),
        },
        gaps: state
            .gaps
            .iter()
            .filter(|g| g.to >= start && g.from <= end)
            .copied()
            .collect(),
        apps,
        housekeeping: if w.app.is_some() {
            Vec::new()
        } else {
            super::housekeeping(store.view(), Some(end))
        },
    }
}

/// When it ended, by the cluster's clocks where known (the live view's and `status`'s times).
fn ended_at(e: &ExecutorRecord) -> Option<Time> {
    store::ended_at(e)
}

/// An app's part of the report; none when every executor of it ended before `from`.
fn app_report(a: &AppRecord, from: Option<Time>, end: Time) -> Option<AppReport<'_>> {
    let executors: Vec<&ExecutorRecord> = a
        .executors
        .values()
        .map(|e| &**e)
        .filter(|e| from.is_none_or(|f| ended_at(e).is_none_or(|at| at >= f)))
        .collect();
    // An app with nothing in the window, unless its driver is the story (pending, ended badly).
    if executors.is_empty() && from.is_some() && a.verdict().severity() == Severity::Info {
        return None;
    }
    let mut tally = Tally::default();
    for e in executors.iter().copied() {
        tally.add(e, end);
    }
    let Tally {
        mut failures,
        mut by_finding,
        mut oom,
        missing,
        mut pending_secs,
        still_pending,
        mut by_cause,
    } = tally;
    failures.sort_by_key(|(at, f)| (*at, f.executor));
    // Churn is failures in a burst: normal endings (a scale-down, the app's stop) are not.
    let churn_windows = churn(
        failures
            .iter()
            .filter(|(_, f)| f.failure)
            .map(|(at, _)| *at)
            .collect(),
    );
    let mut failures_counted = failures.iter().filter(|(_, f)| f.failure).count();
    let not_listed = count_not_listed(
        a,
        from,
        &mut failures_counted,
        &mut by_cause,
        &mut oom,
        &mut by_finding,
    );
    pending_secs.sort_unstable();
    let pending = PendingSummary {
        executors: pending_secs.len(),
        median_seconds: pending_secs.get(pending_secs.len() / 2).copied(),
        max_seconds: pending_secs.last().copied(),
        still_pending,
        reasons: a.pending_reasons(),
    };
    let actions = a
        .timeline
        .iter()
        .filter(|t| t.text.starts_with("action by"))
        .map(|t| format!("{} {}", fmt_time(&t.at), t.text))
        .collect();
    let recommendations = recommendations_of(&executors);
    Some(AppReport {
        namespace: a.namespace.clone(),
        app_id: a.app_id.clone(),
        app_name: a.app_name.clone(),
        driver_phase: a.driver.as_ref().and_then(|d| d.phase.clone()),
        operator: a.operator.as_deref().map(OperatorStatus::of),
        verdict: a.verdict().into(),
        executors_seen: executors.len()
            + not_listed
                .as_ref()
                .filter(|n| n.counted)
                .map_or(0, |n| n.executors),
        failures_counted,
        failure_budget: a.budget_view(),
        counts: a.counts(),
        app_findings: a
            .findings()
            .iter()
            .map(|f| format!("{}: {}", f.code, f.summary))
            .collect(),
        failures: failures.into_iter().map(|(_, f)| f).collect(),
        not_listed,
        by_finding,
        by_cause,
        oom,
        pending,
        missing,
        churn_windows,
        actions,
        recommendations,
        cost: CostView::of(a),
        pod_cost: PodCostView::of(a),
    })
}

/// What an app's executors in the window add up to, folded one executor at a time.
#[derive(Default)]
struct Tally<'a> {
    /// Those that ended badly (or vanished), with when they ended.
    failures: Vec<(Time, FailureEntry<'a>)>,
    by_finding: BTreeMap<Code, usize>,
    oom: OomBreakdown,
    missing: Vec<MissingEntry>,
    pending_secs: Vec<i64>,
    still_pending: usize,
    by_cause: BTreeMap<String, usize>,
}

impl<'a> Tally<'a> {
    /// One executor: its ending's cause, its findings, its OOM, whether it is missing, its
    /// entry among the executors that ended, and its time spent pending (to `end` while it
    /// still is).
    fn add(&mut self, e: &'a ExecutorRecord, end: Time) {
        let Self {
            failures,
            by_finding,
            oom,
            missing,
            pending_secs,
            still_pending,
            by_cause,
        } = self;
        if ended_at(e).is_some() {
            let cause = e.verdict.cause_code();
            *by_cause.entry(cause.to_owned()).or_default() += 1;
        }
        for f in e.findings() {
            *by_finding.entry(f.code).or_default() += 1;
        }
        if let Some(f) = e.verdict.cause() {
            oom.add(f.code, f.severity);
        }
        if e.is_missing()
            && let Some(Gone::Missing {
                at, spark_verdict, ..
            }) = &e.gone
        {
            missing.push(MissingEntry {
                executor: e.id,
                at: fmt_time(at),
                spark_verdict: spark_verdict.clone(),
            });
        }
        let ended = ended_at(e);
        let interesting = e.is_missing()
            || matches!(
                e.state(),
                ExecutorState::Failed | ExecutorState::Deleted | ExecutorState::Unknown
            )
            || e.verdict.severity() == Some(Severity::Error);
        if let (true, Some(at)) = (interesting && e.state() != ExecutorState::Pending, ended) {
            let first = e.verdict.cause();
            let failure = e.verdict.is_failure();
            failures.push((
                at,
                FailureEntry {
                    at: fmt_time(&at),
                    executor: e.id,
                    state: e.state(),
                    exit_code: e.exit_code(),
                    finding: first.map(|f| f.code),
                    summary: first.map(|f| f.summary.clone()),
                    counted: e.verdict.counted(),
                    ending: e.verdict.ending.as_str(),
                    driver_remove_reason: e
                        .driver
                        .as_ref()
                        .and_then(|d| d.exec.as_ref())
                        .and_then(|x| x.remove_reason.as_deref())
                        .map(str::trim),
                    failure,
                },
            ));
        }
        // Time spent pending: from the first pending transition to the next other one.
        if let Some(p) = e
            .history
            .iter()
            .position(|t| t.state == ExecutorState::Pending)
        {
            let from = e.history[p].at;
            match e
                .history
                .iter()
                .skip(p + 1)
                .find(|t| t.state != ExecutorState::Pending)
            {
                Some(next) => pending_secs.push((next.at - from).num_seconds()),
                None if e.gone.is_none() => {
                    *still_pending += 1;
                    pending_secs.push((end - from).num_seconds());
                }
                None => {}
            }
        }
    }
}

/// The first to end, let go past the store's bound: counted, not listed. A window that
/// starts after them leaves them out; one that starts among them cannot tell which were
/// in it: they are named, not counted. Counted, they add to the app's figures given.
fn count_not_listed(
    a: &AppRecord,
    from: Option<Time>,
    failures_counted: &mut usize,
    by_cause: &mut BTreeMap<String, usize>,
    oom: &mut OomBreakdown,
    by_finding: &mut BTreeMap<Code, usize>,
) -> Option<NotListed> {
    let t = &a.trimmed;
    let inside = from.is_none_or(|f| t.from.is_some_and(|tf| tf >= f));
    let split = !inside && from.is_some_and(|f| t.to.is_some_and(|to| to >= f));
    (!t.is_empty() && (inside || split)).then(|| {
        if inside {
            *failures_counted += t.failures;
            for (cause, n) in &t.by_cause {
                *by_cause.entry(cause.clone()).or_default() += n;
                // A node's kill is an OOM only as an error: counted apart (`node_oom`).
                let kind = Code::parse(cause).and_then(|c| c.oom(Severity::Warn));
                oom.add_n(kind, *n);
            }
            oom.node += t.node_oom;
            for (code, n) in &t.by_finding {
                *by_finding.entry(*code).or_default() += n;
            }
        }
        NotListed {
            executors: t.executors,
            failures: t.failures,
            ended_from: t.from.as_ref().map(fmt_time),
            ended_to: t.to.as_ref().map(fmt_time),
            counted: inside,
        }
    })
}

/// One per cause, naming only its executors: the app's advice, over the window's.
fn recommendations_of(executors: &[&ExecutorRecord]) -> Vec<Recommendation> {
    advice::groups(executors.iter().filter_map(|e| store::advice_case(e)))
        .into_iter()
        .map(|g| Recommendation {
            finding: g.code,
            label: g.label,
            severity: g.severity,
            failure: g.failure,
            executors: g.executors.len(),
            executor_ids: g.executors,
            advice: g.hint,
            evidence: g.examples,
        })
        .collect()
}

/// One-minute windows with at least `CHURN_PER_MINUTE` failures, merged when adjacent.
fn churn(mut times: Vec<Time>) -> Vec<ChurnWindow> {
    times.sort();
    let mut out: Vec<(Time, Time, usize)> = Vec::new();
    for (i, t) in times.iter().enumerate() {
        let window_end = *t + chrono::Duration::seconds(60);
        let n = times[i..].iter().take_while(|x| **x < window_end).count();
        if n >= CHURN_PER_MINUTE {
            let last = times[i..i + n].last().copied().unwrap_or(*t);
            match out.last_mut() {
                Some(w) if *t <= w.1 => {
                    w.1 = w.1.max(last);
                    w.2 = times.iter().filter(|x| **x >= w.0 && **x <= w.1).count();
                }
                _ => out.push((*t, last, n)),
            }
        }
    }
    out.into_iter()
        .map(|(a, b, n)| ChurnWindow {
            from: fmt_time(&a),
            to: fmt_time(&b),
            failures: n,
        })
        .collect()
}
