//! Event logs in object stores, at URLs as `spark.eventLog.dir` names them: `s3://` and
//! `s3a://`, `gs://`, `abfs://`/`abfss://` (and `az://`), `file://`, through Apache Arrow's
//! `object_store`. Each cloud's own settings come from its usual environment (`AWS_*`, with
//! `AWS_PROFILE`'s keys from `~/.aws`; `GOOGLE_*`; `AZURE_*`) and from `--store-option
//! KEY=VALUE` (the crate's keys: `endpoint`, `region`, `virtual_hosted_style_request`,
//! `allow_http`, …). Reading is streamed; connecting and each wait for more of an answer
//! are bounded by the timeout, a listing (all its pages) by ten of them, and a failing
//! request is retried twice at most. No setting's value is ever shown: the errors said
//! are the store's code and message, with any value given cut out.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt};

use super::files::{Entry, Files};
use crate::failure::Failure;
use crate::redact;

/// How an object store is reached: its settings (`--store-option`) and a request's timeout.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    pub options: Vec<(String, String)>,
    pub timeout: Option<Duration>,
}

impl StoreOptions {
    /// `KEY=VALUE` as typed.
    pub fn parse_option(s: &str) -> Result<(String, String), String> {
        match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
            _ => Err("wants KEY=VALUE (endpoint=http://127.0.0.1:9000, region=eu-west-1)".into()),
        }
    }
}

/// A `file://` URL's path on this machine (`file:///var/log/spark`; a host other than
/// `localhost` is refused).
pub fn file_path(url: &str) -> Result<PathBuf, Failure> {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.to_file_path().ok())
        .ok_or_else(|| usage(url, "not a path on this machine (file:///path)"))
}

/// A path or URL as it may be shown: a URL without a user, password, query or fragment
/// (an abfs URL's container, before its `@`, is kept: it is no secret).
pub fn shown_location(s: &str) -> String {
    if !is_url(s) {
        return s.to_owned();
    }
    let Ok(mut u) = url::Url::parse(s) else {
        // Not parsed: cut anything between `://` and an `@`.
        return match (s.split_once("://"), s.rfind('@')) {
            (Some((scheme, _)), Some(at)) => format!("{scheme}://…{}", &s[at..]),
            _ => s.to_owned(),
        };
    };
    if !matches!(u.scheme(), "abfs" | "abfss") {
        let _ = u.set_username("");
    }
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// Whether `s` is a URL of a store this reads (a scheme, then `://`).
pub fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// An object store's bucket (or container), read as a file system.
pub(crate) struct Remote {
    store: Arc<dyn ObjectStore>,
    rt: tokio::runtime::Runtime,
    /// `s3://bucket`, as the keys are shown under it.
    base: String,
    /// The values given (`--store-option`, the credentials found): cut from what is said.
    secrets: Vec<String>,
    /// The longest a listing (all its pages) may take.
    list_deadline: Duration,
}

/// Where in a store a URL points: the store and the key.
pub(crate) struct Opened {
    pub remote: Remote,
    pub key: PathBuf,
    /// The URL as it may be shown.
    pub shown: String,
}

/// A usage error about `url`, shown without its credentials.
fn usage(url: &str, why: impl std::fmt::Display) -> Failure {
    Failure::Usage(format!("{}: {why}", shown_location(url)))
}

/// The keys of a named AWS profile (`AWS_PROFILE`) in `~/.aws/credentials` and its region in
/// `~/.aws/config`, as the AWS CLI reads them (static keys only; SSO and processes are not).
fn aws_profile() -> Vec<(String, String)> {
    let Some(home) = std::env::var_os("HOME") else {
        return Vec::new();
    };
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
    let ini = |file: &str, section: &str| -> Vec<(String, String)> {
        let path = std::env::var_os(if file == "credentials" {
            "AWS_SHARED_CREDENTIALS_FILE"
        } else {
            "AWS_CONFIG_FILE"
        })
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(&home).join(".aws").join(file));
        // A credentials file is small: one over 1 MiB is not read.
        let Ok(text) = std::fs::File::open(path).and_then(|f| {
            let mut s = String::new();
            f.take(1 << 20).read_to_string(&mut s).map(|_| s)
        }) else {
            return Vec::new();
        };
        let mut inside = false;
        let mut out = Vec::new();
        for line in text.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                inside = name.trim() == section;
            } else if inside && let Some((k, v)) = line.split_once('=') {
                out.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        out
    };
    let config_section = if profile == "default" {
        "default".to_owned()
    } else {
        format!("profile {profile}")
    };
    let mut out = Vec::new();
    for (k, v) in ini("credentials", &profile)
        .into_iter()
        .chain(ini("config", &config_section))
    {
        let key = match k.as_str() {
            "aws_access_key_id" => "access_key_id",
            "aws_secret_access_key" => "secret_access_key",
            "aws_session_token" => "token",
            "region" => "region",
            "endpoint_url" => "endpoint",
            _ => continue,
        };
        out.push((key.to_owned(), v));
    }
    out
}

