//! A StatefulSet's or Deployment's executor pod whose container restarted in place
//! (`restartPolicy: Always`, as Spark's statefulset and deployment allocators run them) and
//! which the driver relabelled with the new JVM's id: the executor that died there ends,
//! judged on the pod as it ended (its last state); the pod goes on as the next one.

use std::sync::Arc;

use spark_triage_core::allocator::{Controller, before_restart};
use spark_triage_core::classify::{Resolved, classify};
use spark_triage_core::model::{ExecutorPod, PodEvent, Time};

use super::evidence::{AppCtx, push_history, refresh, transition_text};
use super::{AppRecord, Finished, Gone, Transition};

/// Ends the executor `pod` belonged to before it was labelled `id`, if it is such a pod:
/// the timeline lines to add and the log capture of its previous container.
pub(super) fn end_predecessor(
    app: &mut AppRecord,
    pod: &Arc<ExecutorPod>,
    id: i64,
    resolved: &Resolved,
    ctx: &AppCtx,
    events: &[PodEvent],
    at: Time,
) -> Option<(Vec<(i64, String)>, Finished)> {
    // A new id (perhaps known from the driver's list already), a container that restarted,
    // a controller's pod: cheap checks before the scan for the record of the same pod.
    let new_id = app
        .executors
        .get(&id)
        .is_none_or(|e| matches!(e.gone, Some(Gone::DriverOnly { .. })));
    let restarted = pod
        .container_status(&resolved.config.spark_container)
        .is_some_and(|c| c.last_state.terminated().is_some());
    if !new_id || !restarted || Controller::of(pod).is_none() {
        return None;
    }
    let old = app
        .executors
        .values()
        .find(|e| e.id != id && e.gone.is_none() && e.pod.uid.is_some() && e.pod.uid == pod.uid)?
        .id;
    let rec = Arc::make_mut(app.executors.get_mut(&old)?);
    let ended = Arc::new(before_restart(pod, old));
    let r = ctx.config.classify_options().resolve(&ended);
    let state = classify(&ended, &r.config);
    let note = format!("container restarted in place; the pod is now executor {id}");
    let mut notes = vec![(old, transition_text(old, state, &ended, &r, Some(&note)))];
    let when = super::times::transition(&ended, &r.config.spark_container, state, false, at);
    push_history(rec, Transition::new(when, at, state, Some(note)));
    rec.pod = ended;
    rec.pod_state = state;
    rec.last_seen = at;
    rec.last_rv = pod.rv().or(rec.last_rv);
    rec.gone = Some(Gone::Restarted { at, as_id: id });
    notes.extend(refresh(rec, events, ctx, Some(&r), at).map(|n| (old, n)));
    // The log of the container that ended: the pod's previous one now.
    let done = Finished {
        namespace: pod.namespace.to_string(),
        app_id: app.app_id.clone(),
        id: old,
        pod: pod.name.clone(),
        container: r.config.spark_container.clone(),
        previous: true,
    };
    Some((notes, done))
}
