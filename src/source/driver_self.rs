//! What a running driver says of itself beside its executor list, read through the same
//! proxy as it: dynamic allocation's target (its metrics servlet, `/metrics/json/`, every
//! round while it has one; a driver that has run a minute without the gauges is not asked
//! again) and a Structured Streaming query (its `jobs`: at once, every minute while the
//! driver is young, every ten minutes after, until one is seen).

use std::time::Duration;

use futures::AsyncReadExt as _;
use futures::StreamExt as _;
use kube::Client;
use spark_triage_core::model::cost::{AppCost, rest};
use spark_triage_core::model::driver;
use spark_triage_core::model::driver_state::{self, Allocation, StreamingQuery};
use spark_triage_core::model::{ContainerState, DriverExecutor, ExecutorPod, Time};

use super::errors;

/// What the poll already knows of one driver's own state.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Known {
    /// Its metrics are not to be asked this round: they had no allocation gauges once it
    /// had run a while (dynamic allocation off: never again), or did not answer (a minute).
    pub allocation_off: bool,
    /// No streaming query seen yet (its jobs are still read).
    pub may_read_jobs: bool,
    /// How long ago its jobs were last read (none: never).
    pub jobs_read_since: Option<Duration>,
    /// Its stages may be read for the loss chain this round (at most every
    /// [`COST_EVERY`]).
    pub cost_due: bool,
}

/// What one round read of it.
#[derive(Debug, Default)]
pub(super) struct Said {
    /// Dynamic allocation's numbers, when on and read.
    pub allocation: Option<Allocation>,
    /// Its metrics answered without allocation gauges once it had run a while (Spark
    /// registers them after the scheduler's start, which may wait 30 s for executors).
    pub allocation_off: bool,
    /// Its metrics did not answer (a sink turned off, a 404): asked again in a minute.
    pub metrics_failed: bool,
    /// Its jobs were asked (whatever came of it).
    pub jobs_read: bool,
    /// The streaming query its jobs name.
    pub streaming: Option<StreamingQuery>,
    /// Its stages were asked for the loss chain (whatever came of it).
    pub cost_read: bool,
    /// The loss chain its stages and failed tasks tell.
    pub cost: Option<AppCost>,
}

/// How often a driver whose executors failed tasks has its stages read for the chain.
pub(super) const COST_EVERY: Duration = Duration::from_secs(300);

/// The most of a `stages` answer read (an app of thousands of stages), and of one attempt's
/// failed tasks; the most attempts whose failed tasks are asked in one read (the latest).
const STAGES_MAX_BYTES: u64 = 32 << 20;
const TASKS_MAX_BYTES: u64 = 4 << 20;
const FAILED_ATTEMPTS_READ: usize = 32;

/// The most one read of the chain may take, its every answer included (no more than the
/// metrics' and the jobs' reads beside it: each within 10 s).
const COST_DEADLINE: Duration = Duration::from_secs(10);

/// How many failed attempts' task lists are read at once.
const TASK_LISTS_AT_ONCE: usize = 4;

/// A driver this young has its jobs read every [`JOBS_EARLY`] (its query may start any
/// moment after its session), an older one every [`JOBS_EVERY`]; and its metrics without
/// allocation gauges are not final yet (Spark registers them after the scheduler starts).
const YOUNG: chrono::Duration = chrono::Duration::minutes(10);
const SETTLED: chrono::Duration = chrono::Duration::seconds(60);

/// How often a young driver with no streaming query seen has its jobs read.
const JOBS_EARLY: Duration = Duration::from_secs(60);

/// How often an older one has.
const JOBS_EVERY: Duration = Duration::from_secs(600);

/// Reads what `known` leaves to read of a running driver whose executor list answered at
/// `ui` (its `allexecutors` path through the API server's proxy): its own state, and beside
/// it at once (its deadline adds nothing to theirs) the loss chain when its executors
/// failed tasks.
pub(super) async fn read(
    client: &Client,
    (ui, pod, app_id): (&str, &ExecutorPod, &str),
    executors: &[DriverExecutor],
    known: Known,
    now: Time,
) -> Said {
    let chain_wanted = known.cost_due && executors.iter().any(|e| e.failed_tasks > 0);
    let chain = async {
        if !chain_wanted {
            return None;
        }
        tokio::time::timeout(COST_DEADLINE, read_cost(client, ui, app_id, executors, now))
            .await
            .ok()
            .flatten()
    };
    let (mut said, cost) = tokio::join!(own_state(client, (ui, pod, app_id), known, now), chain);
    said.cost_read = chain_wanted;
    said.cost = cost;
    said
}

