//! What an application's record concludes from its evidence: the failures Spark counted,
//! its findings (memoized), its verdict, its driver's end and the executors that outlived
//! it, its counts. The record's types are in `records.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use spark_triage_core::diagnose::app::{AppFacts, Preemption, app_findings};
use spark_triage_core::diagnose::app_verdict::order;
use spark_triage_core::diagnose::operator::OperatorFacts;
use spark_triage_core::diagnose::{self, Code, Finding, app, disruption};
use spark_triage_core::model::driver_state::Allocation;
use spark_triage_core::model::{ExecutorState, PodCharge, Quota, Refusal, Time};

use super::records::invalid_id_value;
use super::*;

/// An executor's cause as advice groups it (none while it has no cause).
pub fn advice_case(e: &ExecutorRecord) -> Option<diagnose::advice::Case<'_>> {
    Some(diagnose::advice::Case {
        id: e.id,
        cause: e.verdict.cause()?,
        exit: e.exit_code(),
        failure: e.verdict.is_failure(),
        pending: e.state() == ExecutorState::Pending && e.gone.is_none(),
        at: super::ended_at(e),
    })
}

impl AppRecord {
    /// Failures Spark counted, forgotten executors included.
    pub fn counted_failures(&self) -> usize {
        self.forgotten_counted.values().sum::<usize>()
            + self.forgotten_uncaused
            + self
                .executors
                .values()
                .filter(|e| e.verdict.counted())
                .count()
    }

    /// The causes of the executors `pick` takes, after those of the forgotten executors Spark
    /// counted (they are the oldest).
    fn causes_of(&self, pick: impl Fn(&ExecutorRecord) -> bool) -> Vec<Code> {
        self.forgotten_counted
            .iter()
            .flat_map(|(c, n)| std::iter::repeat_n(*c, *n))
            .chain(
                self.executors
                    .values()
                    .filter(|e| pick(e))
                    .filter_map(|e| e.verdict.cause().map(|f| f.code)),
            )
            .collect()
    }

