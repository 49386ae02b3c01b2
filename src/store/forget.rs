//! Forgetting: a recorder or a live view that runs for days keeps in memory only the
//! executors that went away recently (`SourceEvent::Forget`: a recorder's segments keep the
//! rest), and no store keeps more than [`MAX_KEPT`] executors whole (an event log of two
//! million executors, a week of churn): past it, the executors that ended first are counted
//! by their app ([`Trimmed`]), not kept.

use std::collections::BTreeMap;

use spark_triage_core::model::Time;

use super::{AppKey, Store, derived};

/// The most executors a store keeps whole (each about 4.5 KB with its verdict, history and
/// pod: about 110 MB): past it by a tenth, the ended ones that ended first go, counted.
pub const MAX_KEPT: usize = 25_000;

impl Store {
    /// Drops executors gone before `before` (see [`gone_at`]), with their captured logs and
    /// events, and apps left with nothing that have ended: their driver gone or finished
    /// and nothing new since `before`. Forgotten ids are remembered (as ranges) so the
    /// driver's list naming them again brings nothing back.
    pub(super) fn forget(&mut self, before: Time) {
        let mut old: BTreeMap<AppKey, Vec<i64>> = BTreeMap::new();
        let mut empty = Vec::new();
        for (key, app) in &self.snap.apps {
            let finished = app.driver.as_ref().is_none_or(|d| {
                d.gone.is_some()
                    || matches!(d.phase.as_deref(), Some("Succeeded" | "Failed" | "Deleted"))
            });
            let ids: Vec<i64> = app
                .executors
                .values()
                .filter(|e| e.gone.as_ref().is_some_and(|g| gone_at(e, g) < before))
                // The driver's last word while it runs: not ended, whatever its age.
                .filter(|e| finished || !active_driver_only(e))
                .map(|e| e.id)
                .collect();
            let quiet = app.timeline.back().is_none_or(|t| t.at < before);
            // An operator's application is known while its object is (before any pod).
            // (and one whose object would make it again at once, for the day it is shown).
            let object = app.operator_only
                || app.operator.as_deref().is_some_and(|o| {
                    super::operators::worth_an_app(o, self.snap.now.unwrap_or(before))
                });
            if app.executors.len() == ids.len() && finished && quiet && !object {
                empty.push(key.clone());
            }
            if !ids.is_empty() {
                old.insert(key.clone(), ids);
            }
        }
        self.let_go(old, false);
        for key in empty {
            self.snap.apps.remove(&key);
        }
        // Events about pods the store does not hold (another workload's, a forgotten
        // executor's that came late), none newer than the horizon: nothing will read them.
        let known: std::collections::HashSet<(&str, &str)> = self
            .snap
            .apps
            .values()
            .flat_map(|a| {
                let ns = a.namespace.as_str();
                a.executors
                    .values()
                    .map(move |e| (ns, e.pod.name.as_str()))
                    .chain(a.driver.as_ref().map(|d| (ns, d.pod.as_str())))
            })
            .collect();
        self.events.retain(|(ns, name), q| {
            known.contains(&(ns.as_str(), name.as_str()))
                || q.iter()
                    .any(|e| e.last_seen.or(e.first_seen).is_none_or(|t| t >= before))
        });
    }
}

impl Store {
    /// Past [`MAX_KEPT`] executors by a tenth: the ended ones that ended first go, down to
    /// [`MAX_KEPT`], each counted by its app ([`Trimmed`](super::Trimmed)). Executors still
    /// there, those the driver counts active and vanished ones are never let go. Checked
    /// after each event (a step per app).
    pub(super) fn bound(&mut self) {
        self.bound_sparing(None);
    }

