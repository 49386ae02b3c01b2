//! Pods as the watch and the LISTs bring them: an executor's pod upserted (a new executor,
//! a transition, a tombstone), a driver's pod and what its change means for the app.

use spark_triage_core::classify::{ClassifyOptions, Resolved};
use spark_triage_core::model::LABEL_APP_NAME;

use super::records::operator_key;
use super::*;

impl Store {
    pub(super) fn upsert(&mut self, pod: Arc<ExecutorPod>, at: Time, deleted: bool) {
        let Some(app_id) = pod.app_id().map(str::to_owned) else {
            return; // not a Spark pod
        };
        if !deleted && self.already_known(&app_id, &pod) {
            // A relist (or a repeated watch event) of an executor as it was: nothing to
            // recompute, and readers' copies of the app stay shared.
            return;
        }
        if !deleted {
            let key = (pod.namespace.to_string(), app_id.clone());
            self.note_groups(&key, &pod);
            self.note_operator(&key, &pod, at);
        }
        if pod.role() == Some(Role::Driver) {
            self.note_kept_driver(&pod, at, deleted);
            self.upsert_driver(&app_id, pod, at, deleted);
            return;
        }
        let ns = pod.namespace.clone();
        let pod_events: Vec<PodEvent> = self
            .events
            .get(&(ns.to_string(), pod.name.clone()))
            .map(|q| q.iter().filter(|e| e.is_about(&pod)).cloned().collect())
            .unwrap_or_default();
        let kills = self.logged_kills.clone();
        let app = self.app_mut(&ns, &app_id);
        if let Some(n) = pod.label(LABEL_APP_NAME) {
            app.app_name = Some(n.to_owned());
        }
        if pod.role() != Some(Role::Executor) {
            return;
        }
        app.as_of = Some(at);

        let Some(id) = executor_id(app, &pod, deleted) else {
            return;
        };
        if !deleted && app.driver_refusal.is_some() && !app.executors.contains_key(&id) {
            // A new executor pod: the API server took one, the old refusal is history.
            app.driver_refusal = None;
        }
        let ctx = AppCtx::of(app, &kills);
        let resolved = ctx.config.classify_options().resolve(&pod);
        let state = classify(&pod, &resolved.config);
        let rv = pod.rv();
        let gone = deleted.then_some(Gone::Deleted { at });
        // Timeline lines, each at its time: the cluster's where it says, else this sight.
        let mut timeline = Vec::new();
        let seen = (at, super::times::Clock::Seen);
        let mut finished = None;
        // The pod of another executor, now labelled with this id: that executor ended there.
        if !deleted
            && let Some((notes, done)) =
                restart::end_predecessor(app, &pod, id, &resolved, &ctx, &pod_events, at)
        {
            timeline.extend(notes.into_iter().map(|(id, text)| (id, text, seen)));
            finished = Some(done);
        }
        let s = Sighting {
            app_id: &app_id,
            id,
            at,
            deleted,
            state,
            resolved: &resolved,
            rv,
            gone,
            events: &pod_events,
            ctx: &ctx,
        };
        match app.executors.get_mut(&id) {
            // Ended by a restart in place: the pod lives on as the next executor, and a late
            // event still carrying this id must not bring it back to life.
            Some(rec) if !deleted && matches!(rec.gone, Some(Gone::Restarted { .. })) => return,
            Some(rec) => {
                if !s.update(Arc::make_mut(rec), pod, &mut timeline, &mut finished) {
                    return;
                }
            }
            None => {
                let rec = s.record(app, pod, &mut timeline);
                app.executors.insert(id, Arc::new(rec));
            }
        }
        for (id, text, when) in timeline {
            app.log_when(when, at, Some(id), text);
        }
        self.finished.extend(finished);
    }