/// A store a URL names, built (no request made yet): what `Remote` reads through and the
/// fleet tables are written to.
pub(crate) struct StoreAt {
    pub store: Arc<dyn ObjectStore>,
    /// `s3://bucket`.
    pub base: String,
    /// The key the URL names in it (no leading or trailing `/`).
    pub key: String,
    /// The URL as it may be shown.
    pub shown: String,
    /// The values given: cut from what is said.
    pub secrets: Vec<String>,
    pub timeout: Duration,
}

impl std::fmt::Debug for StoreAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreAt")
            .field("shown", &self.shown)
            .finish_non_exhaustive()
    }
}

impl StoreAt {
    /// An error of the store's, as one line with no value given in it.
    pub fn say(&self, e: &object_store::Error) -> String {
        said(e, &self.secrets)
    }
}

impl Remote {
    /// Opens the store a URL names, with `opts`.
    pub fn open(url: &str, opts: &StoreOptions) -> Result<Opened, Failure> {
        let at = open_store(url, opts)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::Runtime(format!("cannot start the I/O runtime: {e}")))?;
        Ok(Opened {
            remote: Remote {
                store: at.store,
                rt,
                base: at.base,
                secrets: at.secrets,
                list_deadline: at.timeout * 10,
            },
            key: PathBuf::from(at.key),
            shown: at.shown,
        })
    }
}

/// Builds the store a URL names, with `opts` (its settings, the environment's credentials).
pub(crate) fn open_store(url: &str, opts: &StoreOptions) -> Result<StoreAt, Failure> {
    use object_store::aws::AmazonS3Builder;
    use object_store::azure::MicrosoftAzureBuilder;
    use object_store::gcp::GoogleCloudStorageBuilder;
    use object_store::{BackoffConfig, ClientOptions, RetryConfig};
    // Before any client is built (the store's is built with it).
    super::tls_provider();
    let parsed = url::Url::parse(url).map_err(|e| usage(url, format!("not a URL ({e})")))?;
    let scheme = parsed.scheme().to_owned();
    let key = parsed.path().trim_matches('/').to_owned();
    let host = parsed.host_str().unwrap_or_default().to_owned();
    let user = parsed.username().to_owned();
    let base = match scheme.as_str() {
        // abfss://container@account.dfs.core.windows.net: the container is no secret.
        "abfs" | "abfss" if !user.is_empty() => format!("{scheme}://{user}@{host}"),
        _ => format!("{scheme}://{host}"),
    };
    let shown = if key.is_empty() {
        base.clone()
    } else {
        format!("{base}/{key}")
    };
    let timeout = opts.timeout.unwrap_or(Duration::from_secs(30));
    let client = ClientOptions::new()
        .with_timeout_disabled()
        .with_connect_timeout(timeout)
        .with_read_timeout(timeout);
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 2,
        retry_timeout: timeout * 3,
    };
    let mut secrets: Vec<String> = secret_values(&opts.options);
    let bad_key = |k: &str, e: object_store::Error| {
        usage(
            &shown,
            format!("--store-option {k}: {}", short(&e.to_string())),
        )
    };
    // The clouds' secrets in the environment (a variable that is not Unicode is not one
    // the crate reads either).
    secrets.extend(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, v)| {
                ["AWS_", "AZURE_", "GOOGLE_"]
                    .iter()
                    .any(|p| k.starts_with(p))
                    && is_secret(k)
                    && v.len() >= 4
            })
            .map(|(_, v)| v),
    );
    let built = |e: object_store::Error, secrets: &[String]| {
        // The crate may quote the URL given (an Azure SAS in its query): shown instead.
        let text = e.to_string().replace(url, &shown);
        usage(&shown, cut(&short(&text), secrets))
    };
    let store: Arc<dyn ObjectStore> = match scheme.as_str() {
        "s3" | "s3a" => {
            let mut b = AmazonS3Builder::from_env()
                .with_url(format!("s3://{host}"))
                .with_client_options(client)
                .with_retry(retry);
            let mut given: Vec<(String, String)> = Vec::new();
            // The profile's keys when the environment names none.
            if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
                given.extend(aws_profile().into_iter().filter(|(k, _)| k != "region"));
            }
            // The profile's region unless the environment names one, as AWS's tools do.
            if std::env::var_os("AWS_REGION").is_none()
                && std::env::var_os("AWS_DEFAULT_REGION").is_none()
            {
                given.extend(aws_profile().into_iter().filter(|(k, _)| k == "region"));
            }
            // The endpoint of AWS's own SDKs, when the crate's is not set.
            if let Ok(e) = std::env::var("AWS_ENDPOINT_URL")
                && std::env::var_os("AWS_ENDPOINT").is_none()
            {
                given.push(("endpoint".into(), e));
            }
            if let Ok(e) = std::env::var("AWS_ENDPOINT") {
                given.push(("endpoint".into(), e));
            }
            given.extend(opts.options.iter().cloned());
            for (k, v) in &given {
                let key = k.parse().map_err(|e| bad_key(k, e))?;
                // An http endpoint given is one to reach over http.
                if matches!(key, object_store::aws::AmazonS3ConfigKey::Endpoint)
                    && v.starts_with("http://")
                {
                    b = b.with_allow_http(true);
                }
                b = b.with_config(key, v);
            }
            secrets.extend(secret_values(&given));
            Arc::new(b.build().map_err(|e| built(e, &secrets))?)
        }
        "gs" => {
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_url(format!("gs://{host}"))
                .with_client_options(client)
                .with_retry(retry);
            for (k, v) in &opts.options {
                b = b.with_config(k.parse().map_err(|e| bad_key(k, e))?, v);
            }
            Arc::new(b.build().map_err(|e| built(e, &secrets))?)
        }
        "abfs" | "abfss" | "az" | "azure" | "adl" => {
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_client_options(client)
                .with_retry(retry);
            for (k, v) in &opts.options {
                b = b.with_config(k.parse().map_err(|e| bad_key(k, e))?, v);
            }
            Arc::new(b.build().map_err(|e| built(e, &secrets))?)
        }
        "hdfs" | "viewfs" => {
            return Err(usage(
                &shown,
                "HDFS is not read (no maintained Rust client is fit to ship): copy the logs \
                 out (hdfs dfs -get) or read them through the History Server \
                 (report --history-server URL)",
            ));
        }
        other => {
            return Err(usage(
                &shown,
                format!("{other}:// is not a store this reads (s3, s3a, gs, abfs, abfss, file)"),
            ));
        }
    };
    Ok(StoreAt {
        store,
        base,
        key,
        shown,
        secrets,
        timeout,
    })
}

