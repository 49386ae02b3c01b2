//! `mcp`: the verdicts to AI agents over the Model Context Protocol (docs/mcp.md), on stdio
//! (newline-delimited JSON-RPC) or streamable HTTP on loopback, over the live cluster, a
//! recording or an event log. Read-only: the tools read the store the other commands read,
//! with the same redaction (what the store holds was redacted on the way in).

mod sessions;
mod stdio;

use std::{process::ExitCode, sync::Arc, time::Duration};

use clap::Args;
use rmcp::{
    ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    failure::Failure,
    flags::{LiveArgs, ReadLimits},
    store::{AppRecord, Snapshot},
};

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Read a recording (a file or a directory of segments) or a Spark event log (a file,
    /// an `eventlog_v2_*` directory, or a directory of them) instead of a cluster.
    #[arg(long, value_name = "FILE|DIR")]
    pub recording: Option<std::path::PathBuf>,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio: a loopback address only
    /// (the tools answer anyone who can connect).
    #[arg(long, value_name = "ADDR", value_parser = parse_loopback)]
    pub http: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub limits: ReadLimits,
    #[command(flatten)]
    pub cluster: crate::flags::ClusterArgs,
    #[command(flatten)]
    pub watch: crate::flags::WatchArgs,
}

/// `--http`: a loopback address, or a bare port on 127.0.0.1.
fn parse_loopback(s: &str) -> Result<std::net::SocketAddr, String> {
    let addr = crate::publish::metrics::parse_listen_addr(s)?;
    // The addresses the SDK's Host check accepts (localhost, 127.0.0.1, ::1).
    let accepted =
        addr.ip() == std::net::Ipv4Addr::LOCALHOST || addr.ip() == std::net::Ipv6Addr::LOCALHOST;
    if accepted {
        Ok(addr)
    } else {
        Err(format!(
            "{s}: the MCP server has no authentication, so it listens on loopback only (127.0.0.1:PORT, [::1]:PORT)"
        ))
    }
}

/// Where the tools read from.
#[derive(Clone)]
enum Source {
    /// The cluster: a task keeps the store; the tools read its latest snapshot.
    Live {
        snap: tokio::sync::watch::Receiver<Arc<Snapshot>>,
        /// The connection once made; until then why not (the server answers meanwhile).
        link: tokio::sync::watch::Receiver<Link>,
        driver_poll: bool,
        /// How long a tool waits for the first complete answer.
        patience: Duration,
    },
    /// A recording or an event log, read once.
    Read {
        name: String,
        header: Arc<crate::record::Header>,
        snap: Arc<Snapshot>,
    },
}

/// The live source's connection.
#[derive(Clone)]
enum Link {
    /// Not made yet: the last attempt's failure, if one failed.
    Connecting(Option<String>),
    Up(Arc<Up>),
}

/// What the answers need of a made connection.
struct Up {
    header: Arc<crate::record::Header>,
    scope: String,
    /// The cluster's clock, and how old the last complete LIST may be before the answers
    /// say they may be out of date.
    clock: crate::source::clock::Clock,
    stale_after: Duration,
}

