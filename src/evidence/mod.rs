//! Which ended or stuck executors get per-pod evidence reads (their log tail, their events).
//!
//! Why a policy: the pod watch, the event watch of what the diagnoses read and the periodic
//! metadata relist cost the same whatever happens; per-pod reads are the only requests that
//! grow with trouble. When an app loses five executors a second to the same cause, the
//! on-call engineer needs a few of their logs and events, not three hundred a minute
//! through the API server's kubelet proxy. So: at most [`SAME_CAUSE`] executors of one app
//! ending the same way (cause and exit code) in [`WINDOW`], at most [`PER_MINUTE`] reads a
//! minute overall, and executors that end well are not read. An executor left unread keeps
//! a note saying why and which ones were read instead.
//!
//! `EvidenceReads` is pure: the caller passes the time (the store's clock). A replay reads nothing.
//!
//! One budget for every reader: the live view (`app::evidence` turns its answers into
//! effects) and the flight recorder (`tails` reads the log tails itself, into the
//! recording).

pub mod tails;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use chrono::TimeDelta;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::Time;

use crate::store::{DRIVER, Finished, Snapshot};

/// Executors of one app ending the same way whose evidence is read per [`WINDOW`].
pub const SAME_CAUSE: usize = 3;
/// The window of [`SAME_CAUSE`].
pub const WINDOW: TimeDelta = TimeDelta::minutes(10);
/// EvidenceReads reads (of any cause) per minute.
pub const PER_MINUTE: usize = 30;
/// Executors pending this long without any event get their events read once.
pub const STUCK_PENDING: TimeDelta = TimeDelta::seconds(60);
/// Notes kept about executors left unread (oldest dropped).
const MAX_NOTES: usize = 2_000;
/// Pending executors whose events were read, remembered so each is read once.
const MAX_READ: usize = 10_000;

/// How an executor ended, for grouping: (namespace, app id, cause, exit code).
pub type Signature = (String, String, String, Option<i32>);

/// Where the reading of a pod's events from the cluster stands (the describe and detail
/// popups tell "not read" from "none").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventsRead {
    /// Asked; no answer yet.
    Reading,
    /// Read: this many events about it were in the cluster.
    Read(usize),
    /// The read failed: why.
    Failed(String),
}

/// Pods whose events were asked for, remembered (oldest dropped).
const MAX_ASKED: usize = 10_000;

/// The policy's memory.
#[derive(Debug, Default)]
pub struct EvidenceReads {
    /// Pods whose events were read from the cluster (or are being read): once each.
    asked: BTreeMap<(String, String), EventsRead>,
    asked_order: VecDeque<(String, String)>,
    /// Per signature: when evidence was read and of which executors.
    read: HashMap<Signature, VecDeque<(Time, i64)>>,
    /// Every read in the last minute.
    recent: VecDeque<Time>,
    /// Why an executor's evidence was not read, by (namespace, pod).
    notes: BTreeMap<(String, String), String>,
    notes_order: VecDeque<(String, String)>,
    /// Pending executors whose events were read (namespace, pod).
    stuck_read: BTreeSet<(String, String)>,
    stuck_order: VecDeque<(String, String)>,
    expired_at: Option<Time>,
}

impl EvidenceReads {
    /// Whether to read this pod's events now: the first time it is asked (once per pod).
    pub fn ask(&mut self, namespace: &str, pod: &str) -> bool {
        let key = (namespace.to_owned(), pod.to_owned());
        match self.asked.get_mut(&key) {
            // A read that failed may be asked again.
            Some(state @ EventsRead::Failed(_)) => {
                *state = EventsRead::Reading;
                return true;
            }
            Some(_) => return false,
            None => {}
        }
        self.asked.insert(key.clone(), EventsRead::Reading);
        self.asked_order.push_back(key);
        while self.asked_order.len() > MAX_ASKED {
            if let Some(old) = self.asked_order.pop_front() {
                self.asked.remove(&old);
            }
        }
        true
    }

