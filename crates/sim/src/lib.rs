//! A simulated Kubernetes cluster that real clients accept: an API server speaking the real
//! HTTP API (kube-rs, kubectl and Spark's fabric8 client work against it unmodified), plus a
//! small control plane (scheduler, kubelet, Spark-like drivers) driven by scenario files.
//!
//! Loopback only, plain HTTP. See `docs/simulator.md` for what is and is not simulated.

#![forbid(unsafe_code)]

// The core under the names the simulator's modules use (`crate::model::…`).
pub(crate) use spark_triage_core::{classify, model, spark};

pub mod api;
pub mod clock;
pub mod control;
pub mod discovery;
pub mod error;
pub mod events_view;
pub mod faults;
pub mod kube_status;
pub mod logs;
pub mod patch;
pub mod process;
pub mod proctree;
pub mod resource;
pub mod scenario;
pub mod selector;
pub mod spark_registry;
pub mod spark_rest;
pub mod store;
pub mod table;
#[cfg(feature = "testing")]
pub mod testing;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use api::{ApiState, RequestRecord};
use axum::Router;
use chrono::{DateTime, Utc};
pub use faults::{Fault, Faults};
pub use scenario::Scenario;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How to start a simulator.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// `127.0.0.1:0` picks a free port.
    pub listen: SocketAddr,
    pub scenario: Scenario,
    pub speed: f64,
    pub seed: u64,
    pub faults: Vec<Fault>,
    /// Where to write the kubeconfig; a temporary file when `None`.
    pub kubeconfig_out: Option<PathBuf>,
    /// Changes kept for watch resumes.
    pub history: usize,
    /// The simulated time at start (see [`SimOptions::for_external_clients`]).
    pub origin: DateTime<Utc>,
    /// Bookmark period on watches that allow bookmarks.
    pub bookmark_every: Duration,
    /// The process kubelet: Spark executor containers run as local JVMs.
    pub process: Option<process::ProcessOptions>,
}

impl SimOptions {
    pub fn new(scenario: Scenario) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            scenario,
            speed: 1.0,
            seed: 1,
            faults: Vec::new(),
            kubeconfig_out: None,
            history: 20_000,
            origin: Utc::now(),
            bookmark_every: Duration::from_secs(30),
            process: None,
        }
    }
}

impl SimOptions {
    /// Faster than real time, starts the simulated clock in the past so that for an hour it
    /// does not overtake the wall clock: clients that compute ages locally (`kubectl
    /// describe`) would print `<invalid>` for timestamps in the future.
    pub fn for_external_clients(mut self) -> Self {
        let head_start = chrono::Duration::seconds(((self.speed - 1.0).max(0.0) * 3600.0) as i64);
        self.origin -= head_start;
        self
    }
}

/// Why a simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("the simulator only listens on loopback addresses, not {0}")]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot write the kubeconfig {path}: {source}")]
    Kubeconfig {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A running simulator. Dropping it stops it.
#[derive(Debug)]
pub struct SimHandle {
    pub url: String,
    pub addr: SocketAddr,
    pub kubeconfig: PathBuf,
    /// The context's namespace in the kubeconfig.
    pub namespace: String,
    pub state: Arc<ApiState>,
    tasks: Vec<JoinHandle<()>>,
    shutdown: watch::Sender<bool>,
    /// The kubeconfig is a temporary file the simulator chose (no `kubeconfig_out`): it is
    /// removed when the simulator stops, so demos and tests leave nothing in the temp dir.
    temporary_kubeconfig: bool,
}

impl SimHandle {
    /// Every request served so far (method and URI).
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.state.request_log()
    }

    /// Stops serving, waits for the server to close its listener, and stops the control
    /// plane (which kills every process the process kubelet started).
    /// The simulated clock (what the API server's timestamps and `Date` headers say).
    pub fn clock(&self) -> clock::SimClock {
        self.state.store.clock.clone()
    }

    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        let mut tasks = std::mem::take(&mut self.tasks).into_iter();
        if let Some(mut server) = tasks.next()
            && tokio::time::timeout(Duration::from_secs(5), &mut server)
                .await
                .is_err()
        {
            server.abort();
        }
        for t in tasks {
            t.abort();
            let _ = t.await;
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        for t in &self.tasks {
            t.abort();
        }
        if self.temporary_kubeconfig {
            let _ = std::fs::remove_file(&self.kubeconfig);
        }
    }
}

/// The kubeconfig both kube-rs and kubectl accept for a plain-HTTP server: kube's own
/// `Kubeconfig`, serialized (a URL or namespace with YAML-special characters stays valid).
pub fn kubeconfig_yaml(url: &str, namespace: &str) -> String {
    use kube::config::{
        AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
    };
    const NAME: &str = "spark-triage-sim";
    let kc = Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![NamedCluster {
            name: NAME.into(),
            cluster: Some(Cluster {
                server: Some(url.into()),
                ..Cluster::default()
            }),
            other: Default::default(),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: NAME.into(),
            auth_info: Some(AuthInfo {
                token: Some(secrecy::SecretString::from("spark-triage-sim-token")),
                ..AuthInfo::default()
            }),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: NAME.into(),
            context: Some(Context {
                cluster: NAME.into(),
                user: Some(NAME.into()),
                namespace: Some(namespace.into()),
                ..Context::default()
            }),
            other: Default::default(),
        }],
        current_context: Some(NAME.into()),
        ..Kubeconfig::default()
    };
    serde_saphyr::to_string(&kc).unwrap_or_default()
}

