//! The lines of a Spark event log that say something about executors and the application,
//! read as `JsonProtocol` writes them (`"Event"` first; Spark's own events with spaced
//! field names, the rest by Jackson with class names and camelCase). Every other event
//! (tasks starting, SQL, block updates: most of a log) is skipped on its name,
//! without being parsed.

use std::collections::BTreeMap;

use serde::Deserialize;
use spark_triage_core::model::Time;
use spark_triage_core::model::driver_state::StreamingQuery;

/// What a line says, of what spark-triage reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// `SparkListenerLogStart`: the first line.
    LogStart { spark_version: String },
    AppStart {
        app_id: Option<String>,
        app_name: String,
        attempt: Option<String>,
        user: Option<String>,
        at: Time,
    },
    /// `ExitCode` since Spark 4.0 (absent before, and when the driver did not say).
    AppEnd { at: Time, exit_code: Option<i32> },
    /// The Spark properties as the driver had them (secrets already `*********(redacted)`
    /// by Spark; redacted again by ours).
    Environment {
        properties: BTreeMap<String, String>,
    },
    ExecutorAdded {
        id: String,
        at: Time,
        host: Option<String>,
        cores: Option<u32>,
        /// `Attributes.POD_NAME`, where a platform sets it.
        pod_name: Option<String>,
    },
    ExecutorRemoved {
        id: String,
        at: Time,
        reason: String,
    },
    /// A task ended on an executor: `failed` unless its reason is `Success` or it was
    /// `killed` (`TaskKilled`, `TaskCommitDenied`).
    TaskEnd {
        executor: String,
        failed: bool,
        killed: bool,
        /// Failed because its executor was lost (`ExecutorLostFailure`).
        lost: bool,
        at: Option<Time>,
        /// Its stage and the stage's attempt.
        stage: u32,
        stage_attempt: u32,
        /// Launch to finish, ms (0 when either is missing).
        ms: u64,
        /// `FetchFailed`: the executor whose block manager it could not fetch from, when
        /// named (none when the output was already unregistered).
        fetch_failed: Option<Option<String>>,
        /// `Resubmitted`: it had finished, and its output went with its executor.
        resubmitted: bool,
    },
    /// `SparkListenerStageSubmitted`.
    StageSubmitted {
        stage: u32,
        attempt: u32,
        parents: Vec<u32>,
        at: Option<Time>,
    },
    /// `SparkListenerStageCompleted`: `failed` when it has a failure reason.
    StageCompleted {
        stage: u32,
        attempt: u32,
        failed: bool,
        at: Option<Time>,
    },
    /// `SparkListenerExecutorExcluded` (or the `…Blacklisted` Spark posts beside it).
    ExecutorExcluded {
        id: String,
        at: Time,
        task_failures: u32,
    },
    /// `StreamingQueryListener$QueryStartedEvent` (Spark 3.1+ logs the streaming queries'
    /// events for the History Server): the app runs a Structured Streaming query.
    QueryStarted {
        query: StreamingQuery,
        at: Option<Time>,
    },
}

/// The streaming query's start, as Jackson writes it.
const QUERY_STARTED: &str =
    "org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent";

/// Events whose lines are parsed; any other is skipped by name.
const READ: [&str; 12] = [
    "SparkListenerLogStart",
    "SparkListenerStageSubmitted",
    "SparkListenerStageCompleted",
    "SparkListenerApplicationStart",
    "SparkListenerApplicationEnd",
    "SparkListenerEnvironmentUpdate",
    "SparkListenerExecutorAdded",
    "SparkListenerExecutorRemoved",
    "SparkListenerTaskEnd",
    "org.apache.spark.scheduler.SparkListenerExecutorExcluded",
    "org.apache.spark.scheduler.SparkListenerExecutorBlacklisted",
    QUERY_STARTED,
];

/// The event's name, from the line's start (`{"Event":"…"`) or, if the writer put another
/// field first, from a parse.
pub(crate) fn name_of(line: &str) -> Option<std::borrow::Cow<'_, str>> {
    if let Some(rest) = line.trim_start().strip_prefix("{\"Event\":\"") {
        return rest.split('"').next().map(std::borrow::Cow::Borrowed);
    }
    #[derive(Deserialize)]
    struct Named {
        #[serde(rename = "Event")]
        event: String,
    }
    serde_json::from_str::<Named>(line)
        .ok()
        .map(|n| std::borrow::Cow::Owned(n.event))
}