/// The MCP server: six read-only tools.
#[derive(Clone)]
pub(crate) struct Triage {
    source: Source,
    #[allow(dead_code, reason = "the tool_handler macro reads it")]
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct AppParam {
    /// The application's name (spark-app-name) or id (spark-app-selector).
    pub app: String,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub(crate) struct ListParam {
    /// `trouble` (default: the most trouble first, as the live view and `status` list them)
    /// or `name`.
    #[serde(default)]
    pub sort: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ExecutorParam {
    /// The application's name or id.
    pub app: String,
    /// The executor id (spark-exec-id): a number, or its digits as a string.
    #[serde(deserialize_with = "number_or_digits")]
    pub executor: i64,
}

/// An id as a number or a string of digits: agents send ids both ways ("7" as often as 7).
fn number_or_digits<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        N(i64),
        S(String),
    }
    match Id::deserialize(d)? {
        Id::N(n) => Ok(n),
        Id::S(s) => s.trim().parse().map_err(|_| {
            serde::de::Error::custom(format!("executor {s:?} is not an executor id (digits)"))
        }),
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct PodParam {
    /// The pod's name (an executor's or a driver's).
    pub pod: String,
    /// Its namespace, when the name is in several.
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct TimelineParam {
    /// The application's name or id.
    pub app: String,
    /// At most this many lines, the newest (default 200).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ReportParam {
    /// Only this application (name or id); every app when absent.
    #[serde(default)]
    pub app: Option<String>,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    pub format: Option<String>,
}

/// A tool's answer: JSON text, or an error said in words.
type Answer = Result<String, String>;

fn to_json<T: serde::Serialize>(v: &T) -> Answer {
    serde_json::to_string_pretty(v).map_err(|e| format!("cannot write JSON: {e}"))
}

#[tool_router]
impl Triage {
    #[tool(
        description = "Every Spark application in scope, the most trouble first (the app verdict's severity, then failures, missing and waiting executors; sort=name for by name): its verdict (cause, severity, summary), driver state, executors by Spark's state, executor endings by cause, and Spark's failure budget as numbers.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_apps(&self, Parameters(p): Parameters<ListParam>) -> Answer {
        let order = match p.sort.as_deref() {
            None | Some("trouble") => crate::output::AppOrder::Trouble,
            Some("name") => crate::output::AppOrder::Name,
            Some(s) => return Err(format!("sort {s:?}: trouble or name")),
        };
        let snap = self.snapshot().await?;
        let mut records: Vec<&std::sync::Arc<AppRecord>> = snap.apps.values().collect();
        crate::store::by_trouble(&mut records);
        order.apply(&mut records);
        let apps: Vec<Value> = records.into_iter().map(|a| app_summary(a)).collect();
        self.answer(&snap, json!({"source": self.describe(), "apps": apps}))
    }

    #[tool(
        description = "One application's verdict: its cause with evidence and hint, supporting findings, the driver, counts, pending reasons, failure budget, and each executor whose verdict is a warning or an error.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn app_verdict(&self, Parameters(p): Parameters<AppParam>) -> Answer {
        let snap = self.snapshot().await?;
        let mut report = crate::output::status::report(&snap, Some(&p.app));
        if report.apps.is_empty() {
            return Err(self.no_app(&snap, &p.app));
        }
        let mut out = Vec::new();
        for mut a in report.apps.drain(..) {
            let total = a.executors.len();
            a.executors.retain(|e| {
                e.severity
                    .is_some_and(|s| s != spark_triage_core::diagnose::Severity::Info)
            });
            let record = find_app(&snap, &a.namespace, &a.app_id);
            let mut v = serde_json::to_value(&a).map_err(|e| e.to_string())?;
            if let Some(list) = v["executors"].as_array_mut() {
                for e in list {
                    seconds_ago(e, snap.now);
                }
            }
            v["executors_total"] = json!(total);
            v["executors_shown"] = json!(
                "those whose verdict is a warning or an error; executor_verdict gives any one"
            );
            if let Some(r) = record {
                v["endings_by_cause"] = json!(endings_by_cause(r));
                if let Some(n) = not_kept(r) {
                    v["ended_not_kept"] = n;
                }
                v["budget"] = json!(r.budget_text());
                v["failure_budget"] = json!(r.budget_view());
            }
            out.push(v);
        }
        self.answer(&snap, Value::Array(out))
    }

    #[tool(
        description = "One executor's verdict: Spark's state, why it ended or waits (each finding with its evidence, witness and hint), what Spark counted, its pod's exit code and reason, node, times.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn executor_verdict(&self, Parameters(p): Parameters<ExecutorParam>) -> Answer {
        let snap = self.snapshot().await?;
        let apps = apps_named(&snap, &p.app);
        if apps.is_empty() {
            return Err(self.no_app(&snap, &p.app));
        }
        let found: Vec<Value> = apps
            .iter()
            .filter_map(|a| Some(executor_view(&snap, a, a.executors.get(&p.executor)?)))
            .collect();
        match found.len() {
            0 => Err(format!(
                "application {:?} has no executor {} (ids there: {})",
                p.app,
                p.executor,
                crate::publish::events::ranges(
                    &apps
                        .iter()
                        .flat_map(|a| a.executors.keys().copied())
                        .collect()
                )
            )),
            1 => self.answer(&snap, found.into_iter().next().unwrap_or_default()),
            _ => self.answer(&snap, Value::Array(found)),
        }
    }

    #[tool(
        description = "Explain a Spark pod by name: an executor's verdict (as executor_verdict), or for a driver pod its application's verdict.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain_pod(&self, Parameters(p): Parameters<PodParam>) -> Answer {
        let snap = self.snapshot().await?;
        let in_ns = |a: &AppRecord| p.namespace.as_deref().is_none_or(|n| n == a.namespace);
        let holds = |a: &AppRecord| {
            a.executors.values().any(|e| e.pod.name == p.pod)
                || a.driver.as_ref().is_some_and(|d| d.pod == p.pod)
        };
        let mut namespaces: Vec<&str> = snap
            .apps
            .values()
            .filter(|a| in_ns(a) && holds(a))
            .map(|a| a.namespace.as_str())
            .collect();
        namespaces.dedup();
        if namespaces.len() > 1 {
            return Err(format!(
                "pods named {:?} are in several namespaces ({}): give namespace",
                p.pod,
                namespaces.join(", ")
            ));
        }
        for a in snap.apps.values().filter(|a| in_ns(a)) {
            if let Some(e) = a.executors.values().find(|e| e.pod.name == p.pod) {
                return self.answer(&snap, executor_view(&snap, a, e));
            }
            if a.driver.as_ref().is_some_and(|d| d.pod == p.pod) {
                let v: spark_triage_core::diagnose::app_verdict::VerdictView = a.verdict().into();
                return self.answer(
                    &snap,
                    json!({
                        "pod": p.pod,
                        "role": "driver",
                        "namespace": a.namespace,
                        "app_id": a.app_id,
                        "app_name": a.app_name,
                        "verdict": v,
                    }),
                );
            }
        }
        // The namespace asked for, then what the view holds (it once read "in namespace
        // kube-system in namespace spark-jobs").
        Err(match p.namespace.as_deref() {
            Some(n) => format!(
                "no Spark pod named {:?} in namespace {n} (the view holds {})",
                p.pod,
                self.describe()
            ),
            None => format!("no Spark pod named {:?} in {}", p.pod, self.describe()),
        })
    }

