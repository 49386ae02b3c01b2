//! Live sources against a real (or simulated) API server, as Spark's driver watches its
//! executors: a pod watch (kube-runtime's watcher with its default backoff: a dropped watch
//! is resumed, a 410 relists), a full LIST every `--poll-interval` (30 s, as Spark), an
//! event watch, and each driver's `spark.properties` from its ConfigMap.
//!
//! This is the edge: it stamps every event with the local clock when it arrives. Errors
//! become `SourceHealth` events (retrying with the cause; forbidden with the permission).

use std::{collections::BTreeSet, path::PathBuf, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, Service};
use kube::{
    Api, Client, Config,
    api::ListParams,
    config::{KubeConfigOptions, Kubeconfig},
    runtime::{WatchStreamExt, watcher},
};
use tokio::{sync::mpsc, task::JoinHandle};

use super::{
    DriverView, Health, SourceEvent, SourceKind, bounds::BoundsLayer, errors, parse_properties,
};
use crate::{
    model::{ExecutorPod, PodEvent, Role},
    redact,
};

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

/// Which app is in view, for the driver poll: every driver is read at the first poll (so
/// every app's dead executors are known from the first screen), the app in view every
/// interval, the others every [`BACKGROUND_FACTOR`] intervals. `status` and `record` never
/// set it: every app is read every interval.
#[derive(Debug, Clone, Default)]
pub struct DriverFocus(std::sync::Arc<std::sync::Mutex<Focus>>);

/// `None`: every app is in view; `Some(None)`: none; `Some(Some(key))`: that one.
type Focus = Option<Option<(String, String)>>;

/// Apps not in view are read this many times less often (every 60 s at the 10 s default).
pub const BACKGROUND_FACTOR: u32 = 6;

impl DriverFocus {
    /// The app in view (namespace, app id), or none.
    pub fn prefer(&self, app: Option<(String, String)>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(app);
    }

    fn in_view(&self, ns: &str, app_id: &str) -> bool {
        match &*self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            None => true,
            Some(Some((n, a))) => n == ns && a == app_id,
            Some(None) => false,
        }
    }

    /// Whether this app's driver is due, `since` its last read (`None`: never read).
    fn due(&self, ns: &str, app_id: &str, since: Option<Duration>, every: Duration) -> bool {
        let Some(since) = since else { return true };
        let period = if self.in_view(ns, app_id) {
            every
        } else {
            every * BACKGROUND_FACTOR
        };
        // Half an interval of slack: a read that took a while is not pushed a tick later.
        since + every / 2 >= period
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
}

/// The selector every source uses: Spark's pods, narrowed by the user's `-l`.
pub fn selector(user: Option<&str>) -> String {
    narrowed("spark-role in (driver,executor)", user)
}

/// `base`, narrowed by the user's `-l`.
fn narrowed(base: &str, user: Option<&str>) -> String {
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
    let user = kc
        .as_ref()
        .and_then(|kc| {
            let ctx_name = opts
                .context
                .clone()
                .or_else(|| kc.current_context.clone())?;
            let ctx = kc.contexts.iter().find(|c| c.name == ctx_name)?;
            ctx.context.as_ref()?.user.clone()
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let config = match (&opts.kubeconfig, kc) {
        (Some(_), Some(kc)) => Config::from_custom_kubeconfig(kc, &kube_opts).await,
        _ => Config::from_kubeconfig(&kube_opts).await,
    }
    .map_err(|e| ConnectError::Config(redact::one_line(&redact::credentials(&e.to_string()))))?;
    let timeout = opts.timeout();
    let mut config = config;
    config.connect_timeout = Some(timeout);
    let server = config.cluster_url.to_string();
    let authority = config
        .cluster_url
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    let default_ns = config.default_namespace.clone();
    let client = build_client(config, timeout).await.map_err(|reason| match reason {
        BuildError::Config(reason) => ConnectError::Config(reason),
        BuildError::Timeout => ConnectError::Unreachable {
            server: server.clone(),
            reason: format!(
                "the kubeconfig's exec credential plugin did not finish within {} (--request-timeout)",
                humantime::format_duration(timeout)
            ),
        },
    })?;
    let scope = if opts.all_namespaces {
        Scope::All
    } else {
        Scope::Namespace(opts.namespace.clone().unwrap_or(default_ns))
    };
    let sel = selector(opts.selector.as_deref());
    let api = pods_api(&client, &scope);
    // The first request tells whether the cluster is there; a transient 5xx or 429 (an API
    // server restarting, overloaded, a flaky proxy) is retried twice before giving up.
    let probe = ListParams::default().labels(&sel).limit(1);
    let mut first = api.list(&probe).await;
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
        context: opts.context.clone().unwrap_or_else(|| "current".to_owned()),
        selector: sel,
        server: authority,
        user,
        driver_poll: opts.driver_poll,
        driver_selector: narrowed("spark-role=driver", opts.selector.as_deref()),
        focus: DriverFocus::default(),
        timeout,
        poll_interval: opts.poll_interval,
    })
}