/// Its dynamic allocation (metrics) and streaming query (jobs), as `known` leaves them to
/// read.
async fn own_state(
    client: &Client,
    (ui, pod, app_id): (&str, &ExecutorPod, &str),
    known: Known,
    now: Time,
) -> Said {
    let mut said = Said::default();
    // Its age from its container's start (a pod may wait long for a node or an image).
    let started = pod
        .container_statuses()
        .iter()
        .find_map(|c| match c.state {
            ContainerState::Running { started_at } => started_at,
            _ => None,
        })
        .or(pod.created_at);
    let age = started.map(|t| now - t);
    let ran_a_while = age.is_some_and(|a| a >= SETTLED);
    let every = if age.is_some_and(|a| a < YOUNG) {
        JOBS_EARLY
    } else {
        JOBS_EVERY
    };
    let jobs_due = known.may_read_jobs && known.jobs_read_since.is_none_or(|d| d >= every);
    // Both at once: each is one request to the driver.
    let metrics = async {
        // With its slash: Spark's servlet is a Jetty context, and the bare path is a 301
        // the API server's proxy hands back rather than follows.
        if known.allocation_off {
            None
        } else {
            Some(get(client, ui, "metrics/json/").await)
        }
    };
    let jobs = async {
        if jobs_due {
            get(client, ui, &format!("api/v1/applications/{app_id}/jobs")).await
        } else {
            None
        }
    };
    let (metrics, jobs) = tokio::join!(metrics, jobs);
    match metrics {
        None => {}
        Some(Some(body)) => match driver_state::parse_allocation(&body) {
            Ok(Some(a)) => said.allocation = Some(a),
            // Before the scheduler has started, the gauges are not registered yet.
            Ok(None) => said.allocation_off = ran_a_while,
            Err(e) => {
                tracing::debug!("driver metrics of {}: {e}", pod.name);
                said.metrics_failed = true;
            }
        },
        Some(None) => said.metrics_failed = true,
    }
    // Tried counts as read: a list that fails or times out is not asked every round.
    said.jobs_read = jobs_due;
    if let Some(body) = jobs {
        match driver_state::parse_streaming(&body) {
            Ok(q) => said.streaming = q,
            Err(e) => tracing::debug!("driver jobs of {}: {e}", pod.name),
        }
    }
    said
}

/// The loss chain from the driver's stages and the failed tasks of the latest attempts
/// that had any (each read bounded, within 10 s); none when the stages cannot be read.
async fn read_cost(
    client: &Client,
    ui: &str,
    app_id: &str,
    executors: &[DriverExecutor],
    now: Time,
) -> Option<AppCost> {
    let api = format!("api/v1/applications/{app_id}");
    // Its settings: which removals are dynamic allocation's idle ones, what keeps shuffle
    // output (none when they cannot be read: no removal is then taken for idle).
    let settings = get_bounded(client, ui, &format!("{api}/environment"), TASKS_MAX_BYTES)
        .await
        .and_then(|b| driver::parse_environment(&b).ok());
    let body = get_bounded(client, ui, &format!("{api}/stages"), STAGES_MAX_BYTES).await?;
    let stages = rest::parse_stages(&body)
        .map_err(|e| tracing::debug!("driver stages of {app_id}: {e}"))
        .ok()?;
    let mut with_failures: Vec<&rest::StageAttempt> =
        stages.iter().filter(|s| s.had_failures()).collect();
    with_failures.sort_by_key(|s| std::cmp::Reverse((s.stage_id, s.attempt_id)));
    // A few at a time, in order (the chain reads them in time order anyway).
    let reads = with_failures
        .into_iter()
        .take(FAILED_ATTEMPTS_READ)
        .map(|s| {
            let tail = format!(
                "{api}/stages/{}/{}/taskList?status=FAILED&length=500",
                s.stage_id, s.attempt_id
            );
            // Owned: a stream of futures borrowing here is not `Send` for every lifetime.
            let (client, ui, app_id) = (client.clone(), ui.to_owned(), app_id.to_owned());
            let (stage, attempt) = (s.stage_id, s.attempt_id);
            async move {
                let body = get_bounded(&client, &ui, &tail, TASKS_MAX_BYTES).await?;
                rest::parse_failed_tasks(&body)
                    .map(|tasks| (stage, attempt, tasks))
                    .map_err(|e| tracing::debug!("driver tasks of {app_id}: {e}"))
                    .ok()
            }
        })
        .collect::<Vec<_>>();
    let failed: Vec<_> = futures::stream::iter(reads)
        .buffered(TASK_LISTS_AT_ONCE)
        .filter_map(std::future::ready)
        .collect()
        .await;
    rest::cost_of(&stages, &failed, executors, settings.as_ref(), now)
}

