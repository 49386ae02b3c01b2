//! The concrete value in a memory finding's hint: what the executor's container had, from
//! whichever witness holds it, and what to give it next.
//!
//! Spark sizes an executor's container as heap (`spark.executor.memory`, default 1g) plus
//! overhead (`spark.executor.memoryOverhead`, else max(`memoryOverheadFactor` × heap,
//! `spark.executor.minMemoryOverhead` = 384m), the factor 0.1) and sets the limit equal to
//! the request (`BasicExecutorFeatureStep`). The witnesses of it, best first: the pod's own
//! memory limit (observed: what the container had), the driver's `spark.properties` (its
//! ConfigMap), the event log's environment, the History Server's. A pod gone before anyone
//! saw it still has its app's settings: the value is computed from them and the witness is
//! named, so a late arrival, a report from an event log and a live view say the same.
//!
//! Weak spot: a setting made in the application's code (a `SparkConf` in client mode) is in
//! none of these; the pod's limit then is the only true witness.

use serde::{Deserialize, Serialize};

use super::{Code, Finding};
use crate::model::quantity;
use crate::spark::spark_size_mib;

/// Where an app's settings were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SettingsFrom {
    /// The driver's `spark.properties` in its ConfigMap.
    ConfigMap,
    /// `SparkListenerEnvironmentUpdate` in the app's event log.
    EventLog,
    /// The History Server's `environment` of the app.
    HistoryServer,
    /// The running driver's own REST API (`environment`, through the API server's proxy):
    /// the witness of a client-mode driver, which has no ConfigMap.
    DriverRest,
}

impl SettingsFrom {
    /// For people, in a hint: "the driver's spark.properties".
    pub fn describe(self) -> &'static str {
        match self {
            Self::ConfigMap => "the driver's ConfigMap",
            Self::EventLog => "the event log's environment",
            Self::HistoryServer => "the History Server's environment",
            Self::DriverRest => "the driver's REST API (environment)",
        }
    }
}

/// The executors' sizing settings as the app's configuration writes them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sizing {
    /// `spark.executor.memory` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// `spark.executor.memoryOverhead` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_overhead: Option<String>,
    /// `spark.executor.memoryOverheadFactor` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_overhead_factor: Option<String>,
    /// `spark.kubernetes.memoryOverheadFactor` as written: the executors' factor when the
    /// one above is not set. Spark's driver feature step writes 0.4 there for a PySpark or R
    /// app in cluster mode (client mode keeps 0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_overhead_factor: Option<String>,
    /// `spark.executor.cores` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<String>,
    /// Where these were read (absent in recordings made before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<SettingsFrom>,
}

impl Sizing {
    /// Nothing known: no setting read, from nowhere.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Heap and overhead in MiB by Spark's rules, when the settings were read.
    fn heap_and_overhead(&self) -> Option<(u64, u64)> {
        self.from?;
        let heap = match &self.memory {
            Some(m) => spark_size_mib(m)?,
            None => 1024,
        };
        let overhead = match &self.memory_overhead {
            Some(o) => spark_size_mib(o)?,
            None => ((heap as f64 * self.factor()?) as u64).max(384),
        };
        // Sizes past a petabyte are not a container's: no value rather than an overflow.
        const MAX: u64 = 1 << 30;
        (heap <= MAX && overhead <= MAX).then_some((heap, overhead))
    }

    /// The executors' overhead factor as Spark takes it: `spark.executor.memoryOverheadFactor`,
    /// else `spark.kubernetes.memoryOverheadFactor`, else 0.1; `None` when the one written
    /// is not a factor.
    pub fn factor(&self) -> Option<f64> {
        match self
            .memory_overhead_factor
            .as_ref()
            .or(self.kubernetes_overhead_factor.as_ref())
        {
            Some(f) => f
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && (0.0..=100.0).contains(f)),
            None => Some(0.1),
        }
    }

    /// Whether a factor is written (else Spark's 0.1).
    fn factor_written(&self) -> bool {
        self.memory_overhead_factor.is_some() || self.kubernetes_overhead_factor.is_some()
    }

    /// The settings as written, for the hint: `spark.executor.memory=512m, …`.
    fn written(&self) -> String {
        let mut out = Vec::new();
        for (k, v) in [
            ("spark.executor.memory", &self.memory),
            ("spark.executor.memoryOverhead", &self.memory_overhead),
            (
                "spark.executor.memoryOverheadFactor",
                &self.memory_overhead_factor,
            ),
            (
                "spark.kubernetes.memoryOverheadFactor",
                &self.kubernetes_overhead_factor,
            ),
        ] {
            if let Some(v) = v {
                out.push(format!("{k}={v}"));
            }
        }
        if out.is_empty() {
            "no memory setting: Spark's defaults".to_owned()
        } else {
            out.join(", ")
        }
    }
}