    /// The driver pod: the app's driver info, its end told to the executors' verdicts.
    /// A driver pod finished and still present is kept (`Snapshot::kept_drivers`), with
    /// when it ended; deleted or running, it is not.
    fn note_kept_driver(&mut self, pod: &ExecutorPod, at: Time, deleted: bool) {
        let ns = pod.namespace.as_str();
        let finished = !deleted
            && pod.deletion.is_none()
            && matches!(pod.phase(), Some("Succeeded" | "Failed"));
        let kept = self
            .snap
            .kept_drivers
            .get(ns)
            .is_some_and(|m| m.contains_key(&pod.name));
        if finished == kept {
            return;
        }
        let all = Arc::make_mut(&mut self.snap.kept_drivers);
        if finished {
            // Its containers' end; a pod that failed before any ran: its Ready condition's
            // last change, else its creation (never this sight: a restart would move it).
            let ended = pod
                .container_statuses()
                .iter()
                .filter_map(|c| c.terminated()?.finished_at)
                .max()
                .or_else(|| pod.condition("Ready")?.last_transition)
                .or(pod.created_at)
                .unwrap_or(at);
            let kept = KeptDriver {
                ended,
                rv: pod.rv(),
                operator: pod
                    .operator_app()
                    .map(|(kind, name)| operator_key(kind, ns, name)),
                failed: pod.phase() == Some("Failed"),
            };
            all.entry(ns.to_owned())
                .or_default()
                .insert(pod.name.clone(), kept);
        } else if let Some(pods) = all.get_mut(ns) {
            pods.remove(&pod.name);
            if pods.is_empty() {
                all.remove(ns);
            }
        }
    }

    pub(super) fn upsert_driver(
        &mut self,
        app_id: &str,
        pod: Arc<ExecutorPod>,
        at: Time,
        deleted: bool,
    ) {
        let key = (pod.namespace.to_string(), app_id.to_owned());
        // A relist of the driver as it was: readers' copies of the app stay shared.
        if !deleted
            && let Some(d) = self.snap.apps.get(&key).and_then(|a| a.driver.as_ref())
            && d.gone.is_none()
            && d.last.as_deref().is_some_and(|p| *p == *pod)
        {
            return;
        }
        // An older driver pod of the same app (a late event of a replaced one, an old failed
        // pod listed beside its resubmission) does not replace the newer one.
        if let Some(cur) = self
            .snap
            .apps
            .get(&key)
            .and_then(|a| a.driver.as_ref())
            .and_then(|d| d.last.as_deref())
            && cur.name != pod.name
            && let (Some(cur_at), Some(new_at)) = (cur.created_at, pod.created_at)
            && new_at < cur_at
        {
            return;
        }
        let events: Vec<PodEvent> = events_of(&self.events, &pod);
        let app = self.app_mut(&pod.namespace, app_id);
        if let Some(n) = pod.label(LABEL_APP_NAME) {
            app.app_name = Some(n.to_owned());
        }
        app.as_of = Some(at);
        // The same driver pod (same name and uid) keeps what was seen of it; another one (a
        // resubmission under the same app id) starts over.
        let prev = app
            .driver
            .take()
            .filter(|d| d.pod == pod.name && (d.uid.is_none() || d.uid == pod.uid));
        if let (Some(p), Some(new), Some(old)) = (
            prev.as_ref(),
            pod.rv(),
            prev.as_ref()
                .and_then(|p| p.last.as_ref())
                .and_then(|l| l.rv()),
        ) && new < old
        {
            app.driver = Some(p.clone()); // a stale replay: keep ours
            return;
        }
        let resolved = ClassifyOptions::default().resolve(&pod);
        let state = classify(&pod, &resolved.config);
        let (mut ended, mut ended_seen, log_tail, gone) = match &prev {
            Some(p) => (p.ended.clone(), p.ended_seen, p.log_tail.clone(), p.gone),
            None => (None, None, None, None),
        };
        let heartbeat_removals = prev
            .as_ref()
            .map(|p| p.heartbeat_removals.clone())
            .unwrap_or_default();
        let was_over = ended.is_some() || gone.is_some();
        if ended.is_none() && state.is_final() {
            ended = Some(pod.clone());
        }
        // The tool's own sight of the end: final, deleting, or gone.
        if ended_seen.is_none() && (state.is_final() || pod.deletion.is_some() || deleted) {
            ended_seen = Some(at);
        }
        let now_over = ended.is_some() || deleted;
        let mut finished = None;
        if !was_over && now_over {
            // Its log is evidence of how it ended (read when the verdict is not a success).
            finished = Some(Finished {
                namespace: pod.namespace.to_string(),
                app_id: app_id.to_owned(),
                id: records::DRIVER,
                pod: pod.name.clone(),
                container: resolved.config.spark_container.clone(),
                previous: false,
            });
        }
        let phase_changed =
            prev.as_ref().and_then(|p| p.phase.clone()) != pod.phase().map(str::to_owned);
        app.driver = Some(DriverInfo {
            pod: pod.name.clone(),
            phase: if deleted {
                Some("Deleted".to_owned())
            } else {
                pod.phase().map(str::to_owned)
            },
            node: pod.node_name.as_deref().map(str::to_owned),
            hold_until: pod.hold_expires(),
            conf_config_map: pod.conf_config_map.as_deref().map(str::to_owned),
            uid: pod.uid.clone(),
            last: Some(pod.clone()),
            ended,
            ended_seen,
            gone: if deleted {
                Some(records::DriverGoneAt { missing: false, at })
            } else {
                None
            },
            events,
            log_tail,
            heartbeat_removals,
        });
        if phase_changed || deleted {
            let text = format!(
                "driver {} {}",
                pod.name,
                if deleted {
                    "deleted".to_owned()
                } else {
                    state.as_str().to_owned()
                }
            );
            let when = super::times::transition(
                &pod,
                &resolved.config.spark_container,
                state,
                deleted,
                at,
            );
            app.log_when(when, at, None, text);
        }
        self.finished.extend(finished);
        self.driver_changed(&key, at);
    }

