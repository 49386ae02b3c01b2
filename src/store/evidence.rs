//! Turning an executor record's evidence into its verdict, history and timeline lines.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use spark_triage_core::classify::{Resolved, classify};
use spark_triage_core::diagnose::app_verdict::DriverEnd;
use spark_triage_core::diagnose::verdict::{Evidence, PodGone, ToolKill, Verdict, verdict};
use spark_triage_core::diagnose::{self, Code, GroupIndex};
use spark_triage_core::model;
use spark_triage_core::model::driver::{DriverSeen, ExecutorList};
use spark_triage_core::model::{
    ContainerState, DriverExecutor, ExecutorPod, ExecutorState, LABEL_SPARK_VERSION, PodEvent, Time,
};

use super::*;

/// What of the driver's entry can change a verdict (not task counts or memory figures).
#[derive(PartialEq)]
pub(super) struct DriverGist<'a> {
    active: bool,
    remove_reason: Option<&'a str>,
    remove_time: Option<Time>,
    heartbeat_expired_later: bool,
    tasks_lost: u64,
}

pub(super) fn driver_gist(d: Option<&DriverExecutor>) -> Option<DriverGist<'_>> {
    d.map(|d| DriverGist {
        active: d.active,
        remove_reason: d.remove_reason.as_deref(),
        remove_time: d.remove_time,
        heartbeat_expired_later: d.heartbeat_expired_later(),
        tasks_lost: d.tasks_lost,
    })
}

/// A pod × driver disagreement that depends on elapsed time may appear now.
pub(super) fn may_come_due(rec: &ExecutorRecord) -> bool {
    let exec = rec.driver.as_ref().and_then(|d| d.exec.as_ref());
    match exec {
        // Active in the driver, pod gone: `driver-lost-pod` after Spark's grace.
        Some(d) if d.active => rec.gone.is_some() && !rec.verdict.has(Code::DriverLostPod),
        // Removed, pod still Running: `zombie` after a while.
        Some(_) => {
            rec.gone.is_none()
                && rec.pod_state == ExecutorState::Running
                && !rec.verdict.has(Code::Zombie)
        }
        // Not listed, pod Running: `unregistered` after a while.
        None => {
            rec.gone.is_none()
                && rec.pod_state == ExecutorState::Running
                && !rec.verdict.has(Code::Unregistered)
        }
    }
}

/// Who said it, in a timeline line.
pub(super) fn from_words(from: ExecutorList) -> &'static str {
    match from {
        ExecutorList::DriverApi => "driver",
        ExecutorList::EventLog => "event log",
    }
}

/// A tombstone for an executor only the driver knows: its pod rebuilt from Spark's removal
/// message, so the same rules read its exit (and, from an event log, labelled with the
/// Spark version the log names, whose rules then apply).
pub(super) fn driver_only(
    ns: &str,
    app_id: &str,
    name: &str,
    (d, from, version): (DriverExecutor, ExecutorList, Option<&str>),
    events: &[PodEvent],
    ctx: &AppCtx,
    at: Time,
) -> ExecutorRecord {
    let config = &ctx.config;
    let mut pod = diagnose::driver::pod_from_reason(ns, app_id, name, &d);
    if let Some(v) = version {
        pod.labels.insert(LABEL_SPARK_VERSION.into(), v.into());
    }
    let resolved = config.classify_options().resolve(&pod);
    let state = classify(&pod, &resolved.config);
    // Its container's end as Spark's reason quotes it ("container finished at"), else the
    // driver's own removal or addition: the times every screen gives this executor.
    let (when, clock) =
        match super::times::transition(&pod, &resolved.config.spark_container, state, false, at) {
            (t, c) if !c.is_bound() && state.is_final() => (t, c),
            _ => super::times::from_driver(&d, at),
        };
    let mut rec = ExecutorRecord {
        id: d.id,
        spark_container: (&resolved.config.spark_container).into(),
        pod: Arc::new(pod),
        pod_state: state,
        first_seen: at,
        last_seen: at,
        last_rv: None,
        history: VecDeque::from([Transition::new(
            (when, clock),
            at,
            state,
            Some(format!("known only from the {}", from_words(from))),
        )]),
        events: VecDeque::new(),
        ended: None,
        first_deletion: None,
        gone: Some(Gone::DriverOnly { at }),
        log_tail: None,
        driver: Some(Box::new(DriverSeen {
            at,
            exec: Some(d),
            from,
        })),
        killed_by_tool: None,
        verdict: Verdict::default(),
    };
    // Judged with all its app knows (the driver's heartbeat removals among it): a record
    // made now is not judged again until something about it changes.
    refresh(&mut rec, events, ctx, Some(&resolved), at);
    rec
}