    /// [`bound`](Self::bound), never letting go the executors `spare` names (of one app:
    /// those a view is still judging).
    pub(super) fn bound_sparing(
        &mut self,
        spare: Option<(&AppKey, &std::collections::HashSet<i64>)>,
    ) {
        let most = self.max_kept.unwrap_or(MAX_KEPT);
        let total: usize = self.snap.apps.values().map(|a| a.executors.len()).sum();
        if total <= most + most / 10 {
            self.bound_next = 0;
            return;
        }
        if total <= self.bound_next {
            return;
        }
        let mut ended: Vec<(Time, &AppKey, i64)> = self
            .snap
            .apps
            .iter()
            .flat_map(|(key, app)| {
                app.executors
                    .values()
                    // Not what the driver still counts active, nor a vanished one (its
                    // finding stands until Spark notices).
                    .filter(move |e| {
                        !spare.is_some_and(|(k, ids)| k == key && ids.contains(&e.id))
                            && !e.is_missing()
                            && !e
                                .driver
                                .as_ref()
                                .and_then(|d| d.exec.as_ref())
                                .is_some_and(|x| x.active)
                    })
                    .filter_map(move |e| Some((gone_at(e, e.gone.as_ref()?), key, e.id)))
            })
            .collect();
        let over = (total - most).min(ended.len());
        // Too few ended to come back under the bound (the rest run): looked at again only
        // when a tenth more has come than is left after this trim.
        self.bound_next = if over < total - most {
            total - over + most / 10
        } else {
            0
        };
        if over == 0 {
            return;
        }
        if over < ended.len() {
            ended.select_nth_unstable(over - 1);
        }
        let mut old: BTreeMap<AppKey, Vec<i64>> = BTreeMap::new();
        for (_, key, id) in ended.into_iter().take(over) {
            old.entry(key.clone()).or_default().push(id);
        }
        self.let_go(old, true);
    }

    /// Lets the executors `old` names go: the failures Spark counted stay in their app's
    /// budget, their ids are remembered, their events and captured logs go; `trimmed`: let
    /// go past the bound, so their app also counts what a report says of them.
    fn let_go(&mut self, old: BTreeMap<AppKey, Vec<i64>>, trimmed: bool) {
        let mut names = Vec::new();
        for (key, ids) in &old {
            let Some(app) = self.snap.apps.get_mut(key) else {
                continue;
            };
            let app = derived::edit(app);
            for id in ids {
                let Some(e) = app.executors.remove(id) else {
                    continue;
                };
                if e.verdict.counted() {
                    match e.verdict.cause() {
                        Some(f) => *app.forgotten_counted.entry(f.code).or_default() += 1,
                        None => app.forgotten_uncaused += 1,
                    }
                }
                if trimmed {
                    app.trimmed.add(&e);
                }
                app.forgotten.insert(*id..=*id);
                names.push((key.0.clone(), e.pod.name.to_string()));
            }
            if trimmed {
                self.snap.trimmed += ids.len() as u64;
            } else {
                self.snap.forgotten += ids.len() as u64;
            }
        }
        for name in names {
            self.events.remove(&name);
        }
        if !old.is_empty() {
            self.logs
                .retain(|(k, id)| old.get(k).is_none_or(|ids| !ids.contains(id)));
        }
    }
}

/// Since when the executor is gone, for the horizon. Known only from the driver (its pod
/// never seen here): its ending by the cluster's clocks, so an executor that ended minutes
/// before this process started is as old as its ending, not as its first sight here. A pod
/// that was seen: when it went (a pod that sat failed for an hour and was deleted a moment
/// ago is kept a horizon from now, and a vanish or deletion later withdrawn never meets a
/// record already forgotten).
fn gone_at(e: &super::ExecutorRecord, g: &super::Gone) -> Time {
    match g {
        super::Gone::DriverOnly { .. } => {
            super::times::ended(e).map_or(g.at(), |(t, _)| t.min(g.at()))
        }
        _ => g.at(),
    }
}

