//! The Spark operators' `SparkApplication`s: each joins the app whose pods carry its label
//! (noted once per app as its pods arrive), or the app whose Spark id it names, and only
//! the run it names now (an earlier run's app keeps no object); an object no pod names yet
//! is an app of its own (`operator_only`), keyed by its name, until one does (then that
//! placeholder goes: its object lives on in the app that has the pods), its object is gone,
//! or it ended a day ago. Kueue's Workload for the object (owned by it) goes with it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use spark_triage_core::diagnose::operator::{overdue, unscheduled};
use spark_triage_core::model::{
    ExecutorPod, GroupKind, OperatorApp, OperatorKind, OperatorPhase, SchedGroup, Time,
};

use super::derived;
use super::records::{AppKey, operator_key};
use super::*;

impl Store {
    /// A list of one operator's objects (or why they cannot be read).
    pub(super) fn operators_listed(
        &mut self,
        kind: OperatorKind,
        namespace: Option<&str>,
        objects: Vec<OperatorApp>,
        (unknown, complete): (Option<String>, bool),
        at: Time,
    ) {
        self.snap.operators_read.insert(kind);
        if let Some(why) = unknown {
            self.snap.operators_unknown.insert(kind, why);
            return;
        }
        self.snap.operators_unknown.remove(&kind);
        if complete {
            self.snap
                .operators
                .retain(|_, o| o.kind != kind || namespace.is_some_and(|ns| o.namespace != ns));
        }
        for mut o in objects {
            let key = operator_key(kind, &o.namespace, &o.name);
            // A schedule's skip is judged as of this read (`overdue`).
            if let Some(s) = o.schedule.as_deref_mut() {
                s.read_at = Some(at);
            }
            self.snap.operators.insert(key, Arc::new(o));
        }
        self.settle_operators(at);
    }

    /// A pod carrying an operator's label: its app is that object's (kept once per app, so
    /// a settle never scans executors), joined at once when the object is known.
    pub(super) fn note_operator(&mut self, key: &AppKey, pod: &ExecutorPod, at: Time) {
        let Some((kind, name)) = pod.operator_app() else {
            return;
        };
        let k = operator_key(kind, &key.0, name);
        if self
            .snap
            .apps
            .get(key)
            .is_some_and(|a| a.operator_label.as_deref() == Some(k.as_str()))
        {
            return;
        }
        self.app_mut(&key.0, &key.1).operator_label = Some(k);
        if !self.snap.operators.is_empty() {
            self.settle_operators(at);
        }
    }