    /// The driver's evidence changed: its end is recomputed and, when it changed, every
    /// executor's verdict too (an executor's end after the driver's is the driver's).
    pub(super) fn driver_changed(&mut self, key: &AppKey, at: Time) {
        let Some(app) = self.snap.apps.get_mut(key) else {
            return;
        };
        let app = derived::edit(app);
        if !app.update_driver_end(at) {
            return;
        }
        if let Some(end) = app.driver_end.clone() {
            // At its end by the cluster's clocks when they say it.
            let when = match end.cluster_at {
                Some(t) => (t, super::times::Clock::Container),
                None => (end.seen_at, super::times::Clock::Seen),
            };
            app.log_when(
                when,
                at,
                None,
                format!("driver ended ({}): the application is over", end.label),
            );
        }
        self.rediagnose_app(key, at);
    }

    /// The executor's record already holds exactly this pod, at this resourceVersion.
    pub(super) fn already_known(&self, app_id: &str, pod: &ExecutorPod) -> bool {
        let (Some(id), Some(rv)) = (pod.executor_id(), pod.rv()) else {
            return false;
        };
        self.snap
            .apps
            .get(&(pod.namespace.to_string(), app_id.to_owned()))
            .and_then(|app| app.executors.get(&id))
            .is_some_and(|rec| {
                rec.gone.is_none()
                    && rec.last_rv == Some(rv)
                    && rec.pod.role() == Some(Role::Executor)
                    && *rec.pod == *pod
            })
    }
}

/// An executor's id from its pod's label; a pod without one (not assigned yet, invalid,
/// absent) is kept among the app's unregistered pods with why, and has none.
fn executor_id(app: &mut AppRecord, pod: &ExecutorPod, deleted: bool) -> Option<i64> {
    let why = match pod.exec_id_label() {
        ExecIdLabel::Id(id) => return Some(id),
        ExecIdLabel::Placeholder => "spark-exec-id is EXECID (id not assigned yet)".to_owned(),
        ExecIdLabel::Invalid(v) => records::invalid_id_note(&v),
        _ => "no spark-exec-id label".to_owned(),
    };
    if deleted {
        app.unregistered.remove(&pod.name);
    } else {
        app.unregistered.insert(pod.name.clone(), why);
    }
    None
}

/// A timeline line: the executor, the text, when it happened (and by whose clock).
type Line = (i64, String, (Time, super::times::Clock));

/// One sighting of an executor's pod, classified: what [`Store::upsert`] applies to its
/// record (an update) or makes a record of (a new executor).
struct Sighting<'a> {
    app_id: &'a str,
    id: i64,
    at: Time,
    deleted: bool,
    state: ExecutorState,
    resolved: &'a Resolved,
    rv: Option<u64>,
    gone: Option<Gone>,
    events: &'a [PodEvent],
    ctx: &'a AppCtx,
}

