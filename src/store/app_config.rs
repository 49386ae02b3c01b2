//! What the store keeps of an application's configuration (its driver's
//! `spark.properties`): the settings the rules read, with Spark's defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spark_triage_core::classify::ClassifyOptions;
use spark_triage_core::diagnose::config::Settings;
pub use spark_triage_core::diagnose::memory::{SettingsFrom, Sizing};
use spark_triage_core::spark::{spark_bool, spark_time};

/// What an application's driver configuration says (from `spark.properties`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppConfig {
    pub delete_on_termination: bool,
    pub check_all_containers: Option<bool>,
    pub spark_container: Option<String>,
    pub missing_pod_detect_delta: Duration,
    pub api_polling_interval: Duration,
    /// `spark.kubernetes.executor.enableApiPolling` (default true).
    #[serde(default = "yes")]
    pub api_polling: bool,
    /// `spark.network.timeout`: executors whose heartbeats stop are removed after it.
    #[serde(default = "network_timeout")]
    pub network_timeout: Duration,
    /// Whether it came from the driver's ConfigMap (else Spark's defaults).
    pub from_driver: bool,
    /// `spark.executor.maxNumFailures`, when set.
    #[serde(default)]
    pub max_failures: Option<u32>,
    /// `spark.executor.instances`, when set.
    #[serde(default)]
    pub executor_instances: Option<u32>,
    /// `spark.dynamicAllocation.enabled`.
    #[serde(default)]
    pub dynamic_allocation: bool,
    /// `spark.dynamicAllocation.maxExecutors`, when set.
    #[serde(default)]
    pub max_executors: Option<u32>,
    /// `spark.kubernetes.allocation.recoveryMode.enabled`, when set.
    #[serde(default)]
    pub recovery_mode: Option<bool>,
    /// `spark.kubernetes.allocation.pods.allocator` when set (`direct`, `statefulset`,
    /// `deployment` or a class name, matched as Spark does: exactly): with the two
    /// controllers' values a controller names the pods.
    #[serde(default)]
    pub allocator: Option<String>,
    /// The settings whose values predict failures (docs/diagnosis.md, configuration).
    #[serde(default)]
    pub settings: Settings,
    /// The executors' sizing as written (`spark.executor.memory`, `…memoryOverhead`,
    /// `…memoryOverheadFactor`, `…cores`) and where it was read: what the fleet tables group
    /// endings by, and the value a memory finding's hint gives when the pod was not seen.
    #[serde(default, skip_serializing_if = "Sizing::is_empty")]
    pub sizing: Sizing,
}

fn yes() -> bool {
    true
}

fn network_timeout() -> Duration {
    Duration::from_secs(120)
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            delete_on_termination: true,
            check_all_containers: None,
            spark_container: None,
            missing_pod_detect_delta: Duration::from_secs(30),
            api_polling_interval: Duration::from_secs(30),
            api_polling: true,
            network_timeout: network_timeout(),
            from_driver: false,
            max_failures: None,
            executor_instances: None,
            dynamic_allocation: false,
            max_executors: None,
            recovery_mode: None,
            allocator: None,
            settings: Default::default(),
            sizing: Sizing::default(),
        }
    }
}

impl AppConfig {
    pub(super) fn from_properties(
        p: &BTreeMap<String, String>,
        from: Option<SettingsFrom>,
    ) -> Self {
        let d = Self::default();
        // A bare number is the setting's own unit: milliseconds, but seconds for the
        // network timeout.
        let dur = |k: &str, default: Duration| {
            let unit = if k == "spark.network.timeout" {
                Duration::from_secs(1)
            } else {
                Duration::from_millis(1)
            };
            p.get(k)
                .and_then(|v| spark_time(v, unit))
                .unwrap_or(default)
        };
        let number = |k: &str| p.get(k).and_then(|v| v.trim().parse::<u32>().ok());
        Self {
            delete_on_termination: p
                .get("spark.kubernetes.executor.deleteOnTermination")
                .is_none_or(|v| spark_bool(v) != Some(false)),
            check_all_containers: p
                .get("spark.kubernetes.executor.checkAllContainers")
                .and_then(|v| spark_bool(v)),
            spark_container: p
                .get("spark.kubernetes.executor.podTemplateContainerName")
                .cloned()
                .filter(|v| !v.is_empty()),
            missing_pod_detect_delta: dur(
                "spark.kubernetes.executor.missingPodDetectDelta",
                d.missing_pod_detect_delta,
            ),
            api_polling_interval: dur(
                "spark.kubernetes.executor.apiPollingInterval",
                d.api_polling_interval,
            ),
            api_polling: p
                .get("spark.kubernetes.executor.enableApiPolling")
                .is_none_or(|v| spark_bool(v) != Some(false)),
            network_timeout: dur("spark.network.timeout", d.network_timeout),
            from_driver: true,
            max_failures: number("spark.executor.maxNumFailures"),
            executor_instances: number("spark.executor.instances"),
            dynamic_allocation: p
                .get("spark.dynamicAllocation.enabled")
                .is_some_and(|v| spark_bool(v) == Some(true)),
            max_executors: number("spark.dynamicAllocation.maxExecutors"),
            recovery_mode: p
                .get("spark.kubernetes.allocation.recoveryMode.enabled")
                .and_then(|v| spark_bool(v)),
            allocator: p
                .get("spark.kubernetes.allocation.pods.allocator")
                .filter(|v| !v.is_empty())
                .cloned(),
            settings: Settings::from_properties(p),
            sizing: {
                // A value is kept as written, cut short: it is a size, never a secret.
                let text = |k: &str| {
                    p.get(k)
                        .map(|v| v.trim().chars().take(32).collect::<String>())
                        .filter(|v| !v.is_empty())
                };
                Sizing {
                    memory: text("spark.executor.memory"),
                    memory_overhead: text("spark.executor.memoryOverhead"),
                    memory_overhead_factor: text("spark.executor.memoryOverheadFactor"),
                    kubernetes_overhead_factor: text("spark.kubernetes.memoryOverheadFactor"),
                    cores: text("spark.executor.cores"),
                    // Recordings from before it was kept: a driver's ConfigMap (event logs
                    // are read anew each time).
                    from: Some(from.unwrap_or(SettingsFrom::ConfigMap)),
                }
            },
        }
    }

    pub(super) fn classify_options(&self) -> ClassifyOptions {
        ClassifyOptions {
            spark_container: self.spark_container.clone(),
            check_all_containers: self.check_all_containers,
            spark_version: None,
        }
    }
}