    /// Gives every app its operator object (and Workload), makes an app of each object no
    /// app with pods carries (while it says something: not ended long ago), and drops the
    /// placeholders of objects gone, joined to pods, or ended long ago.
    pub(super) fn settle_operators(&mut self, at: Time) {
        if self.snap.operators.is_empty() && !self.snap.apps.values().any(|a| a.operator.is_some())
        {
            return;
        }
        // The objects by the Spark id of their current run.
        let by_id: HashMap<(&str, &str), &String> = self
            .snap
            .operators
            .iter()
            .filter_map(|(k, o)| Some(((o.namespace.as_str(), o.app_id.as_deref()?), k)))
            .collect();
        let mut joined: BTreeSet<String> = BTreeSet::new();
        let mut changes: Vec<(AppKey, Option<Arc<OperatorApp>>)> = Vec::new();
        let mut drop: Vec<AppKey> = Vec::new();
        for (key, app) in &self.snap.apps {
            if app.operator_only {
                continue; // settled below
            }
            let found = app
                .operator_label
                .as_ref()
                .and_then(|k| self.snap.operators.get(k).map(|o| (k, o)))
                // A label naming no object read: the object naming its Spark id.
                .or_else(|| {
                    let k = by_id.get(&(key.0.as_str(), key.1.as_str())).copied()?;
                    self.snap.operators.get(k).map(|o| (k, o))
                })
                // An earlier run (the object names another Spark id now): not its object.
                .filter(|(_, o)| o.app_id.as_deref().is_none_or(|id| id == key.1));
            if let Some((k, _)) = found {
                joined.insert(k.clone());
            }
            let now = found.map(|(_, o)| o.clone());
            let admission = now.as_deref().and_then(|o| self.admission_of(o));
            if now != app.operator || admission != app.admission {
                changes.push((key.clone(), now));
            }
        }
        // Placeholders: one per object no app with pods carries, while it says something.
        let wanted: BTreeMap<AppKey, Arc<OperatorApp>> = self
            .snap
            .operators
            .iter()
            .filter(|(k, o)| !joined.contains(*k) && worth_an_app(o, at))
            .map(|(_, o)| {
                let key = (o.namespace.to_string(), o.name.to_string());
                (key, self.with_last_run(o))
            })
            .collect();
        for (key, app) in &self.snap.apps {
            if app.operator_only && !wanted.contains_key(key) {
                drop.push(key.clone());
            }
        }
        for (key, op) in changes {
            let admission = op.as_deref().and_then(|o| self.admission_of(o));
            let app = derived::edit(self.snap.apps.get_mut(&key).expect("app exists"));
            app.operator = op;
            app.admission = admission;
            app.as_of = Some(at);
        }
        for key in drop {
            self.snap.apps.remove(&key);
        }
        for (key, o) in wanted {
            let admission = self.admission_of(&o);
            let same = self.snap.apps.get(&key).is_some_and(|a| {
                a.operator_only && a.operator.as_ref() == Some(&o) && a.admission == admission
            });
            if same {
                continue;
            }
            if self.snap.apps.get(&key).is_some_and(|a| !a.operator_only) {
                continue; // a Spark app by that id (its selector is the object's name)
            }
            let app = self.app_mut(&key.0, &key.1);
            app.operator_only = true;
            app.app_name.get_or_insert_with(|| o.name.to_string());
            app.operator = Some(o);
            app.admission = admission;
            app.as_of = Some(at);
        }
    }

    /// A schedule with what its runs' own objects say (when read): the last run's state
    /// and end, and a run whose object exists.
    fn with_last_run(&self, o: &Arc<OperatorApp>) -> Arc<OperatorApp> {
        let Some(s) = o.schedule.as_deref() else {
            return o.clone();
        };
        let run = |name: &str| {
            self.snap
                .operators
                .get(&operator_key(OperatorKind::Kubeflow, &o.namespace, name))
        };
        let last = s.last_run_name.as_deref().and_then(run);
        let state = last.map(|r| r.state.clone());
        let ended = last.filter(|r| r.phase.is_end()).and_then(|r| r.since);
        let present = s.runs().find(|n| run(n).is_some()).cloned();
        if (&state, &ended, &present) == (&s.last_run_state, &s.last_run_ended, &s.run_present) {
            return o.clone();
        }
        let mut with = OperatorApp::clone(o);
        if let Some(s) = with.schedule.as_deref_mut() {
            s.last_run_state = state;
            s.last_run_ended = ended;
            s.run_present = present;
        }
        Arc::new(with)
    }

    /// Kueue's Workload for an operator's object: the one it owns.
    fn admission_of(&self, o: &OperatorApp) -> Option<SchedGroup> {
        self.snap
            .groups
            .of(GroupKind::KueueWorkload, &o.namespace)
            .find(|w| w.owner_apps.contains(&o.name))
            .cloned()
    }
}

/// How long an ended object no pod carries stays an app of its own: a day of incidents, not
/// a namespace's history (an operator keeps finished objects until their TTL, often never).
const ENDED_SHOWN: chrono::Duration = chrono::Duration::hours(24);

/// Whether an object no pod carries is worth an app of its own: not a success (nothing to
/// say), and not ended long before `now`; a schedule while it fails validation or skips a
/// run (its runs are apps of their own).
pub(super) fn worth_an_app(o: &OperatorApp, now: Time) -> bool {
    if o.kind == OperatorKind::KubeflowScheduled {
        return o.phase == OperatorPhase::Failed
            || overdue(o, now).is_some()
            || unscheduled(o, now).is_some();
    }
    match o.phase {
        OperatorPhase::Succeeded => false,
        // An end, or a state this build does not know: a day, then no more.
        p if p.is_end() || p == OperatorPhase::Unknown => o
            .since
            .or(o.created_at)
            .is_none_or(|t| now - t < ENDED_SHOWN),
        _ => true,
    }
}