    /// The answer to a read of this pod's events.
    pub fn answered(&mut self, namespace: &str, pod: &str, result: Result<usize, String>) {
        let key = (namespace.to_owned(), pod.to_owned());
        if !self.asked.contains_key(&key) {
            self.ask(namespace, pod);
        }
        if let Some(state) = self.asked.get_mut(&key) {
            *state = match result {
                Ok(n) => EventsRead::Read(n),
                Err(e) => EventsRead::Failed(e),
            };
        }
    }

    /// Where the reading of this pod's events stands; `None`: never asked.
    pub fn events(&self, namespace: &str, pod: &str) -> Option<&EventsRead> {
        self.asked.get(&(namespace.to_owned(), pod.to_owned()))
    }

    /// Whether to read the evidence of an executor that ended with `sig`; when not, the
    /// note about it is kept (see [`EvidenceReads::note`]).
    pub fn ended(&mut self, sig: Signature, id: i64, pod: (&str, &str), now: Time) -> bool {
        self.expire(now);
        let done = self.read.entry(sig.clone()).or_default();
        let refusal = if done.len() >= SAME_CAUSE {
            let ids: Vec<String> = done.iter().map(|(_, id)| id.to_string()).collect();
            Some(format!(
                "not captured: {} executors of this app ended the same way ({}{}) in the last {} min; \
                 the evidence of executor{} {} was captured",
                done.len(),
                sig.2,
                sig.3.map(|c| format!(", exit {c}")).unwrap_or_default(),
                WINDOW.num_minutes(),
                if ids.len() == 1 { "" } else { "s" },
                ids.join(", ")
            ))
        } else if self.recent.len() >= PER_MINUTE {
            Some(format!(
                "not captured: {PER_MINUTE} executors' evidence was already read in the last minute \
                 (the API server is spared a storm of per-pod reads)"
            ))
        } else {
            None
        };
        match refusal {
            Some(note) => {
                self.keep_note(pod, note);
                false
            }
            None => {
                done.push_back((now, id));
                self.recent.push_back(now);
                true
            }
        }
    }

    /// Whether to read the events of an executor pending since `since`: once per pod, and
    /// within the same budgets as endings (`sig` names the app and "stuck pending", so a
    /// thousand executors stuck behind one quota are read a few at a time, not all).
    pub fn stuck(
        &mut self,
        sig: Signature,
        id: i64,
        pod: (&str, &str),
        since: Time,
        now: Time,
    ) -> bool {
        let key = (pod.0.to_owned(), pod.1.to_owned());
        if now - since < STUCK_PENDING || self.stuck_read.contains(&key) {
            return false;
        }
        // No note: a pending executor's events may still be read on a later tick.
        self.expire(now);
        if self.recent.len() >= PER_MINUTE
            || self.read.get(&sig).is_some_and(|q| q.len() >= SAME_CAUSE)
        {
            return false;
        }
        self.read.entry(sig).or_default().push_back((now, id));
        self.recent.push_back(now);
        self.stuck_order.push_back(key.clone());
        self.stuck_read.insert(key);
        while self.stuck_order.len() > MAX_READ {
            if let Some(old) = self.stuck_order.pop_front() {
                self.stuck_read.remove(&old);
            }
        }
        true
    }

    /// Why this executor's evidence was not read, if it was left unread.
    pub fn note(&self, namespace: &str, pod: &str) -> Option<&str> {
        self.notes
            .get(&(namespace.to_owned(), pod.to_owned()))
            .map(String::as_str)
    }

    fn keep_note(&mut self, pod: (&str, &str), note: String) {
        let key = (pod.0.to_owned(), pod.1.to_owned());
        if self.notes.insert(key.clone(), note).is_none() {
            self.notes_order.push_back(key);
        }
        while self.notes_order.len() > MAX_NOTES {
            if let Some(old) = self.notes_order.pop_front() {
                self.notes.remove(&old);
            }
        }
    }

    fn expire(&mut self, now: Time) {
        if self.expired_at == Some(now) {
            return; // once per moment: a tick asks about every pending executor
        }
        self.expired_at = Some(now);
        while self
            .recent
            .front()
            .is_some_and(|t| now - *t >= TimeDelta::minutes(1))
        {
            self.recent.pop_front();
        }
        self.read.retain(|_, q| {
            while q.front().is_some_and(|(t, _)| now - *t >= WINDOW) {
                q.pop_front();
            }
            !q.is_empty()
        });
    }
}

