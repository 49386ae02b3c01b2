//! Replay: the recorded events, a position on their timeline, and the moves (play, speed,
//! step to the next lifecycle change or failure, seek). Everything derives from the events,
//! so two replays at the same position show identical frames. Seeking backwards rebuilds
//! the store from the start (no keyframes yet).

use std::sync::Arc;

use spark_triage_core::model::Time;

use crate::record::{Gap, Keyframe, timeline};
use crate::source::SourceEvent;
use crate::store::{AppKey, Store};

/// Speeds offered (×).
pub const SPEEDS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// One failure in a recording.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FailureMark {
    pub at: Time,
    pub app: AppKey,
    pub executor: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct Replay {
    pub events: Arc<Vec<SourceEvent>>,
    /// Events applied so far.
    pub index: usize,
    pub start: Time,
    pub end: Time,
    /// The replay clock.
    pub position: Time,
    pub playing: bool,
    pub speed: u32,
    /// Moments where an executor's lifecycle changed.
    pub changes: Vec<Time>,
    /// Where something failed: when, which app, which executor (in time order).
    pub failures: Vec<FailureMark>,
    /// `:` typed, waiting for a time.
    pub seeking: Option<String>,
    pub keyframes: Arc<Vec<Keyframe>>,
    /// Where a directory's recorder was not running (nothing recorded).
    pub gaps: Vec<Gap>,
}

impl Replay {
    /// Prepares a replay (one pass to find the lifecycle changes and failures).
    pub fn new(events: Vec<SourceEvent>, keyframes: Vec<Keyframe>, started_at: Time) -> Self {
        let start = events
            .first()
            .map_or(started_at, SourceEvent::at)
            .min(started_at);
        let end = events.iter().map(SourceEvent::at).max().unwrap_or(start);
        let mut probe = Keyframe::opening(&keyframes)
            .and_then(Keyframe::store)
            .unwrap_or_default();
        for ev in &events {
            probe.apply(ev.clone());
        }
        let mut changes = Vec::new();
        let mut failures = Vec::new();
        for app in probe.view().apps.values() {
            for t in &app.timeline {
                // Where the recording knew it (a line dated by the cluster's clock may be
                // older than the event that told it).
                let known = t.seen.unwrap_or(t.at).max(t.at);
                changes.push(known);
                if t.text.contains(" failed")
                    || t.text.contains(" missing")
                    || t.text.contains("Evicted")
                    || t.text.contains("OOMKilled")
                {
                    failures.push(FailureMark {
                        at: known,
                        app: (app.namespace.clone(), app.app_id.clone()),
                        executor: t.executor,
                    });
                }
            }
        }
        changes.sort();
        changes.dedup();
        // One stop per executor that failed, at its first word of it (its timeline says it
        // again when its pod is deleted or its verdict is refined: `f` took two presses).
        failures.sort();
        let mut seen = std::collections::BTreeSet::new();
        failures.retain(|f: &FailureMark| {
            f.executor.is_none() || seen.insert((f.app.clone(), f.executor))
        });
        Self {
            events: Arc::new(events),
            index: 0,
            start,
            end,
            position: start,
            playing: false,
            speed: 1,
            changes,
            failures,
            seeking: None,
            keyframes: Arc::new(keyframes),
            gaps: Vec::new(),
        }
    }

    /// Moves the replay clock to `to`, applying (or re-applying) events into `store`.
    pub fn seek(&mut self, store: &mut Store, to: Time) {
        let to = to.clamp(self.start, self.end);
        // From the nearest keyframe at or before `to`, when going back or far ahead. Before
        // the first event, a keyframe is the state to start from (a segment's opening one:
        // what happened before the segment).
        let backwards = to < self.position;
        let keyframe = self
            .keyframes
            .iter()
            .rev()
            .find(|k| k.at <= to && (backwards || self.index == 0 || k.event_index > self.index))
            .and_then(|k| Some((k.event_index, k.store()?)));
        if let Some((index, kf)) = keyframe {
            *store = kf;
            self.index = index;
        } else if backwards {
            *store = Store::new();
            self.index = 0;
        }
        while let Some(ev) = self.events.get(self.index) {
            if ev.at() > to {
                break;
            }
            store.apply(ev.clone());
            self.index += 1;
        }
        self.position = to;
        if self.position >= self.end {
            self.playing = false;
        }
    }