impl Sighting<'_> {
    /// A known executor's pod again: its transition, its end, a deletion withdrawn.
    /// `false` for a stale replay (an older resourceVersion), which changes nothing.
    fn update(
        &self,
        rec: &mut ExecutorRecord,
        pod: Arc<ExecutorPod>,
        timeline: &mut Vec<Line>,
        finished: &mut Option<Finished>,
    ) -> bool {
        let Self {
            app_id,
            id,
            at,
            deleted,
            state,
            resolved,
            rv,
            events: pod_events,
            ctx,
            ..
        } = *self;
        let gone = self.gone.clone();
        let seen = (at, super::times::Clock::Seen);
        // A resourceVersion older than what we have is a stale replay: keep ours.
        if let (Some(new), Some(old)) = (rv, rec.last_rv)
            && new < old
        {
            return false;
        }
        let was_final = rec.pod_state.is_final() || rec.gone.is_some();
        if !was_final && (state.is_final() || deleted) {
            *finished = Some(Finished {
                namespace: pod.namespace.to_string(),
                app_id: app_id.to_owned(),
                id,
                pod: pod.name.clone(),
                container: resolved.config.spark_container.clone(),
                previous: false,
            });
        }
        if rec.pod_state != state || (deleted && rec.gone.is_none()) {
            let note = if deleted {
                Some("pod deleted".to_owned())
            } else {
                None
            };
            let (when, clock) = super::times::transition(
                &pod,
                &resolved.config.spark_container,
                state,
                deleted,
                at,
            );
            timeline.push((
                id,
                transition_text(id, state, &pod, resolved, note.as_deref()),
                (when, clock),
            ));
            push_history(rec, Transition::new((when, clock), at, state, note));
        }
        if rec.ended.is_none() && is_ending(state) {
            rec.ended = Some(pod.clone());
        }
        if rec.first_deletion.is_none() {
            rec.first_deletion = pod.deletion.clone();
        }
        // The same pod, updated after its DELETED: that deletion was false.
        let withdrawn = (!deleted
            && matches!(rec.gone, Some(Gone::Deleted { .. }))
            && (pod.uid.is_none() || rec.pod.uid.is_none() || pod.uid == rec.pod.uid))
            .then_some(rv.zip(rec.last_rv))
            .flatten()
            .filter(|(new, old)| new > old)
            .map(|(new, _)| new);
        rec.pod = pod;
        rec.pod_state = state;
        rec.last_seen = at;
        rec.last_rv = rv.or(rec.last_rv);
        if deleted {
            rec.gone = gone;
        } else if rec
            .gone
            .as_ref()
            .is_some_and(|g| matches!(g, Gone::Missing { .. } | Gone::DriverOnly { .. }))
        {
            rec.gone = None; // it was only late (or known from the driver first)
        } else if let Some(rv) = withdrawn {
            evidence::withdraw_deletion(rec, at, rv);
            timeline.push((
                id,
                format!("executor {id}: its deletion was false: the pod was updated after it (resourceVersion {rv})"),
                seen,
            ));
        }
        rec.spark_container = (&resolved.config.spark_container).into();
        if let Some(note) = refresh(rec, pod_events, ctx, Some(resolved), at) {
            timeline.push((id, note, seen));
        }
        true
    }

    /// A new executor's record, with its creation and its state in the timeline.
    fn record(
        &self,
        app: &AppRecord,
        pod: Arc<ExecutorPod>,
        timeline: &mut Vec<Line>,
    ) -> ExecutorRecord {
        let Self {
            id,
            at,
            deleted,
            state,
            resolved,
            rv,
            events: pod_events,
            ctx,
            ..
        } = *self;
        let gone = self.gone.clone();
        // Its creation, and the state it is in, when they happened (a view opened
        // late lists them at the cluster's times, not at its own start).
        let created = super::times::transition(
            &pod,
            &resolved.config.spark_container,
            ExecutorState::Pending,
            false,
            at,
        );
        let now_in =
            super::times::transition(&pod, &resolved.config.spark_container, state, deleted, at);
        timeline.push((id, format!("executor {id} added ({})", state), created));
        if state != ExecutorState::Pending {
            timeline.push((id, transition_text(id, state, &pod, resolved, None), now_in));
        }
        let mut rec = ExecutorRecord {
            id,
            spark_container: (&resolved.config.spark_container).into(),
            first_deletion: pod.deletion.clone(),
            ended: None,
            pod,
            pod_state: state,
            first_seen: at,
            last_seen: at,
            last_rv: rv,
            history: VecDeque::from([Transition::new(
                now_in,
                at,
                state,
                deleted.then(|| "pod deleted".to_owned()),
            )]),
            events: VecDeque::new(),
            gone,
            log_tail: None,
            // Not in the driver's last good read (it would have been created from
            // it): say so, whichever of the read and the pod arrived first.
            driver: app
                .driver_api
                .as_ref()
                .and_then(|d| Some((d.last_ok?, d.from)))
                .map(|(at, from)| {
                    Box::new(DriverSeen {
                        at,
                        exec: None,
                        from,
                    })
                }),
            killed_by_tool: None,
            verdict: Verdict::default(),
        };
        if is_ending(state) {
            rec.ended = Some(rec.pod.clone());
        }
        refresh(&mut rec, pod_events, ctx, Some(resolved), at);
        rec
    }
}
