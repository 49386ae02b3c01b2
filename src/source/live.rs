//! Live sources against a real (or simulated) API server, as Spark's driver watches its
//! executors: a pod watch (kube-runtime's watcher with `backoff.rs`'s backoff, reset only
//! by a delivery: a dropped watch is resumed, a 410 relists; its own LIST is the first
//! complete view), a complete LIST
//! every `--poll-interval` (30 s, as Spark; metadata only: `poll.rs`), an event watch of what
//! the diagnoses read, and each driver's `spark.properties` from its ConfigMap.
//!
//! This is the edge: it stamps every event with the local clock when it arrives. Errors
//! become `SourceHealth` events (retrying with the cause; forbidden with the permission).

use std::{collections::BTreeSet, path::PathBuf, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::{NamespaceResourceScope, api::core::v1::ConfigMap};
use kube::{
    Api, Client, Config, Resource,
    api::ListParams,
    config::{KubeConfigOptions, Kubeconfig},
    runtime::watcher,
};
use tokio::{sync::mpsc, task::JoinHandle};

pub use super::driver_view::{BACKGROUND_FACTOR, DriverFocus, ui_path};
use super::{
    Health, SourceEvent, SourceKind,
    bounds::BoundsLayer,
    errors::{self, forbidden_permission, health_of},
    lean::{LeanEvent, LeanPod, PodMeta},
    parse_properties,
    poll::{Delivered, pod_poll},
};
use crate::redact;
use spark_triage_core::model::{ExecutorPod, Role};

/// Where to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Namespace(String),
    All,
}

impl Scope {
    pub fn describe(&self) -> String {
        match self {
            Self::Namespace(ns) => format!("namespace {ns}"),
            Self::All => "all namespaces".to_owned(),
        }
    }
}

/// The live flags.
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// `-n`; `None` = the kubeconfig's namespace.
    pub namespace: Option<String>,
    /// `-A`.
    pub all_namespaces: bool,
    /// `-l`, added to `spark-role in (driver,executor)`.
    pub selector: Option<String>,
    pub poll_interval: Duration,
    /// How often to read each driver's executor list (its REST API through the API
    /// server's service proxy); `None` = never (`--no-driver-api`).
    pub driver_poll: Option<Duration>,
    /// How long one request (and the exec credential plugin) may take; zero = the default.
    pub request_timeout: Duration,
}

/// `--request-timeout`'s default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

impl LiveOptions {
    /// The request timeout in force.
    pub fn timeout(&self) -> Duration {
        if self.request_timeout.is_zero() {
            DEFAULT_REQUEST_TIMEOUT
        } else {
            self.request_timeout
        }
    }
}

/// A connected client and the resolved scope.
#[derive(Clone)]
pub struct Connection {
    pub client: Client,
    pub scope: Scope,
    pub context: String,
    pub selector: String,
    /// The API server's host and port (never credentials).
    pub server: String,
    /// The kubeconfig user name (for the actions log).
    pub user: String,
    pub driver_poll: Option<Duration>,
    /// Driver pods only (the driver REST view), narrowed by `-l` like `selector`.
    pub driver_selector: String,
    pub focus: DriverFocus,
    /// Every request's bound (`--request-timeout`).
    pub timeout: Duration,
    /// How often the pod poll LISTs (the watchdog calls a source stale after two).
    pub poll_interval: Duration,
    /// The kubeconfig given with `--kubeconfig` (for commands the user copies).
    pub kubeconfig: Option<PathBuf>,
    /// The user's own `-l` selector, if any (the header and the scope notes say it).
    pub user_selector: Option<String>,
    /// The credentials every request carries (refusals counted, fetched again after a 401).
    pub credentials: super::credentials::Credentials,
}

impl Connection {
    /// The scope as the header says it: `namespace spark-jobs · -l team=data`.
    pub fn describe_scope(&self) -> String {
        match &self.user_selector {
            Some(s) => format!("{} · -l {s}", self.scope.describe()),
            None => self.scope.describe(),
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("scope", &self.scope)
            .field("context", &self.context)
            .field("selector", &self.selector)
            .finish_non_exhaustive()
    }
}

/// Why no connection could be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot read the kubeconfig {path}: {reason}")]
    Kubeconfig { path: String, reason: String },
    #[error("cannot use the kubeconfig: {0}")]
    Config(String),
    #[error("cannot reach the API server {server}: {reason}")]
    Unreachable { server: String, reason: String },
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The API server refused the credentials (HTTP 401), even fetched again.
    #[error("not authenticated: {0}")]
    Unauthorized(String),
}

