//! Forgetting (`SourceEvent::Forget`): a recorder that runs for days keeps in memory only
//! the executors whose pods went away recently; its segments keep the rest.

use super::{Store, derived};
use crate::model::Time;

impl Store {
    /// Drops executors whose pods were gone before `before`, with their captured logs and
    /// events, and apps left with nothing that have ended: their driver gone or finished
    /// and nothing new since `before`. Forgotten ids are remembered (as ranges) so the
    /// driver's list naming them again brings nothing back.
    pub(super) fn forget(&mut self, before: Time) {
        let mut empty = Vec::new();
        for (key, app) in &mut self.snap.apps {
            let old: Vec<(i64, String)> = app
                .executors
                .values()
                .filter(|e| e.gone.as_ref().is_some_and(|g| g.at() < before))
                .map(|e| (e.id, e.pod.name.to_string()))
                .collect();
            if !old.is_empty() {
                let app = derived::edit(app);
                for (id, name) in &old {
                    app.executors.remove(id);
                    app.forgotten.insert(*id..=*id);
                    self.events.remove(&(key.0.clone(), name.clone()));
                }
                self.logs
                    .retain(|(k, id)| k != key || !old.iter().any(|(o, _)| o == id));
            }
            let finished = app.driver.as_ref().is_none_or(|d| {
                d.gone.is_some()
                    || matches!(d.phase.as_deref(), Some("Succeeded" | "Failed" | "Deleted"))
            });
            let quiet = app.timeline.back().is_none_or(|t| t.at < before);
            if app.executors.is_empty() && finished && quiet {
                empty.push(key.clone());
            }
        }
        for key in empty {
            self.snap.apps.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::{model::testing::pod, source::SourceEvent};

    fn t(s: i64) -> Time {
        chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(s)
    }

    fn exec(id: i64, phase: &str) -> Arc<crate::model::ExecutorPod> {
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
        for ev in events.clone() {
            store.apply(ev);
        }
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
        let report =
            |s: &Store| serde_json::to_string(&crate::status::report(s.view(), None)).unwrap();
        assert_eq!(report(&keyframe), report(&replayed));
        assert!(
            keyframe
                .view()
                .apps
                .values()
                .all(|a| a.forgotten.contains(&1))
        );
    }
}