impl Remote {
    fn key(path: &Path) -> Key {
        Key::from(path.to_string_lossy().as_ref())
    }

    /// An error of the store's, as one line with no value given in it.
    fn error(&self, e: &object_store::Error) -> std::io::Error {
        let line = said(e, &self.secrets);
        let kind = match e {
            object_store::Error::NotFound { .. } => std::io::ErrorKind::NotFound,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => std::io::ErrorKind::PermissionDenied,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, line)
    }
}

/// A store's error as one line, its innermost cause said, no value given in it.
fn said(e: &object_store::Error, secrets: &[String]) -> String {
    let mut line = e.to_string();
    // The innermost cause says the most ("Connection refused"); the store's own text
    // often stops at "error sending request".
    let mut inner: &dyn std::error::Error = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    let cause = inner.to_string();
    if !line.contains(&cause) {
        line = format!("{line}: {cause}");
    }
    let mut line = cut(&short(&line), secrets);
    if line.contains("169.254.169.254") {
        line.push_str(
            " (no credentials found: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE's \
             keys in ~/.aws, a web identity token, or --store-option access_key_id=… \
             --store-option secret_access_key=…; the instance's metadata refused)",
        );
    }
    line
}

/// `line` with every secret value in it cut out.
fn cut(line: &str, secrets: &[String]) -> String {
    let mut line = line.to_owned();
    for s in secrets {
        line = line.replace(s.as_str(), "***");
    }
    line
}

/// Whether a setting's name says its value is a secret (a key, a token, a password).
fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "secret",
        "token",
        "sas",
        "password",
        "credential",
        "signature",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// The values of the secret settings, to be cut from what is said.
fn secret_values(given: &[(String, String)]) -> Vec<String> {
    given
        .iter()
        .filter(|(k, v)| is_secret(k) && v.len() >= 4)
        .map(|(_, v)| v.clone())
        .collect()
}

/// A store's error as one line: an S3-style XML body is cut to its code and message.
fn short(e: &str) -> String {
    let tag = |t: &str| {
        let open = format!("<{t}>");
        let from = e.find(&open)? + open.len();
        let to = e[from..].find(&format!("</{t}>"))? + from;
        Some(e[from..to].to_owned())
    };
    let line = match (tag("Code"), tag("Message")) {
        (Some(code), Some(msg)) => {
            let head = e
                .split('<')
                .next()
                .unwrap_or_default()
                .trim_end_matches([':', ' ']);
            format!("{head}: {code}: {msg}")
        }
        (Some(code), None) => format!("{}: {code}", e.split('<').next().unwrap_or_default()),
        _ => e.to_owned(),
    };
    let line = redact::one_line(&line);
    match line.char_indices().nth(400) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// An object's content as a reader, a chunk at a time.
struct Body<'a> {
    remote: &'a Remote,
    stream: futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
    chunk: bytes::Bytes,
}