/// The selector every source uses: Spark's pods, narrowed by the user's `-l`.
pub fn selector(user: Option<&str>) -> String {
    narrowed("spark-role in (driver,executor)", user)
}

/// `base`, narrowed by the user's `-l`.
pub(super) fn narrowed(base: &str, user: Option<&str>) -> String {
    match user.map(str::trim).filter(|s| !s.is_empty()) {
        Some(u) => format!("{base},{u}"),
        None => base.to_owned(),
    }
}

/// Builds a client from the kubeconfig flags and checks the server answers a LIST in scope.
pub async fn connect(opts: &LiveOptions) -> Result<Connection, ConnectError> {
    let kube_opts = KubeConfigOptions {
        context: opts.context.clone(),
        ..KubeConfigOptions::default()
    };
    let kc = match &opts.kubeconfig {
        Some(path) => Some(
            Kubeconfig::read_from(path).map_err(|e| ConnectError::Kubeconfig {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?,
        ),
        None => Kubeconfig::read().ok(),
    };
    // A context the kubeconfig does not have: say which it has (kube's own error does not).
    if let (Some(name), Some(kc)) = (&opts.context, &kc)
        && let Some(why) = unknown_context(kc, name)
    {
        return Err(ConnectError::Config(why));
    }
    // The context's real name (the header and the actions log say which cluster).
    let context_name = opts
        .context
        .clone()
        .or_else(|| kc.as_ref().and_then(|kc| kc.current_context.clone()));
    let user = kc
        .as_ref()
        .and_then(|kc| {
            let ctx_name = context_name.clone()?;
            let ctx = kc.contexts.iter().find(|c| c.name == ctx_name)?;
            ctx.context.as_ref()?.user.clone()
        })
        .unwrap_or_else(|| "unknown".to_owned());
    // The context's cluster's proxy-url (kube reads it, and the environment's, its own way).
    let cluster_proxy = kc.as_ref().and_then(|kc| {
        let ctx_name = context_name.clone()?;
        let ctx = kc.contexts.iter().find(|c| c.name == ctx_name)?;
        let cluster = ctx.context.as_ref()?.cluster.clone();
        kc.clusters
            .iter()
            .find(|c| c.name == cluster)?
            .cluster
            .as_ref()?
            .proxy_url
            .clone()
    });
    let config = match (&opts.kubeconfig, kc) {
        (Some(_), Some(kc)) => Config::from_custom_kubeconfig(kc, &kube_opts)
            .await
            .map_err(|e| e.to_string()),
        // No kubeconfig at all: in a pod, its ServiceAccount (the flight recorder).
        (None, None) if opts.context.is_none() => Config::infer().await.map_err(|e| e.to_string()),
        _ => Config::from_kubeconfig(&kube_opts)
            .await
            .map_err(|e| e.to_string()),
    }
    .map_err(|e| {
        let hint = if e.contains("NO_PROXY") {
            " (kube cannot read an empty NO_PROXY entry: remove doubled or trailing commas)"
        } else {
            ""
        };
        ConnectError::Config(format!(
            "{}{hint}",
            redact::one_line(&redact::credentials(&e))
        ))
    })?;
    let timeout = opts.timeout();
    let mut config = config;
    config.connect_timeout = Some(timeout);
    config.proxy_url =
        super::proxy::proxy_for(&config.cluster_url, cluster_proxy.as_deref(), |k| {
            std::env::var(k).ok()
        })
        .map_err(ConnectError::Config)?;
    let server = config.cluster_url.to_string();
    let authority = config
        .cluster_url
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    let default_ns = config.default_namespace.clone();
    // An exec plugin's token or a token file: fetched again after a 401 (client-go's way).
    let credentials = super::credentials::Credentials::take_over(&mut config, timeout)
        .await
        .map_err(|e| match e {
            super::credentials::FetchError::Timeout(_) => ConnectError::Unreachable {
                server: server.clone(),
                reason: e.to_string(),
            },
            super::credentials::FetchError::Failed(why) => ConnectError::Config(why),
        })?;
    let client = build_client(config, timeout, credentials.clone())
        .await
        .map_err(|reason| match reason {
        BuildError::Config(reason) => ConnectError::Config(reason),
        BuildError::Timeout => ConnectError::Unreachable {
            server: server.clone(),
            reason: format!(
                "the kubeconfig's exec credential plugin did not finish within {} (--request-timeout)",
                spark_triage_core::diagnose::human_std_duration(timeout)
            ),
        },
    })?;
    let scope = if opts.all_namespaces {
        Scope::All
    } else {
        Scope::Namespace(opts.namespace.clone().unwrap_or(default_ns))
    };
    let sel = selector(opts.selector.as_deref());
    let api: Api<PodMeta> = pods_api(&client, &scope);
    // The first request tells whether the cluster is there; a transient 5xx or 429 (an API
    // server restarting, overloaded, a flaky proxy) is retried twice before giving up.
    let probe = ListParams::default().labels(&sel).limit(1);
    let mut first = api.list(&probe).await;
    // Refused: the credential was fetched again by then; once more with it.
    if let Err(e) = &first
        && super::credentials::refused_of(e).is_some()
    {
        first = api.list(&probe).await;
    }
    for wait_ms in [500, 1500] {
        match &first {
            Err(kube::Error::Api(s)) if s.code >= 500 || s.code == 429 => {
                tokio::time::sleep(Duration::from_millis(wait_ms)).await;
                first = api.list(&probe).await;
            }
            _ => break,
        }
    }
    match first {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 403 => {
            return Err(ConnectError::Forbidden(crate::redact::one_line(&s.message)));
        }
        Err(e) if super::credentials::refused_of(&e).is_some() => {
            return Err(ConnectError::Unauthorized(errors::describe(&e)));
        }
        Err(kube::Error::Api(s)) if s.code == 400 => {
            return Err(ConnectError::Config(format!(
                "the API server rejected the selector {sel:?}: {}",
                crate::redact::one_line(&s.message)
            )));
        }
        Err(e) => {
            return Err(ConnectError::Unreachable {
                server,
                reason: format!(
                    "{} (waiting for the first LIST of pods)",
                    errors::describe(&e)
                ),
            });
        }
    }
    Ok(Connection {
        client,
        scope,
        context: context_name.unwrap_or_else(|| "in-cluster".to_owned()),
        selector: sel,
        server: authority,
        user,
        driver_poll: opts.driver_poll,
        driver_selector: narrowed("spark-role=driver", opts.selector.as_deref()),
        focus: DriverFocus::default(),
        timeout,
        poll_interval: opts.poll_interval,
        kubeconfig: opts.kubeconfig.clone(),
        user_selector: opts.selector.clone().filter(|s| !s.trim().is_empty()),
        credentials,
    })
}

/// Why `name` is not a context of this kubeconfig, listing those it has (`None`: it is).
fn unknown_context(kc: &Kubeconfig, name: &str) -> Option<String> {
    if kc.contexts.iter().any(|c| c.name == name) {
        return None;
    }
    let mut names: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    Some(match names.is_empty() {
        true => format!("no context {name:?}: the kubeconfig has no contexts"),
        false => format!(
            "no context {name:?} in the kubeconfig; it has: {}",
            names.join(", ")
        ),
    })
}

pub(super) fn one_line(s: &str) -> String {
    redact::one_line(&redact::credentials(s))
}

enum BuildError {
    Config(String),
    Timeout,
}

/// The client, with every request bounded ([`BoundsLayer`]). Building it may run the
/// kubeconfig's exec credential plugin, synchronously inside kube: it runs on a thread of
/// its own so a plugin that hangs costs a timeout, not the process.
async fn build_client(
    config: Config,
    timeout: Duration,
    credentials: super::credentials::Credentials,
) -> Result<Client, BuildError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(kube::client::ClientBuilder::try_from(config));
    });
    match tokio::time::timeout(timeout, rx).await {
        // Building the client itself needs the runtime (it spawns its request buffer).
        Ok(Ok(Ok(builder))) => Ok(builder
            .with_layer(&super::credentials::AuthLayer(credentials))
            .with_layer(&BoundsLayer::new(timeout))
            .build()),
        Ok(Ok(Err(e))) => Err(BuildError::Config(errors::describe(&e))),
        Ok(Err(_)) => Err(BuildError::Config("building the client failed".to_owned())),
        Err(_) => Err(BuildError::Timeout),
    }
}