    #[tool(
        description = "One application's timeline: its executors' transitions and the driver's and sources' events, oldest first, by the cluster's clocks (clock says whose: pod, container, driver, deletion, event; seen when only this tool's first sight of it is known).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn timeline(&self, Parameters(p): Parameters<TimelineParam>) -> Answer {
        let snap = self.snapshot().await?;
        let apps = apps_named(&snap, &p.app);
        if apps.is_empty() {
            return Err(self.no_app(&snap, &p.app));
        }
        let limit = p.limit.unwrap_or(200).clamp(1, 10_000);
        let out: Vec<Value> = apps
            .iter()
            .map(|a| {
                let skip = a.timeline.len().saturating_sub(limit);
                json!({
                    "namespace": a.namespace,
                    "app_id": a.app_id,
                    "app_name": a.app_name,
                    "lines_left_out": skip,
                    "timeline": a.timeline.iter().skip(skip).map(|t| json!({
                        "at": spark_triage_core::model::fmt_time(&t.at),
                        "clock": t.clock,
                        "executor": t.executor,
                        "text": t.text,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        self.answer(&snap, Value::Array(out))
    }

    #[tool(
        description = "The post-mortem report (what `spark-triage report` writes): failures, findings, the OOM breakdown, pending, missing executors, churn and recommendations; markdown, or json with format=json.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn report(&self, Parameters(p): Parameters<ReportParam>) -> Answer {
        let snap = self.snapshot().await?;
        if let Some(app) = &p.app
            && apps_named(&snap, app).is_empty()
        {
            return Err(self.no_app(&snap, app));
        }
        let state = crate::record::State {
            store: crate::store::Store::from_snapshot((*snap).clone()),
            ..Default::default()
        };
        let window = crate::output::report::Window {
            app: p.app.clone(),
            ..Default::default()
        };
        let r =
            crate::output::report::from_state(&self.describe(), &self.header(), &state, &window);
        match p.format.as_deref() {
            None | Some("markdown" | "md") => {
                let md = crate::output::report::markdown(&r);
                // A view that may be out of date says so before anything else.
                Ok(match self.as_of(&snap)["warning"].as_str() {
                    Some(w) => format!("> **Warning:** {w}\n\n{md}"),
                    None => md,
                })
            }
            Some("json") => self.answer(
                &snap,
                serde_json::to_value(&r).map_err(|e| format!("cannot write JSON: {e}"))?,
            ),
            Some(f) => Err(format!("format {f:?}: markdown or json")),
        }
    }
}

#[tool_handler]
impl ServerHandler for Triage {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            // Its own name and version, not the SDK's (an agent's client shows and logs it).
            .with_server_info(
                rmcp::model::Implementation::new("spark-triage", env!("CARGO_PKG_VERSION"))
                    .with_title("spark-triage: why Spark executors on Kubernetes ended"),
            )
            .with_instructions(
            "spark-triage explains the executor pods of Apache Spark applications on Kubernetes: \
             why each ended (container OOMKilled 137, JVM OOM 52, eviction, preemption, node kill…) \
             or waits, and each application's verdict. Start with list_apps; app_verdict and \
             executor_verdict give the evidence and the hint (the setting to change). Read-only.",
        )
    }
}

impl Triage {
    /// No such app in the view, and when the view may be out of date, that too (an app
    /// missing from a view the cluster stopped feeding may well exist).
    fn no_app(&self, snap: &Snapshot, app: &str) -> String {
        let said = crate::output::status::unknown_app(snap, app, &self.describe());
        match self.as_of(snap)["warning"].as_str() {
            Some(w) => format!("{said} (warning: {w})"),
            None => said,
        }
    }

    /// A tool's answer: `v`, each of its objects stamped with [`Triage::as_of`].
    fn answer(&self, snap: &Snapshot, mut v: Value) -> Answer {
        let as_of = self.as_of(snap);
        match &mut v {
            Value::Object(o) => drop(o.insert("as_of".into(), as_of)),
            Value::Array(items) => {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    item.insert("as_of".into(), as_of.clone());
                }
            }
            _ => {}
        }
        to_json(&v)
    }

    /// What an answer's view is as of. Live: now on the cluster's clock, the age of the last
    /// complete LIST of the pods, each source's health, and a `warning` when the view may be
    /// out of date (the LIST older than two relists and a request's timeout, or a source
    /// failing): with the cluster unreachable, the answers once read exactly as before, and
    /// an agent reported as running executors long gone. Read: the recording's last moment.
    fn as_of(&self, snap: &Snapshot) -> Value {
        let (clock, stale_after) = match &self.source {
            Source::Read { name, .. } => {
                return json!({
                    "recording": name,
                    "until": snap.now.as_ref().map(spark_triage_core::model::fmt_time),
                });
            }
            Source::Live { link, .. } => match &*link.borrow() {
                Link::Up(up) => (up.clock.clone(), up.stale_after),
                Link::Connecting(why) => {
                    return json!({
                        "connected": false,
                        "warning": format!(
                            "the cluster has not answered yet{}",
                            why.as_deref().map(|w| format!(": {w}")).unwrap_or_default()
                        ),
                    });
                }
            },
        };
        let now = clock.now();
        let (age, stale) = match snap.freshness(now, stale_after) {
            crate::store::Freshness::Waiting => (None, true),
            crate::store::Freshness::Fresh(a) => (Some(a), false),
            crate::store::Freshness::Stale(a) => (Some(a), true),
        };
        let sources: std::collections::BTreeMap<&str, String> = snap
            .health
            .iter()
            .map(|(kind, h)| {
                let said = match h {
                    crate::source::Health::Connecting => "connecting".to_owned(),
                    crate::source::Health::Connected => "connected".to_owned(),
                    crate::source::Health::Retrying { error } => format!("retrying: {error}"),
                    crate::source::Health::Forbidden { permission } => {
                        format!("forbidden: {permission}")
                    }
                };
                (kind.as_str(), said)
            })
            .collect();
        let failing: Vec<String> = sources
            .iter()
            .filter(|(_, h)| h.starts_with("retrying") || h.starts_with("forbidden"))
            .map(|(k, h)| format!("{k} {h}"))
            .collect();
        let seconds = age.map(|a| a.num_milliseconds() as f64 / 1000.0);
        let mut v = json!({
            "now": spark_triage_core::model::fmt_time(&now),
            "last_list_seconds_ago": seconds,
            "stale": stale,
            "sources": sources,
        });
        if stale || !failing.is_empty() {
            let list = match seconds {
                Some(s) => format!("the last complete LIST of the pods is {s:.0} s old"),
                None => "no complete LIST of the pods yet".to_owned(),
            };
            let why = if failing.is_empty() {
                String::new()
            } else {
                format!(" ({})", failing.join("; "))
            };
            v["warning"] = json!(format!(
                "{list}{why}: this answer may be out of date; executors shown running may be gone"
            ));
        }
        v
    }

    fn describe(&self) -> String {
        match &self.source {
            Source::Live { link, .. } => match &*link.borrow() {
                Link::Up(up) => format!("{} on {}", up.scope, up.header.server),
                Link::Connecting(_) => "the cluster (not reached yet)".to_owned(),
            },
            Source::Read { name, .. } => name.clone(),
        }
    }

    fn header(&self) -> Arc<crate::record::Header> {
        match &self.source {
            Source::Read { header, .. } => header.clone(),
            Source::Live { link, .. } => match &*link.borrow() {
                Link::Up(up) => up.header.clone(),
                // Not reached: no tool gets this far (the snapshot says why first).
                Link::Connecting(_) => Arc::new(crate::record::Header::new(
                    chrono::Utc::now(),
                    String::new(),
                    String::new(),
                    String::new(),
                )),
            },
        }
    }

    /// The store as of now; live, once the cluster answered completely (or the tool says
    /// why it has not).
    async fn snapshot(&self) -> Result<Arc<Snapshot>, String> {
        match &self.source {
            Source::Read { snap, .. } => Ok(snap.clone()),
            Source::Live {
                snap,
                link,
                driver_poll,
                patience,
            } => {
                // The cluster refused or did not answer an attempt: said at once, not after
                // twice --request-timeout (which outlives an agent's patience).
                let failing = |l: &Link| matches!(l, Link::Connecting(Some(_)));
                let mut rx = snap.clone();
                let mut lx = link.clone();
                let ready = |s: &Snapshot| crate::output::status::ready(s, *driver_poll);
                let waited = tokio::time::timeout(*patience, async {
                    tokio::select! {
                        r = rx.wait_for(|s| ready(s)) => r.is_ok(),
                        _ = lx.wait_for(failing) => false,
                    }
                })
                .await
                .unwrap_or(false);
                let now = rx.borrow().clone();
                match waited {
                    true => Ok(now),
                    _ => {
                        if let Link::Connecting(Some(why)) = &*link.borrow() {
                            return Err(format!(
                                "no answer from the cluster yet: {why} (trying again; the tools answer once it does)"
                            ));
                        }
                        let why = crate::output::status::report(&now, None)
                            .problems
                            .join("; ");
                        Err(format!(
                            "no complete answer from the API server within {}s{}",
                            patience.as_secs(),
                            if why.is_empty() {
                                String::new()
                            } else {
                                format!(": {why}")
                            }
                        ))
                    }
                }
            }
        }
    }
}

fn find_app<'a>(snap: &'a Snapshot, ns: &str, id: &str) -> Option<&'a AppRecord> {
    snap.apps.get(&(ns.to_owned(), id.to_owned())).map(|a| &**a)
}

fn apps_named<'a>(snap: &'a Snapshot, app: &str) -> Vec<&'a AppRecord> {
    snap.apps
        .values()
        .filter(|a| a.app_id == app || a.app_name.as_deref() == Some(app))
        .map(|a| &**a)
        .collect()
}

