//! Forgetting (`SourceEvent::Forget`): a recorder or a live view that runs for days keeps
//! in memory only the executors that went away recently; a recorder's segments keep the
//! rest.

use super::{Store, derived};
use spark_triage_core::model::Time;

impl Store {
    /// Drops executors gone before `before` (see [`gone_at`]), with their captured logs and
    /// events, and apps left with nothing that have ended: their driver gone or finished
    /// and nothing new since `before`. Forgotten ids are remembered (as ranges) so the
    /// driver's list naming them again brings nothing back.
    pub(super) fn forget(&mut self, before: Time) {
        let mut empty = Vec::new();
        let mut forgotten = 0;
        for (key, app) in &mut self.snap.apps {
            let finished = app.driver.as_ref().is_none_or(|d| {
                d.gone.is_some()
                    || matches!(d.phase.as_deref(), Some("Succeeded" | "Failed" | "Deleted"))
            });
            // Each with, when Spark counted it, its cause (if its verdict named one).
            #[allow(clippy::type_complexity)]
            let old: Vec<(
                i64,
                String,
                Option<Option<spark_triage_core::diagnose::Code>>,
            )> = app
                .executors
                .values()
                .filter(|e| e.gone.as_ref().is_some_and(|g| gone_at(e, g) < before))
                // The driver's last word while it runs: not ended, whatever its age.
                .filter(|e| finished || !active_driver_only(e))
                .map(|e| {
                    let counted = e
                        .verdict
                        .counted()
                        .then(|| e.verdict.cause().map(|f| f.code));
                    (e.id, e.pod.name.to_string(), counted)
                })
                .collect();
            if !old.is_empty() {
                forgotten += old.len() as u64;
                let app = derived::edit(app);
                for (id, name, counted) in &old {
                    match counted {
                        Some(Some(code)) => *app.forgotten_counted.entry(*code).or_default() += 1,
                        Some(None) => app.forgotten_uncaused += 1,
                        None => {}
                    }
                    app.executors.remove(id);
                    app.forgotten.insert(*id..=*id);
                    self.events.remove(&(key.0.clone(), name.clone()));
                }
                self.logs
                    .retain(|(k, id)| k != key || !old.iter().any(|(o, ..)| o == id));
            }
            let quiet = app.timeline.back().is_none_or(|t| t.at < before);
            if app.executors.is_empty() && finished && quiet {
                empty.push(key.clone());
            }
        }
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
        self.snap.forgotten += forgotten;
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

    use super::*;
    use crate::source::SourceEvent;
    use spark_triage_core::model::testing::pod;

    fn t(s: i64) -> Time {
        chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(s)
    }

    fn exec(id: i64, phase: &str) -> Arc<spark_triage_core::model::ExecutorPod> {
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
        let report = |s: &Store| {
            serde_json::to_string(&crate::output::status::report(s.view(), None)).unwrap()
        };
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
        use spark_triage_core::model::testing::event;
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
}
