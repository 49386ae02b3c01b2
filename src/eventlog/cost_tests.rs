//! The cost of losses read from real Spark 4.3 logs (tests/fixtures/eventlog/cost/, made by
//! scripts/cost-fixtures.py), each figure counted again here from the log's own lines.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use spark_triage_core::model::cost::{AppCost, CostFrom, Loss, RerunKind, rest};
use spark_triage_core::model::driver;

use super::*;
use crate::source::SourceEvent;

fn fixture(name: &str) -> (Vec<Value>, AppCost) {
    fixture_at(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/eventlog/cost")
            .join(name),
    )
}

fn fixture_at(path: &Path) -> (Vec<Value>, AppCost) {
    let path = path.to_owned();
    let lines = std::fs::read_to_string(&path)
        .expect("fixture")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let log = find(&path).expect("find").remove(0);
    let conv = read(&log, 1 << 20).expect("read");
    assert!(conv.damaged.is_empty(), "{:?}", conv.damaged);
    let cost = conv
        .events
        .into_iter()
        .find_map(|e| match e {
            SourceEvent::AppCost { cost, .. } => Some(cost),
            _ => None,
        })
        .expect("a cost");
    (lines, *cost)
}

fn named<'a>(lines: &'a [Value], event: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    lines.iter().filter(move |l| l["Event"] == event)
}

fn int(v: &Value) -> i64 {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .expect("a number")
}

#[test]
fn the_executor_killed_under_a_shuffle_is_charged_what_spark_resubmitted() {
    let (lines, cost) = fixture("shuffle-loss.json");
    // The log's own word: the executor its running task was lost with, and the one a
    // FetchFailed names.
    let lost: Vec<i64> = named(&lines, "SparkListenerTaskEnd")
        .filter(|l| l["Task End Reason"]["Reason"] == "ExecutorLostFailure")
        .map(|l| int(&l["Task Info"]["Executor ID"]))
        .collect();
    let fetched_from: Vec<i64> = named(&lines, "SparkListenerTaskEnd")
        .filter_map(|l| l["Task End Reason"].get("Block Manager Address"))
        .filter(|b| !b.is_null())
        .map(|b| int(&b["Executor ID"]))
        .collect();
    assert_eq!(lost, [1]);
    assert!(fetched_from.iter().all(|x| *x == 1) && !fetched_from.is_empty());
    // Every task of an added attempt, and the attempts' spans.
    let rerun_tasks = named(&lines, "SparkListenerTaskEnd")
        .filter(|l| int(&l["Stage Attempt ID"]) > 0)
        .count();
    let spans: i64 = named(&lines, "SparkListenerStageCompleted")
        .map(|l| &l["Stage Info"])
        .filter(|s| int(&s["Stage Attempt ID"]) > 0)
        .map(|s| int(&s["Completion Time"]) - int(&s["Submission Time"]))
        .sum();
    assert_eq!(cost.losses.len(), 1, "{cost:#?}");
    let loss = &cost.losses[0];
    assert_eq!(loss.executor, 1);
    assert_eq!(loss.rerun_tasks as usize, rerun_tasks);
    assert_eq!(loss.tasks_lost, 1);
    let wall = i64::try_from(loss.wall_ms).expect("ms");
    assert!(
        (wall - spans).abs() * 10 <= spans,
        "{wall} ms against {spans} ms"
    );
    assert_eq!(
        loss.reruns
            .iter()
            .map(|r| (r.stage, r.attempt, r.kind))
            .collect::<Vec<_>>(),
        [(0, 1, RerunKind::Recompute), (1, 1, RerunKind::Retry)]
    );
    assert_eq!(cost.unexplained_reruns, 0);
    assert_eq!(cost.waste.idle_timeout_ms, None);
}

