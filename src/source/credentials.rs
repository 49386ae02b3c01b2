//! Credentials fetched again when the API server refuses them, as client-go does.
//!
//! kube runs an exec credential plugin once and keeps a token without an
//! `expirationTimestamp` forever, and never looks at a 401: when the server revokes a token
//! the process goes on failing. client-go refreshes the credential after a 401 (the exec
//! plugin is run again, a token file read again) so the next request carries a new one.
//! This layer does the same, for the two sources that can change under a running process:
//!
//! - an **exec plugin** that prints a token: run again after a 401 (at most once per
//!   [`MIN_REFETCH`] however many requests are refused) and before its expiry;
//! - a **token file** (`tokenFile`, and the in-cluster ServiceAccount token the kubelet
//!   rotates): read again after a 401 and every minute.
//!
//! Other credentials (an inline token, a client certificate, a password, an auth provider)
//! stay kube's; the layer only counts their refusals. A refused request fails with
//! [`Refused`], which says what was done about it (the sources' health shows it), and the
//! count of refusals in a row is what the recorder's `/healthz` reads.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use http::header::AUTHORIZATION;
use http::{HeaderValue, Request, Response, StatusCode};
use kube::config::{ExecConfig, ExecInteractiveMode};
use serde::Deserialize;
use spark_triage_core::text;
use tower::{BoxError, Layer, Service};

use crate::redact;

/// An exec plugin is not run again sooner than this after its last run, whatever is refused.
pub const MIN_REFETCH: Duration = Duration::from_secs(5);
/// A token file is read again at least this often (kube's and client-go's minute).
const FILE_REREAD: Duration = Duration::from_secs(60);
/// An exec token this close to its expiry is fetched again before it is used up.
const EXPIRY_MARGIN: chrono::TimeDelta = chrono::TimeDelta::seconds(10);
/// What a refusal of kube's own credentials says.
const FIXED: &str = "the kubeconfig's credentials are fixed (an inline token, a client \
                     certificate, a password or an auth provider): nothing to fetch again";
/// The most a token file or a plugin's output may hold.
const MAX_CREDENTIAL: u64 = 1024 * 1024;

/// Where the bearer token comes from.
#[derive(Clone)]
enum Origin {
    /// kube's own (an inline token, a certificate, a password, an auth provider, none).
    Kube,
    Exec(Box<ExecConfig>),
    File(PathBuf),
}

/// The credentials of one connection; clones share them.
#[derive(Clone)]
pub struct Credentials(Arc<Shared>);

struct Shared {
    origin: Origin,
    /// A plugin run's bound (`--request-timeout`).
    timeout: Duration,
    current: RwLock<Current>,
    /// One fetch at a time; the others wait for its outcome.
    fetching: tokio::sync::Mutex<()>,
    refused_in_a_row: AtomicU32,
    refetches: AtomicU64,
    /// What the last fetch after a refusal did, in words.
    last_outcome: Mutex<String>,
}

struct Current {
    header: Option<HeaderValue>,
    expires: Option<DateTime<Utc>>,
    fetched: Instant,
    /// Bumped at every fetch: a refusal of an older generation is already answered.
    generation: u64,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the token.
        f.debug_struct("Credentials")
            .field("origin", &self.origin_name())
            .field("refused_in_a_row", &self.refused_in_a_row())
            .finish_non_exhaustive()
    }
}

/// A request the API server refused (HTTP 401), and what was done about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub in_a_row: u32,
    pub outcome: String,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "HTTP 401 Unauthorized: the API server refused the credentials ({} in a row); {}",
            self.in_a_row, self.outcome
        )
    }
}

impl std::error::Error for Refused {}

/// The refusal in an error's chain, if the error is one.
pub fn refused_of<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    super::bounds::in_chain(e)
}