/// Whether an ended executor's (or driver's) evidence is read now, by the budget: a driver
/// whenever its app did not end well, an executor when it ended with a warning or an error
/// and its cause's share is not spent. A read is marked asked.
pub fn due(reads: &mut EvidenceReads, snap: &Snapshot, f: &Finished, now: Time) -> bool {
    let Some(app) = snap.apps.get(&(f.namespace.clone(), f.app_id.clone())) else {
        return false;
    };
    if f.id == DRIVER {
        // One driver per app: its evidence is read whenever it did not end well.
        if app.verdict().severity() == Severity::Info {
            return false;
        }
        reads.ask(&f.namespace, &f.pod);
        return true;
    }
    let Some(rec) = app.executors.get(&f.id) else {
        return false;
    };
    // An executor that ended well (or only for the record) needs no evidence.
    let Some(cause) = rec.verdict.cause().filter(|c| c.severity != Severity::Info) else {
        return false;
    };
    let sig = (
        f.namespace.clone(),
        f.app_id.clone(),
        cause.code.as_str().to_owned(),
        rec.verdict.exit_code,
    );
    if !reads.ended(sig, f.id, (&f.namespace, &f.pod), now) {
        return false;
    }
    reads.ask(&f.namespace, &f.pod);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Time {
        chrono::DateTime::from_timestamp(1_700_000_000 + s, 0).expect("time")
    }

    fn sig(cause: &str) -> Signature {
        ("ns".into(), "app-1".into(), cause.into(), Some(137))
    }

    #[test]
    fn a_few_of_each_cause_per_window_then_a_note_naming_the_ones_read() {
        let mut e = EvidenceReads::default();
        for id in 1..=3 {
            assert!(e.ended(
                sig("container-oom-killed"),
                id,
                ("ns", &format!("p{id}")),
                t(id)
            ));
        }
        assert!(!e.ended(sig("container-oom-killed"), 4, ("ns", "p4"), t(4)));
        let note = e.note("ns", "p4").expect("a note");
        assert!(note.contains("container-oom-killed, exit 137"), "{note}");
        assert!(note.contains("executors 1, 2, 3"), "{note}");
        // Another cause of the same app is read.
        assert!(e.ended(sig("node-sigkill"), 5, ("ns", "p5"), t(5)));
        // After the window, the cause is read again.
        assert!(e.ended(sig("container-oom-killed"), 6, ("ns", "p6"), t(4 + 600)));
        assert_eq!(e.note("ns", "p6"), None);
    }

    #[test]
    fn no_more_than_the_minute_budget_of_reads_in_a_storm_of_causes() {
        let mut e = EvidenceReads::default();
        let read = (0..100)
            .filter(|i| {
                let cause = format!("cause-{i}");
                e.ended(sig(&cause), *i, ("ns", &format!("p{i}")), t(i / 10))
            })
            .count();
        assert_eq!(read, PER_MINUTE);
        assert!(e.note("ns", "p99").expect("note").contains("last minute"));
        // A minute on, reads resume.
        assert!(e.ended(sig("later"), 200, ("ns", "p200"), t(75)));
    }

    #[test]
    fn stuck_pending_executors_are_read_once_after_a_minute() {
        let mut e = EvidenceReads::default();
        let stuck = || sig("stuck-pending");
        assert!(
            !e.stuck(stuck(), 1, ("ns", "p1"), t(0), t(30)),
            "not stuck yet"
        );
        assert!(e.stuck(stuck(), 1, ("ns", "p1"), t(0), t(61)));
        assert!(
            !e.stuck(stuck(), 1, ("ns", "p1"), t(0), t(200)),
            "read once"
        );
        // A few of one app's stuck executors, not all of them.
        let read = (2..50)
            .filter(|i| e.stuck(stuck(), *i, ("ns", &format!("p{i}")), t(0), t(300)))
            .count();
        assert_eq!(read, SAME_CAUSE - 1);
    }
}
