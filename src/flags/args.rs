//! The clap pieces several commands share: the cluster flags and the recording limits.

use clap::Args;

use crate::app::ViewSettings;
use crate::eventlog::live::EventLogDir;
use crate::failure::Failure;
use crate::flags::completers;
use crate::publish::metrics;
use crate::record::DEFAULT_MAX_LINE;
use crate::record::timeline::Reading;
use crate::settings::ReadOnly;
use crate::source::connection::LiveOptions;
use crate::source::extra::Extra;
use crate::storage::remote::StoreOptions;

/// Where the cluster is and which pods: every command that talks to a cluster takes these
/// (the live view, `status`, `record`, `kill`, `hold`, `release`), and only those.
#[derive(Debug, Args, Clone)]
pub struct ClusterArgs {
    /// The configuration file (default: $SPARK_TRIAGE_CONFIG, else
    /// $XDG_CONFIG_HOME/spark-triage/config.toml when it exists; docs/configuration.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Path to the kubeconfig (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCompleter::new(completers::contexts))]
    pub context: Option<String>,
    /// The namespace (default: the context's).
    #[arg(
        short = 'n',
        long,
        value_name = "NS",
        conflicts_with = "all_namespaces",
        add = clap_complete::ArgValueCompleter::new(completers::namespaces)
    )]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// A label selector to narrow the pods (added to spark-role in (driver,executor)).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// How long one API request (and the kubeconfig's exec credential plugin) may take
    /// before it fails with a clear error.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_TIMEOUT, value_parser = parse_timeout)]
    pub request_timeout: std::time::Duration,
}

/// How the watching commands (the live view, `status`, `record`, `demo`) poll.
#[derive(Debug, Args, Clone)]
pub struct WatchArgs {
    /// How often to LIST every pod (Spark's own default is 30s).
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_POLL, value_parser = parse_interval)]
    pub poll_interval: std::time::Duration,
    /// How often to read each driver's own executor list (its REST API, through the API
    /// server's service proxy); the live view reads only the app in view.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_DRIVER_POLL, value_parser = parse_interval)]
    pub driver_poll_interval: std::time::Duration,
    /// Never read the drivers' REST API.
    #[arg(long)]
    pub no_driver_api: bool,
    /// Spark's event-log directory (`spark.eventLog.dir`: a path, or s3a://, gs://,
    /// abfss://): each app's log is read once, to explain the executors that ended before
    /// this started. An object store's settings come from its usual environment (AWS_*,
    /// AWS_PROFILE, GOOGLE_*, AZURE_*).
    #[arg(long, value_name = "DIR|URL")]
    pub event_log_dir: Option<String>,
}

/// `--readonly`, for the commands that can write (the live view, `demo`, `kill`, `hold`,
/// `release`).
#[derive(Debug, Args, Clone, Default)]
pub struct WriteArgs {
    /// Never write to the cluster.
    #[arg(long)]
    pub readonly: bool,
}