fn one_line(s: &str) -> String {
    redact::one_line(&redact::credentials(s))
}

enum BuildError {
    Config(String),
    Timeout,
}

/// The client, with every request bounded ([`BoundsLayer`]). Building it may run the
/// kubeconfig's exec credential plugin, synchronously inside kube: it runs on a thread of
/// its own so a plugin that hangs costs a timeout, not the process.
async fn build_client(config: Config, timeout: Duration) -> Result<Client, BuildError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(kube::client::ClientBuilder::try_from(config));
    });
    match tokio::time::timeout(timeout, rx).await {
        // Building the client itself needs the runtime (it spawns its request buffer).
        Ok(Ok(Ok(builder))) => Ok(builder.with_layer(&BoundsLayer::new(timeout)).build()),
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

fn pods_api(client: &Client, scope: &Scope) -> Api<Pod> {
    match scope {
        Scope::Namespace(ns) => Api::namespaced(client.clone(), ns),
        Scope::All => Api::all(client.clone()),
    }
}

fn now() -> crate::model::Time {
    chrono::Utc::now()
}

fn health_of(err: &str, forbidden: Option<String>) -> Health {
    match forbidden {
        Some(permission) => Health::Forbidden { permission },
        None => Health::Retrying {
            error: one_line(err),
        },
    }
}

/// The permission a 403 says is missing.
fn forbidden_permission(
    e: &kube::Error,
    verb: &str,
    resource: &str,
    scope: &Scope,
) -> Option<String> {
    match e {
        kube::Error::Api(s) if s.code == 403 => {
            Some(format!("{verb} {resource} in {}", scope.describe()))
        }
        _ => None,
    }
}

/// Starts every source; events go to `tx` until it closes.
pub fn spawn(
    conn: &Connection,
    poll_interval: Duration,
    tx: mpsc::Sender<SourceEvent>,
) -> Vec<JoinHandle<()>> {
    let mut tasks = vec![
        tokio::spawn(pod_watch(conn.clone(), tx.clone())),
        tokio::spawn(pod_poll(conn.clone(), poll_interval, tx.clone())),
    ];
    if let Some(every) = conn.driver_poll {
        tasks.push(tokio::spawn(driver_poll(conn.clone(), every, tx.clone())));
    }
    tasks.push(tokio::spawn(event_watch(conn.clone(), tx)));
    tasks
}

/// Reads every driver's executor list in scope (those in focus) every `every`.
async fn driver_poll(conn: Connection, every: Duration, tx: mpsc::Sender<SourceEvent>) {
    let pods = pods_api(&conn.client, &conn.scope);
    let services: Api<Service> = match &conn.scope {
        Scope::Namespace(ns) => Api::namespaced(conn.client.clone(), ns),
        Scope::All => Api::all(conn.client.clone()),
    };
    let sel = &conn.driver_selector;
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_read: std::collections::HashMap<(String, String), std::time::Instant> =
        std::collections::HashMap::new();
    loop {
        tick.tick().await;
        let drivers = match pods.list(&ListParams::default().labels(sel)).await {
            Ok(l) => l.items,
            Err(_) => continue, // the pod sources report API trouble
        };
        let svcs = services
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        // Up to 8 drivers at a time, so one slow driver does not hold up the others.
        let svcs = std::sync::Arc::new(svcs);
        let started = std::time::Instant::now();
        let wanted: Vec<(Pod, ExecutorPod, String)> = drivers
            .into_iter()
            .filter_map(|d| {
                let pod = ExecutorPod::from_pod(&d);
                let app_id = pod.app_id()?.to_owned();
                let key = (pod.namespace.clone(), app_id.clone());
                let since = last_read.get(&key).map(|t| started.duration_since(*t));
                conn.focus
                    .due(&pod.namespace, &app_id, since, every)
                    .then(|| {
                        last_read.insert(key, started);
                        (d, pod, app_id)
                    })
            })
            .collect();
        let mut reads = futures::stream::iter(wanted.into_iter().map(|(d, pod, app_id)| {
            let (client, svcs) = (conn.client.clone(), svcs.clone());
            async move {
                let view = read_driver(&client, &d, &pod, &app_id, &svcs).await;
                SourceEvent::DriverExecutors {
                    namespace: pod.namespace.clone(),
                    app_id,
                    view,
                    at: now(),
                }
            }
        }))
        .buffer_unordered(8);
        while let Some(ev) = reads.next().await {
            if !send(&tx, ev).await {
                return;
            }
        }
    }
}

/// Where the driver's UI is: the service selecting the driver (Spark's `…-driver-svc`,
/// the operator's `…-ui-svc`) on its `spark-ui` port (or 4040), else the pod's own 4040.
pub fn ui_path(pod: &Pod, app_id: &str, services: &[Service]) -> Option<String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let svc_port = services
        .iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(ns))
        .filter(|s| {
            s.spec
                .as_ref()
                .and_then(|sp| sp.selector.as_ref())
                .and_then(|sel| sel.get("spark-app-selector"))
                .is_some_and(|a| a == app_id)
        })
        .find_map(|s| {
            let ports = s.spec.as_ref()?.ports.as_ref()?;
            let p = ports
                .iter()
                .find(|p| p.name.as_deref() == Some("spark-ui"))
                .or_else(|| ports.iter().find(|p| p.port == 4040))?;
            let port = p.name.clone().unwrap_or_else(|| p.port.to_string());
            Some(format!("services/{}:{port}", s.metadata.name.as_deref()?))
        });
    let target = svc_port.or_else(|| {
        let name = pod.metadata.name.as_deref()?;
        let ports = pod
            .spec
            .as_ref()?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten());
        let p = ports
            .clone()
            .find(|p| p.name.as_deref() == Some("spark-ui"))
            .or_else(|| ports.clone().find(|p| p.container_port == 4040))?;
        Some(format!("pods/{name}:{}", p.container_port))
    })?;
    Some(format!(
        "/api/v1/namespaces/{ns}/{target}/proxy/api/v1/applications/{app_id}/allexecutors"
    ))
}