/// A watcher's error in one line.
fn describe_watch(e: &watcher::Error) -> String {
    match e {
        watcher::Error::InitialListFailed(k)
        | watcher::Error::WatchStartFailed(k)
        | watcher::Error::WatchFailed(k) => errors::describe(k),
        other => one_line(&other.to_string()),
    }
}

pub(super) fn pods_api<K>(client: &Client, scope: &Scope) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    match scope {
        Scope::Namespace(ns) => Api::namespaced(client.clone(), ns),
        Scope::All => Api::all(client.clone()),
    }
}

pub(super) fn now() -> spark_triage_core::model::Time {
    super::clock::now()
}

/// Starts every source; events go to `tx` until it closes.
pub fn spawn(
    conn: &Connection,
    poll_interval: Duration,
    tx: mpsc::Sender<SourceEvent>,
) -> Vec<JoinHandle<()>> {
    let delivered = Delivered::default();
    let wanted = super::groups::Wanted::default();
    let mut tasks = vec![
        tokio::spawn(pod_watch(
            conn.clone(),
            tx.clone(),
            delivered.clone(),
            wanted.clone(),
        )),
        tokio::spawn(pod_poll(conn.clone(), poll_interval, tx.clone(), delivered)),
        tokio::spawn(super::quotas::quota_poll(
            conn.clone(),
            poll_interval,
            tx.clone(),
        )),
        tokio::spawn(super::scope::scope_note(conn.clone(), tx.clone())),
        tokio::spawn(super::groups::group_poll(
            conn.clone(),
            poll_interval,
            wanted,
            tx.clone(),
        )),
    ];
    if let Some(every) = conn.driver_poll {
        tasks.push(tokio::spawn(super::driver_view::driver_poll(
            conn.clone(),
            every,
            tx.clone(),
        )));
    }
    tasks.push(tokio::spawn(event_watch(conn.clone(), tx)));
    tasks
}

