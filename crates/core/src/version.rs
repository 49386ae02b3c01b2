//! Which Spark an application runs, and what that changes.
//!
//! Executor pods carry Spark's `spark-version` label; `explain --spark-version` overrides
//! it. The semantics that depend on it, each read from Spark's released code
//! (docs/diagnosis.md, "Spark versions"):
//! - `spark.kubernetes.executor.checkAllContainers` defaults to `false` before 4.0, `true`
//!   from 4.0;
//! - executor failures count toward `spark.executor.maxNumFailures` (and abort the app with
//!   exit 11) only from 4.0 (4.3 also counts failed pod creations: not used yet, the tool
//!   does not see failed creations);
//! - `spark.kubernetes.executor.terminationGracePeriodSeconds` and the
//!   `spark.kubernetes.executor.useDriverPodIP` default of `true` exist from 4.1;
//! - from 4.2, a removal reason containing "OOM" puts the app in recovery mode: new
//!   executors run one task at a time.
//!
//! When the version is unknown the tool assumes the newest semantics it knows (4.3) and
//! says so.

use std::fmt;

use serde::Serialize;

use crate::model::{ExecutorPod, LABEL_SPARK_VERSION};

/// A Spark release: `major.minor.patch` (a suffix such as `-SNAPSHOT` is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SparkVersion {
    /// The major version (3, 4).
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch version (0 when not given).
    pub patch: u32,
}

/// Written as its text (`4.0.1`), so described as a string.
impl schemars::JsonSchema for SparkVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SparkVersion".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$",
            "description": "A Spark release, major.minor.patch (e.g. 4.0.1)"
        })
    }
}

/// Where the version the tool uses came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VersionSource {
    /// The pod's `spark-version` label.
    Label,
    /// Given by the user (`--spark-version`).
    Configured,
    /// Unknown: the newest semantics the tool knows are assumed.
    Assumed,
}

impl SparkVersion {
    /// The newest release whose semantics the tool follows (assumed when unknown).
    pub const NEWEST_KNOWN: Self = Self::new(4, 3, 0);

    /// A version from its parts.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Reads `4.0.1`, `3.5`, `v3.5.7`, `4.1.0-SNAPSHOT`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().trim_start_matches(['v', 'V']);
        let core = s.split(['-', '+', ' ']).next().unwrap_or_default();
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            Some(p) => p.parse().ok()?,
            None => 0,
        };
        if parts.next().is_some() || major == 0 {
            return None;
        }
        Some(Self::new(major, minor, patch))
    }

    /// The version from a pod's `spark-version` label, if it has a readable one.
    pub fn of(pod: &ExecutorPod) -> Option<Self> {
        pod.label(LABEL_SPARK_VERSION).and_then(Self::parse)
    }

    /// Whether this is `major.minor` or later.
    pub fn at_least(self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// `spark.kubernetes.executor.checkAllContainers`'s default.
    pub fn check_all_containers_default(self) -> bool {
        self.at_least(4, 0)
    }

    /// Whether executor failures count toward `spark.executor.maxNumFailures`.
    pub fn counts_executor_failures(self) -> bool {
        self.at_least(4, 0)
    }

    /// Whether a failed executor pod creation counts toward `spark.executor.maxNumFailures`
    /// (`ExecutorPodsAllocator.registerPodCreationFailure`, 4.3).
    pub fn counts_creation_failures(self) -> bool {
        self.at_least(4, 3)
    }

    /// Whether `spark.kubernetes.executor.terminationGracePeriodSeconds` exists.
    pub fn has_executor_termination_grace(self) -> bool {
        self.at_least(4, 1)
    }

    /// Whether executors reach the driver by its pod IP by default
    /// (`spark.kubernetes.executor.useDriverPodIP`).
    pub fn uses_driver_pod_ip_by_default(self) -> bool {
        self.at_least(4, 1)
    }

    /// Whether an OOM removal puts the app in recovery mode (one task per new executor).
    pub fn has_oom_recovery_mode(self) -> bool {
        self.at_least(4, 2)
    }
}

impl fmt::Display for SparkVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Serialize for SparkVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The version used for a pod: the override, else the label, else the newest known.
pub fn resolve(
    configured: Option<SparkVersion>,
    pod: &ExecutorPod,
) -> (SparkVersion, VersionSource) {
    match (configured, SparkVersion::of(pod)) {
        (Some(v), _) => (v, VersionSource::Configured),
        (None, Some(v)) => (v, VersionSource::Label),
        (None, None) => (SparkVersion::NEWEST_KNOWN, VersionSource::Assumed),
    }
}

/// One line saying which version the output follows and why.
pub fn followed(version: SparkVersion, source: VersionSource) -> String {
    match source {
        VersionSource::Label => format!("Spark {version} (the pod's spark-version label)"),
        VersionSource::Configured => format!("Spark {version} (--spark-version)"),
        VersionSource::Assumed => {
            format!(
                "Spark version unknown (no spark-version label): Spark {version} semantics assumed"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_spark_labels_them() {
        assert_eq!(
            SparkVersion::parse("4.0.1"),
            Some(SparkVersion::new(4, 0, 1))
        );
        assert_eq!(SparkVersion::parse("3.5"), Some(SparkVersion::new(3, 5, 0)));
        assert_eq!(
            SparkVersion::parse("v3.5.7"),
            Some(SparkVersion::new(3, 5, 7))
        );
        assert_eq!(
            SparkVersion::parse("4.1.0-SNAPSHOT"),
            Some(SparkVersion::new(4, 1, 0))
        );
        for bad in ["", "4", "four.0", "4.0.0.1", "0.9", "4.x"] {
            assert_eq!(SparkVersion::parse(bad), None, "{bad}");
        }
        assert_eq!(SparkVersion::new(3, 5, 7).to_string(), "3.5.7");
    }

    #[test]
    fn semantics_follow_the_release() {
        let v35 = SparkVersion::new(3, 5, 7);
        let v40 = SparkVersion::new(4, 0, 0);
        let v41 = SparkVersion::new(4, 1, 2);
        let v43 = SparkVersion::new(4, 3, 0);
        assert!(!v35.check_all_containers_default() && v40.check_all_containers_default());
        assert!(!v35.counts_executor_failures() && v40.counts_executor_failures());
        assert!(!v40.has_executor_termination_grace() && v41.has_executor_termination_grace());
        assert!(!v40.uses_driver_pod_ip_by_default() && v41.uses_driver_pod_ip_by_default());
        assert!(!v41.has_oom_recovery_mode() && v43.has_oom_recovery_mode());
    }
}
