//! `spark-triage mcp`: a real MCP client (PyPI's `mcp`, the protocol's Python SDK, in a venv
//! made by scripts/e2e/mcp-venv.sh) lists the tools and calls each, over stdio against the
//! simulator's `mixed` scenario and over streamable HTTP against a recording; and stdio is
//! newline-delimited JSON-RPC with nothing else on stdout.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use spark_triage_sim::kubeconfig_yaml;

use super::common::{start_sim, triage};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's python (installed once).
fn python() -> PathBuf {
    let out = Command::new(root().join("scripts/e2e/mcp-venv.sh"))
        .output()
        .expect("mcp-venv.sh runs");
    assert!(
        out.status.success(),
        "scripts/e2e/mcp-venv.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .expect("a path")
            .trim(),
    )
}

/// Runs the client (killed after 3 minutes: a hung server fails the test, never CI); its
/// JSON document.
fn client(python: &Path, args: &[&str]) -> Value {
    let out = Command::new("timeout")
        .arg("180")
        .arg(python)
        .arg(root().join("scripts/e2e/mcp_client.py"))
        .args(args)
        .output()
        .expect("the client runs");
    assert!(
        out.status.success(),
        "mcp_client.py {args:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn call<'a>(doc: &'a Value, key: &str) -> (&'a str, bool) {
    let c = &doc["calls"][key];
    (
        c["text"].as_str().unwrap_or_else(|| panic!("{key}: {doc}")),
        c["error"].as_bool().expect("error"),
    )
}

fn json_of(doc: &Value, key: &str) -> Value {
    let (text, error) = call(doc, key);
    assert!(!error, "{key} failed: {text}");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{key}: {e}: {text}"))
}

/// What every run must show: the six tools, and the `mixed` scenario's verdicts from each.
fn check(doc: &Value) {
    // Its own name and version in `serverInfo`, not the SDK's.
    assert_eq!(
        doc["server_info"],
        serde_json::json!({"name": "spark-triage", "version": env!("CARGO_PKG_VERSION")})
    );
    // The executor id as a string answers as the number does (but for the moment each was
    // answered at: `as_of`).
    let timeless = |call: &Value| {
        let mut v: Value = serde_json::from_str(call["text"].as_str().unwrap_or("null"))
            .unwrap_or_else(|e| panic!("{e}: {call}"));
        assert!(v["as_of"].is_object(), "stamped with as_of: {v}");
        v.as_object_mut().map(|o| o.remove("as_of"));
        v
    };
    assert_eq!(
        timeless(&doc["calls"]["executor_verdict_str"]),
        timeless(&doc["calls"]["executor_verdict"]),
        "executor \"7\" as 7"
    );
    assert_eq!(
        doc["calls"]["executor_verdict_str"]["error"], false,
        "{}",
        doc["calls"]["executor_verdict_str"]
    );
    assert_eq!(
        doc["tools"],
        serde_json::json!([
            "app_cost",
            "app_verdict",
            "executor_verdict",
            "explain_pod",
            "list_apps",
            "report",
            "timeline"
        ])
    );
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/mixed-verdicts.json")).unwrap(),
    )
    .unwrap();
    // list_apps: every app with the reference's verdict, and its endings by cause.
    let listed = json_of(doc, "list_apps");
    let apps = listed["apps"].as_array().expect("apps");
    assert_eq!(apps.len(), 3, "{listed}");
    for (name, want) in reference["apps"].as_object().unwrap() {
        let a = apps
            .iter()
            .find(|a| a["app_name"] == *name)
            .unwrap_or_else(|| panic!("{name} in {listed}"));
        assert_eq!(a["verdict"]["cause"], want["verdict"], "{name}: {a}");
    }
    let etl = apps
        .iter()
        .find(|a| a["app_name"] == "etl-nightly")
        .unwrap();
    assert_eq!(etl["endings_by_cause"]["container-oom-killed"], 1, "{etl}");
    assert_eq!(etl["endings_by_cause"]["jvm-oom"], 1, "{etl}");
    // app_verdict: the executors in trouble, with the reference's causes.
    let v = json_of(doc, "app_verdict");
    let shown = v[0]["executors"].as_array().expect("executors");
    for (id, e) in reference["apps"]["etl-nightly"]["executors"]
        .as_object()
        .unwrap()
    {
        let id: i64 = id.parse().unwrap();
        let line = shown
            .iter()
            .find(|x| x["id"] == id)
            .unwrap_or_else(|| panic!("executor {id} in {v}"));
        assert_eq!(line["findings"][0], e["cause"], "executor {id}");
        // Ages as numbers beside the times.
        assert!(
            line["age_seconds"].as_i64().is_some_and(|s| s >= 0),
            "executor {id}: {line}"
        );
    }
    // The failure budget as numbers, beside its sentence.
    assert_eq!(v[0]["failure_budget"]["failures_counted"], 2, "{v}");
    assert_eq!(v[0]["failure_budget"]["failures_allowed"], 20, "{v}");
    // executor_verdict and explain_pod (by its pod): executor 7's OOM kill, evidence, hint.
    for key in ["executor_verdict", "explain_pod"] {
        let x = json_of(doc, key);
        assert_eq!(x["id"], 7, "{key}: {x}");
        if key == "executor_verdict" {
            let (age, ended) = (&x["age_seconds"], &x["ended_seconds_ago"]);
            assert!(
                age.as_i64()
                    .zip(ended.as_i64())
                    .is_some_and(|(a, e)| a >= e && e >= 0),
                "ages in seconds: {x}"
            );
        }
        assert_eq!(x["exit_code"], 137, "{key}");
        assert_eq!(x["findings"][0]["code"], "container-oom-killed", "{key}");
        assert!(
            x["findings"][0]["hint"]
                .as_str()
                .is_some_and(|h| h.contains("memoryOverhead")),
            "{key}: {x}"
        );
        assert!(
            x["findings"][0]["evidence"]
                .as_array()
                .is_some_and(|e| !e.is_empty()),
            "{key}: {x}"
        );
    }
    let t = json_of(doc, "timeline");
    let lines = t[0]["timeline"].as_array().expect("timeline");
    assert!(
        lines
            .iter()
            .any(|l| l["executor"] == 7 && l["text"].as_str().is_some_and(|s| s.contains("7"))),
        "{t}"
    );
    let (report, error) = call(doc, "report");
    assert!(!error, "{report}");
    assert!(
        report.contains("## etl-nightly") && report.contains("OOM"),
        "{report}"
    );
    let (text, error) = call(doc, "no_such_app");
    assert!(error, "an unknown app is a tool error: {text}");
    assert!(text.contains("etl-nightly"), "it names those there: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(all(have_python3, have_pypi)),
    ignore = "needs python3 with venv and the Python package index (the mcp client; .ci/run installs python3-venv)"
)]
async fn a_real_mcp_client_gets_the_mixed_scenarios_verdicts_over_stdio_from_the_cluster() {
    let py = python();
    let sim = start_sim("mixed", 4.0, &[]).await;
    let kc = sim.kubeconfig.to_str().expect("utf-8").to_owned();
    // At rest (tests/integration/verdicts.rs): 25 s at speed 4.
    tokio::time::sleep(Duration::from_secs(25)).await;
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    let doc = tokio::task::spawn_blocking(move || {
        client(
            &py,
            &[
                "stdio",
                "etl-nightly",
                "7",
                "--",
                bin,
                "mcp",
                "--kubeconfig",
                &kc,
                "-n",
                "spark-jobs",
            ],
        )
    })
    .await
    .expect("joins");
    check(&doc);
}