pub(super) async fn send(tx: &mpsc::Sender<SourceEvent>, ev: SourceEvent) -> bool {
    tx.send(ev).await.is_ok()
}

async fn pod_watch(
    conn: Connection,
    tx: mpsc::Sender<SourceEvent>,
    delivered: Delivered,
    wanted: super::groups::Wanted,
) {
    let api: Api<LeanPod> = pods_api(&conn.client, &conn.scope);
    let cfg = watcher::Config::default().labels(&conn.selector);
    let mut stream = super::backoff::watch_backoff(watcher(api, cfg));
    let mut configs_read: BTreeSet<(String, String)> = BTreeSet::new();
    send(
        &tx,
        SourceEvent::SourceHealth {
            source: SourceKind::PodWatch,
            health: Health::Connecting,
            at: now(),
        },
    )
    .await;
    // Health follows the last success: after an error, the first event through says the
    // watch works again (a resumed watch sends no InitDone).
    let mut failing = false;
    // The watch's (re)list, gathered: it is a complete LIST, so it is delivered as one (the
    // first view needs no LIST of its own, and a relist after a 410 finds what vanished in
    // the gap at once).
    let mut listing: Option<Vec<Arc<ExecutorPod>>> = None;
    while let Some(item) = stream.next().await {
        let outcome = super::backoff::outcome(&item);
        if !recovered(&mut failing, outcome, SourceKind::PodWatch, &tx).await {
            return;
        }
        let ev = match item {
            Ok(
                watcher::Event::Apply(LeanPod { pod, .. })
                | watcher::Event::InitApply(LeanPod { pod, .. }),
            ) => {
                maybe_read_config(&conn, &pod, &mut configs_read, &tx);
                wanted.note(&pod);
                if let Some(list) = listing.as_mut() {
                    // Behind an `Arc` from here on: the store keeps this allocation, and
                    // the list of 100,000 pods is a list of pointers, not of pods.
                    list.push(Arc::new(pod));
                    continue;
                }
                delivered.saw(&pod);
                SourceEvent::PodUpserted {
                    pod: std::sync::Arc::new(pod),
                    at: now(),
                }
            }
            Ok(watcher::Event::Delete(LeanPod { pod, .. })) => {
                delivered.saw(&pod);
                SourceEvent::PodDeleted {
                    pod: std::sync::Arc::new(pod),
                    at: now(),
                }
            }
            Ok(watcher::Event::Init) => {
                listing = Some(Vec::new());
                continue;
            }
            Ok(watcher::Event::InitDone) => {
                let pods = listing.take().unwrap_or_default();
                // kube's watcher does not hand out the list's resourceVersion; the newest pod
                // in it is a lower bound, which keeps missing-pod detection conservative (a
                // pod seen at or after it is never called missing by this list).
                let resource_version = Some(pods.iter().filter_map(|p| p.rv()).max().unwrap_or(0));
                pods.iter().for_each(|p| delivered.saw(p));
                let listed = SourceEvent::PodsListed {
                    pods,
                    resource_version,
                    at: now(),
                };
                if !send(&tx, listed).await {
                    return;
                }
                SourceEvent::SourceHealth {
                    source: SourceKind::PodWatch,
                    health: Health::Connected,
                    at: now(),
                }
            }
            // One unreadable line: the stream is up, the header stays as it is.
            Err(e) if outcome == super::backoff::Outcome::Garbled => {
                tracing::warn!(
                    "pod watch: a line could not be read: {}",
                    describe_watch(&e)
                );
                continue;
            }
            Err(e) => {
                let forbidden = match &e {
                    watcher::Error::InitialListFailed(k) | watcher::Error::WatchStartFailed(k) => {
                        forbidden_permission(k, "watch", "pods", &conn.scope)
                    }
                    _ => None,
                };
                SourceEvent::SourceHealth {
                    source: SourceKind::PodWatch,
                    health: health_of(&describe_watch(&e), forbidden),
                    at: now(),
                }
            }
        };
        if !send(&tx, ev).await {
            return;
        }
    }
}