/// Ended executors by their verdict's cause, those let go past the store's bound with them
/// (as `report` counts them).
fn endings_by_cause(a: &AppRecord) -> std::collections::BTreeMap<String, usize> {
    let mut m = a.trimmed.by_cause.clone();
    for e in a.executors.values() {
        if crate::store::ended_at(e).is_some() {
            let cause = e.verdict.cause_code();
            *m.entry(cause.to_owned()).or_default() += 1;
        }
    }
    m
}

/// Ended executors counted but no longer kept (past the store's bound), when there are.
fn not_kept(a: &AppRecord) -> Option<Value> {
    let t = &a.trimmed;
    (!t.is_empty()).then(|| {
        json!({
            "executors": t.executors,
            "failures": t.failures,
            "note": "the first to end, counted in endings_by_cause but not listed: a store keeps 25,000 executors whole",
        })
    })
}

fn app_summary(a: &AppRecord) -> Value {
    let v = a.verdict();
    let c = v.cause();
    let mut out = json!({
        "namespace": a.namespace,
        "app_id": a.app_id,
        "app_name": a.app_name,
        "verdict": {"cause": c.code, "severity": c.severity, "summary": c.summary},
        "driver": v.driver.as_ref().map(|d| json!({"pod": d.pod, "state": d.state.as_str(), "phase": d.phase})),
        "counts": a.counts(),
        "endings_by_cause": endings_by_cause(a),
        "failure_budget": a.budget_view(),
        "budget": a.budget_text(),
    });
    if let Some(n) = not_kept(a) {
        out["ended_not_kept"] = n;
    }
    out
}

