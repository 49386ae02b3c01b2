//! The clap pieces several commands share: the cluster flags and the recording limits.

use clap::Args;

/// The flags every command that talks to a cluster takes.
#[derive(Debug, Args, Clone)]
pub struct LiveArgs {
    /// Path to the kubeconfig (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long, value_name = "FILE", global = true)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, value_name = "NAME", global = true)]
    pub context: Option<String>,
    /// The namespace (default: the context's).
    #[arg(
        short = 'n',
        long,
        value_name = "NS",
        global = true,
        conflicts_with = "all_namespaces"
    )]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// A label selector to narrow the pods (added to spark-role in (driver,executor)).
    #[arg(short = 'l', long, value_name = "SELECTOR", global = true)]
    pub selector: Option<String>,
    /// How often to LIST every pod (Spark's own default is 30s).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, global = true)]
    pub poll_interval: std::time::Duration,
    /// How often to read each driver's own executor list (its REST API, through the API
    /// server's service proxy); the live view reads only the app in view.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration, global = true)]
    pub driver_poll_interval: std::time::Duration,
    /// Never read the drivers' REST API.
    #[arg(long, global = true)]
    pub no_driver_api: bool,
    /// Never write to the cluster.
    #[arg(long, global = true)]
    pub readonly: bool,
    /// Show times in UTC in the live view, demo and replay (default: local time; `z`
    /// toggles).
    #[arg(long, global = true)]
    pub utc: bool,
    /// Also record the session to this file (live view and demo).
    #[arg(long, value_name = "FILE", global = true)]
    pub record: Option<std::path::PathBuf>,
    /// How long one API request (and the kubeconfig's exec credential plugin) may take
    /// before it fails with a clear error.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout, global = true)]
    pub request_timeout: std::time::Duration,
}

impl LiveArgs {
    pub fn options(&self) -> crate::source::live::LiveOptions {
        crate::source::live::LiveOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            namespace: self.namespace.clone(),
            all_namespaces: self.all_namespaces,
            selector: self.selector.clone(),
            poll_interval: self.poll_interval,
            driver_poll: (!self.no_driver_api).then_some(self.driver_poll_interval),
            request_timeout: self.request_timeout,
        }
    }
}

/// Bounds on reading a recording.
#[derive(Debug, Args, Clone, Copy)]
pub struct ReadLimits {
    /// Skip (with a warning) recording lines longer than this (e.g. 64MiB, 512KiB).
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    pub max_line: usize,
}

/// `64MiB`, `512KiB`, `1GiB` or a number of bytes.
pub(crate) fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("{s:?}: not a size (e.g. 64MiB, 512KiB)")),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{s:?}: not a size (e.g. 64MiB, 512KiB)"))
}

pub(crate) fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("{s:?}: must be more than zero")),
        d => Ok(d),
    }
}

pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e} (e.g. 30s, 2m)"))
}