/// Tracks a watch's failing state; on the first success after a failure, says the source
/// is connected again. False when the receiver is gone.
async fn recovered(
    failing: &mut bool,
    outcome: super::backoff::Outcome,
    source: SourceKind,
    tx: &mpsc::Sender<SourceEvent>,
) -> bool {
    use super::backoff::Outcome;
    // A (re)list that begins says nothing: only a delivery is a recovery.
    let ok = match outcome {
        Outcome::Starting | Outcome::Garbled => return true,
        Outcome::Delivered => true,
        Outcome::Failed => false,
    };
    let was = std::mem::replace(failing, !ok);
    if was && ok {
        tracing::info!("{source:?}: connected again");
        let health = Health::Connected;
        return send(
            tx,
            SourceEvent::SourceHealth {
                source,
                health,
                at: now(),
            },
        )
        .await;
    }
    true
}

/// Reads a driver's `spark.properties` once per (namespace, ConfigMap).
fn maybe_read_config(
    conn: &Connection,
    pod: &ExecutorPod,
    seen: &mut BTreeSet<(String, String)>,
    tx: &mpsc::Sender<SourceEvent>,
) {
    if pod.role() != Some(Role::Driver) {
        return;
    }
    let (Some(cm), Some(app_id)) = (
        pod.conf_config_map.as_deref().map(str::to_owned),
        pod.app_id().map(str::to_owned),
    ) else {
        return;
    };
    if !seen.insert((pod.namespace.to_string(), cm.clone())) {
        return;
    }
    let api: Api<ConfigMap> = Api::namespaced(conn.client.clone(), &pod.namespace);
    let tx = tx.clone();
    let namespace = pod.namespace.to_string();
    let scope = Scope::Namespace(namespace.clone());
    tokio::spawn(async move {
        // A few tries: one failed request must not leave the app on Spark's defaults.
        let mut got = api.get(&cm).await;
        for wait in [1, 2, 4] {
            if got.is_ok()
                || matches!(&got, Err(kube::Error::Api(s)) if s.code == 403 || s.code == 404)
            {
                break;
            }
            tokio::time::sleep(Duration::from_secs(wait)).await;
            got = api.get(&cm).await;
        }
        let ev = match got {
            Ok(map) => {
                let text = map
                    .data
                    .as_ref()
                    .and_then(|d| d.get("spark.properties"))
                    .cloned()
                    .unwrap_or_default();
                // Secrets never enter the process's state (recordings are shared).
                let mut properties = parse_properties(&text);
                redact::properties(&mut properties);
                SourceEvent::DriverConfig {
                    namespace,
                    app_id,
                    properties,
                    at: now(),
                }
            }
            Err(e) => SourceEvent::SourceHealth {
                source: SourceKind::DriverConfig,
                health: health_of(
                    &format!("configmap {cm}: {}", errors::describe(&e)),
                    forbidden_permission(&e, "get", "configmaps", &scope),
                ),
                at: now(),
            },
        };
        let _ = tx.send(ev).await;
    });
}

