//! What the store does with the smaller events: pods present in a partial LIST, the
//! tool's own actions and its actions log's kills, an event log's notes on an app; and
//! which events can change the verdicts (so the node patterns).

use spark_triage_core::model;
use spark_triage_core::model::cost::CostFrom;

use super::*;
use crate::source::{LoggedKill, PresentPod};

/// Events that can add or remove a node failure (so the node patterns): a pod that
/// failed or lost its node, a relist, the driver's list, an eviction or a kubelet's warning,
/// a forget, and every tick (the catch-all). Others (a running pod's update) cannot,
/// and at 10,000 executors a pass per event would cost the live view.
pub(super) fn changes_verdicts(ev: &SourceEvent) -> bool {
    match ev {
        SourceEvent::PodUpserted { pod, .. } | SourceEvent::PodDeleted { pod, .. } => {
            matches!(pod.phase(), Some("Failed" | "Unknown"))
        }
        // An eviction, or a kubelet's warning: the node (or time) of a gone executor.
        SourceEvent::EventSeen { event, .. } => {
            event.reason_is("Evicted") || (event.host.is_some() && event.is_warning())
        }
        SourceEvent::PodsListed { .. }
        | SourceEvent::PodsPresent { .. }
        | SourceEvent::DriverExecutors { .. }
        | SourceEvent::Tick { .. }
        | SourceEvent::Forget { .. } => true,
        _ => false,
    }
}

/// An event log's note on an app: its name, version, and end (or that it has not ended).
pub(super) struct AppNote {
    pub app_name: Option<String>,
    pub text: String,
    pub end: bool,
    pub unfinished: bool,
    pub spark_version: Option<String>,
}

impl Store {
    /// The pods a LIST had (names and ids only): those it lacks are missing.
    pub(super) fn present(&mut self, pods: &[PresentPod], resource_version: Option<u64>, at: Time) {
        let present = pods
            .iter()
            .map(|p| Present {
                namespace: &p.namespace,
                name: &p.name,
                app_id: p.app_id.as_deref(),
                executor_id: p.executor_id,
                uid: p.uid.as_deref(),
            })
            .collect();
        self.mark_missing(present, resource_version, at);
    }

    /// An action taken through the tool: in the app's timeline; a kill marks its executor.
    pub(super) fn action_taken(
        &mut self,
        (namespace, app_id): AppKey,
        text: String,
        killed: Option<i64>,
        at: Time,
    ) {
        let app = self.app_mut(&namespace, &app_id);
        let by = records::actor(&text);
        app.log(at, killed, text);
        if let Some(id) = killed
            && let Some(rec) = app.executors.get_mut(&id)
        {
            Arc::make_mut(rec).killed_by_tool = Some(ToolKill { at: Some(at), by });
            self.refresh_some(&(namespace, app_id), &[id], at);
        }
    }

    /// The kills the local actions log holds: the apps of their namespaces judged again.
    pub(super) fn kills_logged(&mut self, kills: Vec<LoggedKill>, at: Time) {
        let kills: BTreeMap<_, _> = kills
            .into_iter()
            .map(|k| {
                let kill = ToolKill {
                    at: Some(k.at),
                    by: Some(k.by).filter(|b| !b.is_empty()),
                };
                ((k.namespace, k.pod), kill)
            })
            .collect();
        let namespaces: std::collections::BTreeSet<&String> =
            kills.keys().map(|(ns, _)| ns).collect();
        let apps: Vec<AppKey> = self
            .snap
            .apps
            .keys()
            .filter(|(ns, _)| namespaces.contains(ns))
            .cloned()
            .collect();
        self.logged_kills = Arc::new(kills);
        for key in apps {
            self.rediagnose_app(&key, at);
        }
    }

    /// What an app's executor losses cost it, as its event log tells (the whole run).
    pub(super) fn app_cost(&mut self, ev: SourceEvent) {
        let SourceEvent::AppCost {
            namespace,
            app_id,
            cost,
            at,
        } = ev
        else {
            return;
        };
        let app = self.app_mut(&namespace, &app_id);
        // An event log's figures are the whole story; a driver's REST API's are only the
        // losses, and never replace them.
        if cost.from == CostFrom::DriverApi
            && app
                .cost
                .as_deref()
                .is_some_and(|c| c.from == CostFrom::EventLog)
        {
            return;
        }
        if app.cost.as_deref() != Some(&*cost) {
            app.cost = Some(Arc::new(*cost));
            // A log lags the pods (Spark buffers it): never back in time.
            app.as_of = Some(app.as_of.map_or(at, |a| a.max(at)));
        }
    }

    /// An event log's note on an app.
    pub(super) fn app_noted(&mut self, (namespace, app_id): AppKey, note: AppNote, at: Time) {
        let AppNote {
            app_name,
            text,
            end,
            unfinished,
            spark_version,
        } = note;
        let app = self.app_mut(&namespace, &app_id);
        if end {
            app.logged_unfinished = unfinished;
        }
        if app_name.is_some() && app.app_name.is_none() {
            app.app_name = app_name;
        }
        if spark_version.is_some() {
            app.logged_version = spark_version;
        }
        if end {
            app.logged_end_at = Some(at);
            app.logged_end = Some(format!("{text} ({})", model::fmt_time(&at)));
        } else if app.logged_end.is_none() {
            app.logged_end = Some("the application has not ended by this point of its log".into());
        }
        app.log(at, None, text);
    }
}