/// Why credentials could not be had at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The plugin did not finish within the timeout.
    Timeout(Duration),
    Failed(String),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout(d) => write!(
                f,
                "the kubeconfig's exec credential plugin did not finish within {} (--request-timeout)",
                text::human_std_duration(*d)
            ),
            Self::Failed(why) => f.write_str(why),
        }
    }
}

/// A fetched credential.
struct Fetched {
    token: String,
    expires: Option<DateTime<Utc>>,
}

impl Credentials {
    /// Takes the refreshable credentials out of `config` (kube would keep them fixed) and
    /// fetches them once: a plugin run or a file read now, as kube would have done while
    /// building the client. Anything else is left to kube.
    pub async fn take_over(
        config: &mut kube::Config,
        timeout: Duration,
    ) -> Result<Self, FetchError> {
        let a = &config.auth_info;
        let kube_own = a.auth_provider.is_some()
            || (a.username.is_some() && a.password.is_some())
            || a.token.is_some();
        let origin = match (&a.token_file, &a.exec) {
            _ if kube_own => Origin::Kube,
            (Some(path), _) => Origin::File(PathBuf::from(path)),
            (None, Some(exec)) => Origin::Exec(Box::new(exec.clone())),
            (None, None) => Origin::Kube,
        };
        let first = match &origin {
            Origin::Kube => None,
            Origin::File(path) => Some(read_token_file(path).map_err(FetchError::Failed)?),
            Origin::Exec(exec) => match run_plugin(exec, timeout, true).await? {
                Plugin::Token(t) => Some(t),
                // A client certificate is the TLS connection's identity: kube's (it runs the
                // plugin again while building the client).
                Plugin::Certificate => None,
            },
        };
        let origin = match first {
            None => Origin::Kube,
            Some(_) => {
                // kube must not add its own Authorization (nor run the plugin again).
                config.auth_info.token_file = None;
                config.auth_info.exec = None;
                origin
            }
        };
        let (header, expires) = match first {
            Some(f) => (Some(bearer(&f.token)?), f.expires),
            None => (None, None),
        };
        Ok(Self(Arc::new(Shared {
            origin,
            timeout,
            current: RwLock::new(Current {
                header,
                expires,
                fetched: Instant::now(),
                generation: 0,
            }),
            fetching: tokio::sync::Mutex::new(()),
            refused_in_a_row: AtomicU32::new(0),
            refetches: AtomicU64::new(0),
            last_outcome: Mutex::new(String::new()),
        })))
    }

    /// Requests refused with a 401 since the last one that was not.
    pub fn refused_in_a_row(&self) -> u32 {
        self.0.refused_in_a_row.load(Ordering::Relaxed)
    }

    /// How many times the credential was fetched again (after refusals or expiry).
    pub fn refetches(&self) -> u64 {
        self.0.refetches.load(Ordering::Relaxed)
    }