#[test]
fn the_idle_tail_is_each_removed_executors_time_since_its_last_task() {
    let (lines, cost) = fixture("idle-timeout.json");
    let mut last_end: BTreeMap<i64, i64> = BTreeMap::new();
    for l in named(&lines, "SparkListenerExecutorAdded") {
        last_end.insert(int(&l["Executor ID"]), int(&l["Timestamp"]));
    }
    for l in named(&lines, "SparkListenerTaskEnd") {
        let x = int(&l["Task Info"]["Executor ID"]);
        let end = int(&l["Task Info"]["Finish Time"]);
        let e = last_end.entry(x).or_default();
        *e = (*e).max(end);
    }
    let removals: Vec<(i64, i64)> = named(&lines, "SparkListenerExecutorRemoved")
        .map(|l| (int(&l["Executor ID"]), int(&l["Timestamp"])))
        .collect();
    let idle: i64 = removals.iter().map(|(x, at)| at - last_end[x]).sum();
    assert_eq!(removals.len(), 4);
    assert_eq!(cost.waste.idle_removed, 4);
    assert_eq!(cost.waste.idle_tail_ms, u64::try_from(idle).expect("ms"));
    assert_eq!(cost.waste.idle_timeout_ms, Some(3000));
    assert!(cost.losses.is_empty(), "{:?}", cost.losses);

    // The last job's shuffle: its map stage's executors stay (shuffle tracking holds them)
    // until the app's end, each past its last task's end plus the 3 s timeout.
    let maps: Vec<i64> = named(&lines, "SparkListenerStageSubmitted")
        .flat_map(|l| {
            l["Stage Info"]["Parent IDs"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|p| int(&p))
        .collect();
    let wrote: std::collections::BTreeSet<i64> = named(&lines, "SparkListenerTaskEnd")
        .filter(|l| maps.contains(&int(&l["Stage ID"])))
        .filter(|l| l["Task End Reason"]["Reason"] == "Success")
        .map(|l| int(&l["Task Info"]["Executor ID"]))
        .collect();
    let end = named(&lines, "SparkListenerApplicationEnd")
        .map(|l| int(&l["Timestamp"]))
        .next()
        .expect("the app's end");
    let removed: BTreeMap<i64, i64> = removals.iter().copied().collect();
    let held: Vec<i64> = wrote
        .iter()
        .map(|x| removed.get(x).copied().unwrap_or(end) - (last_end[x] + 3000))
        .filter(|past| *past > 10_000)
        .collect();
    assert_eq!(held.len(), 2, "{wrote:?}");
    assert_eq!(cost.waste.held_by_shuffle, 2);
    assert_eq!(
        cost.waste.held_by_shuffle_ms,
        u64::try_from(held.iter().sum::<i64>()).expect("ms")
    );
}

/// The chain read live from the driver's REST API (its executors, stages, and failed tasks:
/// scripts/cost-fixtures.py shuffle-loss-rest, saved before the driver stopped) against the
/// chain read from the same run's event log: the same culprit, attempts, tasks and time.
#[test]
fn the_drivers_rest_api_tells_the_same_chain_as_the_runs_event_log() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/driver-rest/shuffle-loss-rest");
    let (_, logged) = fixture_at(&dir.join("eventlog.json"));
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).expect("fixture");
    let executors = driver::parse_executors(&read("allexecutors.json")).expect("executors");
    let stages = rest::parse_stages(&read("stages.json")).expect("stages");
    let failed: Vec<(u32, u32, Vec<rest::FailedTask>)> = stages
        .iter()
        .filter(|s| s.had_failures())
        .map(|s| {
            let body = read(&format!(
                "tasks-failed-{}-{}.json",
                s.stage_id, s.attempt_id
            ));
            (
                s.stage_id,
                s.attempt_id,
                rest::parse_failed_tasks(&body).expect("tasks"),
            )
        })
        .collect();
    let end = logged.started.expect("start")
        + chrono::TimeDelta::milliseconds(i64::try_from(logged.run_ms).expect("ms"));
    let live = rest::cost_of(&stages, &failed, &executors, None, end).expect("a cost");
    assert_eq!(live.from, CostFrom::DriverApi);
    assert_eq!(live.losses.len(), 1, "{live:#?}");
    let (l, g) = (&live.losses[0], &logged.losses[0]);
    assert_eq!(
        (
            l.executor,
            l.tasks_lost,
            l.fetch_failed,
            l.attempts_added,
            l.rerun_tasks
        ),
        (
            g.executor,
            g.tasks_lost,
            g.fetch_failed,
            g.attempts_added,
            g.rerun_tasks
        )
    );
    let kinds = |x: &Loss| {
        x.reruns
            .iter()
            .map(|r| (r.stage, r.attempt, r.kind))
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(l), kinds(g));
    assert_eq!(l.wall_ms, g.wall_ms);
    assert_eq!(live.recompute_wall_ms, logged.recompute_wall_ms);
    // Task time: the API's executorRunTime leaves out deserialization and scheduling.
    assert!(
        l.rerun_task_ms <= g.rerun_task_ms && l.rerun_task_ms * 10 >= g.rerun_task_ms * 7,
        "{} against {}",
        l.rerun_task_ms,
        g.rerun_task_ms
    );
    assert_eq!(live.unexplained_reruns, 0);
    assert!(!live.partial);
    // The failed tasks not read: partial, and the resubmissions' culprit is not named
    // from a fetch (the map stage's still goes to the executor removed since).
    let blind = rest::cost_of(&stages, &[], &executors, None, end).expect("a cost");
    assert!(blind.partial);
    assert_eq!(blind.losses.iter().map(|l| l.tasks_lost).sum::<u32>(), 0);
}