/// The actions log's kill of this executor's pod: only a pod gone or being deleted, and
/// made before the kill (a later pod of the same name, with a fixed name prefix, is not it).
fn logged_kill<'a>(rec: &ExecutorRecord, kills: &'a super::LoggedKills) -> Option<&'a ToolKill> {
    if rec.gone.is_none() && rec.pod.deletion.is_none() {
        return None;
    }
    let kill = kills.get(&(rec.pod.namespace.to_string(), rec.pod.name.clone()))?;
    let made_before = match (rec.pod.created_at, kill.at) {
        (Some(created), Some(at)) => created <= at,
        _ => true,
    };
    made_before.then_some(kill)
}

pub(super) fn push_history(rec: &mut ExecutorRecord, t: Transition) {
    rec.history.push_back(t);
    while rec.history.len() > MAX_HISTORY {
        rec.history.pop_front();
    }
}

/// A deletion seen for a pod that is still there (a later LIST or update has it): the
/// executor is not gone; its history says why.
pub(super) fn withdraw_deletion(rec: &mut ExecutorRecord, at: Time, rv: u64) {
    rec.gone = None;
    let state = rec.pod_state;
    push_history(
        rec,
        Transition {
            at,
            state,
            note: Some(format!(
                "deletion withdrawn: the pod is still there at resourceVersion {rv}"
            )),
            clock: super::times::Clock::Seen,
            seen: None,
        },
    );
}

pub(super) fn is_ending(state: ExecutorState) -> bool {
    matches!(state, ExecutorState::Failed | ExecutorState::Succeeded)
}

/// What an executor's verdict reads of its app: the configuration, the driver's end, the
/// batch schedulers' objects (taken once per batch of executors recomputed).
pub(super) struct AppCtx {
    pub config: AppConfig,
    pub driver_end: Option<DriverEnd>,
    pub groups: Arc<GroupIndex>,
    /// The executors the driver's captured log says it removed for want of heartbeats
    /// (what "Executor killed by driver." hides), read once per app.
    pub heartbeat_removals: Arc<std::collections::BTreeSet<i64>>,
    /// Kills this user made through spark-triage that the local actions log holds, by
    /// (namespace, pod): a pod gone before this view started has no mark left to say so.
    pub logged_kills: super::LoggedKills,
}

impl AppCtx {
    pub(super) fn of(app: &super::records::AppRecord, logged_kills: &super::LoggedKills) -> Self {
        Self {
            logged_kills: logged_kills.clone(),
            config: app.config.clone(),
            driver_end: app.driver_end.clone(),
            groups: app.groups.clone(),
            heartbeat_removals: {
                let logged = app
                    .driver
                    .as_ref()
                    .map(|d| d.heartbeat_removals.clone())
                    .unwrap_or_default();
                if app.heard_heartbeats.is_empty() {
                    logged
                } else {
                    Arc::new(
                        logged
                            .iter()
                            .chain(&app.heard_heartbeats)
                            .copied()
                            .collect(),
                    )
                }
            },
        }
    }
}