/// Known only from the driver, which counts it active (a selector leaves its pod out of
/// the scope): it has not ended while the driver runs.
fn active_driver_only(e: &super::ExecutorRecord) -> bool {
    matches!(e.gone, Some(super::Gone::DriverOnly { .. }))
        && e.driver
            .as_ref()
            .and_then(|d| d.exec.as_ref())
            .is_some_and(|x| x.active)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use spark_triage_core::model::ExecutorPod;
    use spark_triage_core::model::testing::{event, pod};

    use super::*;
    use crate::output::report::{Window, from_state};
    use crate::output::status;
    use crate::record::{Header, Item, Sink, State};
    use crate::source::SourceEvent;

    fn t(s: i64) -> Time {
        chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(s)
    }

    fn exec(id: i64, phase: &str) -> Arc<ExecutorPod> {
        Arc::new(pod(json!({
            "metadata": {"name": format!("a-exec-{id}"), "namespace": "ns", "resourceVersion": id.to_string(),
                "labels": {"spark-app-selector": "spark-a", "spark-app-name": "a", "spark-role": "executor", "spark-exec-id": id.to_string()}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": phase}})))
    }

    #[test]
    fn gone_executors_are_forgotten_live_ones_kept_and_replays_agree() {
        let events = vec![
            SourceEvent::PodUpserted {
                pod: exec(1, "Failed"),
                at: t(10),
            },
            SourceEvent::PodDeleted {
                pod: exec(1, "Failed"),
                at: t(11),
            },
            SourceEvent::PodUpserted {
                pod: exec(2, "Failed"),
                at: t(50),
            },
            SourceEvent::PodDeleted {
                pod: exec(2, "Failed"),
                at: t(51),
            },
            SourceEvent::PodUpserted {
                pod: exec(3, "Running"),
                at: t(52),
            },
            SourceEvent::Forget {
                before: t(40),
                at: t(100),
            },
        ];
        let mut store = Store::new();
        let (forget, before) = events.split_last().expect("events");
        for ev in before {
            store.apply(ev.clone());
        }
        let counted = |s: &Store| {
            let a = s.view().apps.values().next().expect("the app");
            (a.counted_failures(), a.budget_text())
        };
        let was = counted(&store);
        assert!(was.0 > 0, "a failed executor is counted");
        store.apply(forget.clone());
        assert_eq!(
            counted(&store),
            was,
            "a forgotten failure still counts against the budget"
        );
        let app = store
            .view()
            .apps
            .values()
            .next()
            .expect("the app stays: it runs");
        assert_eq!(
            app.executors.keys().copied().collect::<Vec<_>>(),
            vec![2, 3]
        );
        assert!(app.forgotten.contains(&1));
        // A keyframe taken now and a replay of every event are the same state.
        let keyframe: Store =
            serde_json::from_str(&serde_json::to_string(&store).unwrap()).unwrap();
        let mut replayed = Store::new();
        for ev in events {
            replayed.apply(ev);
        }
        let report = |s: &Store| serde_json::to_string(&status::report(s.view(), None)).unwrap();
        assert_eq!(report(&keyframe), report(&replayed));
        assert!(
            keyframe
                .view()
                .apps
                .values()
                .all(|a| a.forgotten.contains(&1))
        );
        assert_eq!(counted(&keyframe), was, "and after a keyframe");
    }

    /// Events about pods the store does not hold are dropped once older than the horizon
    /// (a busy namespace's other workloads grew the map for as long as the view ran).
    #[test]
    fn events_of_pods_nobody_holds_are_forgotten() {
        let ev = |pod: &str, s: i64| SourceEvent::EventSeen {
            event: Box::new(event(
                json!({"metadata": {"name": format!("e-{pod}-{s}"), "namespace": "ns"},
                "involvedObject": {"kind": "Pod", "name": pod, "namespace": "ns"},
                "reason": "Pulled", "type": "Normal", "message": "pulled",
                "lastTimestamp": t(s).to_rfc3339()}),
            )),
            at: t(s),
        };
        let mut store = Store::new();
        store.apply(SourceEvent::PodUpserted {
            pod: exec(1, "Running"),
            at: t(1),
        });
        store.apply(ev("a-exec-1", 5));
        store.apply(ev("web-0", 5));
        store.apply(ev("web-1", 90));
        store.apply(SourceEvent::Forget {
            before: t(40),
            at: t(100),
        });
        let kept: std::collections::BTreeSet<&str> =
            store.events.keys().map(|(_, n)| n.as_str()).collect();
        assert_eq!(kept, ["a-exec-1", "web-1"].into_iter().collect());
    }

    /// Past the bound, the executors that ended first are let go and counted: the report
    /// and the budget count as an unbounded store does; running ones are all kept.
    #[test]
    fn past_the_bound_the_first_ended_go_counted_as_a_report_counts_them() {
        let mut events = Vec::new();
        for id in 1..=30 {
            let s = id * 10;
            events.push(SourceEvent::PodUpserted {
                pod: exec(id, "Running"),
                at: t(s),
            });
            // Twenty-five end (OOM-killed, deleted); five still run.
            if id <= 25 {
                let oom = Arc::new(pod(json!({
                    "metadata": {"name": format!("a-exec-{id}"), "namespace": "ns", "resourceVersion": (100 + id).to_string(),
                        "labels": {"spark-app-selector": "spark-a", "spark-app-name": "a", "spark-role": "executor", "spark-exec-id": id.to_string()}},
                    "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
                    "status": {"phase": "Failed", "containerStatuses": [{"name": "spark-kubernetes-executor",
                        "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}})));
                events.push(SourceEvent::PodUpserted {
                    pod: oom.clone(),
                    at: t(s + 1),
                });
                events.push(SourceEvent::PodDeleted {
                    pod: oom,
                    at: t(s + 2),
                });
            }
        }
        let state = |store: Store| {
            let mut st = State {
                store,
                ..Default::default()
            };
            for ev in &events {
                Sink::take(&mut st, Item::Event(ev.clone()));
            }
            st
        };
        let header = Header::new(t(0), "namespace ns".into(), String::new(), String::new());
        let report = |st: &State| {
            let r = from_state("r", &header, st, &Default::default());
            serde_json::to_value(&r.apps[0]).expect("json")
        };
        let whole = state(Store::new());
        let bounded = state(Store::bounded(10));
        let app = bounded.store.view().apps.values().next().expect("the app");
        assert!(app.executors.len() <= 11, "{} kept", app.executors.len());
        for id in 26..=30 {
            assert!(
                app.executors.contains_key(&id),
                "running executor {id} is kept"
            );
        }
        // The first to end went first: what is kept ended last.
        let kept_ended: Vec<i64> = app.executors.keys().copied().filter(|&i| i <= 25).collect();
        let first = kept_ended.first().copied().expect("some ended are kept");
        assert!(kept_ended.iter().all(|&i| i >= first) && !app.executors.contains_key(&1));
        assert_eq!(app.trimmed.executors, 25 - kept_ended.len());
        // The incident strip's causes (the detail's first line) count them too.
        let causes = |st: &State| {
            let a = st.store.view().apps.values().next().expect("the app");
            a.incident().causes.clone()
        };
        assert_eq!(causes(&whole), causes(&bounded));
        assert!(!causes(&whole).is_empty(), "the strip counts the failures");
        let (w, b) = (report(&whole), report(&bounded));
        for field in [
            "executors_seen",
            "failures_counted",
            "by_cause",
            "by_finding",
            "oom",
            "failure_budget",
        ] {
            assert_eq!(w[field], b[field], "{field}");
        }
        assert!(w["failures_counted"].as_u64().expect("n") > 0, "{w}");
        assert_eq!(b["not_listed"]["executors"], app.trimmed.executors);
        assert_eq!(
            b["failures"].as_array().expect("list").len(),
            kept_ended.len()
        );
        assert!(w.get("not_listed").is_none());
        // A window that starts after every one of them ended does not count them.
        let later = Window {
            from: Some(t(1000)),
            ..Default::default()
        };
        let r = from_state("r", &header, &bounded, &later);
        assert!(r.apps.iter().all(|a| a.not_listed.is_none()));
        // One that starts among them cannot tell which were in it: named, not counted.
        let among = Window {
            from: Some(t(55)),
            ..Default::default()
        };
        let r = from_state("r", &header, &bounded, &among);
        let n = r.apps[0].not_listed.as_ref().expect("named");
        assert!(!n.counted);
        let listed = r.apps[0].failures.iter().filter(|f| f.failure).count();
        assert_eq!(
            r.apps[0].failures_counted, listed,
            "only the listed ones count"
        );
    }
}
