//! `report --history-server`: a real History Server's answers (pyspark 4.3.0's, over the
//! real-Spark event logs: tests/fixtures/history-server/README.md) served on loopback give
//! the report the logs themselves give; a server that wants credentials, says nothing or
//! answers garbage gets one clear line, and no credential is ever printed.
//! `scripts/e2e-spark.sh` checks the same against a History Server it starts.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;

use super::common::triage;

const ANSWERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/history-server");
const LOGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/eventlog");

/// How the served History Server behaves.
#[derive(Clone, Copy)]
enum Mode {
    Real,
    /// Wants `Authorization: Basic alice:s3cret`.
    Auth,
    /// Answers `allexecutors` with something that is not Spark's.
    Garbage,
}

fn authorized(mode: Mode, headers: &HeaderMap) -> bool {
    // base64("alice:s3cret")
    !matches!(mode, Mode::Auth)
        || headers
            .get("authorization")
            .is_some_and(|v| v == "Basic YWxpY2U6czNjcmV0")
}

async fn file(name: &str) -> axum::response::Response {
    match tokio::fs::read_to_string(format!("{ANSWERS}/{name}")).await {
        Ok(body) => ([("content-type", "application/json")], body).into_response(),
        Err(_) => (StatusCode::NOT_FOUND, format!("no such app: {name}")).into_response(),
    }
}

async fn serve(mode: Mode) -> SocketAddr {
    async fn apps(State(mode): State<Mode>, headers: HeaderMap) -> axum::response::Response {
        if !authorized(mode, &headers) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        file("applications.json").await
    }
    async fn of_app(
        State(mode): State<Mode>,
        headers: HeaderMap,
        Path((app, what)): Path<(String, String)>,
    ) -> axum::response::Response {
        if !authorized(mode, &headers) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        if matches!(mode, Mode::Garbage) && what == "allexecutors" {
            return "<html>proxy error</html>".into_response();
        }
        if app.contains('/') || app.contains("..") {
            return StatusCode::NOT_FOUND.into_response();
        }
        file(&format!("{app}.{what}.json")).await
    }
    let router = Router::new()
        .route("/api/v1/applications", get(apps))
        .route("/api/v1/applications/{app}/{what}", get(of_app))
        .with_state(mode);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

/// The apps of a report, without their cost: that comes from the log's stages and tasks,
/// which the History Server's answers read here do not give.
fn apps_of(out: &str) -> serde_json::Value {
    let mut doc: serde_json::Value = serde_json::from_str(out).expect("JSON");
    if let Some(apps) = doc["apps"].as_array_mut() {
        for a in apps {
            a.as_object_mut().map(|o| o.remove("cost"));
        }
    }
    doc["apps"].clone()
}

#[tokio::test]
async fn the_history_servers_answers_give_the_report_the_logs_give() {
    let addr = serve(Mode::Real).await;
    let url = format!("http://{addr}");
    let listed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{ANSWERS}/applications.json")).expect("listing"),
    )
    .expect("JSON");
    let mut compared = 0;
    for dir in [
        "real-spark-k8s",
        "real-spark-k8s-lz4",
        "real-spark-k8s-snappy",
        "real-spark-k8s-none",
    ] {
        let dir = format!("{LOGS}/{dir}");
        let (code, from_log, err) = triage(&["report", &dir, "-o", "json"]).run().await;
        assert_eq!(code, 0, "{err}");
        let from_log = apps_of(&from_log);
        let id = from_log[0]["app_id"]
            .as_str()
            .expect("an app id")
            .to_owned();
        assert!(
            listed
                .as_array()
                .expect("a list")
                .iter()
                .any(|a| a["id"] == id),
            "{id} is one the History Server listed"
        );
        let (code, served, err) = triage(&[
            "report",
            "--history-server",
            &url,
            "--app",
            &id,
            "-o",
            "json",
        ])
        .run()
        .await;
        assert_eq!(code, 0, "{err}");
        assert!(err.is_empty(), "nothing to warn of: {err}");
        // The same executors, verdicts, findings, counts and times: the History Server
        // replays the same log with Spark's own listener. Only the witness a value was read
        // from is named apart (the settings are the same).
        let named = "From the History Server's environment";
        assert!(served.contains(named), "{id}: the witness is named");
        let served = apps_of(&served.replace(named, "From the event log's environment"));
        assert_eq!(
            served, from_log,
            "{id}: the History Server's report differs from the log's"
        );
        compared += 1;
    }
    assert_eq!(compared, 4);
    // Without --app: every application listed (fewer than the newest 20), newest first.
    let (code, out, err) = triage(&["report", "--history-server", &url, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(apps_of(&out).as_array().map(Vec::len), Some(4));
    let (code, _, err) = triage(&["report", "--history-server", &url, "--app", "spark-nope"])
        .run()
        .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("lists no application named \"spark-nope\" (4 listed)"),
        "{err}"
    );
}

#[tokio::test]
async fn credentials_are_used_and_never_shown() {
    let addr = serve(Mode::Auth).await;
    let with = format!("http://alice:s3cret@{addr}");
    let (code, out, err) = triage(&["report", "--history-server", &with, "-o", "json"])
        .run()
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("s3cret") && !out.contains("alice"), "{out}");
    let wrong = format!("http://alice:wrong-pass@{addr}");
    let (code, out, err) = triage(&["report", "--history-server", &wrong]).run().await;
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("401") && err.contains("wants credentials"),
        "{err}"
    );
    assert!(
        !err.contains("wrong-pass") && !out.contains("wrong-pass"),
        "{err}"
    );
}

#[tokio::test]
async fn a_silent_refusing_or_foreign_server_is_one_clear_line() {
    // Accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let at = silent.local_addr().expect("addr");
    let _held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            open.push(s);
        }
    });
    let url = format!("http://{at}");
    let started = std::time::Instant::now();
    let (code, _, err) = triage(&[
        "report",
        "--history-server",
        &url,
        "--request-timeout",
        "2s",
    ])
    .run()
    .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("no answer to /api/v1/applications in time"),
        "{err}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "bounded by the timeout"
    );
    // Nobody listening.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let gone = closed.local_addr().expect("addr");
    drop(closed);
    let (code, _, err) = triage(&["report", "--history-server", &format!("http://{gone}")])
        .run()
        .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot reach the History Server") && err.contains("refused"),
        "{err}"
    );
    // A proxy's error page where the executors should be.
    let addr = serve(Mode::Garbage).await;
    let (code, _, err) = triage(&["report", "--history-server", &format!("http://{addr}")])
        .run()
        .await;
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not Spark's executor list"), "{err}");
    // Not a URL, or not HTTP.
    let (code, _, err) = triage(&["report", "--history-server", "ftp://h/"])
        .run()
        .await;
    assert_eq!(code, 2, "{err}");
}
