//! The Spark operators' `SparkApplication`s: each joins the app whose pods carry its label
//! (the driver's, else an executor's), or the app whose Spark id it names; an object no
//! pod names yet is an app of its own, keyed by its name, until one does (then that
//! placeholder goes: its object lives on in the app that has the pods). Kueue's Workload
//! for the object (owned by it) goes with it.

use std::sync::Arc;

use spark_triage_core::model::{GroupKind, OperatorApp, OperatorKind, SchedGroup, Time};

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
            let prefix = format!("{}/", kind.group());
            self.snap.operators.retain(|k, o| {
                !k.starts_with(&prefix) || namespace.is_some_and(|ns| o.namespace != ns)
            });
        }
        for o in objects {
            let key = operator_key(kind, &o.namespace, &o.name);
            self.snap.operators.insert(key, Arc::new(o));
        }
        self.settle_operators(at);
    }

    /// Gives every app its operator object (and Workload), makes an app of each object no
    /// pod names, and drops the placeholders of objects gone or now joined to pods.
    pub(super) fn settle_operators(&mut self, at: Time) {
        if self.snap.operators.is_empty() && !self.snap.apps.values().any(|a| a.operator.is_some())
        {
            return;
        }
        let mut joined = std::collections::BTreeSet::new();
        let mut changes: Vec<(AppKey, Option<Arc<OperatorApp>>)> = Vec::new();
        for (key, app) in &self.snap.apps {
            let by_label = app
                .driver
                .as_ref()
                .and_then(|d| d.last.as_deref())
                .into_iter()
                .chain(app.executors.values().map(|e| e.pod.as_ref()))
                .find_map(|p| p.operator_app())
                .map(|(k, name)| operator_key(k, &app.namespace, name));
            let by_id = || {
                self.snap
                    .operators
                    .iter()
                    .find(|(_, o)| {
                        o.namespace == app.namespace && o.app_id.as_deref() == Some(&app.app_id)
                    })
                    .map(|(k, _)| k.clone())
            };
            let placeholder = app.driver.is_none() && app.executors.is_empty();
            let found = match (by_label.or_else(by_id), placeholder) {
                (Some(k), _) => self.snap.operators.get(&k).map(|o| (k, o.clone())),
                // A placeholder is its object's (kept while the object is listed).
                (None, true) => app.operator.as_ref().and_then(|o| {
                    let k = operator_key(o.kind, &o.namespace, &o.name);
                    self.snap.operators.get(&k).map(|o| (k, o.clone()))
                }),
                (None, false) => None,
            };
            if let Some((k, _)) = &found
                && !placeholder
            {
                joined.insert(k.clone());
            }
            let now = found.map(|(_, o)| o);
            if now != app.operator {
                changes.push((key.clone(), now));
            }
        }
        for (key, op) in changes {
            let admission = op.as_deref().and_then(|o| self.admission_of(o));
            let app = derived::edit(self.snap.apps.get_mut(&key).expect("app exists"));
            app.operator = op;
            app.admission = admission;
            app.as_of = Some(at);
        }
        // Placeholders: one per object no app with pods carries; none for the others.
        let wanted: Vec<Arc<OperatorApp>> = self
            .snap
            .operators
            .iter()
            .filter(|(k, _)| !joined.contains(*k))
            .map(|(_, o)| o.clone())
            .collect();
        self.snap.apps.retain(|_, a| {
            let Some(o) = &a.operator else { return true };
            let placeholder = a.driver.is_none() && a.executors.is_empty();
            !placeholder || !joined.contains(&operator_key(o.kind, &o.namespace, &o.name))
        });
        for o in wanted {
            let admission = self.admission_of(&o);
            let app = self.app_mut(&o.namespace, &o.name);
            if app.operator.as_ref() != Some(&o) || app.admission != admission {
                app.app_name.get_or_insert_with(|| o.name.to_string());
                app.operator = Some(o);
                app.admission = admission;
                app.as_of = Some(at);
            }
        }
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
