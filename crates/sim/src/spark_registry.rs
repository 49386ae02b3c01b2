//! What the Spark-like drivers know of their applications and executors: written by the
//! control plane's drivers, read by their REST API (`spark_rest.rs`) behind the API
//! server's service proxy. Below both, so the API never reaches into the control plane.

use std::collections::BTreeMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// What the Spark-like drivers know, for their REST API behind the service proxy.
#[derive(Debug, Default)]
pub struct SparkRegistry {
    pub apps: Mutex<BTreeMap<String, AppView>>,
}

/// One application as its driver's REST API shows it.
#[derive(Debug, Clone, Default)]
pub struct AppView {
    pub app_id: String,
    pub name: String,
    pub namespace: String,
    pub driver_pod: String,
    pub service: String,
    pub start: Option<DateTime<Utc>>,
    pub executors: BTreeMap<i64, ExecView>,
    /// Dynamic allocation's target, when it is on (the metrics servlet's gauges).
    pub target: Option<u32>,
    /// The Structured Streaming query it runs, by name.
    pub streaming: Option<String>,
}

/// One executor as Spark's `allexecutors` endpoint shows it.
#[derive(Debug, Clone, Default)]
pub struct ExecView {
    pub pod: String,
    pub host: String,
    pub cores: u32,
    pub max_memory: u64,
    pub add_time: Option<DateTime<Utc>>,
    pub remove_time: Option<DateTime<Utc>>,
    pub remove_reason: Option<String>,
    pub failed_tasks: u32,
    pub completed_tasks: u32,
}
