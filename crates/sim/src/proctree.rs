//! The host's process table, read from `/proc`: which processes belong to a container (the
//! root process, its descendants, its process group, and every member seen before that is
//! still the same process), and how much memory they hold together.
//!
//! A container's memory is charged like a cgroup charges it, as closely as `/proc` allows:
//! the sum of each member's proportional set size (`Pss` in `smaps_rollup`), so pages a
//! forked Python worker shares with its daemon are counted once, not once per process. When
//! `smaps_rollup` cannot be read (an old kernel, a process that just exited) the resident
//! set size from `stat` stands in.

//!
//! `/proc` is read with the `procfs` crate (typed, maintained: it parses `stat` with its
//! parenthesised command name and converts `smaps_rollup`'s kB); what is ours is which
//! processes make a container.

use std::collections::{HashMap, HashSet};

use procfs::process::{ProcState, Process, SmapsRollup, Stat};

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// Clock ticks after boot: with the pid, it names one process (pids are reused).
    pub start: u64,
    /// Resident pages.
    pub rss_pages: u64,
}

impl From<&Stat> for ProcInfo {
    fn from(s: &Stat) -> Self {
        Self {
            pid: s.pid,
            ppid: s.ppid,
            pgrp: s.pgrp,
            start: s.starttime,
            rss_pages: s.rss,
        }
    }
}

/// The proportional set size in a `smaps_rollup`, in bytes (`procfs` converts the kB).
pub fn pss(rollup: &SmapsRollup) -> Option<u64> {
    rollup
        .memory_map_rollup
        .iter()
        .find_map(|m| m.extension.map.get("Pss").copied())
}

/// A snapshot of every process on the host.
#[derive(Debug, Default)]
pub struct ProcTable {
    by_pid: HashMap<i32, ProcInfo>,
    children: HashMap<i32, Vec<i32>>,
}

impl ProcTable {
    /// Reads `/proc`. Processes that exit while it is read are simply missing.
    pub fn read() -> Self {
        let mut t = Self::default();
        let Ok(all) = procfs::process::all_processes() else {
            return t;
        };
        for stat in all.flatten().filter_map(|p| p.stat().ok()) {
            t.insert(ProcInfo::from(&stat));
        }
        t
    }

    pub fn insert(&mut self, info: ProcInfo) {
        self.children.entry(info.ppid).or_default().push(info.pid);
        self.by_pid.insert(info.pid, info);
    }

    pub fn get(&self, pid: i32) -> Option<&ProcInfo> {
        self.by_pid.get(&pid)
    }

    /// The container's members now: `root` and its descendants, the members of its
    /// process group, and the `known` members (pid → start) that are still the same
    /// processes (an orphan whose parent exited is no longer a descendant, but it is still
    /// in the container, as it would still be in the cgroup).
    pub fn members(&self, root: i32, known: &HashMap<i32, u64>) -> HashMap<i32, u64> {
        let mut out = HashMap::new();
        let mut stack = vec![root];
        let mut seen = HashSet::new();
        while let Some(pid) = stack.pop() {
            if !seen.insert(pid) {
                continue;
            }
            if let Some(p) = self.by_pid.get(&pid) {
                out.insert(pid, p.start);
            }
            if let Some(kids) = self.children.get(&pid) {
                stack.extend(kids.iter().copied());
            }
        }
        for p in self.by_pid.values() {
            if p.pgrp == root {
                out.insert(p.pid, p.start);
            }
        }
        for (&pid, &start) in known {
            if self.by_pid.get(&pid).is_none_or(|p| p.start != start) {
                continue;
            }
            out.insert(pid, start);
            // A member's own children (a daemon that made its own process group).
            for k in self.children.get(&pid).into_iter().flatten() {
                if let Some(p) = self.by_pid.get(k) {
                    out.insert(p.pid, p.start);
                }
            }
        }
        out
    }
}

/// The process exists and is not a zombie (dead, waiting for whoever adopted it to reap it).
pub fn is_running(pid: i32) -> bool {
    Process::new(pid)
        .and_then(|p| p.stat())
        .and_then(|s| s.state())
        .is_ok_and(|state| state != ProcState::Zombie)
}

/// The memory charged to these processes, in bytes.
pub fn memory_of(members: &HashMap<i32, u64>, table: &ProcTable) -> u64 {
    let page = procfs::page_size();
    members
        .keys()
        .map(|pid| {
            Process::new(*pid)
                .and_then(|p| p.smaps_rollup())
                .ok()
                .and_then(|r| pss(&r))
                .unwrap_or_else(|| table.get(*pid).map_or(0, |p| p.rss_pages * page))
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use procfs::{FromBufRead, FromRead};

    use super::*;

    #[test]
    fn stat_with_parentheses_and_spaces_in_the_name() {
        let line = "4242 (java (main) x) S 4200 4242 4242 0 -1 4194560 1 0 0 0 5 3 0 0 20 0 40 0 987654 5000000 12345 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let p = ProcInfo::from(&Stat::from_read(line.as_bytes()).unwrap());
        assert_eq!(
            p,
            ProcInfo {
                pid: 4242,
                ppid: 4200,
                pgrp: 4242,
                start: 987654,
                rss_pages: 12345
            }
        );
        assert!(Stat::from_read("12 (x) S".as_bytes()).is_err());
        assert!(Stat::from_read("".as_bytes()).is_err());
    }

    #[test]
    fn pss_in_bytes() {
        let rollup = |t: &str| SmapsRollup::from_buf_read(t.as_bytes()).unwrap();
        let t = "00400000-7fff0000 ---p 00000000 00:00 0 [rollup]\nRss:  2048 kB\nPss:  1024 kB\nPss_Anon: 10 kB\n";
        assert_eq!(pss(&rollup(t)), Some(1024 * 1024));
        let no_pss = "00400000-7fff0000 ---p 00000000 00:00 0 [rollup]\nRss: 1 kB\n";
        assert_eq!(pss(&rollup(no_pss)), None);
    }

    fn info(pid: i32, ppid: i32, pgrp: i32) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgrp,
            start: pid as u64 * 10,
            rss_pages: 1,
        }
    }

    #[test]
    fn members_follow_descendants_groups_and_orphans() {
        let mut t = ProcTable::default();
        t.insert(info(1, 0, 1));
        t.insert(info(100, 1, 100)); // the root (own group)
        t.insert(info(101, 100, 100)); // child
        t.insert(info(102, 101, 102)); // grandchild in its own group (a daemon)
        t.insert(info(103, 1, 100)); // orphan still in the group
        t.insert(info(104, 1, 104)); // orphan that left the group, known before
        t.insert(info(105, 104, 104)); // its child
        t.insert(info(200, 1, 200)); // a stranger
        t.insert(info(300, 1, 300)); // pid reused: known with another start
        let known = HashMap::from([(104, 1040), (300, 1)]);
        let mut m: Vec<i32> = t.members(100, &known).into_keys().collect();
        m.sort();
        assert_eq!(m, vec![100, 101, 102, 103, 104, 105]);
    }

    #[test]
    fn this_process_is_in_the_real_table() {
        let me = std::process::id() as i32;
        let t = ProcTable::read();
        let p = t.get(me).expect("own pid in /proc");
        assert!(p.rss_pages > 0);
        let members = t.members(me, &HashMap::new());
        assert!(members.contains_key(&me));
        assert!(memory_of(&HashMap::from([(me, p.start)]), &t) > 0);
    }
}