    pub(super) fn compute_findings(&self) -> Vec<Finding> {
        let spark_version = self.spark_version();
        let counted = self.causes_of(|e| e.verdict.spark.as_ref().is_some_and(|s| s.counted));
        let invalid_ids: Vec<(String, String)> = self
            .unregistered
            .iter()
            .filter_map(|(name, why)| Some((name.clone(), invalid_id_value(why)?)))
            .collect();
        let no_phase: Vec<String> = self
            .executors
            .values()
            .filter(|e| e.gone.is_none() && e.pod.deletion.is_none() && e.pod.phase().is_none())
            .map(|e| e.pod.name.clone())
            .collect();
        let oom_removals = self
            .executors
            .values()
            // Spark 4.2+ turns recovery mode on when a loss reason contains "OOM"
            // (`KubernetesClusterSchedulerBackend.doRemoveExecutor`, 4.3.0 bytecode): the
            // driver's own reason when it was read, else the one Spark logs for the pod
            // ("137(SIGKILL, possible container OOM)", "termination reason: OOMKilled").
            .filter(|e| {
                e.driver
                    .as_ref()
                    .and_then(|d| d.exec.as_ref())
                    .and_then(|d| d.remove_reason.as_deref())
                    .or_else(|| e.verdict.spark.as_ref().map(|s| s.message.as_str()))
                    .is_some_and(|r| r.contains("OOM"))
            })
            .count();
        let counts = self.counts();
        // An executor known only from the driver has no spec: its app's other pods (one
        // template) say its priority.
        let seen_priority = self
            .executors
            .values()
            .rev()
            .find(|e| !matches!(e.gone, Some(Gone::DriverOnly { .. })))
            .map(|e| (e.pod.priority_class.clone(), e.pod.priority));
        let preempted: Vec<Preemption> = self
            .executors
            .values()
            .filter(|e| e.verdict.has(Code::Preempted))
            .map(|e| {
                let (class, priority) = match (&e.gone, &seen_priority) {
                    (Some(Gone::DriverOnly { .. }), Some((c, p))) => (c.clone(), *p),
                    _ => (e.pod.priority_class.clone(), e.pod.priority),
                };
                Preemption {
                    by: e.verdict.preempted_by.as_deref().cloned(),
                    own_class: class.as_deref().map(str::to_owned),
                    own_priority: priority,
                }
            })
            .collect();
        // The driver preempted (its events, else its disruption condition): a streaming
        // app's loss of its query (a batch app's driver end is its own verdict).
        let driver_preempted: Option<Preemption> = self.driver.as_ref().and_then(|d| {
            let pod = d.ended.as_deref().or(d.last.as_deref())?;
            let by = disruption::preemptor(pod, &d.events)?;
            Some(Preemption {
                by: Some(by),
                own_class: pod.priority_class.as_deref().map(str::to_owned),
                own_priority: pod.priority,
            })
        });
        // What the next executor pod would be charged: like the newest one.
        let quota_refusals: Vec<(String, Refusal)> = self
            .executors
            .values()
            .next_back()
            .map(|e| PodCharge::of(&e.pod))
            .map(|charge| {
                self.quotas
                    .iter()
                    .flat_map(|q| q.refusals(&charge).into_iter().map(|r| (q.name.clone(), r)))
                    .collect()
            })
            .unwrap_or_default();
        let held: Vec<Finding> = self
            .executors
            .values()
            .filter(|e| e.pod_state == ExecutorState::Pending && e.gone.is_none())
            .filter_map(|e| e.verdict.cause())
            .filter(|f| app::is_held(f))
            .cloned()
            .collect();
        let failed = self.causes_of(|e| e.verdict.is_failure());
        // Pending executors the nodes do not take (not held by a gate, a gang, a queue).
        let mut waiting: BTreeMap<String, usize> = BTreeMap::new();
        let mut waiting_since: Option<Time> = None;
        for e in self.executors.values() {
            let Some(f) = e.verdict.cause() else { continue };
            if f.severity == diagnose::Severity::Info || app::is_held_code(f.code) {
                continue;
            }
            let Some(reason) = e.pending_reason() else {
                continue;
            };
            *waiting.entry(reason).or_default() += 1;
            let since = super::times::created(e).0;
            waiting_since = Some(waiting_since.map_or(since, |w: Time| w.min(since)));
        }
        let mut waiting: Vec<(String, usize)> = waiting.into_iter().collect();
        waiting.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let loss_causes = self.loss_labels();
        let mut out = app_findings(&AppFacts {
            spark_version,
            counted: &counted,
            max_failures: self.config.max_failures,
            executor_instances: self.config.executor_instances,
            dynamic_allocation: self.config.dynamic_allocation,
            max_executors: self.config.max_executors,
            invalid_ids: &invalid_ids,
            no_phase: &no_phase,
            oom_removals,
            recovery_mode: self.config.recovery_mode,
            config_known: self.config.from_driver,
            driver_running: self
                .driver
                .as_ref()
                .is_some_and(|d| d.phase.as_deref() == Some("Running")),
            live_executors: (counts.pending + counts.running) as u32,
            quota_refusals: &quota_refusals,
            settings: Some(&self.config.settings),
            preempted: &preempted,
            held: &held,
            failed: &failed,
            advice: self.advice(),
            missing: counts.missing,
            waiting: &waiting,
            waiting_since,
            driver_refusal: self.driver_refusal.as_deref(),
            allocation: self.current_allocation(),
            running_executors: counts.running as u32,
            scale_up_short_since: self
                .allocation
                .and_then(|a| a.short_since.filter(|s| a.at - *s >= app::STALL_AFTER)),
            streaming: self.streaming.as_ref(),
            cost: self.cost.as_deref(),
            loss_causes: &loss_causes,
            driver_preempted: driver_preempted.as_ref(),
        });
        out.extend(self.node_findings.iter().cloned());
        out.sort_by_key(order);
        out
    }

    /// Dynamic allocation's numbers while they stand: the driver runs, its last read worked,
    /// and they were read with it (a read two minutes older than its last good one is not
    /// what it asks for now).
    fn current_allocation(&self) -> Option<Allocation> {
        let a = self.allocation?;
        let running = self
            .driver
            .as_ref()
            .is_some_and(|d| d.phase.as_deref() == Some("Running"));
        let api = self.driver_api.as_ref()?;
        let fresh = api.unavailable.is_none()
            && api
                .last_ok
                .is_some_and(|ok| ok - a.at <= chrono::Duration::minutes(2));
        (running && fresh).then_some(a.allocation)
    }