/// Heap and overhead from a container's memory limit, assuming Spark's defaults (the limit
/// alone cannot say how it was split).
fn from_limit(limit: &str, factor: f64) -> Option<(u64, u64)> {
    const MIB: f64 = 1024.0 * 1024.0;
    let limit_mib = quantity::parse(limit)? / MIB;
    if limit_mib <= 384.0 || factor <= 0.0 {
        return None;
    }
    // overhead = max(factor × heap, 384): the factor wins from heap = 384 / factor on.
    let heap = if limit_mib >= 384.0 * (1.0 + factor) / factor {
        limit_mib / (1.0 + factor)
    } else {
        limit_mib - 384.0
    };
    Some((heap.round() as u64, (limit_mib - heap).round() as u64))
}

/// A limit less an overhead known exactly: (heap, overhead) in MiB.
fn limit_less(limit: &str, overhead: u64) -> Option<(u64, u64)> {
    let limit_mib = (quantity::parse(limit)? / (1024.0 * 1024.0)).round() as u64;
    (limit_mib > overhead).then(|| (limit_mib - overhead, overhead))
}

/// Spark's way of writing a size: `1g` when whole gibibytes, else `768m`.
fn size_text(mib: u64) -> String {
    if mib.is_multiple_of(1024) {
        format!("{}g", mib / 1024)
    } else {
        format!("{mib}m")
    }
}

/// Twice the overhead in use, rounded up to 256 MiB: the next memoryOverhead to try.
fn next_overhead(overhead: u64) -> u64 {
    (overhead * 2).div_ceil(256) * 256
}

/// Half again the heap, rounded up to 256 MiB: the next spark.executor.memory to try.
fn next_heap(heap: u64) -> u64 {
    (heap * 3 / 2).div_ceil(256) * 256
}

/// The overhead suggestion from a pod's limit: (heap, overhead, next value) in MiB and text.
pub(super) fn overhead_from_limit(limit: &str) -> Option<(u64, u64, String)> {
    let (heap, overhead) = from_limit(limit, 0.1)?;
    Some((heap, overhead, size_text(next_overhead(overhead))))
}

/// What the executor had, from its pod or its app's settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryWitnesses<'a> {
    /// The Spark container's memory limit as it ran (the pod's own word).
    pub limit: Option<&'a str>,
    /// The app's sizing settings.
    pub sizing: Option<&'a Sizing>,
}