async fn read_driver(
    client: &Client,
    raw: &Pod,
    pod: &ExecutorPod,
    app_id: &str,
    services: &[Service],
) -> DriverView {
    let unavailable = |reason: String| DriverView::Unavailable { reason };
    match pod.phase() {
        Some("Running") => {}
        Some(p @ ("Succeeded" | "Failed")) => {
            return unavailable(format!("driver gone (pod {} is {p})", pod.name));
        }
        p => {
            return unavailable(format!(
                "driver not ready (pod {} is {})",
                pod.name,
                p.unwrap_or("without status")
            ));
        }
    }
    if pod.deletion.is_some() {
        return unavailable(format!("driver gone (pod {} is being deleted)", pod.name));
    }
    let Some(path) = ui_path(raw, app_id, services) else {
        return unavailable(
            "no UI port: no service selecting the driver with a spark-ui port, no container port 4040"
                .to_owned(),
        );
    };
    let req = match http::Request::get(&path).body(Vec::new()) {
        Ok(r) => r,
        Err(e) => return unavailable(format!("bad proxy path {path}: {e}")),
    };
    let proxied = if path.contains("/services/") {
        "services/proxy"
    } else {
        "pods/proxy"
    };
    match tokio::time::timeout(Duration::from_secs(10), client.request_text(req)).await {
        Err(_) => unavailable("the driver did not answer within 10 s".to_owned()),
        Ok(Ok(body)) => match crate::model::driver::parse_executors(&body) {
            Ok(executors) => DriverView::Ok { executors },
            Err(e) => unavailable(e),
        },
        Ok(Err(kube::Error::Api(s))) => unavailable(match s.code {
            403 => format!(
                "forbidden: cannot get {proxied} in namespace {} ({})",
                pod.namespace,
                one_line(&s.message)
            ),
            503 => format!("driver not reachable: {}", one_line(&s.message)),
            404 => format!("not found: {}", one_line(&s.message)),
            c => format!("HTTP {c}: {}", one_line(&s.message)),
        }),
        Ok(Err(e)) => unavailable(errors::describe(&e)),
    }
}