    /// Its executors grouped by cause, in the one order of advice.
    pub(super) fn compute_advice(&self) -> Vec<diagnose::advice::Group> {
        diagnose::advice::groups(self.executors.values().filter_map(|e| advice_case(e)))
    }

    /// How the views name the app: its operator's object (`SparkApplication etl/nightly`)
    /// when submitted through one, else its Spark name, else its id.
    pub fn title(&self) -> String {
        self.operator.as_ref().map_or_else(
            || self.app_name.clone().unwrap_or_else(|| self.app_id.clone()),
            |o| o.title(),
        )
    }

    pub(super) fn compute_verdict(&self) -> diagnose::app_verdict::AppVerdict {
        use diagnose::app_verdict::{AppEvidence, ExecutorTally, app_verdict};
        let counts = self.counts();
        let ended_with_driver = self
            .executors
            .values()
            .filter(|e| {
                e.verdict
                    .cause()
                    .is_some_and(|f| f.code == Code::EndedWithDriver)
            })
            .count();
        let driver = self.driver.as_ref().and_then(|d| d.evidence(&self.groups));
        // A keyframe from before the driver's pod was kept knows its phase only.
        let driver_phase = driver
            .is_none()
            .then(|| self.driver.as_ref().and_then(|d| d.phase.as_deref()))
            .flatten();
        let now = self
            .as_of
            .or_else(|| driver.as_ref().and_then(|d| d.pod.created_at))
            .unwrap_or_default();
        // Executors that outlived the driver, as of the app's clock (ticks move it while
        // any executor of an ended driver is left).
        let orphans = self.find_orphans(now);
        let mut v = app_verdict(&AppEvidence {
            driver,
            driver_phase,
            logged_end: self.logged_end.as_deref(),
            unfinished: self.logged_unfinished,
            app_findings: self.findings(),
            executors: ExecutorTally {
                running: counts.running,
                pending: counts.pending,
                errors: self.alerts(),
                ended_with_driver,
                orphans: &orphans,
                known: self.executors.len(),
            },
            now,
            operator: self.operator.as_deref().map(|app| OperatorFacts {
                app,
                admission: self.admission.as_ref(),
                driver_seen: self.driver.is_some(),
            }),
        });
        // One end: the one the executors' verdicts were told (first seen, kept stable).
        v.end.clone_from(&self.driver_end);
        v
    }

    /// Executor pods that outlived the driver, as of `now`.
    pub(super) fn find_orphans(&self, now: Time) -> Vec<String> {
        let Some(end) = &self.driver_end else {
            return Vec::new();
        };
        self.executors
            .values()
            .filter(|e| {
                diagnose::app_verdict::is_orphan(
                    end,
                    e.pod_state,
                    e.pod.deletion.is_some(),
                    e.gone.is_some(),
                    now,
                )
            })
            .map(|e| e.pod.name.clone())
            .collect()
    }

    /// Recomputes the driver's end from its evidence; true when it changed.
    pub(super) fn update_driver_end(&mut self, now: Time) -> bool {
        let mut end = self
            .driver
            .as_ref()
            .and_then(|d| d.evidence(&self.groups))
            .and_then(|d| diagnose::app_verdict::driver_end(&d, now));
        // The tool saw this driver's end once: later sights (a terminating pod's updates)
        // do not move it.
        if let (Some(new), Some(old)) = (&mut end, &self.driver_end)
            && new.pod == old.pod
            && new.uid == old.uid
        {
            new.seen_at = new.seen_at.min(old.seen_at);
            if new.cluster_at.is_none() {
                new.at = new.seen_at;
            }
        }
        if end == self.driver_end {
            return false;
        }
        self.driver_end = end;
        true
    }

    /// The app's pods (driver, executors) that name a batch scheduler's group.
    pub(super) fn pods_naming_groups(&self) -> impl Iterator<Item = &ExecutorPod> + Clone {
        self.driver
            .iter()
            .filter_map(|d| d.last.as_deref())
            .chain(self.executors.values().map(|e| &*e.pod))
            .filter(|p| !p.groups.is_empty())
    }