fn executor_view(snap: &Snapshot, a: &AppRecord, e: &crate::store::ExecutorRecord) -> Value {
    // The status document's line for it (times, ending, what Spark did), and every finding
    // whole: evidence and hint.
    let status = crate::output::status::report(snap, Some(&a.app_id));
    let line = status
        .apps
        .iter()
        .find(|s| s.namespace == a.namespace)
        .and_then(|s| s.executors.iter().find(|x| x.id == e.id));
    let mut v = line
        .and_then(|l| serde_json::to_value(l).ok())
        .unwrap_or_else(|| json!({"id": e.id, "pod": e.pod.name}));
    v["namespace"] = json!(a.namespace);
    v["app_id"] = json!(a.app_id);
    v["app_name"] = json!(a.app_name);
    v["findings"] = serde_json::to_value(e.findings()).unwrap_or_default();
    seconds_ago(&mut v, snap.now);
    v
}

/// Beside an executor's times, how long ago they were by the view's clock, in seconds
/// (`age_seconds` since its pod was created, `ended_seconds_ago`): an agent need not do
/// date arithmetic on RFC 3339 strings.
fn seconds_ago(v: &mut Value, now: Option<spark_triage_core::model::Time>) {
    let Some(now) = now else { return };
    let ago = |field: &str| {
        let t = chrono::DateTime::parse_from_rfc3339(v.get(field)?.as_str()?).ok()?;
        Some((now - t.to_utc()).num_seconds().max(0))
    };
    let (age, ended) = (ago("created_at"), ago("ended_at"));
    if let Some(a) = age {
        v["age_seconds"] = json!(a);
    }
    if let Some(e) = ended {
        v["ended_seconds_ago"] = json!(e);
    }
}

