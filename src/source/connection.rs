//! The connection every source runs on: the live flags, the kubeconfig read as kubectl
//! reads it (proxies, exec credentials), a client whose every request is bounded, and the
//! first LIST that proves the server answers in scope. Below the watches: `live.rs` and
//! the other sources use it, it uses none of them.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config, Resource};
use spark_triage_core::text;
use tokio::sync::mpsc;

use super::bounds::BoundsLayer;
use super::lean::PodMeta;
use super::{Scope, SourceEvent, errors};
use crate::failure::Failure;
use crate::redact;

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

    pub(super) fn in_view(&self, ns: &str, app_id: &str) -> bool {
        match &*self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            None => true,
            Some(Some((n, a))) => n == ns && a == app_id,
            Some(None) => false,
        }
    }

    /// Whether this app's driver is due, `since` its last read (`None`: never read).
    pub(super) fn due(
        &self,
        ns: &str,
        app_id: &str,
        since: Option<Duration>,
        every: Duration,
    ) -> bool {
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

/// The drivers whose executor list has answered (or been found out of reach) at least
/// once, noted by the driver poll for a first answer (`status`, MCP): a driver that
/// answered its list is waited for while its other reads finish (each bounded); one that
/// has not is waited for a grace only.
#[derive(Debug, Clone, Default)]
pub struct DriversListed(
    std::sync::Arc<std::sync::Mutex<std::collections::HashSet<(String, String)>>>,
);

impl DriversListed {
    pub(super) fn note(&self, ns: &str, app_id: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((ns.to_owned(), app_id.to_owned()));
    }

    /// Whether this app's driver has answered its executor list.
    pub fn has(&self, ns: &str, app_id: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(ns.to_owned(), app_id.to_owned()))
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
    /// The cluster's own clock when it runs in this process (the demo's simulator); else
    /// this machine's, corrected by the API server's `Date`.
    pub clock: Option<super::clock::Clock>,
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
    /// The drivers whose executor list answered.
    pub listed: DriversListed,
    /// Every request's bound (`--request-timeout`).
    pub timeout: Duration,
    /// How often the pod poll LISTs (`--poll-interval`, from the flags or the configuration
    /// file: the sources read it here, and nowhere else).
    pub poll_interval: Duration,
    /// The kubeconfig given with `--kubeconfig` (for commands the user copies).
    pub kubeconfig: Option<PathBuf>,
    /// The user's own `-l` selector, if any (the header and the scope notes say it).
    pub user_selector: Option<String>,
    /// The credentials every request carries (refusals counted, fetched again after a 401).
    pub credentials: super::credentials::Credentials,
    /// A source the layers above start with this connection's (`--event-log-dir`).
    pub extra: Option<std::sync::Arc<dyn super::extra::Extra>>,
    /// The cluster's clock: every event from this connection is stamped with it.
    pub clock: super::clock::Clock,
}

impl Connection {
    /// How long the view may go without a complete LIST of the pods before it is stale:
    /// two relists and a request's timeout (the one rule, `store::Freshness`, reads it).
    pub fn stale_after(&self) -> Duration {
        2 * self.poll_interval + self.timeout
    }

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
    let Chosen {
        kc,
        context_name,
        user,
        cluster_proxy,
    } = chosen(opts)?;
    let mut config = config_of(opts, kc, &kube_opts).await?;
    let timeout = opts.timeout();
    config.connect_timeout = Some(timeout);
    let proxy = super::proxy::proxy_for(&config.cluster_url, cluster_proxy.as_deref(), |k| {
        std::env::var(k).ok()
    })
    .map_err(ConnectError::Config)?;
    config.proxy_url = proxy.as_ref().map(|p| p.url.clone());
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
    let clock = opts.clock.clone().unwrap_or_default();
    let client = build_client(config, timeout, credentials.clone(), clock.clone())
        .await
        .map_err(|reason| match reason {
        BuildError::Config(reason) => ConnectError::Config(reason),
        BuildError::Timeout => ConnectError::Unreachable {
            server: server.clone(),
            reason: format!(
                "the kubeconfig's exec credential plugin did not finish within {} (--request-timeout)",
                text::human_std_duration(timeout)
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
    first_list(&api, &sel, &server, proxy.as_ref()).await?;
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
        listed: DriversListed::default(),
        timeout,
        poll_interval: opts.poll_interval,
        kubeconfig: opts.kubeconfig.clone(),
        user_selector: opts.selector.clone().filter(|s| !s.trim().is_empty()),
        credentials,
        extra: None,
        clock,
    })
}

/// What the kubeconfig chose: the file read (if any), the context's real name (the header
/// and the actions log say which cluster), its user, its cluster's proxy-url.
struct Chosen {
    kc: Option<Kubeconfig>,
    context_name: Option<String>,
    user: String,
    cluster_proxy: Option<String>,
}

/// The kubeconfig given, else the default one (if any), and what its context names.
fn chosen(opts: &LiveOptions) -> Result<Chosen, ConnectError> {
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
    Ok(Chosen {
        kc,
        context_name,
        user,
        cluster_proxy,
    })
}

/// The client's configuration: from the kubeconfig given, else in a pod its ServiceAccount,
/// else the default kubeconfig; an error said without credentials.
async fn config_of(
    opts: &LiveOptions,
    kc: Option<Kubeconfig>,
    kube_opts: &KubeConfigOptions,
) -> Result<Config, ConnectError> {
    match (&opts.kubeconfig, kc) {
        (Some(_), Some(kc)) => Config::from_custom_kubeconfig(kc, kube_opts)
            .await
            .map_err(|e| e.to_string()),
        // No kubeconfig at all: in a pod, its ServiceAccount (the flight recorder).
        (None, None) if opts.context.is_none() => Config::infer().await.map_err(|e| e.to_string()),
        _ => Config::from_kubeconfig(kube_opts)
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
    })
}

/// The first LIST (one pod) tells whether the cluster is there: a transient 5xx or 429 (an
/// API server restarting, overloaded, a flaky proxy) is retried twice before giving up;
/// a refusal once more with the credential fetched again; the rest said as what failed.
async fn first_list(
    api: &Api<PodMeta>,
    sel: &str,
    server: &str,
    proxy: Option<&super::proxy::Proxy>,
) -> Result<(), ConnectError> {
    let probe = ListParams::default().labels(sel).limit(1);
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
            return Err(ConnectError::Forbidden(redact::one_line(&s.message)));
        }
        Err(e) if super::credentials::refused_of(&e).is_some() => {
            return Err(ConnectError::Unauthorized(errors::error_line(&e)));
        }
        Err(kube::Error::Api(s)) if s.code == 400 => {
            return Err(ConnectError::Config(format!(
                "the API server rejected the selector {sel:?}: {}",
                redact::one_line(&s.message)
            )));
        }
        Err(e) => {
            // Through a proxy, which one and where it was set (a dead one read as `tunnel
            // error: … Connection refused`, naming neither).
            let through = proxy
                .map(|p| format!(", through {}", p.shown()))
                .unwrap_or_default();
            return Err(ConnectError::Unreachable {
                server: server.to_owned(),
                reason: format!(
                    "{} (waiting for the first LIST of pods{through})",
                    errors::error_line(&e)
                ),
            });
        }
    }
    Ok(())
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
    clock: super::clock::Clock,
) -> Result<Client, BuildError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(kube::client::ClientBuilder::try_from(config));
    });
    match tokio::time::timeout(timeout, rx).await {
        // Building the client itself needs the runtime (it spawns its request buffer).
        Ok(Ok(Ok(builder))) => Ok(builder
            .with_layer(&super::credentials::AuthLayer(credentials))
            .with_layer(&BoundsLayer::new(timeout, clock))
            .build()),
        Ok(Ok(Err(e))) => Err(BuildError::Config(errors::error_line(&e))),
        Ok(Err(_)) => Err(BuildError::Config("building the client failed".to_owned())),
        Err(_) => Err(BuildError::Timeout),
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

pub(super) async fn send(tx: &mpsc::Sender<SourceEvent>, ev: SourceEvent) -> bool {
    tx.send(ev).await.is_ok()
}

impl From<ConnectError> for Failure {
    fn from(e: ConnectError) -> Self {
        Self::Cause(Box::new(e))
    }
}
