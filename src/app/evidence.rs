//! The live view's evidence reads, as effects: for executors that just ended badly (their
//! events and log tail) and executors pending too long (their events), within the budget of
//! `crate::evidence`; and the events of a gone pod the user selects.

use std::sync::Arc;

use spark_triage_core::model::{ExecutorState, Time};

use super::{App, Effect};
use crate::evidence;
use crate::evidence::{STUCK_PENDING, Signature};
use crate::store::{AppRecord, Finished};

/// The evidence reads due after new data: for executors that just ended badly (their
/// events and log tail) and, on ticks, for executors pending too long (their events).
pub(super) fn reads(app: &mut App, finished: Vec<Finished>, now: Time, tick: bool) -> Vec<Effect> {
    let mut effects = Vec::new();
    for f in finished {
        if evidence::due(&mut app.evidence, app.store.view(), &f, now) {
            effects.extend(evidence_reads(f));
        }
    }
    if tick {
        effects.extend(stuck_pending(app, now));
    }
    effects
}

/// The selected executor's events, read once from the cluster when its pod is gone (a pod
/// deleted before this view started: its events outlive it for an hour), so describe and
/// detail show them, and its node. Live only: a recording has what it has.
pub(super) fn gone_events(app: &mut App) -> Vec<Effect> {
    if app.ctx.mode != super::Mode::Live {
        return Vec::new();
    }
    let Some(e) = app.selected() else {
        return Vec::new();
    };
    if e.gone.is_none() && !e.verdict.ending.is_gone() {
        return Vec::new();
    }
    let (namespace, pod) = (e.pod.namespace.to_string(), e.pod.name.clone());
    if !app.evidence.ask(&namespace, &pod) {
        return Vec::new();
    }
    vec![Effect::ReadEvents { namespace, pod }]
}

/// An ended pod's evidence: its events, and its log tail captured.
fn evidence_reads(f: Finished) -> [Effect; 2] {
    [
        Effect::ReadEvents {
            namespace: f.namespace.clone(),
            pod: f.pod.clone(),
        },
        Effect::FetchLog {
            namespace: f.namespace,
            pod: f.pod,
            container: f.container,
            previous: f.previous,
            capture: true,
        },
    ]
}

/// Events of executors pending for a while, read once each within the evidence budget (the
/// event watch has the warnings; this adds the Normal ones: scheduled, pulling for minutes).
fn stuck_pending(app: &mut App, now: Time) -> Vec<Effect> {
    let mut effects = Vec::new();
    let apps: Vec<Arc<AppRecord>> = app.store.view().apps.values().cloned().collect();
    for a in apps {
        // One signature per app: its stuck executors share a budget.
        let sig: Signature = (
            a.namespace.clone(),
            a.app_id.clone(),
            "stuck-pending".to_owned(),
            None,
        );
        for rec in a.executors.values() {
            if rec.verdict.state != ExecutorState::Pending || rec.gone.is_some() {
                continue;
            }
            let since = rec.pod.created_at.unwrap_or(rec.first_seen);
            if now - since < STUCK_PENDING {
                continue;
            }
            let pod = (a.namespace.as_str(), rec.pod.name.as_str());
            if app.evidence.stuck(sig.clone(), rec.id, pod, since, now) {
                app.evidence.ask(&a.namespace, &rec.pod.name);
                effects.push(Effect::ReadEvents {
                    namespace: a.namespace.clone(),
                    pod: rec.pod.name.clone(),
                });
            }
        }
    }
    effects
}