/// The views on a terminal (the live view, `demo`).
#[derive(Debug, Args, Clone)]
pub struct ViewArgs {
    /// Show times in UTC (default: local time; `z` toggles).
    #[arg(long)]
    pub utc: bool,
    /// Also record the session to this file.
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
    /// Where the view's own diagnostics go (default:
    /// $XDG_STATE_HOME/spark-triage/spark-triage.log; level from SPARK_TRIAGE_LOG).
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<std::path::PathBuf>,
    /// Forget executors whose pods have been gone this long (their counted failures still
    /// count), so a view left open stays in bounded memory; the header says when it has.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_forget)]
    pub forget_after: std::time::Duration,
    /// Serve the verdicts as Prometheus metrics (/metrics, docs/metrics.md) on this
    /// address while the view is open: a bare port (9090) is loopback only.
    #[arg(long, value_name = "ADDR", value_parser = metrics::parse_listen_addr)]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

impl Default for ViewArgs {
    fn default() -> Self {
        Self {
            utc: false,
            record: None,
            log_file: None,
            forget_after: std::time::Duration::from_secs(3600),
            metrics_addr: None,
        }
    }
}

/// `--forget-after`: a minute to ten years.
pub(crate) fn parse_forget(s: &str) -> Result<std::time::Duration, String> {
    parse_within(s, std::time::Duration::from_secs(60), LONGEST)
}

const DEFAULT_TIMEOUT: &str = "30s";
const DEFAULT_POLL: &str = "30s";
const DEFAULT_DRIVER_POLL: &str = "10s";

impl Default for WatchArgs {
    fn default() -> Self {
        let d = |s| parse_duration(s).unwrap_or_default();
        Self {
            poll_interval: d(DEFAULT_POLL),
            driver_poll_interval: d(DEFAULT_DRIVER_POLL),
            no_driver_api: false,
            event_log_dir: None,
        }
    }
}

/// What a command that talks to a cluster was given, whole (the groups it does not take
/// are at their defaults).
#[derive(Debug, Clone)]
pub struct LiveArgs {
    pub config: Option<std::path::PathBuf>,
    pub kubeconfig: Option<std::path::PathBuf>,
    pub context: Option<String>,
    pub namespace: Option<String>,
    pub all_namespaces: bool,
    pub selector: Option<String>,
    pub poll_interval: std::time::Duration,
    pub driver_poll_interval: std::time::Duration,
    pub no_driver_api: bool,
    /// `--event-log-dir`.
    pub event_log_dir: Option<String>,
    /// Writes refused, and what said so.
    pub readonly: ReadOnly,
    /// The terminal views' settings: `--utc` and `--metrics-addr` as given, then the
    /// configuration file's (each setting held here only).
    pub view: ViewSettings,
    pub record: Option<std::path::PathBuf>,
    pub log_file: Option<std::path::PathBuf>,
    pub request_timeout: std::time::Duration,
    pub forget_after: std::time::Duration,
}

impl LiveArgs {
    /// The groups a command took, as one.
    pub fn of(
        cluster: &ClusterArgs,
        watch: Option<&WatchArgs>,
        write: Option<&WriteArgs>,
        view: Option<&ViewArgs>,
    ) -> Self {
        let watch = watch.cloned().unwrap_or_default();
        let view = view.cloned().unwrap_or_default();
        Self {
            config: cluster.config.clone(),
            kubeconfig: cluster.kubeconfig.clone(),
            context: cluster.context.clone(),
            namespace: cluster.namespace.clone(),
            all_namespaces: cluster.all_namespaces,
            selector: cluster.selector.clone(),
            request_timeout: cluster.request_timeout,
            poll_interval: watch.poll_interval,
            driver_poll_interval: watch.driver_poll_interval,
            no_driver_api: watch.no_driver_api,
            event_log_dir: watch.event_log_dir,
            readonly: match write.is_some_and(|w| w.readonly) {
                true => ReadOnly::flag(),
                false => ReadOnly::Off,
            },
            view: ViewSettings {
                utc: view.utc,
                metrics_addr: view.metrics_addr,
                ..Default::default()
            },
            record: view.record,
            log_file: view.log_file,
            forget_after: view.forget_after,
        }
    }

    /// `demo`: no cluster flags (its cluster is in-process).
    pub fn local(watch: &WatchArgs, write: &WriteArgs, view: &ViewArgs) -> Self {
        let cluster = ClusterArgs {
            config: None,
            kubeconfig: None,
            context: None,
            namespace: None,
            all_namespaces: true,
            selector: None,
            request_timeout: parse_timeout(DEFAULT_TIMEOUT).unwrap_or_default(),
        };
        Self::of(&cluster, Some(watch), Some(write), Some(view))
    }
}

impl LiveArgs {
    /// The event-log source (`--event-log-dir`), with an object store's settings.
    pub fn event_logs(&self, store: &StoreOptions) -> Option<std::sync::Arc<dyn Extra>> {
        let location = self.event_log_dir.clone()?;
        Some(std::sync::Arc::new(EventLogDir {
            location,
            store: StoreOptions {
                options: store.options.clone(),
                timeout: store.timeout.or(Some(self.request_timeout)),
            },
            max_line: DEFAULT_MAX_LINE,
        }))
    }

    /// The live sources' options.
    pub fn options(&self) -> LiveOptions {
        LiveOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            namespace: self.namespace.clone(),
            all_namespaces: self.all_namespaces,
            selector: self.selector.clone(),
            poll_interval: self.poll_interval,
            driver_poll: (!self.no_driver_api).then_some(self.driver_poll_interval),
            request_timeout: self.request_timeout,
            clock: None,
        }
    }
}