impl Read for Body<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.remote.rt.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(b)) => self.chunk = b,
                Some(Err(e)) => return Err(self.remote.error(&e)),
            }
        }
        let n = out.len().min(self.chunk.len());
        out[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}

impl Files for Remote {
    fn is_file(&self, path: &Path) -> bool {
        !path.as_os_str().is_empty() && self.rt.block_on(self.store.head(&Self::key(path))).is_ok()
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.list(path).is_ok_and(|l| !l.is_empty())
    }

    fn list(&self, dir: &Path) -> std::io::Result<Vec<Entry>> {
        let prefix = Self::key(dir);
        let prefix = (!dir.as_os_str().is_empty()).then_some(&prefix);
        let listed = self
            .rt
            // The timer is made inside the runtime (it needs its clock).
            .block_on(async {
                tokio::time::timeout(self.list_deadline, self.store.list_with_delimiter(prefix))
                    .await
            })
            .map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "the listing took over {}",
                        humantime::format_duration(self.list_deadline)
                    ),
                )
            })?
            .map_err(|e| self.error(&e))?;
        let to_path = |k: &Key| PathBuf::from(k.as_ref());
        Ok(listed
            .common_prefixes
            .iter()
            .map(|p| Entry {
                path: to_path(p),
                dir: true,
            })
            .chain(listed.objects.iter().map(|o| Entry {
                path: to_path(&o.location),
                dir: false,
            }))
            .collect())
    }

    fn entries(&self, dir: &Path) -> std::io::Result<Option<Vec<Entry>>> {
        // One listing: a missing bucket, a refusal or no answer is said, not taken for "no
        // logs here".
        let listed = self.list(dir)?;
        Ok((!listed.is_empty()).then_some(listed))
    }

    fn open(&self, path: &Path) -> std::io::Result<Box<dyn Read + '_>> {
        let got = self
            .rt
            .block_on(self.store.get(&Self::key(path)))
            .map_err(|e| self.error(&e))?;
        Ok(Box::new(Body {
            remote: self,
            stream: got.into_stream(),
            chunk: bytes::Bytes::new(),
        }))
    }

    fn shown(&self, path: &Path) -> String {
        format!("{}/{}", self.base, path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_shown_without_credentials() {
        assert_eq!(
            shown_location("s3a://AKIA:sec/ret@bucket/spark-events"),
            "s3a://…@bucket/spark-events"
        );
        assert_eq!(
            shown_location("s3a://AKIA:secret@bucket/x?token=t"),
            "s3a://bucket/x"
        );
        assert_eq!(
            shown_location("abfss://logs@acct.dfs.core.windows.net/x?sig=abc"),
            "abfss://logs@acct.dfs.core.windows.net/x"
        );
        assert_eq!(shown_location("/var/log/spark"), "/var/log/spark");
        let e = Remote::open("s3a://AKIA:sec/ret@bucket/x", &StoreOptions::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!e.contains("sec/ret") && !e.contains("AKIA"), "{e}");
    }

    #[test]
    fn urls_are_told_from_paths() {
        for u in [
            "s3://b/x",
            "s3a://b",
            "gs://b/logs/",
            "abfss://c@a.dfs.core.windows.net/x",
        ] {
            assert!(is_url(u), "{u}");
        }
        for p in ["/var/log/spark", "logs", "./s3:/x", "C:x", "a b://c"] {
            assert!(!is_url(p), "{p}");
        }
    }

    #[test]
    fn a_stores_error_is_one_line_of_its_code_and_message() {
        let e = "Error performing list request: Client error with status 403 Forbidden: \
                 <?xml version=\"1.0\"?>\n<Error><Code>InvalidAccessKeyId</Code><Message>The \
                 AWS Access Key Id you provided does not exist in our records.</Message></Error>";
        assert_eq!(
            short(e),
            "Error performing list request: Client error with status 403 Forbidden: \
             InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records."
        );
    }

    #[test]
    fn unknown_schemes_and_keys_are_usage_errors() {
        let opts = StoreOptions::default();
        assert!(
            matches!(Remote::open("hdfs://nn/x", &opts), Err(Failure::Usage(m)) if m.contains("hdfs dfs -get"))
        );
        assert!(matches!(
            Remote::open("ftp://h/x", &opts),
            Err(Failure::Usage(_))
        ));
        let opts = StoreOptions {
            options: vec![("no_such_key".into(), "v".into())],
            timeout: None,
        };
        assert!(
            matches!(Remote::open("s3://b/x", &opts), Err(Failure::Usage(m)) if m.contains("no_such_key"))
        );
    }
}