/// GET `tail` of the driver's UI as [`get`] does, reading at most `max` bytes: a longer
/// answer is none (said at debug).
async fn get_bounded(client: &Client, ui: &str, tail: &str, max: u64) -> Option<String> {
    let (proxy, _) = ui.split_once("/proxy/")?;
    let path = format!("{proxy}/proxy/{tail}");
    let req = http::Request::get(&path).body(Vec::new()).ok()?;
    let read = async {
        let body = client
            .request_stream(req)
            .await
            .map_err(|e| errors::error_line(&e))?;
        let mut buf = Vec::new();
        body.take(max + 1)
            .read_to_end(&mut buf)
            .await
            .map_err(|e| e.to_string())?;
        if buf.len() as u64 > max {
            return Err(format!("longer than {} MiB", max >> 20));
        }
        String::from_utf8(buf).map_err(|e| e.to_string())
    };
    match tokio::time::timeout(Duration::from_secs(10), read).await {
        Ok(Ok(body)) => Some(body),
        Ok(Err(e)) => {
            tracing::debug!("driver {path}: {e}");
            None
        }
        Err(_) => None,
    }
}

/// GET `tail` of the driver's UI (a path under its proxy), within 10 s; `None`
/// when it cannot be read (said at debug: the executor list's read says why a driver is
/// unreachable).
async fn get(client: &Client, ui: &str, tail: &str) -> Option<String> {
    let (proxy, _) = ui.split_once("/proxy/")?;
    let path = format!("{proxy}/proxy/{tail}");
    let req = http::Request::get(&path).body(Vec::new()).ok()?;
    match tokio::time::timeout(Duration::from_secs(10), client.request_text(req)).await {
        Ok(Ok(body)) => Some(body),
        Ok(Err(e)) => {
            tracing::debug!("driver {path}: {}", errors::error_line(&e));
            None
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use spark_triage_core::model::driver_state::{parse_allocation, parse_streaming};

    use super::*;

    /// Real Spark 4.3's answers (`scripts/driver-rest-fixtures.py`: a `local-cluster` driver
    /// with dynamic allocation on, idle between the micro-batches of a query named `clicks`).
    #[test]
    fn a_real_drivers_metrics_and_jobs_are_read() {
        let metrics =
            include_str!("../../tests/fixtures/driver-rest/metrics-dynamic-allocation.json");
        assert_eq!(
            parse_allocation(metrics),
            Ok(Some(Allocation {
                target: 0,
                needed: 0,
                registered: 1
            }))
        );
        let jobs = include_str!("../../tests/fixtures/driver-rest/jobs-streaming.json");
        let q = parse_streaming(jobs).expect("jobs").expect("a query");
        assert_eq!(q.label(), "query clicks");
        assert_eq!(q.id.len(), 36, "{q:?}");
        // The same driver without dynamic allocation's gauges: off, not an error.
        let mut off: serde_json::Value = serde_json::from_str(metrics).expect("json");
        off["gauges"]
            .as_object_mut()
            .expect("gauges")
            .retain(|k, _| !k.contains("ExecutorAllocationManager"));
        assert_eq!(parse_allocation(&off.to_string()), Ok(None));
    }
}