/// `spark-triage mcp --http 127.0.0.1:0` on the shipped session recording: the server (its
/// stderr read on), and the URL it serves.
fn mcp_on_http() -> (std::process::Child, String) {
    let mut server = triage(&["mcp", "--http", "127.0.0.1:0", "--recording"])
        .arg(root().join("tests/fixtures/mixed-session.ndjson"))
        .command_blocking()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp starts");
    let mut err = BufReader::new(server.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("reads");
    std::thread::spawn(move || for _ in err.lines() {});
    let url = line
        .split("on ")
        .nth(1)
        .map(str::trim)
        .unwrap_or_else(|| panic!("where it serves: {line}"))
        .to_owned();
    (server, url)
}

#[test]
#[cfg_attr(
    not(all(have_python3, have_pypi)),
    ignore = "needs python3 with venv and the Python package index (the mcp client; .ci/run installs python3-venv)"
)]
fn a_real_mcp_client_gets_a_recordings_verdicts_over_streamable_http() {
    let py = python();
    let (mut server, url) = mcp_on_http();
    let doc = client(&py, &["http", "etl-nightly", "7", &url]);
    // A browser page's request (it carries an Origin) is refused.
    let hostport = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port")
        .to_owned();
    let mut s = std::net::TcpStream::connect(&hostport).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}"#;
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {hostport}\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("sends");
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut answer);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    let _ = server.kill();
    let _ = server.wait();
    check(&doc);
}