    fn origin_name(&self) -> &'static str {
        match self.0.origin {
            Origin::Kube => "kubeconfig",
            Origin::Exec(_) => "exec plugin",
            Origin::File(_) => "token file",
        }
    }

    /// The header to send and its generation; whether a fetch is due first.
    fn header(&self) -> (Option<HeaderValue>, u64, bool) {
        let c = self.0.current.read().unwrap_or_else(|e| e.into_inner());
        let due = match &self.0.origin {
            Origin::Kube => false,
            Origin::File(_) => c.fetched.elapsed() >= FILE_REREAD,
            Origin::Exec(_) => c.expires.is_some_and(|t| Utc::now() + EXPIRY_MARGIN >= t),
        };
        (c.header.clone(), c.generation, due)
    }

    /// Fetches again unless a fetch newer than `seen` happened (or the last one is too
    /// recent); says what was done.
    async fn refetch(&self, seen: u64, refused: bool) -> String {
        let _one = self.0.fetching.lock().await;
        let (generation, fetched) = {
            let c = self.0.current.read().unwrap_or_else(|e| e.into_inner());
            (c.generation, c.fetched)
        };
        let last = || {
            self.0
                .last_outcome
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
        };
        if generation != seen {
            return last();
        }
        let what = match &self.0.origin {
            Origin::Kube => return FIXED.to_owned(),
            Origin::Exec(_) => "the exec credential plugin",
            Origin::File(_) => "the token file",
        };
        // A plugin runs at most once per MIN_REFETCH, whatever asks (an expiry that a failed
        // run left due, refusals); only a refusal of the very first token runs it at once.
        if matches!(self.0.origin, Origin::Exec(_))
            && fetched.elapsed() < MIN_REFETCH
            && (generation > 0 || !refused)
        {
            return format!(
                "{what} was last run {} ago",
                text::human_std_duration(fetched.elapsed())
            );
        }
        let got = match &self.0.origin {
            Origin::File(path) => read_token_file(path).map_err(FetchError::Failed),
            Origin::Exec(exec) => match run_plugin(exec, self.0.timeout, false).await {
                Ok(Plugin::Token(t)) => Ok(t),
                Ok(Plugin::Certificate) => Err(FetchError::Failed(
                    "the exec credential plugin now prints a client certificate: restart to use it"
                        .to_owned(),
                )),
                Err(e) => Err(e),
            },
            Origin::Kube => return FIXED.to_owned(),
        };
        self.0.refetches.fetch_add(1, Ordering::Relaxed);
        let outcome = match got.and_then(|f| Ok((bearer(&f.token)?, f.expires))) {
            Ok((header, expires)) => {
                let mut c = self.0.current.write().unwrap_or_else(|e| e.into_inner());
                let same = c.header.as_ref() == Some(&header);
                c.header = Some(header);
                c.expires = expires;
                c.fetched = Instant::now();
                c.generation += 1;
                let verb = match self.0.origin {
                    Origin::File(_) => "was read again",
                    _ => "was run again",
                };
                match same {
                    true => format!("{what} {verb} and gave the same token"),
                    false => format!("{what} {verb} and gave a new token"),
                }
            }
            Err(e) => {
                // Not again at once: the next refusal waits MIN_REFETCH.
                let mut c = self.0.current.write().unwrap_or_else(|e| e.into_inner());
                c.fetched = Instant::now();
                c.generation += 1;
                let doing = match self.0.origin {
                    Origin::File(_) => "reading the token file again failed",
                    _ => "running the exec credential plugin again failed",
                };
                format!("{doing}: {e}")
            }
        };
        if refused {
            tracing::warn!("the API server refused the credentials: {outcome}");
        }
        *self
            .0
            .last_outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = outcome.clone();
        outcome
    }
}

fn bearer(token: &str) -> Result<HeaderValue, FetchError> {
    let mut v = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
        FetchError::Failed("the credential holds characters a header cannot carry".to_owned())
    })?;
    v.set_sensitive(true);
    Ok(v)
}

fn read_token_file(path: &std::path::Path) -> Result<Fetched, String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CREDENTIAL).read_to_string(&mut text))
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("the token file {} is empty", path.display()));
    }
    Ok(Fetched {
        token: token.to_owned(),
        expires: None,
    })
}

/// What a plugin printed.
enum Plugin {
    Token(Fetched),
    Certificate,
}