    /// Whether any of its pods names a batch scheduler's group.
    pub(super) fn names_groups(&self) -> bool {
        self.pods_naming_groups().next().is_some()
    }

    /// The cause of each executor its cost names, as the strip says it ("OOMKilled (137)"):
    /// the last record of that id with a cause.
    /// One pass over the executors (a log of thousands of losses is not a pass per loss,
    /// and the metrics ask every second): the code and the label of each.
    pub fn loss_causes(&self) -> Vec<(i64, Code, String)> {
        let Some(cost) = &self.cost else {
            return Vec::new();
        };
        let named: std::collections::HashSet<i64> =
            cost.losses.iter().map(|l| l.executor).collect();
        let mut found: BTreeMap<i64, (Code, String)> = BTreeMap::new();
        for e in self.executors.values().filter(|e| named.contains(&e.id)) {
            if let Some(f) = e.verdict.cause() {
                found.insert(e.id, (f.code, cause_label(f.code, e.exit_code())));
            }
        }
        found.into_iter().map(|(id, (c, l))| (id, c, l)).collect()
    }

    /// [`Self::loss_causes`]' labels alone.
    pub fn loss_labels(&self) -> Vec<(i64, String)> {
        self.loss_causes()
            .into_iter()
            .map(|(id, _, label)| (id, label))
            .collect()
    }

    pub(super) fn new(namespace: &str, app_id: &str, quotas: Vec<Quota>) -> Self {
        Self {
            namespace: namespace.to_owned(),
            app_id: app_id.to_owned(),
            app_name: None,
            driver: None,
            config: AppConfig::default(),
            executors: BTreeMap::new(),
            unregistered: BTreeMap::new(),
            timeline: VecDeque::new(),
            driver_api: None,
            quotas,
            groups: Arc::default(),
            forgotten: Default::default(),
            forgotten_counted: BTreeMap::new(),
            forgotten_uncaused: 0,
            trimmed: Default::default(),
            logged_end: None,
            operator: None,
            admission: None,
            driver_refusal: None,
            allocation: None,
            streaming: None,
            cost: None,
            operator_label: None,
            operator_only: false,
            logged_version: None,
            driver_end: None,
            logged_end_at: None,
            logged_unfinished: false,
            as_of: None,
            node_findings: Vec::new(),
            heard_heartbeats: Default::default(),
            derived: Default::default(),
        }
    }

    /// A timeline line about something this process saw or did at `at`.
    pub(super) fn log(&mut self, at: Time, executor: Option<i64>, text: String) {
        self.log_when((at, super::times::Clock::Seen), at, executor, text);
    }

    /// A timeline line at a time from the cluster's clocks (a pod's creation, a container's
    /// end): kept in time order, so a view opened late lists what happened when it happened.
    pub(super) fn log_when(
        &mut self,
        (at, clock): (Time, super::times::Clock),
        seen: Time,
        executor: Option<i64>,
        text: String,
    ) {
        // Most lines come in order: from the back, after the last one not later.
        let i = self
            .timeline
            .iter()
            .rposition(|t| t.at <= at)
            .map_or(0, |i| i + 1);
        self.timeline.insert(
            i,
            TimelineEntry {
                at,
                executor,
                text,
                clock,
                seen: (seen != at).then_some(seen),
            },
        );
        while self.timeline.len() > MAX_TIMELINE {
            self.timeline.pop_front();
        }
    }

    /// Executors per state (missing ones only under `missing`).
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for e in self.executors.values() {
            if e.is_missing() {
                c.missing += 1;
                continue;
            }
            *c.get_mut(e.state()) += 1;
        }
        c
    }

    /// Pending executors by reason, most common first.
    pub fn pending_reasons(&self) -> Vec<(String, usize)> {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for e in self.executors.values() {
            if let Some(r) = e.pending_reason() {
                *m.entry(r).or_default() += 1;
            }
        }
        let mut v: Vec<_> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Executors whose verdict is an error.
    pub fn alerts(&self) -> usize {
        self.executors
            .values()
            .filter(|e| e.verdict.severity() == Some(diagnose::Severity::Error))
            .count()
    }
}