/// `spark-triage mcp ARGS` on stdio (stderr `err`), with a watchdog: a server that never
/// answers is killed after `patience`, failing the test instead of hanging it.
fn mcp_on_stdio(args: &[&str], err: Stdio, patience: Duration) -> std::process::Child {
    let child = triage(&["mcp"])
        .args(args)
        .command_blocking()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .expect("mcp starts");
    let pid = child.id().to_string();
    std::thread::spawn(move || {
        std::thread::sleep(patience);
        let _ = Command::new("kill").args(["-9", &pid]).status();
    });
    child
}

/// The shipped session recording, as `mcp --recording` takes it.
fn recording_args() -> [String; 2] {
    [
        "--recording".to_owned(),
        root()
            .join("tests/fixtures/mixed-session.ndjson")
            .display()
            .to_string(),
    ]
}

/// stdio is newline-delimited JSON-RPC: an `initialize` line in, one JSON line out, and
/// nothing else on stdout (a log line there would break every client).
#[test]
fn stdio_speaks_newline_delimited_json_rpc_and_nothing_else() {
    let args = recording_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = mcp_on_stdio(&args, Stdio::null(), Duration::from_secs(60));
    let mut stdin = server.stdin.take().expect("stdin");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"test","version":"1"}}}}}}"#
    )
    .expect("writes");
    let mut out = BufReader::new(server.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("reads");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(v["id"], 1, "{v}");
    assert!(v["result"]["capabilities"]["tools"].is_object(), "{v}");
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18", "{v}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("writes");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"list_apps","arguments":{{}}}}}}"#
    )
    .expect("writes");
    line.clear();
    out.read_line(&mut line).expect("reads");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(v["id"], 2, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("etl-nightly"), "{text}");
    // Closing stdin ends the server.
    drop(stdin);
    let status = server.wait().expect("ends");
    assert!(status.success(), "{status}");
}

/// The HTTP transport has no authentication: only the loopback addresses its Host check
/// accepts are taken.
#[test]
fn http_listens_on_loopback_only() {
    for addr in ["0.0.0.0:8765", "10.0.0.5:8765", "127.0.0.2:8765"] {
        let out = triage(&["mcp", "--http", addr]).output_blocking();
        assert_eq!(out.status.code(), Some(2), "{addr}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("loopback only"), "{addr}: {err}");
    }
}

/// One HTTP/1.1 request to the MCP endpoint on a connection of its own: the answer's status
/// line, headers and body as text.
fn mcp_request(hostport: &str, method: &str, extra: &str, body: &str) -> String {
    let mut s = std::net::TcpStream::connect(hostport).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "{method} /mcp HTTP/1.1\r\nHost: {hostport}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("sends");
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut answer);
    answer
}