#[derive(Deserialize)]
struct ExecCredential {
    status: Option<ExecStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecStatus {
    token: Option<String>,
    expiration_timestamp: Option<String>,
    client_certificate_data: Option<String>,
}

/// Runs the plugin as client-go does (its `env`, `KUBERNETES_EXEC_INFO`, the cluster's
/// details when it asks for them), killed if it outlasts `timeout`. `first`: at start-up,
/// where it may talk to the terminal if its mode lets it; later runs never do (the live
/// view owns the terminal), so a plugin that must ask the user fails with its own words.
async fn run_plugin(
    exec: &ExecConfig,
    timeout: Duration,
    first: bool,
) -> Result<Plugin, FetchError> {
    use std::io::IsTerminal;
    let Some(command) = &exec.command else {
        return Err(FetchError::Failed(
            "the kubeconfig's exec credential plugin has no command".to_owned(),
        ));
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(exec.args.iter().flatten());
    for pair in exec.env.iter().flatten() {
        if let (Some(k), Some(v)) = (pair.get("name"), pair.get("value")) {
            cmd.env(k, v);
        }
    }
    let interactive = first
        && exec.interactive_mode != Some(ExecInteractiveMode::Never)
        && std::io::stdin().is_terminal();
    let mut spec = serde_json::json!({ "interactive": interactive });
    if exec.provide_cluster_info
        && let Some(cluster) = &exec.cluster
    {
        spec["cluster"] = serde_json::to_value(cluster).unwrap_or_default();
    }
    let info = serde_json::json!({
        "apiVersion": exec.api_version.as_deref().unwrap_or("client.authentication.k8s.io/v1"),
        "kind": "ExecCredential",
        "spec": spec,
    });
    cmd.env("KUBERNETES_EXEC_INFO", info.to_string());
    for name in exec.drop_env.iter().flatten() {
        cmd.env_remove(name);
    }
    cmd.stdout(std::process::Stdio::piped()).kill_on_drop(true);
    if interactive {
        cmd.stdin(std::process::Stdio::inherit())
            .stderr(std::process::Stdio::inherit());
    } else {
        cmd.stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
    }
    let child = cmd.spawn().map_err(|e| {
        FetchError::Failed(format!(
            "cannot run the kubeconfig's exec credential plugin: {e}"
        ))
    })?;
    let out = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            return Err(FetchError::Failed(format!(
                "the kubeconfig's exec credential plugin: {e}"
            )));
        }
        Err(_) => return Err(FetchError::Timeout(timeout)),
    };
    if !out.status.success() {
        // Its stderr, never its stdout (which may hold a credential printed before failing).
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().map(str::trim).find(|l| !l.is_empty());
        return Err(FetchError::Failed(redact::one_line(&redact::credentials(
            &format!(
                "the kubeconfig's exec credential plugin failed ({}){}",
                out.status,
                first.map(|l| format!(": {l}")).unwrap_or_default()
            ),
        ))));
    }
    let not_one = || {
        FetchError::Failed(
            "the kubeconfig's exec credential plugin printed something that is not an ExecCredential"
                .to_owned(),
        )
    };
    if out.stdout.len() as u64 > MAX_CREDENTIAL {
        return Err(not_one());
    }
    // JSON, or YAML (client-go decodes either).
    let cred: ExecCredential = serde_saphyr::from_slice(&out.stdout).map_err(|_| not_one())?;
    let status = cred.status.ok_or_else(not_one)?;
    if status.client_certificate_data.is_some() {
        return Ok(Plugin::Certificate);
    }
    let Some(token) = status.token.filter(|t| !t.is_empty()) else {
        return Err(FetchError::Failed(
            "the kubeconfig's exec credential plugin gave neither a token nor a certificate"
                .to_owned(),
        ));
    };
    let expires = match status.expiration_timestamp {
        None => None,
        Some(t) => Some(
            DateTime::parse_from_rfc3339(&t)
                .map_err(|_| {
                    FetchError::Failed(
                        "the exec credential plugin's expirationTimestamp is not a time".to_owned(),
                    )
                })?
                .with_timezone(&Utc),
        ),
    };
    Ok(Plugin::Token(Fetched { token, expires }))
}

/// The layer: adds the bearer token, fetches it again after a 401.
#[derive(Debug, Clone)]
pub struct AuthLayer(pub Credentials);

impl<S> Layer<S> for AuthLayer
where
    S: Service<Request<kube::client::Body>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + Sync,
{
    /// Behind a buffer: a handle that can be cloned, so a refused request is sent again.
    type Service = Authed<tower::buffer::Buffer<Request<kube::client::Body>, S::Future>>;
    fn layer(&self, inner: S) -> Self::Service {
        Authed {
            inner: tower::buffer::Buffer::new(inner, 64),
            creds: self.0.clone(),
        }
    }
}