async fn send(tx: &mpsc::Sender<SourceEvent>, ev: SourceEvent) -> bool {
    tx.send(ev).await.is_ok()
}

async fn pod_watch(conn: Connection, tx: mpsc::Sender<SourceEvent>) {
    let api = pods_api(&conn.client, &conn.scope);
    let cfg = watcher::Config::default().labels(&conn.selector);
    let mut stream = watcher(api, cfg).default_backoff().boxed();
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
    while let Some(item) = stream.next().await {
        if !recovered(&mut failing, item.is_ok(), SourceKind::PodWatch, &tx).await {
            return;
        }
        let ev = match item {
            Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => {
                let pod = ExecutorPod::from_pod(&p);
                maybe_read_config(&conn, &pod, &mut configs_read, &tx);
                SourceEvent::PodUpserted {
                    pod: Box::new(pod),
                    at: now(),
                }
            }
            Ok(watcher::Event::Delete(p)) => SourceEvent::PodDeleted {
                pod: Box::new(ExecutorPod::from_pod(&p)),
                at: now(),
            },
            Ok(watcher::Event::Init) => continue,
            Ok(watcher::Event::InitDone) => SourceEvent::SourceHealth {
                source: SourceKind::PodWatch,
                health: Health::Connected,
                at: now(),
            },
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
    ok: bool,
    source: SourceKind,
    tx: &mpsc::Sender<SourceEvent>,
) -> bool {
    let was = std::mem::replace(failing, !ok);
    if was && ok {
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
    let (Some(cm), Some(app_id)) = (pod.conf_config_map.clone(), pod.app_id().map(str::to_owned))
    else {
        return;
    };
    if !seen.insert((pod.namespace.clone(), cm.clone())) {
        return;
    }
    let api: Api<ConfigMap> = Api::namespaced(conn.client.clone(), &pod.namespace);
    let tx = tx.clone();
    let namespace = pod.namespace.clone();
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

async fn pod_poll(conn: Connection, every: Duration, tx: mpsc::Sender<SourceEvent>) {
    let api = pods_api(&conn.client, &conn.scope);
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let ev = match list_all(&api, &conn.selector).await {
            Ok((pods, rv)) => SourceEvent::PodsListed {
                pods,
                resource_version: rv,
                at: now(),
            },
            Err(e) => SourceEvent::SourceHealth {
                source: SourceKind::PodPoll,
                health: health_of(
                    &errors::describe(&e),
                    forbidden_permission(&e, "list", "pods", &conn.scope),
                ),
                at: now(),
            },
        };
        let ok = matches!(ev, SourceEvent::PodsListed { .. });
        if !send(&tx, ev).await {
            return;
        }
        if ok
            && !send(
                &tx,
                SourceEvent::SourceHealth {
                    source: SourceKind::PodPoll,
                    health: Health::Connected,
                    at: now(),
                },
            )
            .await
        {
            return;
        }
    }
}

/// A complete LIST in pages of 500, as kubectl does; the version of the last page.
async fn list_all(
    api: &Api<Pod>,
    sel: &str,
) -> Result<(Vec<ExecutorPod>, Option<u64>), kube::Error> {
    let mut out = Vec::new();
    let mut lp = ListParams::default().labels(sel).limit(500);
    loop {
        let page = api.list(&lp).await?;
        out.extend(page.items.iter().map(ExecutorPod::from_pod));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => {
                lp = ListParams::default()
                    .labels(sel)
                    .limit(500)
                    .continue_token(&c)
            }
            None => {
                return Ok((
                    out,
                    page.metadata.resource_version.and_then(|r| r.parse().ok()),
                ));
            }
        }
    }
}

async fn event_watch(conn: Connection, tx: mpsc::Sender<SourceEvent>) {
    let api: Api<Event> = match &conn.scope {
        Scope::Namespace(ns) => Api::namespaced(conn.client.clone(), ns),
        Scope::All => Api::all(conn.client.clone()),
    };
    let cfg = watcher::Config::default().fields("involvedObject.kind=Pod");
    let mut stream = watcher(api, cfg).default_backoff().boxed();
    let mut failing = false;
    while let Some(item) = stream.next().await {
        if !recovered(&mut failing, item.is_ok(), SourceKind::EventWatch, &tx).await {
            return;
        }
        let ev = match item {
            Ok(watcher::Event::Apply(e) | watcher::Event::InitApply(e)) => SourceEvent::EventSeen {
                event: Box::new(PodEvent::from_core(&e)),
                at: now(),
            },
            Ok(watcher::Event::Delete(_) | watcher::Event::Init) => continue,
            Ok(watcher::Event::InitDone) => SourceEvent::SourceHealth {
                source: SourceKind::EventWatch,
                health: Health::Connected,
                at: now(),
            },
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ports: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "etl-driver", "namespace": "spark-jobs"},
            "spec": {"containers": [{"name": "spark-kubernetes-driver", "ports": ports}]}
        }))
        .unwrap()
    }

    fn svc(name: &str, ns: &str, app: &str, ports: serde_json::Value) -> Service {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"spark-app-selector": app, "spark-role": "driver"}, "ports": ports}
        }))
        .unwrap()
    }

    #[test]
    fn every_driver_is_read_first_then_the_app_in_view_more_often() {
        let every = Duration::from_secs(10);
        let f = DriverFocus::default();
        // status/record: every app every interval.
        assert!(f.due("ns", "a", Some(every), every) && f.due("ns", "b", Some(every), every));
        let shared = f.clone(); // the live view's handle, the poll's handle
        shared.prefer(Some(("ns".into(), "a".into())));
        // Never read: due whatever the focus (the first screen knows every app's dead).
        assert!(f.due("ns", "b", None, every) && f.due("other", "a", None, every));
        assert!(f.due("ns", "a", Some(every), every));
        assert!(!f.due("ns", "b", Some(every), every));
        assert!(!f.due("ns", "b", Some(every * 5), every));
        assert!(f.due("ns", "b", Some(every * BACKGROUND_FACTOR), every));
        shared.prefer(None);
        assert!(!f.due("ns", "a", Some(every), every));
        assert_eq!(
            narrowed("spark-role=driver", Some(" team=x ")),
            "spark-role=driver,team=x"
        );
    }

    #[test]
    fn the_driver_ui_is_found_where_spark_and_the_operator_put_it() {
        let p = pod(serde_json::json!([{"name": "spark-ui", "containerPort": 4040}]));
        let tail = "proxy/api/v1/applications/spark-1/allexecutors";
        // Spark's own driver service: its spark-ui port, by name.
        let spark_svc = svc(
            "etl-driver-svc",
            "spark-jobs",
            "spark-1",
            serde_json::json!([{"name": "driver-rpc-port", "port": 7078}, {"name": "spark-ui", "port": 4040}]),
        );
        assert_eq!(
            ui_path(&p, "spark-1", &[spark_svc]).unwrap(),
            format!("/api/v1/namespaces/spark-jobs/services/etl-driver-svc:spark-ui/{tail}")
        );
        // The operator's UI service: port 4040 under another name.
        let op = svc(
            "etl-ui-svc",
            "spark-jobs",
            "spark-1",
            serde_json::json!([{"name": "spark-driver-ui-port", "port": 4040}]),
        );
        assert_eq!(
            ui_path(&p, "spark-1", &[op]).unwrap(),
            format!(
                "/api/v1/namespaces/spark-jobs/services/etl-ui-svc:spark-driver-ui-port/{tail}"
            )
        );
        // Services of other apps or namespaces do not count: the pod's own port.
        let other = svc(
            "x",
            "spark-jobs",
            "spark-2",
            serde_json::json!([{"name": "spark-ui", "port": 4040}]),
        );
        let elsewhere = svc(
            "y",
            "default",
            "spark-1",
            serde_json::json!([{"name": "spark-ui", "port": 4040}]),
        );
        assert_eq!(
            ui_path(&p, "spark-1", &[other, elsewhere]).unwrap(),
            format!("/api/v1/namespaces/spark-jobs/pods/etl-driver:4040/{tail}")
        );
        // Nothing at all.
        assert_eq!(ui_path(&pod(serde_json::json!([])), "spark-1", &[]), None);
    }
}