/// A window of a recording, as typed (`report`, `export`).
#[derive(Debug, Clone, clap::Args)]
pub struct WindowArgs {
    /// Only the last DURATION of the recording (e.g. 24h).
    #[arg(long, value_name = "DURATION", conflicts_with = "from")]
    pub since: Option<String>,
    /// From this moment: RFC 3339, a local time (2026-12-01 03:00, 03:00), before the end
    /// (-2h) or after the start (90s).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub from: Option<String>,
    /// To this moment (same forms).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub to: Option<String>,
}

impl WindowArgs {
    /// Where the window starts, as a moment: `--since 24h` is `-24h` (before the end).
    pub(crate) fn from(&self) -> Result<Option<String>, Failure> {
        match &self.since {
            Some(d) => parse_duration(d)
                .map(|_| Some(format!("-{}", d.trim())))
                .map_err(|e| Failure::Usage(format!("--since {e}"))),
            None => Ok(self.from.clone()),
        }
    }
}

/// Bounds on reading a recording.
#[derive(Debug, Args, Clone)]
pub struct ReadLimits {
    /// Skip (with a warning) recording lines longer than this (e.g. 64MiB, 512KiB).
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    pub max_line: u64,
    /// An object store's setting, for event logs at a URL (s3://, s3a://, gs://, abfss://):
    /// KEY=VALUE, repeated (endpoint=http://127.0.0.1:9000, region=eu-west-1,
    /// virtual_hosted_style_request=true, access_key_id=…). The clouds' usual environment
    /// (AWS_*, AWS_PROFILE, GOOGLE_*, AZURE_*) is read too. Values are never shown.
    #[arg(long = "store-option", value_name = "KEY=VALUE", value_parser = StoreOptions::parse_option)]
    pub store_options: Vec<(String, String)>,
    /// How long an object store may take to connect or to send the next part of an answer.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_TIMEOUT, value_parser = parse_timeout)]
    pub store_timeout: std::time::Duration,
}

impl ReadLimits {
    /// How the post-mortem commands read what they are given.
    pub(crate) fn reading(&self) -> Reading {
        Reading {
            max_line: self.max_line,
            store: StoreOptions {
                options: self.store_options.clone(),
                timeout: Some(self.store_timeout),
            },
            app: None,
        }
    }
}

/// `64MiB`, `512KiB`, `5GiB`, `500MB` (SI: 10^6) or a number of bytes; more than zero.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    match s.trim().parse::<bytesize::ByteSize>() {
        Ok(b) if b.as_u64() > 0 => Ok(b.as_u64()),
        Ok(_) => Err(format!("{s:?}: must be more than zero")),
        Err(e) => Err(format!("{s:?}: not a size like 64MiB or 5GiB ({e})")),
    }
}

/// `--request-timeout`: more than zero, at most an hour.
pub(crate) fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    parse_within(s, std::time::Duration::from_millis(1), HOUR)
}

/// `--poll-interval`, `--driver-poll-interval`: a second to a day.
pub(crate) fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    parse_within(s, std::time::Duration::from_secs(1), 24 * HOUR)
}

/// `hold --ttl`: a second to 30 days (a hold must end: it keeps pods and their node's
/// resources).
pub(crate) fn parse_ttl(s: &str) -> Result<std::time::Duration, String> {
    parse_within(s, std::time::Duration::from_secs(1), 30 * 24 * HOUR)
}

const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);
/// Any other duration: at most ten years (no clock or timer overflows below that).
const LONGEST: std::time::Duration = std::time::Duration::from_secs(10 * 366 * 24 * 3600);

fn parse_within(
    s: &str,
    min: std::time::Duration,
    max: std::time::Duration,
) -> Result<std::time::Duration, String> {
    let d = parse_duration(s)?;
    if d < min || d > max {
        let h = |d: std::time::Duration| humantime::format_duration(d).to_string();
        return Err(format!("{s:?}: must be from {} to {}", h(min), h(max)));
    }
    Ok(d)
}

pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e} (e.g. 30s, 2m)"))?;
    if d > LONGEST {
        return Err(format!("{s:?}: more than ten years"));
    }
    Ok(d)
}