impl MemoryWitnesses<'_> {
    /// The sentence that ends a memory finding's hint with a value to set, for this code;
    /// `None` when no witness holds the memory or the code is not about it.
    pub fn sentence(&self, code: Code) -> Option<String> {
        // How the pod's limit splits into heap and overhead: by the overhead the settings
        // name exactly (Spark then ignores any factor: a split by one would tell the user
        // to try less than they set), else by the app's factor when its settings say one (a
        // PySpark app in cluster mode: 0.4), else by Spark's default.
        let set = self
            .sizing
            .filter(|s| s.from.is_some())
            .and_then(|s| Some((spark_size_mib(s.memory_overhead.as_ref()?)?, s.from?)));
        let written = self
            .sizing
            .filter(|s| s.from.is_some() && s.factor_written())
            .and_then(|s| Some((s.factor()?, s.from?)));
        let factor = written.map_or(0.1, |(f, _)| f);
        let defaults = match (set, written) {
            (Some((o, from)), _) => format!(
                "With the overhead set to {} ({}), this",
                size_text(o),
                from.describe()
            ),
            (None, Some((f, from))) => {
                format!("With the overhead factor {f} ({}), this", from.describe())
            }
            (None, None) => "With Spark's defaults this".to_owned(),
        };
        let from_pod = self.limit.and_then(|l| {
            let split = match set {
                Some((o, _)) => limit_less(l, o)?,
                None => from_limit(l, factor)?,
            };
            Some((l, split))
        });
        let from_settings = self
            .sizing
            .and_then(|s| Some((s, s.heap_and_overhead()?, s.from?)));
        match code {
            Code::ContainerOomKilled => match (from_pod, from_settings) {
                (Some((limit, (heap, overhead))), _) => Some(format!(
                    " {defaults} {limit} limit is about {heap}Mi of heap plus {overhead}Mi of \
                     overhead: try --conf spark.executor.memoryOverhead={}.",
                    size_text(next_overhead(overhead))
                )),
                (None, Some((s, (_, overhead), from))) => Some(format!(
                    " From {} ({}), the overhead is about {overhead}Mi{}: try --conf \
                     spark.executor.memoryOverhead={}.",
                    from.describe(),
                    s.written(),
                    if s.memory_overhead.is_some() || s.factor_written() {
                        ""
                    } else {
                        // Spark's driver writes 0.4 into the settings of a PySpark or R app in
                        // cluster mode; none is written here, so it is 0.1.
                        " (no overhead factor written: Spark's 0.1)"
                    },
                    size_text(next_overhead(overhead))
                )),
                (None, None) => None,
            },
            Code::JvmOom => match (from_settings, from_pod) {
                // The heap is what the settings say exactly; the limit only by the defaults.
                (Some((s, (heap, _), from)), _) => Some(format!(
                    " From {} ({}), the heap is {heap}Mi: try --conf spark.executor.memory={}.",
                    from.describe(),
                    s.written(),
                    size_text(next_heap(heap))
                )),
                (None, Some((limit, (heap, _)))) => Some(format!(
                    " {defaults} {limit} limit is about {heap}Mi of heap: try \
                     --conf spark.executor.memory={}.",
                    size_text(next_heap(heap))
                )),
                (None, None) => None,
            },
            _ => None,
        }
    }

    /// Ends the hints of memory findings that carry no value yet with one.
    pub fn complete(&self, findings: &mut [Finding]) {
        for f in findings {
            if f.hint.contains("--conf spark.executor.memory") {
                continue;
            }
            if let Some(s) = self.sentence(f.code) {
                f.hint.push_str(&s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizing(memory: Option<&str>, overhead: Option<&str>) -> Sizing {
        Sizing {
            memory: memory.map(str::to_owned),
            memory_overhead: overhead.map(str::to_owned),
            from: Some(SettingsFrom::EventLog),
            ..Sizing::default()
        }
    }

    #[test]
    fn the_pod_s_limit_is_the_first_witness_of_an_overhead() {
        let s = sizing(Some("512m"), Some("384m"));
        let w = MemoryWitnesses {
            limit: Some("1408Mi"),
            sizing: Some(&s),
        };
        let text = w.sentence(Code::ContainerOomKilled).expect("a value");
        assert!(text.contains("this 1408Mi limit"), "{text}");
        assert!(text.contains("memoryOverhead=768m"), "{text}");
    }

    /// A PySpark app in cluster mode: Spark's driver writes spark.kubernetes.memoryOverheadFactor
    /// = 0.4 into its settings, and its executors take it (no executor factor set).
    #[test]
    fn a_pyspark_cluster_apps_factor_of_0_4_is_read_from_its_settings() {
        let s = Sizing {
            memory: Some("2g".into()),
            kubernetes_overhead_factor: Some("0.4".into()),
            from: Some(SettingsFrom::ConfigMap),
            ..Sizing::default()
        };
        assert_eq!(s.heap_and_overhead(), Some((2048, 819)));
        let alone = MemoryWitnesses {
            limit: None,
            sizing: Some(&s),
        }
        .sentence(Code::ContainerOomKilled)
        .expect("a value");
        assert!(
            alone.contains("spark.kubernetes.memoryOverheadFactor=0.4")
                && alone.contains("about 819Mi")
                && alone.contains("memoryOverhead=1792m")
                && !alone.contains("Spark's 0.1"),
            "{alone}"
        );
        // The pod's 2867Mi limit split by that factor: 2048Mi of heap, 819Mi of overhead.
        let pod = MemoryWitnesses {
            limit: Some("2867Mi"),
            sizing: Some(&s),
        }
        .sentence(Code::ContainerOomKilled)
        .expect("a value");
        assert!(
            pod.contains("With the overhead factor 0.4 (the driver's ConfigMap), this 2867Mi limit is about 2048Mi of heap plus 819Mi of overhead")
                && pod.contains("memoryOverhead=1792m"),
            "{pod}"
        );
        // An overhead set exactly is the witness, not the limit's split by a factor.
        let set = Sizing {
            memory_overhead: Some("2g".into()),
            ..s.clone()
        };
        let exact = MemoryWitnesses {
            limit: Some("6Gi"),
            sizing: Some(&set),
        }
        .sentence(Code::ContainerOomKilled)
        .expect("a value");
        assert!(
            exact.contains(
                "With the overhead set to 2g (the driver's ConfigMap), this 6Gi limit is about \
                 4096Mi of heap plus 2048Mi of overhead"
            ) && exact.contains("try --conf spark.executor.memoryOverhead=4g"),
            "{exact}"
        );
        // The executor's own factor wins over the Kubernetes one, as in Spark.
        let own = Sizing {
            memory_overhead_factor: Some("0.2".into()),
            ..s.clone()
        };
        assert_eq!(own.heap_and_overhead(), Some((2048, 409)));
    }

    #[test]
    fn without_the_pod_the_settings_give_the_value_and_are_named() {
        let s = sizing(Some("512m"), None);
        let w = MemoryWitnesses {
            limit: None,
            sizing: Some(&s),
        };
        let text = w.sentence(Code::ContainerOomKilled).expect("a value");
        assert!(
            text.contains("From the event log's environment (spark.executor.memory=512m)"),
            "{text}"
        );
        // max(0.1 × 512, 384) = 384 → 768.
        assert!(text.contains("memoryOverhead=768m"), "{text}");
        let heap = w.sentence(Code::JvmOom).expect("a value");
        assert!(heap.contains("spark.executor.memory=768m"), "{heap}");
        let big = sizing(Some("8g"), Some("1g"));
        let w = MemoryWitnesses {
            limit: None,
            sizing: Some(&big),
        };
        assert!(
            w.sentence(Code::ContainerOomKilled)
                .expect("a value")
                .contains("memoryOverhead=2g")
        );
        assert!(
            w.sentence(Code::JvmOom)
                .expect("a value")
                .contains("spark.executor.memory=12g")
        );
    }

    #[test]
    fn settings_not_read_or_unreadable_give_no_value() {
        let mut s = sizing(Some("lots"), None);
        let w = MemoryWitnesses {
            limit: None,
            sizing: Some(&s),
        };
        assert_eq!(w.sentence(Code::ContainerOomKilled), None);
        s.memory = Some("2g".into());
        s.from = None;
        let w = MemoryWitnesses {
            limit: None,
            sizing: Some(&s),
        };
        assert_eq!(w.sentence(Code::JvmOom), None);
        assert_eq!(MemoryWitnesses::default().sentence(Code::JvmOom), None);
        let w = MemoryWitnesses {
            limit: Some("8Gi"),
            sizing: None,
        };
        assert_eq!(w.sentence(Code::Evicted), None);
    }

    #[test]
    fn a_hint_with_a_value_is_left_alone_and_one_without_is_completed() {
        let s = sizing(Some("1g"), None);
        let w = MemoryWitnesses {
            limit: None,
            sizing: Some(&s),
        };
        let mut fs = vec![
            Finding::new(Code::ContainerOomKilled, super::super::Severity::Error, "x")
                .hint("Raise it: try --conf spark.executor.memoryOverhead=1g."),
            Finding::new(Code::JvmOom, super::super::Severity::Error, "y").hint("Raise it."),
        ];
        w.complete(&mut fs);
        assert_eq!(
            fs[0].hint,
            "Raise it: try --conf spark.executor.memoryOverhead=1g."
        );
        assert!(
            fs[1]
                .hint
                .ends_with("try --conf spark.executor.memory=1536m."),
            "{}",
            fs[1].hint
        );
    }
}