/// Whether a line is an event-log line at all (the first line of a file tells whether it
/// is an event log).
pub(crate) fn is_event_line(line: &str) -> bool {
    name_of(line).is_some_and(|n| {
        n.starts_with("SparkListener")
            || n.starts_with("org.apache.spark.")
            || n.starts_with("com.databricks.")
    })
}

fn millis(ms: i64) -> Option<Time> {
    chrono::DateTime::from_timestamp_millis(ms)
}

/// An executor id as the log writes it: a string (`"3"`), or a number in hand-made logs.
#[derive(Deserialize)]
#[serde(untagged)]
enum Id {
    S(String),
    N(i64),
}

impl Id {
    fn text(self) -> String {
        match self {
            Self::S(s) => s,
            Self::N(n) => n.to_string(),
        }
    }
}

#[derive(Deserialize)]
struct LogStart {
    #[serde(rename = "Spark Version")]
    version: String,
}

#[derive(Deserialize)]
struct AppStart {
    #[serde(rename = "App Name")]
    name: String,
    #[serde(rename = "App ID")]
    id: Option<String>,
    #[serde(rename = "App Attempt ID")]
    attempt: Option<String>,
    #[serde(rename = "User")]
    user: Option<String>,
    #[serde(rename = "Timestamp")]
    at: i64,
}

#[derive(Deserialize)]
struct AppEnd {
    #[serde(rename = "Timestamp")]
    at: i64,
    #[serde(rename = "ExitCode")]
    exit_code: Option<i32>,
}

#[derive(Deserialize)]
struct Environment {
    #[serde(rename = "Spark Properties")]
    properties: Properties,
}

/// `{k: v}` as the event log has them; `[[k, v], …]` as older writers and the History
/// Server's REST API have them.
#[derive(Deserialize)]
#[serde(untagged)]
enum Properties {
    Map(BTreeMap<String, String>),
    Pairs(Vec<(String, String)>),
}

#[derive(Deserialize)]
struct ExecutorAdded {
    #[serde(rename = "Executor ID")]
    id: Id,
    #[serde(rename = "Timestamp")]
    at: i64,
    #[serde(rename = "Executor Info")]
    info: Option<ExecutorInfo>,
}

#[derive(Deserialize)]
struct ExecutorInfo {
    #[serde(rename = "Host")]
    host: Option<String>,
    #[serde(rename = "Total Cores")]
    cores: Option<u32>,
    #[serde(rename = "Attributes", default)]
    attributes: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct ExecutorRemoved {
    #[serde(rename = "Executor ID")]
    id: Id,
    #[serde(rename = "Timestamp")]
    at: i64,
    #[serde(rename = "Removed Reason", default)]
    reason: String,
}

#[derive(Deserialize)]
struct TaskEnd {
    #[serde(rename = "Stage ID", default)]
    stage: u32,
    #[serde(rename = "Stage Attempt ID", default)]
    stage_attempt: u32,
    #[serde(rename = "Task End Reason")]
    reason: Option<TaskEndReason>,
    #[serde(rename = "Task Info")]
    info: TaskInfo,
}

#[derive(Deserialize)]
struct TaskEndReason {
    #[serde(rename = "Reason")]
    reason: String,
    /// `FetchFailed`'s block manager (null when the output was already unregistered).
    #[serde(rename = "Block Manager Address", default)]
    block_manager: Option<BlockManager>,
}

#[derive(Deserialize)]
struct BlockManager {
    #[serde(rename = "Executor ID")]
    executor: Id,
}

#[derive(Deserialize)]
struct TaskInfo {
    #[serde(rename = "Executor ID")]
    executor: Id,
    #[serde(rename = "Launch Time")]
    launch: Option<i64>,
    #[serde(rename = "Finish Time")]
    finish: Option<i64>,
    #[serde(rename = "Failed", default)]
    failed: bool,
}

#[derive(Deserialize)]
struct Stage {
    #[serde(rename = "Stage Info")]
    info: StageInfo,
}

#[derive(Deserialize)]
struct StageInfo {
    #[serde(rename = "Stage ID")]
    stage: u32,
    #[serde(rename = "Stage Attempt ID", default)]
    attempt: u32,
    #[serde(rename = "Parent IDs", default)]
    parents: Vec<u32>,
    #[serde(rename = "Submission Time")]
    submitted: Option<i64>,
    #[serde(rename = "Completion Time")]
    completed: Option<i64>,
    #[serde(rename = "Failure Reason")]
    failure: Option<String>,
}

#[derive(Deserialize)]
struct QueryStarted {
    id: String,
    #[serde(default)]
    name: Option<String>,
    /// ISO 8601 (`2026-12-06T10:00:00.000Z`).
    #[serde(default)]
    timestamp: Option<String>,
}

#[derive(Deserialize)]
struct Excluded {
    time: i64,
    #[serde(rename = "executorId")]
    id: Id,
    #[serde(rename = "taskFailures", default)]
    task_failures: u32,
}

/// Why a line was not read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// An event spark-triage has no use for.
    Unread,
    /// An event it reads, in a shape it cannot (a damaged or cut line): the reason.
    Bad(String),
}

