//! The host's process table, read from `/proc`: which processes belong to a container (the
//! root process, its descendants, its process group, and every member seen before that is
//! still the same process), and how much memory they hold together.
//!
//! A container's memory is charged like a cgroup charges it, as closely as `/proc` allows:
//! the sum of each member's proportional set size (`Pss` in `smaps_rollup`), so pages a
//! forked Python worker shares with its daemon are counted once, not once per process. When
//! `smaps_rollup` cannot be read (an old kernel, a process that just exited) the resident
//! set size from `stat` stands in.

use std::collections::{HashMap, HashSet};

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

/// Parses one `/proc/<pid>/stat` line. The command name is in parentheses and may hold
/// spaces and parentheses itself, so fields are counted from the last `)`.
pub fn parse_stat(line: &str) -> Option<ProcInfo> {
    let pid: i32 = line.split_whitespace().next()?.parse().ok()?;
    let rest = &line[line.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state); field n is f[n - 3].
    Some(ProcInfo {
        pid,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
        rss_pages: f.get(21)?.parse().ok()?,
    })
}

/// Reads `Pss:` (kB) from a `smaps_rollup` text, in bytes.
pub fn parse_pss(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
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
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return t;
        };
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if let Some(info) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_stat(&s))
            {
                t.insert(info);
            }
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
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|r| !r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The memory charged to these processes, in bytes.
pub fn memory_of(members: &HashMap<i32, u64>, table: &ProcTable) -> u64 {
    let page = page_size();
    members
        .keys()
        .map(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
                .ok()
                .and_then(|s| parse_pss(&s))
                .unwrap_or_else(|| table.get(*pid).map_or(0, |p| p.rss_pages * page))
        })
        .sum()
}

fn page_size() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_parentheses_and_spaces_in_the_name() {
        let line = "4242 (java (main) x) S 4200 4242 4242 0 -1 4194560 1 0 0 0 5 3 0 0 20 0 40 0 987654 5000000 12345 18446744073709551615";
        let p = parse_stat(line).unwrap();
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
        assert_eq!(parse_stat("12 (x) S"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn pss_in_bytes() {
        let t = "00400000-7fff [rollup]\nRss:  2048 kB\nPss:  1024 kB\nPss_Anon: 10 kB\n";
        assert_eq!(parse_pss(t), Some(1024 * 1024));
        assert_eq!(parse_pss("Rss: 1 kB\n"), None);
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