/// Starts the API server and the control plane on the current tokio runtime.
pub async fn start(opts: SimOptions) -> Result<SimHandle, SimError> {
    if !opts.listen.ip().is_loopback() {
        return Err(SimError::NotLoopback(opts.listen));
    }
    let listener = TcpListener::bind(opts.listen)
        .await
        .map_err(|source| SimError::Bind {
            addr: opts.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| SimError::Bind {
        addr: opts.listen,
        source,
    })?;
    let url = format!("http://{addr}");
    let namespace = opts
        .scenario
        .apps
        .first()
        .map(|a| a.namespace.clone())
        .unwrap_or_else(|| "default".to_owned());
    let temporary_kubeconfig = opts.kubeconfig_out.is_none();
    let kubeconfig = opts.kubeconfig_out.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("spark-triage-sim-{}.kubeconfig", addr.port()))
    });
    std::fs::write(&kubeconfig, kubeconfig_yaml(&url, &namespace)).map_err(|source| {
        SimError::Kubeconfig {
            path: kubeconfig.clone(),
            source,
        }
    })?;

    let faults = Faults::new(&opts.faults);
    let store = Arc::new(store::ObjectStore::new(
        clock::SimClock::new(opts.origin, opts.speed),
        opts.history,
        opts.seed,
    ));
    let logs = Arc::new(logs::Logs::default());
    let (drop_tx, drop_rx) = watch::channel(0u64);
    let event_ttl = faults.event_ttl.unwrap_or(Duration::from_secs(3600));
    let mut control = control::Control::new(
        store.clone(),
        logs.clone(),
        opts.scenario.clone(),
        opts.seed,
        event_ttl,
    );
    if let Some(p) = opts.process.clone() {
        control = control.with_processes(p);
    }
    control.bootstrap();
    let state = Arc::new(ApiState {
        store,
        logs,
        faults: faults.clone(),
        drop_watches: drop_rx,
        requests: Mutex::new(VecDeque::new()),
        recorded: Default::default(),
        server_addr: addr.to_string(),
        user: "spark-triage-sim".to_owned(),
        spark: control.registry.clone(),
        bookmark_every: opts.bookmark_every.max(Duration::from_millis(10)),
        forward_local: opts.process.is_some(),
        endpoints: Mutex::default(),
        tokens: Mutex::default(),
        installed: opts.scenario.installed(),
    });
    let (shutdown, shutdown_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(serve(
        listener,
        addr,
        state.clone(),
        faults.restart_after,
        drop_tx.clone(),
        shutdown_rx,
    )));
    tasks.push(tokio::spawn(async move {
        // A pass every 100 ms, or a pause four times as long as a pass took (at most 2 s):
        // the steady control loop stays near a fifth of a core however many pods there
        // are (100k pods coarsen its timing, not the API server's answers).
        // The pass runs on the blocking pool: a pass of 100k pods takes long enough that,
        // on a runtime worker, requests queued behind it there waited seconds.
        let mut control = control;
        loop {
            let started = std::time::Instant::now();
            control = match tokio::task::spawn_blocking(move || {
                control.step();
                control
            })
            .await
            {
                Ok(c) => c,
                Err(_) => return, // the pass panicked: the control plane stops
            };
            let took = started.elapsed();
            let pause = (took * 4)
                .min(Duration::from_secs(2))
                .max(Duration::from_millis(100).saturating_sub(took));
            tokio::time::sleep(pause).await;
        }
    }));
    if let Some(every) = faults.drop_watches {
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                drop_tx.send_modify(|n| *n += 1);
            }
        }));
    }
    if faults.expire_watches {
        // Also forget history regularly, so resumes relist even without the explicit check.
        let store = state.store.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                store.compact_all();
            }
        }));
    }
    Ok(SimHandle {
        url,
        addr,
        kubeconfig,
        namespace,
        state,
        tasks,
        shutdown,
        temporary_kubeconfig,
    })
}

async fn serve(
    first: TcpListener,
    addr: SocketAddr,
    state: Arc<ApiState>,
    restart_after: Option<Duration>,
    drop_tx: watch::Sender<u64>,
    mut shutdown: watch::Receiver<bool>,
) {
    let app = Router::new().fallback(api::dated).with_state(state);
    let mut listener = Some(first);
    let mut restarted = false;
    loop {
        let l = match listener.take() {
            Some(l) => l,
            None => match TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!("simulator: cannot listen again on {addr}: {e}");
                    return;
                }
            },
        };
        let mut sd = shutdown.clone();
        let restart = (!restarted).then_some(restart_after).flatten();
        let drop_tx2 = drop_tx.clone();
        let stop = async move {
            tokio::select! {
                _ = sd.wait_for(|s| *s) => {}
                () = async {
                    match restart {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending().await,
                    }
                } => {}
            }
            // End every watch and log stream so the graceful shutdown can finish.
            drop_tx2.send_modify(|n| *n += 1);
        };
        let _ = axum::serve(l, app.clone())
            .with_graceful_shutdown(stop)
            .await;
        if *shutdown.borrow_and_update() {
            return;
        }
        restarted = true;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