    pub fn next_change(&self) -> Option<Time> {
        self.changes.iter().copied().find(|t| *t > self.position)
    }

    pub fn previous_change(&self) -> Option<Time> {
        self.changes
            .iter()
            .rev()
            .copied()
            .find(|t| *t < self.position)
    }

    pub fn next_failure(&self) -> Option<&FailureMark> {
        self.failures.iter().find(|f| f.at > self.position)
    }

    pub fn previous_failure(&self) -> Option<&FailureMark> {
        self.failures.iter().rev().find(|f| f.at < self.position)
    }

    /// Where a replay opens: the first failure, or the end when nothing failed.
    pub fn opening(&self) -> (Time, Option<&FailureMark>) {
        match self.failures.first() {
            Some(f) => (f.at, Some(f)),
            None => (self.end, None),
        }
    }

    pub fn faster(&mut self) {
        self.speed = SPEEDS
            .iter()
            .copied()
            .find(|s| *s > self.speed)
            .unwrap_or(64);
    }

    pub fn slower(&mut self) {
        self.speed = SPEEDS
            .iter()
            .rev()
            .copied()
            .find(|s| *s < self.speed)
            .unwrap_or(1);
    }

    /// `1m30s` from the start, an RFC 3339 time, or `HH:MM:SS` on the recording's first day.
    /// A moment typed at `:`, read as `--at` reads it (one meaning everywhere): RFC 3339, a
    /// local time, a time after the start (`90s`, `+90s`) or before the end (`-2m`).
    pub fn parse_moment(&self, s: &str) -> Option<Time> {
        timeline::moment(s, self.start, self.end).ok()
    }
}

#[cfg(test)]
mod tests {
    use spark_triage_core::model::testing::pod;

    use super::*;

    /// The prompt reads a moment as `--at` does: after the start, or before the end.
    #[test]
    fn a_moment_is_read_as_the_at_flag_reads_it() {
        let start: Time = "2026-11-29T10:00:00Z".parse().unwrap();
        let mut r = Replay::new(Vec::new(), Vec::new(), start);
        r.end = start + chrono::Duration::minutes(10);
        r.position = start + chrono::Duration::minutes(5);
        let at = |r: &Replay, s: &str| r.parse_moment(s).map(|t| t.to_rfc3339());
        assert_eq!(at(&r, "+30s").as_deref(), Some("2026-11-29T10:00:30+00:00"));
        assert_eq!(at(&r, "-2m").as_deref(), Some("2026-11-29T10:08:00+00:00"));
        assert_eq!(
            at(&r, "1m30s").as_deref(),
            Some("2026-11-29T10:01:30+00:00")
        );
        assert_eq!(
            at(&r, "2026-11-29T10:07:00Z").as_deref(),
            Some("2026-11-29T10:07:00+00:00")
        );
        assert_eq!(at(&r, "+soon"), None);
    }

    #[test]
    fn an_executor_that_failed_is_one_stop_for_f() {
        let t0: Time = "2026-11-29T10:00:00Z".parse().unwrap();
        let oom = pod(serde_json::json!({
            "metadata": {"name": "a-exec-1", "uid": "u1", "resourceVersion": "2",
                "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": "1"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": "Failed", "containerStatuses": [{"name": "spark-kubernetes-executor",
                "image": "spark", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}}));
        let mut deleted = oom.clone();
        deleted.resource_version = Some("3".into());
        let events = vec![
            SourceEvent::PodUpserted {
                pod: Arc::new(oom),
                at: t0,
            },
            SourceEvent::PodDeleted {
                pod: Arc::new(deleted),
                at: t0 + chrono::Duration::seconds(5),
            },
        ];
        let r = Replay::new(events, Vec::new(), t0);
        assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
        assert_eq!(r.failures[0].at, t0);
    }
}
