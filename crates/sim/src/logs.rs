//! Container logs the simulated kubelet writes and `pods/{name}/log` serves, current and
//! previous instance, with a change signal for `follow=true`.

use std::sync::{Mutex, MutexGuard};

use hashbrown::HashMap;
use tokio::sync::watch;

/// Lines kept per container instance (the oldest are dropped), at most.
const MAX_LINES: usize = 10_000;
/// Lines kept in all, about: with many containers each keeps fewer (down to `MIN_LINES`),
/// as a node's log rotation bounds its disk. Every running executor writes a heartbeat, so
/// without this 10,000 executors would hold 100 million lines after an hour.
const LINE_BUDGET: usize = 1_000_000;
/// Lines every container instance keeps, whatever the budget (the tool reads 200 at most;
/// a container's last lines, where its end is written, are what it needs). 100k executors
/// keep 10 lines each, about 140 MB.
const MIN_LINES: usize = 10;

type Key = (String, String, String);

/// A container's key, borrowed: looks up the map without allocating (it hashes as the
/// owned tuple does).
#[derive(Hash)]
struct KeyRef<'a>(&'a str, &'a str, &'a str);

impl hashbrown::Equivalent<Key> for KeyRef<'_> {
    fn equivalent(&self, k: &Key) -> bool {
        self.0 == k.0 && self.1 == k.1 && self.2 == k.2
    }
}

/// Lines as boxed strs: no spare capacity, 16 bytes a line less than a `String` with it.
#[derive(Debug, Default)]
struct ContainerLog {
    current: Vec<Box<str>>,
    previous: Option<Vec<Box<str>>>,
    finished: bool,
}

fn owned(lines: &[Box<str>]) -> Vec<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

/// All container logs.
#[derive(Debug)]
pub struct Logs {
    inner: Mutex<HashMap<Key, ContainerLog>>,
    tick: watch::Sender<u64>,
}

impl Default for Logs {
    fn default() -> Self {
        Self {
            inner: Mutex::new(HashMap::default()),
            tick: watch::channel(0).0,
        }
    }
}

/// What a read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRead {
    pub lines: Vec<String>,
    /// The container instance has ended: a follower stops after these lines.
    pub finished: bool,
}

fn key(ns: &str, pod: &str, container: &str) -> Key {
    (ns.to_owned(), pod.to_owned(), container.to_owned())
}

impl Logs {
    fn lock(&self) -> MutexGuard<'_, HashMap<Key, ContainerLog>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.tick.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A new container instance starts; the last one becomes `previous`.
    pub fn start(&self, ns: &str, pod: &str, container: &str) {
        let mut m = self.lock();
        let log = m.entry(key(ns, pod, container)).or_default();
        if !log.current.is_empty() || log.finished {
            log.previous = Some(std::mem::take(&mut log.current));
        }
        log.finished = false;
        drop(m);
        self.bump();
    }

    pub fn append(&self, ns: &str, pod: &str, container: &str, line: impl Into<String>) {
        let mut m = self.lock();
        let cap = (LINE_BUDGET / m.len().max(1)).clamp(MIN_LINES, MAX_LINES);
        let k = KeyRef(ns, pod, container);
        let log = match m.get_mut(&k) {
            Some(log) => log,
            None => m.entry(key(ns, pod, container)).or_default(),
        };
        log.current.push(line.into().into_boxed_str());
        if log.current.len() > cap {
            let excess = log.current.len() - cap;
            log.current.drain(..excess);
        }
        drop(m);
        self.bump();
    }

    /// The container instance ended: followers finish.
    pub fn finish(&self, ns: &str, pod: &str, container: &str) {
        if let Some(log) = self.lock().get_mut(&KeyRef(ns, pod, container)) {
            log.finished = true;
        }
        self.bump();
    }

    pub fn remove_pod(&self, ns: &str, pod: &str) {
        self.lock().retain(|(n, p, _), _| !(n == ns && p == pod));
        self.bump();
    }

    /// The last `tail` lines (all when `None`) of the current or previous instance.
    pub fn read(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
        previous: bool,
        tail: Option<usize>,
    ) -> Option<LogRead> {
        let m = self.lock();
        let log = m.get(&KeyRef(ns, pod, container))?;
        let (lines, finished) = if previous {
            (log.previous.as_ref()?, true)
        } else {
            (&log.current, log.finished)
        };
        let start = tail.map_or(0, |t| lines.len().saturating_sub(t));
        Some(LogRead {
            lines: owned(&lines[start..]),
            finished,
        })
    }

    /// Lines of the current instance from `offset` on.
    pub fn since(&self, ns: &str, pod: &str, container: &str, offset: usize) -> Option<LogRead> {
        let m = self.lock();
        let log = m.get(&KeyRef(ns, pod, container))?;
        Some(LogRead {
            lines: log.current.get(offset..).map(owned).unwrap_or_default(),
            finished: log.finished,
        })
    }

    pub fn changes(&self) -> watch::Receiver<u64> {
        self.tick.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_containers_keep_fewer_lines_each_but_never_fewer_than_the_floor() {
        let logs = Logs::default();
        for i in 0..200 {
            logs.append("ns", "one", "c", format!("line {i}"));
        }
        assert_eq!(
            logs.read("ns", "one", "c", false, None)
                .map(|r| r.lines.len()),
            Some(200)
        );
        for p in 0..150_000 {
            logs.append("ns", &format!("pod-{p}"), "c", "started");
        }
        logs.append("ns", "one", "c", "the last line");
        let kept = logs.read("ns", "one", "c", false, None).expect("log").lines;
        assert_eq!(
            kept.len(),
            MIN_LINES,
            "1,000,000 lines over 150,001 containers"
        );
        assert_eq!(kept.last().map(String::as_str), Some("the last line"));
    }
}