/// MCP over HTTP within bounds (#55): each `initialize` made a session of about 61 KB with
/// no bound, and idle connections were held without one. Past 64 sessions an `initialize` is
/// refused with an answer that says why; a session ended (DELETE) makes room; 200 idle
/// connections held open do not keep an `initialize` from being answered.
#[test]
fn http_sessions_and_connections_are_bounded() {
    let (mut server, url) = mcp_on_http();
    let hostport = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_else(|| panic!("where it serves: {url}"))
        .to_owned();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let session_of = |answer: &str| {
        answer
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .starts_with("mcp-session-id:")
                    .then(|| l.split_once(':').map(|(_, v)| v.trim().to_owned()))
                    .flatten()
            })
            .unwrap_or_else(|| panic!("a session id: {answer}"))
    };
    let mut sessions = Vec::new();
    for n in 0..64 {
        let answer = mcp_request(&hostport, "POST", "", init);
        assert!(answer.starts_with("HTTP/1.1 200"), "session {n}: {answer}");
        sessions.push(session_of(&answer));
    }
    let refused = mcp_request(&hostport, "POST", "", init);
    assert!(
        refused.starts_with("HTTP/1.1 503")
            && refused.to_ascii_lowercase().contains("retry-after: 30")
            && refused.contains("64 MCP sessions are open"),
        "the 65th: {refused}"
    );
    // A flood of 20,000 more (four clients): every one refused 503, the memory flat (it
    // was 29 MB -> 1,247 MB).
    let refusals: usize = std::thread::scope(|t| {
        let ones: Vec<_> = (0..4)
            .map(|_| {
                t.spawn(|| {
                    (0..5_000)
                        .filter(|_| {
                            mcp_request(&hostport, "POST", "", init).starts_with("HTTP/1.1 503")
                        })
                        .count()
                })
            })
            .collect();
        ones.into_iter().map(|h| h.join().expect("a client")).sum()
    });
    let rss_mib = std::fs::read_to_string(format!("/proc/{}/status", server.id()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map(|kib| kib / 1024)
        .expect("the server's RSS");
    eprintln!(
        "20,000 initializes past the bound: {refusals} refused 503, server RSS {rss_mib} MiB"
    );
    assert_eq!(refusals, 20_000);
    assert!(rss_mib < 300, "{rss_mib} MiB after 20,000 initializes");
    let ended = mcp_request(
        &hostport,
        "DELETE",
        &format!("Mcp-Session-Id: {}\r\n", sessions[0]),
        "",
    );
    assert!(ended.starts_with("HTTP/1.1 2"), "DELETE: {ended}");
    let again = mcp_request(&hostport, "POST", "", init);
    assert!(again.starts_with("HTTP/1.1 200"), "after a DELETE: {again}");
    let again_id = session_of(&again);
    // Idle connections, more than the server keeps: each new one takes an idle one's place.
    let idle: Vec<_> = (0..200)
        .filter_map(|_| std::net::TcpStream::connect(&hostport).ok())
        .collect();
    let ended = mcp_request(
        &hostport,
        "DELETE",
        &format!("Mcp-Session-Id: {again_id}\r\n"),
        "",
    );
    assert!(
        ended.starts_with("HTTP/1.1 2"),
        "DELETE among idle connections: {ended}"
    );
    let answer = mcp_request(&hostport, "POST", "", init);
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "initialize among 200 idle connections: {answer}"
    );
    drop(idle);
    let _ = server.kill();
    let _ = server.wait();
}

/// Every stdio line gets an answer (#55): a line that is not JSON `-32700 Parse error` with a
/// null id, JSON that is not a request `-32600` with its id, a request line over the 16 MiB
/// limit `-32700` naming the limit (it was dropped in silence and the client waited for its
/// own timeout); each said on stderr too, and the session goes on.
#[test]
fn stdio_answers_what_is_not_a_request() {
    let args = recording_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = mcp_on_stdio(&args, Stdio::piped(), Duration::from_secs(60));
    let mut stdin = server.stdin.take().expect("stdin");
    let mut out = BufReader::new(server.stdout.take().expect("stdout"));
    let mut next = || {
        let mut line = String::new();
        out.read_line(&mut line).expect("reads");
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    writeln!(stdin, "this is not json").expect("writes");
    let v = next();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (Value::Null, (-32700).into()),
        "{v}"
    );
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":9,"methodd":"initialize"}}"#
    )
    .expect("writes");
    let v = next();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (9.into(), (-32600).into()),
        "{v}"
    );
    // 17 MiB on one line, written while the answers are read.
    let big = std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..17 {
            stdin.write_all(&chunk).expect("writes");
        }
        stdin.write_all(b"\n").expect("writes");
        stdin
    });
    let v = next();
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("16 MiB")),
        "{v}"
    );
    let mut stdin = big.join().expect("written");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"test","version":"1"}}}}}}"#
    )
    .expect("writes");
    let v = next();
    assert_eq!(v["id"], 1, "the session goes on: {v}");
    assert!(v["result"]["capabilities"]["tools"].is_object(), "{v}");
    drop(stdin);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut server.stderr.take().expect("stderr"), &mut err)
        .expect("stderr");
    let status = server.wait().expect("ends");
    assert!(status.success(), "{status}");
    assert_eq!(err.matches("-32700").count(), 2, "{err}");
    assert_eq!(err.matches("-32600").count(), 1, "{err}");
}

