//! What a running driver says of itself beyond its executor list: dynamic allocation's
//! target (its metrics servlet, `/metrics/json`, on by default) and whether it runs a
//! Structured Streaming query (its jobs' descriptions).
//!
//! Ref: `ExecutorAllocationManagerSource` (Spark 3.x–4.3: gauges `executors.numberTargetExecutors`,
//! `executors.numberMaxNeededExecutors`, `executors.numberAllExecutors` under the source
//! `ExecutorAllocationManager`, registered only with dynamic allocation on);
//! `MetricsConfig` (`*.sink.servlet` at `/metrics/json` by default); `StreamExecution`
//! (`getBatchDescriptionString`: "name\nid = …\nrunId = …\nbatch = N", set as each
//! micro-batch's job description, its job group the run id).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text;

/// Dynamic allocation as the driver's `ExecutorAllocationManager` has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Allocation {
    /// The executors it asks the cluster for (`numberTargetExecutors`, every resource
    /// profile's together), already capped at `maxExecutors`.
    pub target: u32,
    /// The executors its pending and running tasks could use (`numberMaxNeededExecutors`),
    /// before the cap.
    pub needed: u32,
    /// The executors registered with it (`numberAllExecutors`).
    pub registered: u32,
}

const SOURCE: &str = ".ExecutorAllocationManager.executors.";

/// Reads a `/metrics/json` answer: `None` when it has no allocation gauges (dynamic
/// allocation is off); an error when it is not the metrics servlet's JSON.
pub fn parse_allocation(body: &str) -> Result<Option<Allocation>, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        let head: String = body.chars().take(80).collect();
        format!("not Spark's metrics ({e}): {head:?}")
    })?;
    let Some(gauges) = v.get("gauges").and_then(Value::as_object) else {
        return Err("not Spark's metrics: no \"gauges\"".to_owned());
    };
    let gauge = |name: &str| {
        let suffix = format!("{SOURCE}{name}");
        gauges
            .iter()
            .find(|(k, _)| k.ends_with(&suffix))
            .and_then(|(_, g)| g.get("value"))
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| n.min(f64::from(u32::MAX)) as u32)
    };
    let Some(target) = gauge("numberTargetExecutors") else {
        return Ok(None);
    };
    Ok(Some(Allocation {
        target,
        needed: gauge("numberMaxNeededExecutors").unwrap_or(target),
        registered: gauge("numberAllExecutors").unwrap_or(0),
    }))
}

/// A Structured Streaming query, as a driver's jobs name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamingQuery {
    /// The query's name (`queryName`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The query's id (stable across restarts from the same checkpoint).
    pub id: String,
}

/// The longest query name kept (a name is the user's text).
const NAME_MAX: usize = 120;

/// Reads a `jobs` answer (the driver's REST API, newest first): the streaming query of the
/// newest micro-batch job, `None` when no job is a micro-batch.
pub fn parse_streaming(body: &str) -> Result<Option<StreamingQuery>, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| {
        let head: String = body.chars().take(80).collect();
        format!("not Spark's jobs ({e}): {head:?}")
    })?;
    let Some(jobs) = v.as_array() else {
        return Err("not Spark's jobs: not a list".to_owned());
    };
    Ok(jobs
        .iter()
        .filter_map(|j| j.get("description").and_then(Value::as_str))
        .find_map(micro_batch))
}

/// The query a micro-batch's job description names ("name\nid = …\nrunId = …\nbatch = N").
pub fn micro_batch(description: &str) -> Option<StreamingQuery> {
    let first = description.lines().next()?;
    let field = |key: &str| {
        description
            .lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(str::trim)
    };
    let id = field("id = ")?;
    field("runId = ")?;
    field("batch = ")?;
    let name = first.trim();
    Some(StreamingQuery {
        name: (!name.is_empty() && !name.starts_with("id = ")).then(|| safe(name, NAME_MAX)),
        id: safe(id, 64),
    })
}

/// A value from the driver made safe to keep and print: one line, bounded.
fn safe(text: &str, most: usize) -> String {
    text::clipped(&text::field(text), most).into_owned()
}

impl StreamingQuery {
    /// A query by its id and name, made safe to keep and print.
    pub fn new(id: &str, name: Option<&str>) -> Self {
        Self {
            name: name
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| safe(n, NAME_MAX)),
            id: safe(id, 64),
        }
    }

    /// "query clicks" or "query 3f1c…" (its id's first 8 characters).
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("query {n}"),
            None => format!("query {}", self.id.chars().take(8).collect::<String>()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allocation_gauges_are_read_under_any_namespace_and_absent_without_dynamic_allocation() {
        let body = r#"{"version":"4.0.0","gauges":{
            "spark-1.driver.ExecutorAllocationManager.executors.numberTargetExecutors":{"value":8},
            "spark-1.driver.ExecutorAllocationManager.executors.numberMaxNeededExecutors":{"value":40},
            "spark-1.driver.ExecutorAllocationManager.executors.numberAllExecutors":{"value":3},
            "spark-1.driver.BlockManager.memory.maxMem_MB":{"value":434}},
            "counters":{},"histograms":{},"meters":{},"timers":{}}"#;
        assert_eq!(
            parse_allocation(body),
            Ok(Some(Allocation {
                target: 8,
                needed: 40,
                registered: 3
            }))
        );
        let off = r#"{"gauges":{"app.driver.BlockManager.memory.maxMem_MB":{"value":434}}}"#;
        assert_eq!(parse_allocation(off), Ok(None));
        assert!(parse_allocation("<html>").is_err());
        assert!(parse_allocation("[]").is_err());
        // A gauge out of range is not a number of executors.
        let odd = r#"{"gauges":{"x.ExecutorAllocationManager.executors.numberTargetExecutors":{"value":-1}}}"#;
        assert_eq!(parse_allocation(odd), Ok(None));
    }

    #[test]
    fn a_micro_batch_names_its_query_and_other_jobs_do_not() {
        let jobs = serde_json::json!([
            {"jobId": 9, "description": "clicks\nid = 3f1c2a9e-0000-4000-8000-000000000001\nrunId = 77\nbatch = 12", "jobGroup": "77"},
            {"jobId": 1, "description": "count at etl.py:12"}
        ]);
        let q = parse_streaming(&jobs.to_string())
            .unwrap()
            .expect("a query");
        assert_eq!(q.name.as_deref(), Some("clicks"));
        assert_eq!(q.label(), "query clicks");
        // No name: the description starts with an empty line; labelled by its id.
        let q = micro_batch("\nid = 3f1c2a9e-0000\nrunId = 1\nbatch = init").expect("a query");
        assert_eq!((q.name, q.id.as_str()), (None, "3f1c2a9e-0000"));
        assert_eq!(
            parse_streaming(r#"[{"jobId":1,"description":"id = 4"}]"#),
            Ok(None)
        );
        assert_eq!(parse_streaming("[]"), Ok(None));
        assert!(parse_streaming("{}").is_err());
    }
}
