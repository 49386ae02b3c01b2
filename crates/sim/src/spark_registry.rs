//! What the Spark-like drivers know of their applications and executors: written by the
//! control plane's drivers, read by their REST API (`spark_rest.rs`) behind the API
//! server's service proxy. Below both, so the API never reaches into the control plane.

use std::collections::BTreeMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// What the Spark-like drivers know, for their REST API behind the service proxy.
#[derive(Debug, Default)]
pub struct SparkRegistry {
    apps: Mutex<BTreeMap<String, AppView>>,
    /// Each app's executor list as last written, by (app id, `allexecutors`): a list of
    /// 1,000 executors read by every poll is written once per change, as a driver's own
    /// REST API costs the API server nothing but the proxying.
    written: Mutex<std::collections::HashMap<(String, bool), bytes::Bytes>>,
}

impl SparkRegistry {
    /// Reads what the drivers know.
    pub fn read<R>(&self, f: impl FnOnce(&BTreeMap<String, AppView>) -> R) -> R {
        f(&self.apps.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Changes app `app_id` (its answers are written anew).
    pub fn update<R>(&self, app_id: &str, f: impl FnOnce(&mut AppView) -> R) -> Option<R> {
        let mut apps = self.apps.lock().unwrap_or_else(|e| e.into_inner());
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(id, _), _| id != app_id);
        apps.get_mut(app_id).map(f)
    }

    /// A new app.
    pub fn insert(&self, app: AppView) {
        let mut apps = self.apps.lock().unwrap_or_else(|e| e.into_inner());
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(id, _), _| *id != app.app_id);
        apps.insert(app.app_id.clone(), app);
    }

    /// App `app_id`'s executor list (`all`: `allexecutors`), as written last or by `write`.
    /// `_held` is what [`Self::read`] hands out: the apps stay locked (no change between
    /// the writing and the keeping).
    pub fn executors_written(
        &self,
        _held: &BTreeMap<String, AppView>,
        app_id: &str,
        all: bool,
        write: impl FnOnce() -> bytes::Bytes,
    ) -> bytes::Bytes {
        let key = (app_id.to_owned(), all);
        if let Some(b) = self
            .written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return b.clone();
        }
        let b = write();
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if written.len() > 10_000 {
            written.clear();
        }
        written.insert(key, b.clone());
        b
    }
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
