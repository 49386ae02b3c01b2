//! Events, with kubectl-like repeat counting and expiry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::clock::fmt_time;
use crate::store::{DeleteOptions, ObjectStore, Query, Resource};

/// Repeated scheduler/kubelet warnings are counted on one event at most this often.
const EVENT_REPEAT_SECS: f64 = 10.0;

/// The event recorder every part writes its events through: it counts a repeat on the
/// event already there, and deletes events past their ttl.
#[derive(Debug)]
pub(super) struct EventRecorder {
    store: Arc<ObjectStore>,
    /// (namespace, pod, reason and message) → the event's name and when it last happened.
    names: HashMap<(String, String, String), (String, f64)>,
    /// How long an event outlives its last occurrence.
    ttl: Duration,
    /// Scenario second of the last expiry pass.
    last_gc: f64,
    /// No event can be past its ttl before this: the last pass's oldest kept event plus the
    /// ttl, brought forward by any event written since with an older time (a client may
    /// write one already old). Until then a pass is skipped: a pass reads every event, and
    /// at 500,000 of them the passes were 8 points of the idle simulator's 33 % of a core.
    quiet_until: Option<DateTime<Utc>>,
}

impl EventRecorder {
    pub(super) fn new(store: Arc<ObjectStore>, ttl: Duration) -> Self {
        Self {
            store,
            names: HashMap::new(),
            ttl,
            last_gc: 0.0,
            quiet_until: None,
        }
    }

    /// An event about a pod, with a secondary object (`related`: a preemptor, else null); a
    /// repeat within a while bumps `count` on the same one. A new event's name draws from
    /// `rng`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn event_about(
        &mut self,
        rng: &mut fastrand::Rng,
        pod: &Value,
        type_: &str,
        reason: &str,
        message: &str,
        component: &str,
        t: f64,
        related: Value,
    ) {
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let key = (ns.clone(), name.clone(), format!("{reason}\u{0}{message}"));
        let now = self.now();
        if let Some((ev_name, _)) = self.names.get(&key).cloned() {
            let updated = self.store.modify(Resource::Events, &ns, &ev_name, |e| {
                let c = e["count"].as_i64().unwrap_or(1);
                e["count"] = json!(c + 1);
                e["lastTimestamp"] = json!(now);
                true
            });
            if updated.is_some() {
                self.names.insert(key, (ev_name, t));
                return;
            }
        }
        let ev_name = format!(
            "{name}.{:x}",
            self.store.clock.now().timestamp_nanos_opt().unwrap_or(0) as u64 ^ rng.u64(..)
        );
        let host = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        let source = if component == "kubelet" {
            json!({"component": component, "host": host})
        } else {
            json!({"component": component})
        };
        let mut ev = json!({
            "metadata": {"name": ev_name},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": ns,
                               "uid": pod["metadata"]["uid"], "resourceVersion": pod["metadata"]["resourceVersion"],
                               "fieldPath": if component == "kubelet" { json!("spec.containers{spark-kubernetes-executor}") } else { Value::Null }},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "eventTime": null,
            "source": source, "reportingComponent": if component == "kubelet" { "" } else { component },
            "reportingInstance": "",
        });
        if !related.is_null() {
            ev["related"] = related;
        }
        if self.store.create(Resource::Events, &ns, ev).is_ok() {
            self.names.insert(key, (ev_name, t));
        }
    }

    pub(super) fn should_repeat(&self, pod: &Value, reason: &str, message: &str, t: f64) -> bool {
        let key = (
            pod["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            format!("{reason}\u{0}{message}"),
        );
        self.names
            .get(&key)
            .is_none_or(|(_, last)| t - last >= EVENT_REPEAT_SECS)
    }

    /// Every 5 s: deletes the events past their ttl.
    pub(super) fn expire(&mut self, t: f64) {
        if t - self.last_gc > 5.0 {
            self.last_gc = t;
            if let Some(written) = self.store.take_oldest_event_write() {
                let due = written + self.ttl_chrono();
                self.quiet_until = Some(self.quiet_until.map_or(due, |q| q.min(due)));
            }
            if self.quiet_until.is_none_or(|q| self.store.clock.now() >= q) {
                self.expire_events();
            }
        }
    }

    fn expire_events(&mut self) {
        let now = self.store.clock.now();
        let ttl = self.ttl_chrono();
        let (events, _) = self.store.list_all(Resource::Events, &Query::default());
        // The events that stay, by name: a repeat's name is forgotten when its event is gone
        // (expired here, or deleted by a client). One set from the one LIST: a lookup in
        // the store per name was most of the simulator's idle time at 500,000 events.
        let mut kept: std::collections::HashSet<(&str, &str)> =
            std::collections::HashSet::with_capacity(events.len());
        let mut oldest = now;
        for e in &events {
            let last = e.event_last_time();
            if let Some(last) = last
                && now - last > ttl
            {
                let _ = self.store.delete(
                    Resource::Events,
                    e.namespace(),
                    e.name(),
                    &DeleteOptions::default(),
                );
            } else {
                kept.insert((e.namespace(), e.name()));
                if let Some(last) = last {
                    oldest = oldest.min(last);
                }
            }
        }
        self.quiet_until = Some(oldest + ttl);
        self.names
            .retain(|(ns, _, _), (name, _)| kept.contains(&(ns.as_str(), name.as_str())));
    }

    fn ttl_chrono(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.ttl).unwrap_or(chrono::Duration::hours(1))
    }

    fn now(&self) -> String {
        fmt_time(self.store.clock.now())
    }
}