/// An MCP session over stdio, driven line by line.
struct Session {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    out: BufReader<std::process::ChildStdout>,
    next_id: i64,
}

impl Session {
    /// `spark-triage mcp ARGS`, initialized.
    fn start(args: &[&str]) -> Self {
        let mut child = mcp_on_stdio(args, Stdio::null(), Duration::from_secs(120));
        let stdin = child.stdin.take().expect("stdin");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Self {
            child,
            stdin,
            out,
            next_id: 1,
        };
        let init = s.ask(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        writeln!(
            s.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .expect("writes");
        s
    }

    fn ask(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .expect("writes");
        let mut line = String::new();
        self.out.read_line(&mut line).expect("reads");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        assert_eq!(v["id"], id, "{v}");
        v
    }

    /// A tool's answer: its text, and whether it is an error.
    fn tool(&mut self, name: &str, arguments: Value) -> (String, bool) {
        let v = self.ask("tools/call", json!({"name": name, "arguments": arguments}));
        let text = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("a text answer: {v}"))
            .to_owned();
        (text, v["result"]["isError"] == true)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// With the cluster unreachable at launch, the server still answers (#55: it exited before
/// `initialize`, so an agent host saw a dead server), and each tool says at once why it
/// has no answer.
#[test]
fn an_unreachable_cluster_at_launch_is_said_by_each_tool() {
    let dir = std::env::temp_dir().join(format!("st-mcp-dead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let dead = dir.join("dead.kubeconfig");
    std::fs::write(&dead, kubeconfig_yaml("http://127.0.0.1:9", "default")).expect("writes");
    // The default --request-timeout (30 s): a tool used to wait twice that before it said.
    let mut mcp = Session::start(&["--kubeconfig", dead.to_str().expect("utf-8")]);
    let asked = std::time::Instant::now();
    let (text, error) = mcp.tool("list_apps", json!({}));
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "{:?}",
        asked.elapsed()
    );
    assert!(error, "{text}");
    assert!(
        text.contains("no answer from the cluster yet")
            && text.contains("cannot reach the API server"),
        "{text}"
    );
    drop(mcp);
    let _ = std::fs::remove_dir_all(dir);
}

/// A live answer says how old its view is, and once the cluster stops answering says it may
/// be out of date (#55: with the cluster unreachable for 45 s the answers read exactly as
/// before, and an agent would report executors as running that may be long gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_answers_say_their_age_and_warn_when_stale() {
    let sim = start_sim("mixed", 1.0, &[]).await;
    let kc = sim.kubeconfig.to_str().expect("utf-8").to_owned();
    let mut mcp = tokio::task::spawn_blocking(move || {
        Session::start(&[
            "--kubeconfig",
            &kc,
            "-n",
            "spark-jobs",
            "--poll-interval",
            "1s",
            "--request-timeout",
            "1s",
            "--no-driver-api",
        ])
    })
    .await
    .expect("joins");
    let (text, error) = tokio::task::block_in_place(|| mcp.tool("list_apps", json!({})));
    assert!(!error, "{text}");
    let fresh: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(fresh["as_of"]["stale"], false, "{fresh}");
    assert!(
        fresh["as_of"]["last_list_seconds_ago"]
            .as_f64()
            .is_some_and(|s| s < 3.0),
        "{fresh}"
    );
    assert!(fresh["as_of"]["warning"].is_null(), "{fresh}");
    assert_eq!(
        fresh["as_of"]["sources"]["pod watch"], "connected",
        "{fresh}"
    );
    sim.stop().await;
    // Stale past two relists and a request's timeout (3 s here).
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (text, error) = tokio::task::block_in_place(|| mcp.tool("list_apps", json!({})));
    assert!(!error, "{text}");
    let stale: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(stale["as_of"]["stale"], true, "{stale}");
    assert!(
        stale["as_of"]["warning"]
            .as_str()
            .is_some_and(|w| w.contains("may be out of date")),
        "{stale}"
    );
    let (text, _) =
        tokio::task::block_in_place(|| mcp.tool("app_verdict", json!({"app": "etl-nightly"})));
    let apps: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(apps[0]["as_of"]["stale"], true, "{apps}");
    drop(mcp);
}

/// An operator's application with no pod (#56) is an app for an agent too: `list_apps`
/// names its object and verdict, `app_verdict` gives the verdict whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_app_before_its_pods_is_listed_with_its_verdict() {
    let sim = start_sim("operators", 8.0, &[]).await;
    let kc = sim.kubeconfig.to_str().expect("utf-8").to_owned();
    let mut mcp = tokio::task::spawn_blocking(move || {
        Session::start(&[
            "--kubeconfig",
            &kc,
            "-A",
            "--poll-interval",
            "1s",
            "--no-driver-api",
        ])
    })
    .await
    .expect("joins");
    // The operator's two submissions take a moment (well under a second here).
    let mut nightly = Value::Null;
    for _ in 0..40 {
        let (text, error) = tokio::task::block_in_place(|| mcp.tool("list_apps", json!({})));
        assert!(!error, "{text}");
        let listed: Value = serde_json::from_str(&text).expect("JSON");
        nightly = listed["apps"]
            .as_array()
            .expect("apps")
            .iter()
            .find(|a| a["app_name"] == "nightly")
            .cloned()
            .unwrap_or_default();
        if nightly["verdict"]["cause"] == "submission-failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        nightly["verdict"]["cause"], "submission-failed",
        "{nightly:#}"
    );
    assert_eq!(
        nightly["operator"]["kind"], "SparkApplication",
        "{nightly:#}"
    );
    assert_eq!(
        nightly["operator"]["describe"],
        "kubectl describe sparkapplications.sparkoperator.k8s.io -n etl nightly"
    );
    let (text, error) =
        tokio::task::block_in_place(|| mcp.tool("app_verdict", json!({"app": "hourly-report"})));
    assert!(!error, "{text}");
    assert!(text.contains("admission-waiting"), "{text}");
    drop(mcp);
}

/// `app_cost` on a real Spark 4.3 event log (an executor SIGKILLed under a shuffle): the
/// loss that cost the recomputation, its lines as the report says them; `list_apps` gives
/// its headline.
#[test]
fn app_cost_says_what_the_lost_shuffle_output_cost() {
    let log = root().join("tests/fixtures/eventlog/cost/shuffle-loss.json");
    let mut mcp = Session::start(&["--recording", log.to_str().expect("utf-8")]);
    let (text, error) = mcp.tool("app_cost", json!({"app": "cost-shuffle-loss"}));
    assert!(!error, "{text}");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    let app = &v[0];
    let loss = &app["cost"]["losses"][0];
    assert_eq!(loss["executor"], 1, "{v}");
    assert_eq!(loss["rerun_tasks"], 12, "{v}");
    let line = app["lines"][0].as_str().expect("a line");
    assert!(
        line.starts_with("executor 1, driver removed, lost the shuffle output of stage 0: 4 tasks of stage 0 rerun, stage 1 retried once"),
        "{line}"
    );
    let (text, error) = mcp.tool("list_apps", json!({}));
    assert!(!error, "{text}");
    assert!(text.contains("recompute"), "{text}");
    let (text, error) = mcp.tool("app_cost", json!({"app": "no-such-app"}));
    assert!(error, "{text}");
}