/// Recomputes the verdict from all the evidence the record holds. Returns a timeline line
/// when the verdict changed in a way worth saying: a missing verdict withdrawn because a
/// witness explained the disappearance, or a new pod × driver disagreement.
pub(super) fn refresh(
    rec: &mut ExecutorRecord,
    events: &[PodEvent],
    ctx: &AppCtx,
    resolved: Option<&Resolved>,
    now: Time,
) -> Option<String> {
    let (config, driver_end, groups) = (&ctx.config, ctx.driver_end.as_ref(), &*ctx.groups);
    let mut evs: Vec<PodEvent> = events
        .iter()
        .filter(|e| e.is_about(&rec.pod))
        .cloned()
        .collect();
    evs.sort_by(PodEvent::chronological);
    if evs.len() > MAX_EVENTS {
        evs.drain(..evs.len() - MAX_EVENTS);
    }
    let missing = match &rec.gone {
        Some(Gone::Missing {
            list_rv,
            spark_verdict,
            ..
        }) => Some(diagnose::missing(rec.last_rv, *list_rv, spark_verdict)),
        _ => None,
    };
    let running_since = (rec.pod_state == ExecutorState::Running)
        .then(|| {
            rec.history
                .iter()
                .rev()
                .take_while(|t| t.state == ExecutorState::Running)
                .last()
                .map(|t| t.at)
        })
        .flatten();
    let lost_grace = chrono::Duration::from_std(if config.api_polling {
        config.missing_pod_detect_delta + config.api_polling_interval
    } else {
        config.network_timeout
    })
    .unwrap_or(chrono::Duration::seconds(60));
    let options = config.classify_options();
    // The caller's resolution of this pod under this config, when it has one.
    let own;
    let resolved = match resolved {
        Some(r) => r,
        None => {
            own = options.resolve(&rec.pod);
            &own
        }
    };
    let before = std::mem::take(&mut rec.verdict);
    // A kill through spark-triage: this process's own act, else the pod's mark of it (made
    // by another terminal, or before this view started).
    // Only once its deletion is under way: a mark on a pod still running is a kill being
    // made (or one refused whose mark could not be taken off).
    let marked =
        ToolKill::of(&rec.pod).filter(|_| rec.gone.is_some() || rec.pod.deletion.is_some());
    let v = verdict(&Evidence {
        id: rec.id,
        first_seen: Some(rec.first_seen),
        pod: &rec.pod,
        resolved,
        pod_state: rec.pod_state,
        ended: rec.ended.as_deref(),
        first_deletion: rec.first_deletion.as_ref(),
        events: &evs,
        options: &options,
        gone: match rec.gone {
            None => PodGone::No,
            Some(Gone::Deleted { .. }) => PodGone::Deleted,
            Some(Gone::Missing { .. }) => PodGone::Missing,
            Some(Gone::DriverOnly { .. }) => PodGone::DriverOnly,
            Some(Gone::Restarted { .. }) => PodGone::Restarted,
        },
        missing: missing.as_ref(),
        driver: rec.driver.as_deref(),
        log_tail: rec.log_tail.as_deref().map(Vec::as_slice),
        killed_by_tool: rec
            .killed_by_tool
            .as_ref()
            .or(marked.as_ref())
            .or_else(|| logged_kill(rec, &ctx.logged_kills)),
        sizing: config.from_driver.then_some(&config.sizing),
        dynamic_allocation: config.from_driver.then_some(config.dynamic_allocation),
        heartbeat_logged: ctx.heartbeat_removals.contains(&rec.id)
            || rec
                .driver
                .as_deref()
                .and_then(|d| d.exec.as_ref())
                .is_some_and(|d| d.heartbeat_expired_later()),
        running_since,
        gone_at: rec.gone.as_ref().map(Gone::at),
        lost_grace,
        api_polling: config.api_polling,
        delete_on_termination: config.delete_on_termination,
        driver_end,
        groups,
        now,
    });
    // A pod never seen (known from the driver) or seen before it was bound: the node the
    // kubelet's events name (node patterns need it when the tool started after the end).
    if rec.pod.node_name.is_none()
        && let Some(host) = evs.iter().rev().find_map(|e| e.host.as_deref())
    {
        Arc::make_mut(&mut rec.pod).node_name = Some(host.into());
    }
    rec.events = evs.into();
    let mut notes = Vec::new();
    if before.missing && !v.missing {
        notes.push(format!(
            "executor {} no longer missing: {}",
            rec.id,
            explained_by_verdict(&v)
        ));
    }
    for f in &v.findings {
        if matches!(
            f.code,
            Code::DriverLostPod | Code::Unregistered | Code::Zombie
        ) && !before.has(f.code)
        {
            notes.push(format!("executor {}: {}", rec.id, f.summary));
        }
    }
    rec.verdict = v;
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// What explains an executor's disappearance, for the timeline.
pub(super) fn explained_by(rec: &ExecutorRecord) -> String {
    explained_by_verdict(&rec.verdict)
}

pub(super) fn explained_by_verdict(v: &Verdict) -> String {
    match v.cause() {
        Some(f) => format!(
            "{} ({}; from the {})",
            v.ending.describe(),
            f.code,
            f.witness.as_str()
        ),
        None => v.ending.describe().to_owned(),
    }
}

/// The events kept about a pod by this name (by namespace and name): for a pod not seen.
pub(super) fn events_named(
    events: &BTreeMap<(String, String), VecDeque<PodEvent>>,
    namespace: &str,
    pod: &str,
) -> Vec<PodEvent> {
    events
        .get(&(namespace.to_owned(), pod.to_owned()))
        .map(|q| q.iter().cloned().collect())
        .unwrap_or_default()
}

/// The events kept about this pod: by its name, and by its uid where the event has one (a
/// StatefulSet's pod recreated under its name does not inherit its predecessor's).
pub(super) fn events_of(
    events: &BTreeMap<(String, String), VecDeque<PodEvent>>,
    pod: &ExecutorPod,
) -> Vec<PodEvent> {
    events
        .get(&(pod.namespace.to_string(), pod.name.clone()))
        .map(|q| q.iter().filter(|e| e.is_about(pod)).cloned().collect())
        .unwrap_or_default()
}

/// When Spark's rule declares a vanished executor lost: the first poll more than
/// `missingPodDetectDelta` after its registration (approximated by the container start).
pub(super) fn spark_missing_verdict(
    rec: &ExecutorRecord,
    at: Time,
    config: &super::AppConfig,
) -> String {
    if !config.api_polling {
        return format!(
            "Spark does not poll (spark.kubernetes.executor.enableApiPolling=false), so its missing-pod rule never fires: the driver learns of it only when the executor's heartbeats time out (spark.network.timeout, {}s)",
            config.network_timeout.as_secs()
        );
    }
    let delta = chrono::Duration::from_std(config.missing_pod_detect_delta)
        .unwrap_or(chrono::Duration::seconds(30));
    let poll = chrono::Duration::from_std(config.api_polling_interval)
        .unwrap_or(chrono::Duration::seconds(30));
    let registered = rec
        .pod
        .container_status(&rec.spark_container)
        .and_then(|c| match &c.state {
            ContainerState::Running { started_at } => *started_at,
            _ => None,
        })
        .or_else(|| {
            rec.history
                .iter()
                .find(|t| t.state == ExecutorState::Running)
                .map(|t| t.at)
        })
        .unwrap_or(rec.first_seen);
    let threshold = registered + delta;
    if at > threshold {
        format!(
            "Spark declares it lost (exit -1, not counted against the app) at its first poll after {} (registration + missingPodDetectDelta); that moment has passed",
            model::fmt_time(&threshold)
        )
    } else {
        format!(
            "Spark declares it lost at its first poll after {} (registration + missingPodDetectDelta, polls every {}s)",
            model::fmt_time(&threshold),
            poll.num_seconds()
        )
    }
}

pub(super) fn transition_text(
    id: i64,
    state: ExecutorState,
    pod: &ExecutorPod,
    resolved: &Resolved,
    note: Option<&str>,
) -> String {
    let mut s = format!("executor {id} {state}");
    let cs = pod.container_status(&resolved.config.spark_container);
    if let Some(t) = cs.and_then(|c| c.terminated()) {
        s.push_str(&format!(" (exit {}", t.exit_code));
        if let Some(r) = &t.reason {
            s.push_str(&format!(", {r}"));
        }
        s.push(')');
    } else if let Some(r) = cs.and_then(|c| c.waiting_reason()) {
        s.push_str(&format!(" ({r})"));
    } else if let Some(r) = pod.status.as_ref().and_then(|st| st.reason.as_deref()) {
        s.push_str(&format!(" ({r})"));
    }
    if let Some(n) = note {
        s.push_str(&format!(": {n}"));
    }
    s
}