pub(crate) fn run(live_args: &LiveArgs, args: McpArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    super::block_on(async move {
        let mut tasks = Vec::new();
        let source = match &args.recording {
            Some(path) => {
                let (header, state, _, _) = crate::record::timeline::read_state(
                    path,
                    &args.limits.reading(),
                    None,
                    None,
                    |from, to| {
                        crate::output::report::Window {
                            from,
                            to,
                            app: None,
                        }
                        .state()
                    },
                )?;
                for d in &state.damaged {
                    eprintln!("warning: {}", crate::redact::escape_controls(d));
                }
                Source::Read {
                    name: path.file_name().map_or_else(
                        || path.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    ),
                    header: Arc::new(header),
                    snap: Arc::new(state.store.snapshot()),
                }
            }
            None => {
                let (link_tx, link) = tokio::sync::watch::channel(Link::Connecting(None));
                let (stx, srx) = tokio::sync::watch::channel(Arc::new(Snapshot::default()));
                // Connected in the background: `initialize` is answered at once, whatever
                // the cluster (or the credential plugin, which fails offline) does.
                let extra = live_args.event_logs(&args.limits.reading().store);
                tasks.push(tokio::spawn(connected(opts.clone(), extra, link_tx, stx)));
                Source::Live {
                    snap: srx,
                    link,
                    driver_poll: opts.driver_poll.is_some(),
                    patience: 2 * opts.timeout(),
                }
            }
        };
        let server = Triage {
            source,
            tool_router: Triage::tool_router(),
        };
        let served = match args.http {
            Some(addr) => serve_http(server, addr).await,
            None => serve_stdio(server).await,
        };
        for t in tasks {
            t.abort();
        }
        served?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Aborts its tasks when dropped (the connecting task's children, when it is).
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// The live source: the connection (made again every few seconds, up to 30, while it
/// fails: the server answers meanwhile, and each tool says why it has no answer), then its
/// sources and the store, until this task is aborted.
async fn connected(
    opts: crate::source::connection::LiveOptions,
    extra: Option<Arc<dyn crate::source::extra::Extra>>,
    link: tokio::sync::watch::Sender<Link>,
    snap: tokio::sync::watch::Sender<Arc<Snapshot>>,
) {
    let mut attempt = crate::source::connection::connect(&opts).await;
    let mut wait = Duration::from_secs(2);
    let mut conn = loop {
        match attempt {
            Ok(conn) => break conn,
            Err(e) => {
                let why = crate::redact::one_line(&e.to_string());
                eprintln!(
                    "spark-triage mcp: {why}; trying again in {} s",
                    wait.as_secs()
                );
                let _ = link.send(Link::Connecting(Some(why)));
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(30));
                attempt = crate::source::connection::connect(&opts).await;
            }
        }
    };
    conn.extra = extra;
    let (tx, rx) = tokio::sync::mpsc::channel(4096);
    let mut tasks = crate::source::live::spawn(&conn, tx);
    tasks.push(tokio::spawn(keep_store(rx, snap, conn.clock.clone())));
    let _tasks = AbortOnDrop(tasks);
    let _ = link.send(Link::Up(Arc::new(Up {
        header: Arc::new(crate::record::recorder::recording_header(&conn)),
        scope: conn.scope.describe(),
        clock: conn.clock.clone(),
        stale_after: conn.stale_after(),
    })));
    std::future::pending::<()>().await;
}

/// The live store: every source event applied (a driver's executor list after the first
/// LIST, as `status` does), the snapshot published at most every 250 ms.
async fn keep_store(
    mut rx: tokio::sync::mpsc::Receiver<crate::source::SourceEvent>,
    tx: tokio::sync::watch::Sender<Arc<Snapshot>>,
    clock: crate::source::clock::Clock,
) {
    let mut store = crate::store::Store::new();
    let mut held = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut changed = false;
    let mut last = tokio::time::Instant::now();
    loop {
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(ev) => {
                    super::apply_after_first_list(&mut store, &mut held, ev);
                    changed = true;
                }
                None => return,
            },
            _ = tick.tick() => {
                // What changed, at most every 250 ms; and every second anyway, so that waits
                // and ages grow on a quiet cluster.
                if changed || last.elapsed() >= Duration::from_secs(1) {
                    // As of now on the cluster's clock (a wait is as long as it is now).
                    store.apply(crate::source::SourceEvent::Tick { at: clock.now() });
                    changed = false;
                    last = tokio::time::Instant::now();
                    if tx.send(Arc::new(store.snapshot())).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

async fn serve_stdio(server: Triage) -> Result<(), Failure> {
    let (ends, written) = stdio::front();
    let running = server
        .serve(ends)
        .await
        .map_err(|e| Failure::Runtime(format!("MCP on stdio: {e}")))?;
    tokio::select! {
        r = running.waiting() => {
            r.map_err(|e| Failure::Runtime(format!("MCP on stdio: {e}")))?;
            // Every answer out before the process ends.
            let _ = tokio::time::timeout(Duration::from_secs(5), written).await;
        }
        () = super::wait_for_signal() => {}
    }
    Ok(())
}

async fn serve_http(server: Triage, addr: std::net::SocketAddr) -> Result<(), Failure> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    // No browser page may call it: any request with an Origin is refused (agents send none).
    let config = StreamableHttpServerConfig::default().enforce_origin_validation();
    // Ended on a signal: the open event streams too (else a graceful shutdown waits on them).
    let cancel = config.cancellation_token.clone();
    let capped = std::sync::Arc::new(sessions::Capped::new(sessions::MAX_SESSIONS));
    let service = StreamableHttpService::new(move || Ok(server.clone()), capped.clone(), config);
    let router = axum::Router::new().nest_service("/mcp", service).layer(
        axum::middleware::from_fn_with_state(capped, sessions::refuse_when_full),
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::Runtime(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr().unwrap_or(addr);
    eprintln!("serving MCP (streamable HTTP) on http://{bound}/mcp");
    // Bounded as the metrics endpoints are, but an event stream lasts as long as it is
    // used (a session's own keep-alive ends an idle one), and every client is on loopback
    // (one address: its share is every place and every wait).
    let bounds = crate::publish::serve::Bounds {
        lifetime: None,
        per_peer: 2 * crate::publish::serve::ENDPOINTS.max_connections,
        ..crate::publish::serve::ENDPOINTS
    };
    crate::publish::serve::bounded(listener, router, bounds, async move {
        super::wait_for_signal().await;
        cancel.cancel();
    })
    .await;
    Ok(())
}