/// The events the diagnoses read, not every event: all `Warning`s, and the few `Normal`
/// reasons that carry evidence (the kubelet's `Killing`, the scheduler's `Preempted`, the
/// taint manager's `TaintManagerEviction`, YuniKorn's queue and gang events). A cluster's events are mostly `Normal` chatter
/// (`Scheduled`, `Pulled`, `Created`, `Started`): at 10,000 executors that is tens of
/// thousands of objects the first view would wait for. Field selectors cannot say "or", so
/// it is one watch per selector, merged.
pub const EVENT_SELECTORS: &[&str] = &[
    "involvedObject.kind=Pod,type=Warning",
    "involvedObject.kind=Pod,type=Normal,reason=Killing",
    "involvedObject.kind=Pod,type=Normal,reason=Preempted",
    "involvedObject.kind=Pod,type=Normal,reason=TaintManagerEviction",
    // YuniKorn's words on a pod it holds (one watch: every list of events costs the API
    // server a scan of them all): its core's queue and quota events (`Informational`), its
    // gang's (`GangScheduling`), and "queued and waiting for allocation" (`Scheduling`),
    // which tells a silent scheduler from a waiting one.
    "involvedObject.kind=Pod,type=Normal,reportingComponent=yunikorn",
];

async fn event_watch(conn: Connection, tx: mpsc::Sender<SourceEvent>) {
    let api: Api<LeanEvent> = match &conn.scope {
        Scope::Namespace(ns) => Api::namespaced(conn.client.clone(), ns),
        Scope::All => Api::all(conn.client.clone()),
    };
    let streams = EVENT_SELECTORS.iter().enumerate().map(|(i, sel)| {
        let cfg = watcher::Config::default().fields(sel);
        super::backoff::watch_backoff(watcher(api.clone(), cfg))
            .map(move |item| (i, item))
            .boxed()
    });
    let mut stream = futures::stream::select_all(streams);
    // Connected once every watch has listed (the first view waits for all of them).
    let mut listed = BTreeSet::new();
    let mut failing = false;
    while let Some((i, item)) = stream.next().await {
        let outcome = super::backoff::outcome(&item);
        if !recovered(&mut failing, outcome, SourceKind::EventWatch, &tx).await {
            return;
        }
        let ev = match item {
            Ok(watcher::Event::Apply(e) | watcher::Event::InitApply(e)) => SourceEvent::EventSeen {
                event: Box::new(e.event),
                at: now(),
            },
            Ok(watcher::Event::Delete(_) | watcher::Event::Init) => continue,
            Ok(watcher::Event::InitDone) => {
                listed.insert(i);
                if listed.len() < EVENT_SELECTORS.len() {
                    continue;
                }
                SourceEvent::SourceHealth {
                    source: SourceKind::EventWatch,
                    health: Health::Connected,
                    at: now(),
                }
            }
            Err(e) if outcome == super::backoff::Outcome::Garbled => {
                tracing::warn!(
                    "event watch: a line could not be read: {}",
                    describe_watch(&e)
                );
                continue;
            }
            Err(e) => {
                let forbidden = match &e {
                    watcher::Error::InitialListFailed(k) | watcher::Error::WatchStartFailed(k) => {
                        forbidden_permission(k, "watch", "events", &conn.scope)
                    }
                    _ => None,
                };
                SourceEvent::SourceHealth {
                    source: SourceKind::EventWatch,
                    health: health_of(&describe_watch(&e), forbidden),
                    at: now(),
                }
            }
        };
        if !send(&tx, ev).await {
            return;
        }
    }
}

impl From<ConnectError> for crate::failure::Failure {
    fn from(e: ConnectError) -> Self {
        Self::Cause(Box::new(e))
    }
}