/// Reads one line.
pub(crate) fn parse(line: &str) -> Result<Event, Skip> {
    let Some(name) = name_of(line) else {
        return Err(Skip::Bad("not a JSON event".into()));
    };
    if !READ.contains(&name.as_ref()) {
        return Err(Skip::Unread);
    }
    let bad = |e: serde_json::Error| Skip::Bad(format!("{name}: {e}"));
    let time =
        |ms: i64| millis(ms).ok_or_else(|| Skip::Bad(format!("{name}: time {ms} out of range")));
    Ok(match name.as_ref() {
        "SparkListenerLogStart" => {
            let e: LogStart = serde_json::from_str(line).map_err(bad)?;
            Event::LogStart {
                spark_version: e.version,
            }
        }
        "SparkListenerApplicationStart" => {
            let e: AppStart = serde_json::from_str(line).map_err(bad)?;
            Event::AppStart {
                app_id: e.id,
                app_name: e.name,
                attempt: e.attempt,
                user: e.user,
                at: time(e.at)?,
            }
        }
        "SparkListenerApplicationEnd" => {
            let e: AppEnd = serde_json::from_str(line).map_err(bad)?;
            Event::AppEnd {
                at: time(e.at)?,
                exit_code: e.exit_code,
            }
        }
        "SparkListenerEnvironmentUpdate" => {
            let e: Environment = serde_json::from_str(line).map_err(bad)?;
            Event::Environment {
                properties: match e.properties {
                    Properties::Map(m) => m,
                    Properties::Pairs(p) => p.into_iter().collect(),
                },
            }
        }
        "SparkListenerExecutorAdded" => {
            let e: ExecutorAdded = serde_json::from_str(line).map_err(bad)?;
            let info = e.info;
            Event::ExecutorAdded {
                id: e.id.text(),
                at: time(e.at)?,
                host: info.as_ref().and_then(|i| i.host.clone()),
                cores: info.as_ref().and_then(|i| i.cores),
                pod_name: info
                    .and_then(|mut i| i.attributes.remove("POD_NAME"))
                    .filter(|n| !n.is_empty()),
            }
        }
        "SparkListenerExecutorRemoved" => {
            let e: ExecutorRemoved = serde_json::from_str(line).map_err(bad)?;
            Event::ExecutorRemoved {
                id: e.id.text(),
                at: time(e.at)?,
                reason: e.reason,
            }
        }
        "SparkListenerTaskEnd" => {
            let e: TaskEnd = serde_json::from_str(line).map_err(bad)?;
            // As Spark's own status listener counts them: a killed task (or one whose
            // commit was denied) is neither completed nor failed.
            let reason = e.reason.as_ref().map(|r| r.reason.as_str());
            let killed = matches!(reason, Some("TaskKilled" | "TaskCommitDenied"));
            let failed = !killed && (e.info.failed || reason.is_some_and(|r| r != "Success"));
            let launch = e.info.launch.filter(|ms| *ms > 0);
            let finish = e.info.finish.filter(|ms| *ms > 0);
            let lost = reason == Some("ExecutorLostFailure");
            // A finished map task whose executor was lost with its output: run again.
            let resubmitted = reason == Some("Resubmitted");
            let fetch_failed = (reason == Some("FetchFailed")).then(|| {
                e.reason
                    .and_then(|r| r.block_manager)
                    .map(|b| b.executor.text())
            });
            Event::TaskEnd {
                executor: e.info.executor.text(),
                failed,
                killed,
                lost,
                at: finish.and_then(millis),
                stage: e.stage,
                stage_attempt: e.stage_attempt,
                ms: match (launch, finish) {
                    (Some(l), Some(f)) => u64::try_from(f - l).unwrap_or(0),
                    _ => 0,
                },
                fetch_failed,
                resubmitted,
            }
        }
        "SparkListenerStageSubmitted" => {
            let i = serde_json::from_str::<Stage>(line).map_err(bad)?.info;
            Event::StageSubmitted {
                stage: i.stage,
                attempt: i.attempt,
                parents: i.parents,
                at: i.submitted.filter(|ms| *ms > 0).and_then(millis),
            }
        }
        "SparkListenerStageCompleted" => {
            let i = serde_json::from_str::<Stage>(line).map_err(bad)?.info;
            Event::StageCompleted {
                stage: i.stage,
                attempt: i.attempt,
                failed: i.failure.is_some(),
                at: i.completed.filter(|ms| *ms > 0).and_then(millis),
            }
        }
        QUERY_STARTED => {
            let e: QueryStarted = serde_json::from_str(line).map_err(bad)?;
            Event::QueryStarted {
                query: StreamingQuery::new(&e.id, e.name.as_deref()),
                at: e
                    .timestamp
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
                    .map(|t| t.to_utc()),
            }
        }
        _ => {
            let e: Excluded = serde_json::from_str(line).map_err(bad)?;
            Event::ExecutorExcluded {
                id: e.id.text(),
                at: time(e.time)?,
                task_failures: e.task_failures,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_events_read_and_the_ones_skipped() {
        let added = r#"{"Event":"SparkListenerExecutorAdded","Timestamp":1700000001000,"Executor ID":"1","Executor Info":{"Host":"10.1.2.3","Total Cores":2,"Log Urls":{},"Attributes":{},"Resources":{},"Resource Profile Id":0}}"#;
        assert_eq!(
            parse(added),
            Ok(Event::ExecutorAdded {
                id: "1".into(),
                at: millis(1_700_000_001_000).expect("time"),
                host: Some("10.1.2.3".into()),
                cores: Some(2),
                pod_name: None,
            })
        );
        let end =
            r#"{"Event":"SparkListenerApplicationEnd","Timestamp":1700000999000,"ExitCode":1}"#;
        assert!(matches!(
            parse(end),
            Ok(Event::AppEnd {
                exit_code: Some(1),
                ..
            })
        ));
        let lost = r#"{"Event":"SparkListenerTaskEnd","Stage ID":3,"Task End Reason":{"Reason":"ExecutorLostFailure","Executor ID":"1","Exit Caused By App":true},"Task Info":{"Task ID":42,"Executor ID":"1","Finish Time":1700000500000,"Failed":true,"Accumulables":[]}}"#;
        assert_eq!(
            parse(lost),
            Ok(Event::TaskEnd {
                executor: "1".into(),
                failed: true,
                killed: false,
                lost: true,
                at: millis(1_700_000_500_000),
                stage: 3,
                stage_attempt: 0,
                ms: 0,
                fetch_failed: None,
                resubmitted: false,
            })
        );
        let pairs = r#"{"Event":"SparkListenerEnvironmentUpdate","Spark Properties":[["spark.app.name","x"]]}"#;
        assert!(
            matches!(parse(pairs), Ok(Event::Environment { properties }) if properties["spark.app.name"] == "x")
        );
        let started = r#"{"Event":"org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent","id":"3f1c2a9e-1","runId":"77","name":"clicks","timestamp":"2026-12-06T10:00:00.000Z","jobTags":[]}"#;
        match parse(started) {
            Ok(Event::QueryStarted { query, at }) => {
                assert_eq!(query.label(), "query clicks");
                assert_eq!(at.map(|t| t.timestamp()), Some(1_796_551_200));
            }
            other => panic!("{other:?}"),
        }
        // Real Spark 4.3's line (scripts/driver-rest-fixtures.py).
        let real = include_str!("../../tests/fixtures/driver-rest/eventlog-query-started.json");
        assert!(
            matches!(parse(real.trim()), Ok(Event::QueryStarted { query, at: Some(_) }) if query.label() == "query clicks")
        );
        let excluded = r#"{"Event":"org.apache.spark.scheduler.SparkListenerExecutorExcluded","time":1700000002000,"executorId":"3","taskFailures":2}"#;
        assert!(matches!(
            parse(excluded),
            Ok(Event::ExecutorExcluded {
                task_failures: 2,
                ..
            })
        ));
        assert_eq!(
            parse(r#"{"Event":"SparkListenerTaskStart","Stage ID":1}"#),
            Err(Skip::Unread)
        );
        // A line cut short in a log still being written.
        assert!(matches!(
            parse(r#"{"Event":"SparkListenerExecutorRemoved","Timestamp":17000"#),
            Err(Skip::Bad(_))
        ));
        assert!(matches!(parse("not json"), Err(Skip::Bad(_))));
        assert!(is_event_line(
            r#"{"Event":"SparkListenerLogStart","Spark Version":"4.3.0"}"#
        ));
        assert!(!is_event_line(r#"{"format":"spark-triage-recording"}"#));
    }
}