/// The service the layer makes.
#[derive(Debug, Clone)]
pub struct Authed<S> {
    inner: S,
    creds: Credentials,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> Service<Request<kube::client::Body>> for Authed<S>
where
    S: Service<Request<kube::client::Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response<B>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: Request<kube::client::Body>) -> Self::Future {
        let creds = self.creds.clone();
        // Through the API server's service proxy, a 401 is the proxied service's (a Spark UI
        // behind its own login), not a refusal of the credentials.
        let proxied = req.uri().path().contains("/proxy/");
        let (header, generation, due) = creds.header();
        if let Some(h) = &header {
            req.headers_mut().insert(AUTHORIZATION, h.clone());
        }
        if due {
            // Before it runs out (this request still carries the current one).
            let c = creds.clone();
            tokio::spawn(async move {
                c.refetch(generation, false).await;
            });
        }
        // The request again, for once after a refusal (a body that can be read twice: every
        // read the sources make).
        let again = req.body().try_clone().map(|body| {
            let mut r = Request::new(body);
            *r.method_mut() = req.method().clone();
            *r.uri_mut() = req.uri().clone();
            *r.version_mut() = req.version();
            *r.headers_mut() = req.headers().clone();
            r
        });
        let inner = self.inner.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await.map_err(Into::into)?;
            if proxied {
                return Ok(resp);
            }
            if resp.status() != StatusCode::UNAUTHORIZED {
                creds.0.refused_in_a_row.store(0, Ordering::Relaxed);
                return Ok(resp);
            }
            let mut in_a_row = creds.0.refused_in_a_row.fetch_add(1, Ordering::Relaxed) + 1;
            let outcome = creds.refetch(generation, true).await;
            // Sent again at once with what the fetch gave, when it gave another credential
            // (a LIST refused waited for the next poll: with tokens that live less than
            // `--poll-interval`, no LIST ever succeeded again).
            if let (Some(mut again), (Some(fresh), _, _)) = (again, creds.header())
                && header.as_ref() != Some(&fresh)
            {
                again.headers_mut().insert(AUTHORIZATION, fresh);
                let resp = tower::ServiceExt::oneshot(inner, again)
                    .await
                    .map_err(Into::into)?;
                if resp.status() != StatusCode::UNAUTHORIZED {
                    creds.0.refused_in_a_row.store(0, Ordering::Relaxed);
                    return Ok(resp);
                }
                in_a_row = creds.0.refused_in_a_row.fetch_add(1, Ordering::Relaxed) + 1;
            }
            Err(Box::new(Refused { in_a_row, outcome }) as BoxError)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(script: &str) -> ExecConfig {
        ExecConfig {
            api_version: Some("client.authentication.k8s.io/v1".into()),
            command: Some("/bin/sh".into()),
            args: Some(vec!["-c".into(), script.into()]),
            env: None,
            drop_env: None,
            install_hint: None,
            interactive_mode: Some(ExecInteractiveMode::Never),
            provide_cluster_info: false,
            cluster: None,
            other: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_plugin_token_its_expiry_and_its_failures() {
        let t = Duration::from_secs(5);
        let ok = r#"echo '{"kind":"ExecCredential","status":{"token":"tok-1","expirationTimestamp":"2030-01-01T00:00:00Z"}}'"#;
        let Ok(Plugin::Token(f)) = run_plugin(&exec(ok), t, false).await else {
            panic!("a token");
        };
        assert_eq!(f.token, "tok-1");
        assert_eq!(
            f.expires.map(|e| e.to_rfc3339()).as_deref(),
            Some("2030-01-01T00:00:00+00:00")
        );
        // YAML, as client-go accepts.
        let yaml = "printf 'kind: ExecCredential\\nstatus:\\n  token: tok-2\\n'";
        assert!(
            matches!(run_plugin(&exec(yaml), t, false).await, Ok(Plugin::Token(f)) if f.token == "tok-2")
        );
        // A failure shows stderr, never stdout.
        let bad = r#"echo '{"status":{"token":"tok-SECRET"}}'; echo 'login expired' >&2; exit 3"#;
        let Err(e) = run_plugin(&exec(bad), t, false).await else {
            panic!("a failure");
        };
        let text = e.to_string();
        assert!(
            text.contains("login expired") && !text.contains("SECRET"),
            "{text}"
        );
        let hangs = run_plugin(&exec("sleep 30"), Duration::from_millis(200), false).await;
        assert_eq!(
            hangs.err(),
            Some(FetchError::Timeout(Duration::from_millis(200)))
        );
        let neither = run_plugin(&exec(r#"echo '{"status":{}}'"#), t, false).await;
        assert!(neither.is_err());
    }

    #[tokio::test]
    async fn a_refusal_fetches_once_and_later_ones_wait() {
        let dir = std::env::temp_dir().join(format!("st-creds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let count = dir.join("runs");
        let script = format!(
            "echo run >> {c}; n=$(wc -l < {c}); echo \"{{\\\"status\\\":{{\\\"token\\\":\\\"tok-$n\\\"}}}}\"",
            c = count.display()
        );
        let mut config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        config.auth_info.exec = Some(exec(&script));
        let creds = Credentials::take_over(&mut config, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(
            config.auth_info.exec.is_none(),
            "kube must not run it again"
        );
        let (h, g0, due) = creds.header();
        assert_eq!(h.unwrap().to_str().unwrap(), "Bearer tok-1");
        assert!(!due);
        let first = creds.refetch(g0, true).await;
        assert_eq!(
            first,
            "the exec credential plugin was run again and gave a new token"
        );
        // A refusal of the old generation (in flight during the fetch) does not run it again.
        assert_eq!(creds.refetch(g0, true).await, first);
        // A refusal of the new one, too soon: not run.
        let (h, g1, _) = creds.header();
        assert_eq!(h.unwrap().to_str().unwrap(), "Bearer tok-2");
        assert!(
            creds
                .refetch(g1, true)
                .await
                .contains("was last run 0s ago")
        );
        assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 2);
        assert_eq!(creds.refetches(), 1);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn a_token_file_is_read_again_and_kube_keeps_the_rest() {
        let dir = std::env::temp_dir().join(format!("st-creds-f-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "tok-a\n").unwrap();
        let mut config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        config.auth_info.token_file = Some(file.display().to_string());
        let creds = Credentials::take_over(&mut config, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(config.auth_info.token_file.is_none());
        let (h, g, _) = creds.header();
        assert_eq!(h.unwrap().to_str().unwrap(), "Bearer tok-a");
        std::fs::write(&file, "tok-b").unwrap();
        assert_eq!(
            creds.refetch(g, true).await,
            "the token file was read again and gave a new token"
        );
        assert_eq!(creds.header().0.unwrap().to_str().unwrap(), "Bearer tok-b");
        std::fs::remove_file(&file).unwrap();
        let g = creds.header().1;
        assert!(
            creds
                .refetch(g, true)
                .await
                .starts_with("reading the token file again failed: cannot read")
        );
        // The old token stays (a file being replaced is briefly absent).
        assert_eq!(creds.header().0.unwrap().to_str().unwrap(), "Bearer tok-b");
        // An inline token is kube's.
        let mut config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        config.auth_info.token = Some("tok-inline".to_owned().into());
        let creds = Credentials::take_over(&mut config, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(config.auth_info.token.is_some());
        assert!(creds.header().0.is_none());
        assert!(creds.refetch(0, true).await.contains("fixed"));
        assert!(!format!("{creds:?}").contains("tok"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
