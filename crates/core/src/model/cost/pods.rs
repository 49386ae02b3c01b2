//! What an app's pods say it paid for and did not use, beside what its event log says:
//! executor pods requested and deleted before any container of theirs ran, and the memory
//! its executors were limited to against the peak the driver measured. Live, these need no
//! event log.

use serde::{Deserialize, Serialize};

use super::ms;

/// An app's pods' cost (see the module's doc).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PodCost {
    /// Executor pods deleted before any container of theirs ran (a scale-down of pods that
    /// waited for a node, an image, a quota; a kill of a pending pod).
    #[serde(default)]
    pub never_ran: u32,
    /// Their time from creation to deletion, pod-ms: the scheduler's work and the app's
    /// wait, no executor's.
    #[serde(default)]
    pub never_ran_pending_ms: u64,
    /// Memory limited against the peak used, where the driver measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryUse>,
}

/// The executors' memory limits against the peaks their driver measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryUse {
    /// Executors with both a memory limit and a peak the driver measured.
    pub measured: u32,
    /// The executor whose peak came nearest its limit: its limit, bytes.
    pub limit_bytes: u64,
    /// Its peak, bytes.
    pub peak_bytes: u64,
    /// Its peak's share of its limit, percent (the highest of them).
    pub peak_percent: u32,
    /// Whether every peak is the process tree's RSS (else some are the JVM's heap and
    /// off-heap alone, which leave out Python and native memory).
    pub whole_process: bool,
    /// Executors of the app that ran out of memory (OOMKilled, a JVM OOM): their peak was
    /// not sampled, and the figures above do not say there is room.
    #[serde(default)]
    pub out_of_memory: u32,
}

impl PodCost {
    /// Whether it says anything.
    pub fn is_empty(&self) -> bool {
        self.never_ran == 0 && self.memory.is_none()
    }

    /// What the strip adds to the cost: "3 pods never ran".
    pub fn headline(&self) -> Option<String> {
        (self.never_ran > 0).then(|| {
            format!(
                "{} {} never ran",
                self.never_ran,
                if self.never_ran == 1 { "pod" } else { "pods" }
            )
        })
    }

    /// The lines a report says.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.never_ran > 0 {
            out.push(format!(
                "{} executor {} deleted before any container ran, after {} pending in all \
                 (requested, then no longer wanted: paid by the scheduler, not by an executor)",
                self.never_ran,
                if self.never_ran == 1 { "pod" } else { "pods" },
                ms(self.never_ran_pending_ms)
            ));
        }
        if let Some(m) = &self.memory {
            out.push(m.line());
        }
        out
    }
}

impl MemoryUse {
    /// "memory: the executor nearest its limit peaked at 1.3 GiB of 4.0 GiB (32 %), of 12
    /// executors the driver measured …": no smaller setting is suggested.
    pub fn line(&self) -> String {
        let what = if self.whole_process {
            "process-tree RSS"
        } else {
            "JVM heap and off-heap: Python and native memory are not in it"
        };
        let mut line = format!(
            "memory: the executor nearest its limit peaked at {} of {} ({} %), of {} {} the \
             driver measured ({what}); ",
            gib(self.peak_bytes),
            gib(self.limit_bytes),
            self.peak_percent,
            self.measured,
            if self.measured == 1 {
                "executor"
            } else {
                "executors"
            }
        );
        if self.out_of_memory > 0 {
            line.push_str(&format!(
                "yet {} ran out of memory: the peaks are sampled at heartbeats and miss what \
                 killed {}, so they do not say there is room",
                self.out_of_memory,
                if self.out_of_memory == 1 {
                    "it"
                } else {
                    "them"
                }
            ));
        } else {
            line.push_str(
                "no smaller setting is suggested: the peak is sampled at heartbeats and an OOM \
                 kill costs more than the memory",
            );
        }
        line
    }
}

/// Bytes for people, in GiB to a tenth (MiB under one).
pub fn gib(bytes: u64) -> String {
    if bytes < 1 << 30 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_that_never_ran_and_memory_are_said_without_a_setting() {
        let c = PodCost {
            never_ran: 3,
            never_ran_pending_ms: 125_000,
            memory: Some(MemoryUse {
                measured: 12,
                limit_bytes: 4 << 30,
                peak_bytes: 1_395_864_371,
                peak_percent: 32,
                whole_process: false,
                out_of_memory: 0,
            }),
        };
        assert_eq!(c.headline().as_deref(), Some("3 pods never ran"));
        let lines = c.lines();
        assert_eq!(
            lines[0],
            "3 executor pods deleted before any container ran, after 2m05s pending in all \
             (requested, then no longer wanted: paid by the scheduler, not by an executor)"
        );
        assert!(
            lines[1].starts_with(
                "memory: the executor nearest its limit peaked at 1.3 GiB of 4.0 GiB (32 %), of \
                 12 executors the driver measured"
            ),
            "{}",
            lines[1]
        );
        assert!(lines[1].contains("Python and native memory are not in it"));
        assert!(!lines[1].contains("--conf"), "{}", lines[1]);
        // An app whose executors ran out of memory is not told there is room.
        let mut oom = c.memory.clone().expect("memory");
        oom.out_of_memory = 2;
        assert!(
            oom.line().ends_with(
                "yet 2 ran out of memory: the peaks are sampled at heartbeats and miss \
                            what killed them, so they do not say there is room"
            ),
            "{}",
            oom.line()
        );
        assert_eq!(gib(512 << 20), "512 MiB");
        assert!(PodCost::default().is_empty());
    }
}
