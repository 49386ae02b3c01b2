//! `mcp`: the verdicts to AI agents over the Model Context Protocol (docs/mcp.md), on stdio
//! (newline-delimited JSON-RPC) or streamable HTTP on loopback, over the live cluster, a
//! recording or an event log. Read-only: the tools read the store the other commands read,
//! with the same redaction (what the store holds was redacted on the way in).

mod live;
mod sessions;
mod stdio;
mod tools;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use rmcp::ServiceExt;
use rmcp::handler::server::router::tool::ToolRouter;
use serde_json::{Value, json};
use spark_triage_core::model;

use crate::failure::Failure;
use crate::flags::{ClusterArgs, LiveArgs, ReadLimits, WatchArgs};
use crate::output::report::Window;
use crate::output::status;
use crate::publish::serve::{Bounds, ENDPOINTS};
use crate::publish::{metrics, serve};
use crate::record::{Header, timeline};
use crate::redact;
use crate::source::Health;
use crate::source::clock::Clock;
use crate::source::connection::DriversListed;
use crate::store::{Freshness, Snapshot};

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
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
}

/// `--http`: a loopback address, or a bare port on 127.0.0.1.
fn parse_loopback(s: &str) -> Result<std::net::SocketAddr, String> {
    let addr = metrics::parse_listen_addr(s)?;
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
        header: Arc<Header>,
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
    header: Arc<Header>,
    scope: String,
    /// The cluster's clock, and how old the last complete LIST may be before the answers
    /// say they may be out of date.
    clock: Clock,
    stale_after: Duration,
    /// The drivers whose executor list answered (waited for while their other reads end).
    listed: DriversListed,
}

/// The MCP server: six read-only tools.
#[derive(Clone)]
pub(crate) struct Triage {
    source: Source,
    #[allow(dead_code, reason = "the tool_handler macro reads it")]
    tool_router: ToolRouter<Self>,
}

/// A tool's answer: JSON text, or an error said in words.
type Answer = Result<String, String>;

fn to_json<T: serde::Serialize>(v: &T) -> Answer {
    serde_json::to_string_pretty(v).map_err(|e| format!("cannot write JSON: {e}"))
}

impl Triage {
    /// No such app in the view, and when the view may be out of date, that too (an app
    /// missing from a view the cluster stopped feeding may well exist).
    fn no_app(&self, snap: &Snapshot, app: &str) -> String {
        let said = status::unknown_app(snap, app, &self.describe());
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
                    "until": snap.now.as_ref().map(model::fmt_time),
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
            Freshness::Waiting => (None, true),
            Freshness::Fresh(a) => (Some(a), false),
            Freshness::Stale(a) => (Some(a), true),
        };
        let sources: std::collections::BTreeMap<&str, String> = snap
            .health
            .iter()
            .map(|(kind, h)| {
                let said = match h {
                    Health::Connecting => "connecting".to_owned(),
                    Health::Connected => "connected".to_owned(),
                    Health::Retrying { error } => format!("retrying: {error}"),
                    Health::Forbidden { permission } => {
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
            "now": model::fmt_time(&now),
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

    fn header(&self) -> Arc<Header> {
        match &self.source {
            Source::Read { header, .. } => header.clone(),
            Source::Live { link, .. } => match &*link.borrow() {
                Link::Up(up) => up.header.clone(),
                // Not reached: no tool gets this far (the snapshot says why first).
                Link::Connecting(_) => Arc::new(Header::new(
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
                // The cluster's view, then the drivers up to 2 s from the question; past
                // it (or the view, when that took longer), only those whose executor list
                // answered (one that does not answer holds no tool's
                // answer: its app has no driver view yet).
                let asked = tokio::time::Instant::now();
                let waited = tokio::time::timeout(*patience, async {
                    tokio::select! {
                        r = rx.wait_for(|s| status::ready(s, false)) => r.is_ok(),
                        _ = lx.wait_for(failing) => false,
                    }
                })
                .await
                .unwrap_or(false);
                let listed = match &*link.borrow() {
                    Link::Up(up) => Some(up.listed.clone()),
                    Link::Connecting(_) => None,
                };
                if let Some(listed) = listed.filter(|_| waited && *driver_poll) {
                    let grace = status::DRIVER_WAIT.saturating_sub(asked.elapsed());
                    let full = rx.wait_for(|s| status::ready(s, true));
                    if tokio::time::timeout(grace, full).await.is_err() {
                        let finishing = rx.wait_for(|s| {
                            status::ready_past_grace(s, true, true, |ns, app| listed.has(ns, app))
                        });
                        let _ = tokio::time::timeout(*patience, finishing).await;
                    }
                }
                let now = rx.borrow().clone();
                match waited {
                    true => Ok(now),
                    _ => {
                        if let Link::Connecting(Some(why)) = &*link.borrow() {
                            return Err(format!(
                                "no answer from the cluster yet: {why} (trying again; the tools answer once it does)"
                            ));
                        }
                        let why = status::report(&now, None).problems.join("; ");
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

pub(crate) fn run(live_args: &LiveArgs, args: McpArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    super::block_on(async move {
        let mut tasks = Vec::new();
        let source = match &args.recording {
            Some(path) => {
                let (header, state, _, _) =
                    timeline::read_state(path, &args.limits.reading(), None, None, |from, to| {
                        Window {
                            from,
                            to,
                            app: None,
                        }
                        .state()
                    })?;
                for d in &state.damaged {
                    eprintln!("warning: {}", redact::escape_controls(d));
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
                tasks.push(tokio::spawn(live::connected(
                    opts.clone(),
                    extra,
                    link_tx,
                    stx,
                )));
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
    let bounds = Bounds {
        lifetime: None,
        per_peer: 2 * ENDPOINTS.max_connections,
        ..ENDPOINTS
    };
    serve::bounded(listener, router, bounds, async move {
        super::wait_for_signal().await;
        cancel.cancel();
    })
    .await;
    Ok(())
}
