//! The command line: clap definitions, kubectl-plugin naming, dispatch, exit codes.
//!
//! Exit codes (stable): 0 ok; 1 runtime failure with a one-line cause on stderr; 2 usage
//! error. Data goes to stdout, diagnostics to stderr.

use std::{
    ffi::OsString,
    io::{IsTerminal, Write},
    path::Path,
    process::ExitCode,
};

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::{
    classify::ClassifyOptions,
    explain::{explain, render_text},
    input::{self, InputError},
    model::Time,
};

/// Watch and explain the executor pods of Apache Spark applications on Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "spark-triage", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub live: LiveArgs,
    /// Without a command: the live view of the cluster in the kubeconfig.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Explain pods from a file or stdin: Spark's state, why each ended or waits, and what Spark concludes.
    ///
    /// Reads a Pod, a PodList or a `kubectl get … -o json|yaml` List (pods and events may
    /// be mixed), as JSON, a JSON stream, or YAML.
    #[command(after_help = "Examples:\n  \
        kubectl get pod my-app-exec-7 -o json | spark-triage explain -\n  \
        kubectl get pods,events -n spark-jobs -o yaml | spark-triage explain - --output json\n  \
        spark-triage explain pods.json --events events.json")]
    Explain(ExplainArgs),
    /// Run a simulated Kubernetes cluster with Spark applications (for demos, tests, training).
    ///
    /// Prints its URL and a kubeconfig path, then serves until Ctrl-C. kubectl and
    /// spark-triage work against it unmodified: `kubectl --kubeconfig F get pods -A`.
    #[command(
        after_help = "Scenarios: mixed (default), oom-storm, pending-capacity, churn, empty, scale \
        (with --apps/--executors/--churn), or a YAML file (docs/simulator.md).\n\
        Faults (repeatable): drop-watches=D, expire-watches, latency=D, error-rate=F, deny=VERBS, restart-after=D, event-ttl=D"
    )]
    Sim(SimArgs),
    /// Print every Spark application's executors once (or after watching for a while), then exit.
    ///
    /// Waits for the first full LIST (and the events), or keeps watching for `--for`, so that
    /// executors which come and go meanwhile are kept as tombstones.
    Status(StatusArgs),
    /// The live view on a simulated cluster running in-process: nothing else needed.
    Demo(DemoArgs),
    /// Record what the cluster shows (headless) to FILE, until --duration or Ctrl-C.
    Record(RecordArgs),
    /// Delete executor pods of an application (Spark replaces them under new ids).
    #[command(
        after_help = "Examples:\n  spark-triage kill --app etl-nightly 7 8 --yes\n  spark-triage kill --app etl-nightly --state pending --older-than 10m --dry-run"
    )]
    Kill(KillArgs),
    /// Hold an application's executor pods after Spark deletes them (a runtime deleteOnTermination=false).
    Hold(HoldArgs),
    /// Remove the tool's hold from pods (only its own finalizer; others are untouched).
    Release(ReleaseArgs),
    /// Replay a recording in the live view, on a timeline (Space plays, n/N steps, f jumps to failures, : seeks).
    Replay(ReplayArgs),
    /// Write a post-mortem of a recording: failures, findings, OOM breakdown, pending, missing, churn, recommendations.
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The recording (plain or .zst).
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = ReportOutput::Md)]
    pub output: ReportOutput,
    #[command(flatten)]
    pub limits: ReadLimits,
}

/// Bounds on reading a recording.
#[derive(Debug, Args, Clone, Copy)]
pub struct ReadLimits {
    /// Skip (with a warning) recording lines longer than this (e.g. 64MiB, 512KiB).
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    pub max_line: usize,
}

/// `64MiB`, `512KiB`, `1GiB` or a number of bytes.
fn parse_size(s: &str) -> Result<usize, String> {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportOutput {
    Md,
    Json,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recording (plain or .zst).
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Start at this moment (a duration from the start, or an RFC 3339 time) instead of the start.
    #[arg(long, value_name = "DURATION|RFC3339")]
    pub at: Option<String>,
    #[command(flatten)]
    pub limits: ReadLimits,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// The application (spark-app-selector id or spark-app-name).
    #[arg(long)]
    pub app: String,
    /// Executor ids to kill.
    #[arg(value_name = "EXEC_ID")]
    pub ids: Vec<i64>,
    /// Only executors in this Spark state.
    #[arg(long, value_parser = parse_state)]
    pub state: Option<crate::model::ExecutorState>,
    /// Only executors whose pod is older than this.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub older_than: Option<std::time::Duration>,
    /// Grace period in seconds (default: the pod's own).
    #[arg(long, value_name = "SECONDS")]
    pub grace_period: Option<u32>,
    /// Grace period 0.
    #[arg(long, conflicts_with = "grace_period")]
    pub force: bool,
    /// Print what would be deleted; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask (required when not on a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Also delete matching pods that the app's driver does not own (labels alone match).
    #[arg(long)]
    pub force_unowned: bool,
}

fn parse_state(s: &str) -> Result<crate::model::ExecutorState, String> {
    crate::model::ExecutorState::ALL
        .into_iter()
        .find(|st| st.as_str() == s)
        .ok_or_else(|| format!("{s:?} is not a state (pending, running, succeeded, failed, deleted, terminating, unknown)"))
}

#[derive(Debug, Args)]
pub struct HoldArgs {
    /// The application (id or name).
    #[arg(long)]
    pub app: String,
    /// on or off.
    #[arg(value_parser = ["on", "off"])]
    pub switch: String,
    /// How long the hold lasts; any instance releases it after that.
    #[arg(long, default_value = "2h", value_parser = parse_duration)]
    pub ttl: std::time::Duration,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["app", "all", "expired"])))]
pub struct ReleaseArgs {
    /// Release this application's pods.
    #[arg(long)]
    pub app: Option<String>,
    /// Release every held pod in scope.
    #[arg(long)]
    pub all: bool,
    /// Release only holds past their expiry, in scope.
    #[arg(long)]
    pub expired: bool,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The recording to write (docs/recording-format.md).
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Stop after this long.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Write a keyframe (the whole state, for instant seeking in replays) this often.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub keyframe_every: std::time::Duration,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// A built-in scenario or a scenario file (docs/simulator.md).
    #[arg(long, default_value = "mixed")]
    pub scenario: String,
    /// Time scale of the simulation.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Seed for the simulation.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

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
    /// Also record the session to this file (live view and demo).
    #[arg(long, value_name = "FILE", global = true)]
    pub record: Option<std::path::PathBuf>,
    /// How long one API request (and the kubeconfig's exec credential plugin) may take
    /// before it fails with a clear error.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout, global = true)]
    pub request_timeout: std::time::Duration,
}

fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("{s:?}: must be more than zero")),
        d => Ok(d),
    }
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e} (e.g. 30s, 2m)"))
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

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = StatusOutput::Table)]
    pub output: StatusOutput,
    /// Keep watching this long before printing (Ctrl-C or SIGTERM prints at once).
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    pub for_duration: Option<std::time::Duration>,
    /// Only this application (id or name).
    #[arg(long, value_name = "APP")]
    pub app: Option<String>,
    /// Read a recording instead of a cluster.
    #[arg(long, value_name = "FILE")]
    pub recording: Option<std::path::PathBuf>,
    /// With --recording: the moment (a duration from its start, or an RFC 3339 time);
    /// default: its end.
    #[arg(long, value_name = "DURATION|RFC3339", requires = "recording")]
    pub at: Option<String>,
    #[command(flatten)]
    pub limits: ReadLimits,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusOutput {
    Table,
    Wide,
    Json,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Address to listen on (loopback only); port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// A built-in scenario name or a scenario file.
    #[arg(long, default_value = "mixed")]
    pub scenario: String,
    /// Where to write the kubeconfig (default: a file in the temp dir).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<std::path::PathBuf>,
    /// Time scale: 4 runs a 60 s scenario in 15 s.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Seed for everything random (ids, names, timings).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Inject a fault (repeatable).
    #[arg(long = "fault", value_name = "FAULT")]
    pub faults: Vec<crate::sim::Fault>,
    /// scale scenario: number of applications.
    #[arg(long, default_value_t = 1)]
    pub apps: u32,
    /// scale scenario: executors per application.
    #[arg(long, default_value_t = 1000)]
    pub executors: u32,
    /// scale scenario: executor failures per second, across all applications.
    #[arg(long, default_value_t = 0.0)]
    pub churn: f64,
    /// `simulated` plays containers; `process` runs Spark executor containers as local JVMs
    /// (for a real Spark driver; use with `--scenario empty`).
    #[arg(long, value_enum, default_value = "simulated")]
    pub kubelet: KubeletKind,
    /// process kubelet: the Spark distribution or `pyspark` package dir whose `jars/` the
    /// executors run (default `$SPARK_HOME`).
    #[arg(long, value_name = "DIR")]
    pub spark_home: Option<std::path::PathBuf>,
    /// process kubelet: where per-pod dirs and container logs go (default: a temp dir).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KubeletKind {
    Simulated,
    Process,
}

/// The process kubelet's options, checked.
fn process_options(args: &SimArgs) -> Result<Option<crate::sim::process::ProcessOptions>, Failure> {
    if args.kubelet == KubeletKind::Simulated {
        if args.spark_home.is_some() || args.work_dir.is_some() {
            return Err(Failure::Usage(
                "--spark-home and --work-dir need --kubelet process".to_owned(),
            ));
        }
        return Ok(None);
    }
    if args.speed != 1.0 {
        return Err(Failure::Usage(
            "--kubelet process runs real processes in real time: --speed must be 1".to_owned(),
        ));
    }
    let spark_home = args
        .spark_home
        .clone()
        .or_else(|| std::env::var_os("SPARK_HOME").map(Into::into))
        .ok_or_else(|| {
            Failure::Usage(
                "--kubelet process needs --spark-home DIR (or $SPARK_HOME): a Spark distribution or a pyspark package dir"
                    .to_owned(),
            )
        })?;
    if !spark_home.join("jars").is_dir() {
        return Err(Failure::Usage(format!(
            "--spark-home {}: no jars/ directory there (for pip's pyspark, use the package dir: python -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')",
            spark_home.display()
        )));
    }
    let spark_home = std::fs::canonicalize(&spark_home).unwrap_or(spark_home);
    let work_dir = args.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("spark-triage-sim-{}", std::process::id()))
    });
    std::fs::create_dir_all(&work_dir).map_err(|e| {
        Failure::Runtime(format!(
            "cannot create --work-dir {}: {e}",
            work_dir.display()
        ))
    })?;
    Ok(Some(crate::sim::process::ProcessOptions {
        spark_home,
        work_dir,
        java: None,
    }))
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Input file, or `-` for stdin.
    #[arg(value_name = "FILE|-")]
    pub file: Option<String>,
    /// An EventList (core/v1 or events.k8s.io/v1, JSON or YAML) to match to the pods.
    #[arg(long, value_name = "FILE")]
    pub events: Option<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// The executor container's name (spark.kubernetes.executor.podTemplateContainerName).
    /// Detected from each pod when not given.
    #[arg(long, value_name = "NAME")]
    pub spark_container: Option<String>,
    /// spark.kubernetes.executor.checkAllContainers (Spark 4 default: true; Spark 3: false).
    #[arg(long, value_name = "true|false", action = clap::ArgAction::Set)]
    pub check_all_containers: Option<bool>,
    /// Evaluate time-based rules at this RFC 3339 time instead of now (for reproducible output).
    #[arg(long, value_name = "RFC3339", hide = true)]
    pub now: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

/// A failure the user should read: one line, exit code attached.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Runtime(String),
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            Self::Input(_) | Self::Runtime(_) => 1,
        }
    }
}

/// The process entry point shared by `spark-triage` and `kubectl-spark_triage`.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let mut cmd = Cli::command();
    if invoked_as_plugin(&args) {
        cmd = cmd
            .name("kubectl spark-triage")
            .bin_name("kubectl spark-triage");
    }
    let program = cmd.get_name().to_owned();
    let cli = match cmd
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(f) => {
            eprintln!(
                "{program}: {}",
                crate::redact::one_line(&crate::redact::credentials(&f.to_string()))
            );
            ExitCode::from(f.exit_code())
        }
    }
}

/// kubectl runs plugins by their file name `kubectl-<name>`.
fn invoked_as_plugin(args: &[OsString]) -> bool {
    args.first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n.to_string_lossy().starts_with("kubectl-"))
}

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Some(Command::Explain(args)) => run_explain(args),
        Some(Command::Sim(args)) => run_sim(args),
        Some(Command::Status(args)) => run_status(&cli.live, args),
        Some(Command::Demo(args)) => run_demo(&cli.live, args),
        Some(Command::Record(args)) => run_record(&cli.live, args),
        Some(Command::Kill(args)) => run_kill(&cli.live, args),
        Some(Command::Hold(args)) => run_hold(&cli.live, args),
        Some(Command::Release(args)) => run_release(&cli.live, args),
        Some(Command::Replay(args)) => run_replay(args),
        Some(Command::Report(args)) => run_report(args),
        None => run_live(&cli.live),
    }
}

fn run_explain(args: ExplainArgs) -> Result<ExitCode, Failure> {
    let file = match args.file {
        Some(f) => f,
        None if std::io::stdin().is_terminal() => {
            return Err(Failure::Usage(
                "explain needs a FILE, or `-` with a pod on stdin (e.g. kubectl get pod X -o json | spark-triage explain -)".into(),
            ));
        }
        None => "-".to_owned(),
    };
    let now: Time = match &args.now {
        Some(t) => chrono::DateTime::parse_from_rfc3339(t)
            .map_err(|e| Failure::Usage(format!("--now {t:?}: {e}")))?
            .to_utc(),
        None => chrono::Utc::now(),
    };
    let origin = input::origin_name(&file);
    let mut objects = input::read_pods(&input::read_source(&file)?, &origin)?;
    if let Some(path) = &args.events {
        let events = input::read_events(&input::read_source(path)?, &input::origin_name(path))?;
        objects.events.extend(events.events);
        objects.skipped.extend(events.skipped);
        objects.invalid.extend(events.invalid);
    }
    for line in &objects.skipped {
        eprintln!("note: {}", crate::redact::escape_controls(line));
    }
    for line in &objects.invalid {
        eprintln!("error: {}", crate::redact::escape_controls(line));
    }
    let opts = ClassifyOptions {
        spark_container: args.spark_container,
        check_all_containers: args.check_all_containers,
    };
    let report = explain(&objects.pods, &objects.events, &opts, now);
    let text = match args.output {
        Output::Text => render_text(&report),
        Output::Json => {
            let mut s = serde_json::to_string_pretty(&report)
                .map_err(|e| Failure::Runtime(format!("cannot write JSON: {e}")))?;
            s.push('\n');
            s
        }
    };
    write_stdout(&text)?;
    Ok(if objects.invalid.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn write_stdout(text: &str) -> Result<(), Failure> {
    // Cluster data (names, messages) may hold escape sequences: never pass them through.
    let text = crate::redact::escape_controls(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::Runtime(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Runtime(format!("cannot start the async runtime: {e}")))
}

/// Runs `f` on a fresh runtime, then shuts it down without waiting for blocking work a
/// timed-out request left behind (kube refreshes exec credentials on the blocking pool).
fn block_on<T>(f: impl std::future::Future<Output = Result<T, Failure>>) -> Result<T, Failure> {
    let rt = runtime()?;
    let out = rt.block_on(f);
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    out
}

/// The scenario named on the command line (`scale` is generated from its flags).
fn scenario_of(args: &SimArgs) -> Result<crate::sim::Scenario, Failure> {
    if args.scenario == "scale" {
        return Ok(crate::sim::scenario::scale(
            args.apps,
            args.executors,
            args.churn,
        ));
    }
    crate::sim::scenario::load(&args.scenario).map_err(Failure::Usage)
}

fn run_sim(args: SimArgs) -> Result<ExitCode, Failure> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(Failure::Usage(format!(
            "--speed {}: must be a positive number",
            args.speed
        )));
    }
    let mut opts = crate::sim::SimOptions::new(scenario_of(&args)?);
    opts.listen = args.listen;
    opts.speed = args.speed;
    opts.seed = args.seed;
    opts.faults = args.faults.clone();
    opts.kubeconfig_out = args.kubeconfig_out.clone();
    opts.process = process_options(&args)?;
    // The simulator is a server: its notices (process starts, exits, OOM kills) go to stderr.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(tracing::Level::INFO)
        .try_init();
    let work_dir = opts.process.as_ref().map(|p| p.work_dir.clone());
    let opts = opts.for_external_clients();
    block_on(async move {
        let sim = crate::sim::start(opts)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        write_stdout(&format!(
            "spark-triage simulator ({} scenario) listening on {}\nkubeconfig: {}\n  kubectl --kubeconfig {} get pods -A\nCtrl-C to stop.\n",
            args.scenario,
            sim.url,
            sim.kubeconfig.display(),
            sim.kubeconfig.display()
        ))?;
        if let Some(dir) = &work_dir {
            write_stdout(&format!(
                "process kubelet: executor containers run as local JVMs; pod dirs and logs in {}\n",
                dir.display()
            ))?;
        }
        wait_for_signal().await;
        sim.stop().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// Ctrl-C, SIGTERM or SIGHUP (a closed terminal): listening starts at the call, so the
/// signal is caught (and files closed cleanly) even before the future is first polled.
fn wait_for_signal() -> impl std::future::Future<Output = ()> {
    let mut signals = crate::tui::signal_stream();
    async move { signals.recv().await }
}

/// The moment `--at` names in a recording that started at `start`.
fn moment(at: &str, start: Time) -> Result<Time, Failure> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(at) {
        return Ok(t.to_utc());
    }
    let d = humantime::parse_duration(at).map_err(|e| {
        Failure::Usage(format!(
            "--at {at:?}: not a duration or an RFC 3339 time ({e})"
        ))
    })?;
    Ok(start + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::zero()))
}

/// Opens a recording, reporting damage on stderr.
fn open_recording(
    path: &std::path::Path,
    limits: ReadLimits,
) -> Result<crate::record::Recording, Failure> {
    let rec = crate::record::open_with(path, limits.max_line)
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    for d in &rec.damaged {
        eprintln!(
            "warning: {}: {}",
            path.display(),
            crate::redact::escape_controls(d)
        );
    }
    Ok(rec)
}

fn print_status(report: &crate::status::StatusReport, output: StatusOutput) -> Result<(), Failure> {
    let text = match output {
        StatusOutput::Json => {
            let mut s = serde_json::to_string_pretty(report)
                .map_err(|e| Failure::Runtime(e.to_string()))?;
            s.push('\n');
            s
        }
        StatusOutput::Table => crate::status::render_table(report, false),
        StatusOutput::Wide => crate::status::render_table(report, true),
    };
    write_stdout(&text)
}

fn run_status(live_args: &LiveArgs, args: StatusArgs) -> Result<ExitCode, Failure> {
    use crate::{source::live, status, store::Store};
    if let Some(path) = &args.recording {
        let rec = open_recording(path, args.limits)?;
        let until = args
            .at
            .as_deref()
            .map(|a| moment(a, rec.header.started_at))
            .transpose()?;
        let mut store = Store::new();
        for ev in rec.events {
            if until.is_some_and(|u| ev.at() > u) {
                break;
            }
            store.apply(ev);
        }
        print_status(
            &status::report(store.view(), args.app.as_deref()),
            args.output,
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = live_args.options();
    block_on(async move {
        let conn = live::connect(&opts)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
        let tasks = live::spawn(&conn, opts.poll_interval, tx);
        let mut store = Store::new();
        let start = tokio::time::Instant::now();
        let want = args.for_duration.unwrap_or_default();
        // The first LIST is immediate; allow for a slow server and one retry.
        let give_up = start + 2 * opts.timeout() + want;
        let mut held = Vec::new();
        let stop = wait_for_signal();
        tokio::pin!(stop);
        loop {
            let now = tokio::time::Instant::now();
            if status::ready(store.view(), opts.driver_poll.is_some()) && now >= start + want {
                break;
            }
            if now >= give_up {
                let why = status::report(store.view(), None).problems.join("; ");
                return Err(Failure::Runtime(format!(
                    "no complete answer from the API server {} within {}s{}",
                    conn.server,
                    (give_up - start).as_secs(),
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(": {why}")
                    }
                )));
            }
            let wake = if status::ready(store.view(), opts.driver_poll.is_some()) {
                start + want
            } else {
                give_up
            };
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some(ev) => apply_after_first_list(&mut store, &mut held, ev),
                    None => break,
                },
                () = tokio::time::sleep_until(wake) => {}
                // Ctrl-C or SIGTERM ends a long `--for` early: print what was seen so far.
                () = &mut stop, if status::ready(store.view(), opts.driver_poll.is_some()) => break,
            }
        }
        while let Ok(ev) = rx.try_recv() {
            apply_after_first_list(&mut store, &mut held, ev);
        }
        for ev in held {
            store.apply(ev);
        }
        for t in tasks {
            t.abort();
        }
        let report = status::report(store.view(), args.app.as_deref());
        for p in &report.problems {
            eprintln!("warning: {}", crate::redact::escape_controls(p));
        }
        print_status(&report, args.output)?;
        Ok(ExitCode::SUCCESS)
    })
}

/// The TUI on a connection: sources feed the app until the user quits.
async fn tui_on(
    conn: crate::source::live::Connection,
    poll: std::time::Duration,
    mode: crate::app::Mode,
    readonly: bool,
    record: Option<&std::path::Path>,
) -> Result<(), Failure> {
    use crate::app::{App, Context};
    if !std::io::stdout().is_terminal() {
        return Err(Failure::Usage("the live view needs a terminal; use `spark-triage status` for output to a pipe or file".into()));
    }
    let (tx, rx) = tokio::sync::mpsc::channel(65_536);
    let runner = crate::tui::Runner {
        client: conn.client.clone(),
        user: conn.user.clone(),
        log: action_log(),
        events: tx.clone(),
        focus: conn.focus.clone(),
    };
    let mut tasks = crate::source::live::spawn(&conn, poll, tx);
    let rx = match record {
        Some(path) => {
            let (tee, task) = tee_to_file(&conn, path, rx)?;
            tasks.push(task);
            tee
        }
        None => rx,
    };
    let app = App::new(Context {
        context: conn.context.clone(),
        scope: conn.scope.describe(),
        readonly,
        mode,
    });
    let mut app = app;
    app.poll_interval = Some(poll);
    let result = crate::tui::run(app, rx, Some(runner), true).await;
    for t in tasks {
        t.abort();
    }
    result
        .map(|_| ())
        .map_err(|e| Failure::Runtime(format!("terminal: {e}")))
}

/// Raw mode while connecting (so `q` is read at once), undone on every path.
struct RawMode;

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// Connects for the live view, saying so; q, Esc, Ctrl-C or a signal give up (`None`).
async fn connect_watched(
    opts: &crate::source::live::LiveOptions,
) -> Result<Option<crate::source::live::Connection>, Failure> {
    use crossterm::event::{Event, EventStream, KeyCode, KeyEventKind, KeyModifiers};
    use futures::StreamExt;
    if !std::io::stdout().is_terminal() {
        return Err(Failure::Usage("the live view needs a terminal; use `spark-triage status` for output to a pipe or file".into()));
    }
    eprint!(
        "connecting to the API server (gives up after {}; q to quit now)…\r\n",
        humantime::format_duration(opts.timeout())
    );
    let _raw = crossterm::terminal::enable_raw_mode()
        .ok()
        .map(|()| RawMode);
    let mut keys = EventStream::new();
    let mut keys_open = true;
    let mut signals = crate::tui::signal_stream();
    let conn = crate::source::live::connect(opts);
    tokio::pin!(conn);
    loop {
        tokio::select! {
            c = &mut conn => return c.map(Some).map_err(|e| Failure::Runtime(e.to_string())),
            k = keys.next(), if keys_open => match k {
                Some(Ok(Event::Key(k))) if k.kind == KeyEventKind::Press
                    && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                        || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL))) =>
                {
                    return Ok(None);
                }
                Some(Ok(_)) => {}
                None | Some(Err(_)) => keys_open = false,
            },
            () = signals.recv() => return Ok(None),
        }
    }
}

fn run_live(live_args: &LiveArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    refuse_existing(live_args.record.as_deref(), false)?;
    let readonly = live_args.readonly;
    block_on(async move {
        let Some(conn) = connect_watched(&opts).await? else {
            return Ok(ExitCode::SUCCESS);
        };
        tui_on(
            conn,
            opts.poll_interval,
            crate::app::Mode::Live,
            readonly,
            live_args.record.as_deref(),
        )
        .await?;
        Ok(ExitCode::SUCCESS)
    })
}

fn run_demo(live_args: &LiveArgs, args: DemoArgs) -> Result<ExitCode, Failure> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(Failure::Usage(format!(
            "--speed {}: must be a positive number",
            args.speed
        )));
    }
    refuse_existing(live_args.record.as_deref(), false)?;
    let scenario = crate::sim::scenario::load(&args.scenario).map_err(Failure::Usage)?;
    let mut opts = crate::sim::SimOptions::new(scenario);
    opts.speed = args.speed;
    opts.seed = args.seed;
    let poll = live_args.poll_interval;
    let readonly = live_args.readonly;
    let record = live_args.record.clone();
    block_on(async move {
        let sim = crate::sim::start(opts)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        let live = crate::source::live::LiveOptions {
            kubeconfig: Some(sim.kubeconfig.clone()),
            all_namespaces: true,
            poll_interval: poll,
            driver_poll: live_args.options().driver_poll,
            ..Default::default()
        };
        let mut conn = crate::source::live::connect(&live)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        conn.context = format!("demo ({} scenario)", args.scenario);
        let r = tui_on(
            conn,
            poll,
            crate::app::Mode::Demo,
            readonly,
            record.as_deref(),
        )
        .await;
        let _ = std::fs::remove_file(&sim.kubeconfig);
        sim.stop().await;
        r?;
        Ok(ExitCode::SUCCESS)
    })
}

fn recording_header(conn: &crate::source::live::Connection) -> crate::record::Header {
    crate::record::Header::new(
        chrono::Utc::now(),
        conn.scope.describe(),
        conn.selector.clone(),
        conn.server.clone(),
    )
}

fn create_recording(
    path: &std::path::Path,
    conn: &crate::source::live::Connection,
    force: bool,
) -> Result<crate::record::Writer<crate::record::FileOut>, Failure> {
    crate::record::create(path, &recording_header(conn), force).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            exists(path)
        } else {
            Failure::Runtime(format!("cannot create {}: {e}", path.display()))
        }
    })
}

fn exists(path: &std::path::Path) -> Failure {
    Failure::Runtime(format!(
        "{} exists; not overwriting it (use `record --force`, or another name)",
        path.display()
    ))
}

/// Refuses before connecting, so the user hears it at once.
fn refuse_existing(path: Option<&std::path::Path>, force: bool) -> Result<(), Failure> {
    match path {
        Some(p) if !force && p.exists() => Err(exists(p)),
        _ => Ok(()),
    }
}

/// Passes events through while writing each to a recording, flushed every second.
fn tee_to_file(
    conn: &crate::source::live::Connection,
    path: &std::path::Path,
    mut rx: tokio::sync::mpsc::Receiver<crate::source::SourceEvent>,
) -> Result<
    (
        tokio::sync::mpsc::Receiver<crate::source::SourceEvent>,
        tokio::task::JoinHandle<()>,
    ),
    Failure,
> {
    let mut writer = create_recording(path, conn, false)?;
    let (tx, out) = tokio::sync::mpsc::channel(65_536);
    let task = tokio::spawn(async move {
        let mut flush = tokio::time::interval(std::time::Duration::from_secs(1));
        // Its own store, for keyframes (the UI's is not reachable from here).
        let mut store = crate::store::Store::new();
        let every = std::time::Duration::from_secs(300);
        let mut keyframe = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tokio::select! {
                ev = rx.recv() => {
                    let Some(ev) = ev else { break };
                    store.apply(ev.clone());
                    if writer.write(&ev).is_err() || tx.send(ev).await.is_err() {
                        break;
                    }
                }
                _ = flush.tick() => { let _ = writer.flush(); }
                _ = keyframe.tick() => {
                    let at = store.view().now.unwrap_or_else(chrono::Utc::now);
                    let _ = writer.write_keyframe(&store, at);
                }
            }
        }
        let _ = writer.flush();
    });
    Ok((out, task))
}

fn run_record(live_args: &LiveArgs, args: RecordArgs) -> Result<ExitCode, Failure> {
    use crate::{source::live, store::Store};
    let opts = live_args.options();
    refuse_existing(Some(&args.file), args.force)?;
    block_on(async move {
        let conn = live::connect(&opts)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        let mut writer = create_recording(&args.file, &conn, args.force)?;
        let (tx, mut rx) = tokio::sync::mpsc::channel(65_536);
        let tasks = live::spawn(&conn, opts.poll_interval, tx);
        let mut store = Store::new();
        let until = args.duration.map(|d| tokio::time::Instant::now() + d);
        let mut second = tokio::time::interval(std::time::Duration::from_secs(1));
        let mut keyframe = tokio::time::interval_at(
            tokio::time::Instant::now() + args.keyframe_every,
            args.keyframe_every.max(std::time::Duration::from_secs(1)),
        );
        let stop = wait_for_signal();
        tokio::pin!(stop);
        let progress = |w: &crate::record::Writer<_>, s: &Store| {
            eprint!(
                "\rrecording {}: {} events, {} apps, {} KiB   ",
                args.file.display(),
                w.events,
                s.view().apps.len(),
                w.bytes / 1024
            );
        };
        loop {
            tokio::select! {
                ev = rx.recv() => {
                    let Some(ev) = ev else { break };
                    writer.write(&ev).map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", args.file.display())))?;
                    store.apply(ev);
                }
                _ = second.tick() => {
                    writer.flush().map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", args.file.display())))?;
                    progress(&writer, &store);
                    if until.is_some_and(|u| tokio::time::Instant::now() >= u) {
                        break;
                    }
                }
                _ = keyframe.tick() => {
                    let at = store.view().now.unwrap_or_else(chrono::Utc::now);
                    writer.write_keyframe(&store, at).map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", args.file.display())))?;
                }
                () = &mut stop => break,
            }
        }
        for t in tasks {
            t.abort();
        }
        while let Ok(ev) = rx.try_recv() {
            let _ = writer.write(&ev);
        }
        writer
            .flush()
            .map_err(|e| Failure::Runtime(format!("cannot write {}: {e}", args.file.display())))?;
        progress(&writer, &store);
        eprintln!();
        Ok(ExitCode::SUCCESS)
    })
}

fn action_log() -> crate::effect::ActionLog {
    crate::effect::ActionLog::new(
        std::env::var_os("SPARK_TRIAGE_ACTIONS_LOG")
            .map(std::path::PathBuf::from)
            .or_else(crate::effect::ActionLog::default_path),
    )
}

fn confirm(question: &str) -> bool {
    use std::io::BufRead;
    eprint!("{question} [y/N] ");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
}

fn run_kill(live_args: &LiveArgs, args: KillArgs) -> Result<ExitCode, Failure> {
    use crate::actions::{self, Selection};
    if args.ids.is_empty() && args.state.is_none() && args.older_than.is_none() {
        return Err(Failure::Usage(
            "say which executors: EXEC_ID…, or --state and/or --older-than".into(),
        ));
    }
    let opts = live_args.options();
    block_on(async move {
        let conn = crate::source::live::connect(&opts)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        let pods = actions::app_pods(&conn, &args.app)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        let sel = Selection {
            ids: args.ids.clone(),
            state: args.state,
            older_than: args.older_than,
        };
        let chosen = actions::select(&pods, &sel, chrono::Utc::now());
        let mut out = String::new();
        if chosen.is_empty() {
            write_stdout("no executor matches\n")?;
            return Ok(ExitCode::SUCCESS);
        }
        let (mut targets, unowned) = actions::by_owner(chosen, &pods);
        for (p, why) in &unowned {
            let id = p.executor_id().unwrap_or_default();
            if args.force_unowned {
                out.push_str(&format!(
                    "--force-unowned: including {}/{} (executor {id}), not owned by the app's driver: {why}\n",
                    p.namespace, p.name
                ));
            } else {
                out.push_str(&format!(
                    "skip {}/{} (executor {id}): not owned by the app's driver: {why} (--force-unowned to include)\n",
                    p.namespace, p.name
                ));
            }
        }
        if args.force_unowned {
            targets.extend(unowned.iter().map(|(p, _)| p.clone()));
        }
        if targets.is_empty() {
            write_stdout(&out)?;
            return Err(Failure::Runtime(
                "nothing deleted: no matching pod is owned by the app's driver".into(),
            ));
        }
        let verb = if args.dry_run {
            "would delete"
        } else {
            "will delete"
        };
        for p in &targets {
            let resolved = crate::classify::ClassifyOptions::default().resolve(p);
            let state = crate::classify::classify(p, &resolved.config);
            out.push_str(&format!(
                "{verb} {}/{} (executor {}, {state})\n",
                p.namespace,
                p.name,
                p.executor_id().unwrap_or_default()
            ));
        }
        out.push_str(crate::actions::SPARK_AFTER_KILL);
        out.push('\n');
        write_stdout(&out)?;
        if args.dry_run {
            return Ok(ExitCode::SUCCESS);
        }
        if live_args.readonly {
            return Err(Failure::Runtime(
                "refusing: read-only mode (--readonly)".into(),
            ));
        }
        if !args.yes {
            if !std::io::stdin().is_terminal() {
                return Err(Failure::Runtime(
                    "refusing to delete without --yes when not on a terminal".into(),
                ));
            }
            if !confirm(&format!("Delete {} pod(s)?", targets.len())) {
                return Err(Failure::Runtime("not confirmed; nothing deleted".into()));
            }
        }
        let grace = if args.force {
            Some(0)
        } else {
            args.grace_period
        };
        let mut out = String::new();
        let r = crate::actions::kill(
            &conn,
            &targets,
            grace,
            live_args.readonly,
            &action_log(),
            &mut out,
        )
        .await;
        write_stdout(&out)?;
        r.map_err(|e| Failure::Runtime(e.to_string()))?;
        Ok(ExitCode::SUCCESS)
    })
}

fn run_hold(live_args: &LiveArgs, args: HoldArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    block_on(async move {
        let conn = crate::source::live::connect(&opts)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        let pods = crate::actions::app_pods(&conn, &args.app)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        let mut out = String::new();
        let r = if args.switch == "on" {
            crate::actions::hold_on(
                &conn,
                &pods,
                args.ttl,
                live_args.readonly,
                &action_log(),
                &mut out,
            )
            .await
        } else {
            crate::actions::release(
                &conn,
                &pods,
                false,
                live_args.readonly,
                &action_log(),
                &mut out,
            )
            .await
        };
        write_stdout(&out)?;
        r.map_err(|e| Failure::Runtime(e.to_string()))?;
        Ok(ExitCode::SUCCESS)
    })
}

fn run_release(live_args: &LiveArgs, args: ReleaseArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    block_on(async move {
        let conn = crate::source::live::connect(&opts)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        let pods = match &args.app {
            Some(app) => crate::actions::app_pods(&conn, app).await,
            None => crate::actions::all_pods(&conn).await,
        }
        .map_err(|e| Failure::Runtime(e.to_string()))?;
        let mut out = String::new();
        let r = crate::actions::release(
            &conn,
            &pods,
            args.expired,
            live_args.readonly,
            &action_log(),
            &mut out,
        )
        .await;
        write_stdout(&out)?;
        r.map_err(|e| Failure::Runtime(e.to_string()))?;
        Ok(ExitCode::SUCCESS)
    })
}

/// An app positioned in a recording (shared by `replay` and tests).
pub fn replay_app(rec: crate::record::Recording, at: Option<Time>) -> crate::app::App {
    use crate::app::{App, Context, Mode, replay::Replay};
    let mut app = App::new(Context {
        context: format!("recording of {}", rec.header.server),
        scope: rec.header.scope.clone(),
        readonly: true,
        mode: Mode::Replay,
    });
    let mut r = Replay::new(rec.events, rec.keyframes, rec.header.started_at);
    let to = at.unwrap_or(r.start);
    r.seek(&mut app.store, to);
    app.store.take_finished();
    app.replay = Some(r);
    crate::app::update(&mut app, crate::app::Msg::Resize(80, 24));
    app
}

fn run_replay(args: ReplayArgs) -> Result<ExitCode, Failure> {
    if !std::io::stdout().is_terminal() {
        return Err(Failure::Usage("replay needs a terminal; use `spark-triage status --recording FILE --at …` for output to a pipe".into()));
    }
    let rec = open_recording(&args.file, args.limits)?;
    let at = args
        .at
        .as_deref()
        .map(|a| moment(a, rec.header.started_at))
        .transpose()?;
    let app = replay_app(rec, at);
    block_on(async move {
        let (_tx, rx) = tokio::sync::mpsc::channel(1);
        crate::tui::run(app, rx, None, false)
            .await
            .map_err(|e| Failure::Runtime(format!("terminal: {e}")))?;
        Ok(ExitCode::SUCCESS)
    })
}

fn run_report(args: ReportArgs) -> Result<ExitCode, Failure> {
    let rec = open_recording(&args.file, args.limits)?;
    let name = args.file.file_name().map_or_else(
        || args.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let report = crate::report::build(&name, &rec);
    let text = match args.output {
        ReportOutput::Md => crate::report::markdown(&report),
        ReportOutput::Json => {
            let mut s = serde_json::to_string_pretty(&report)
                .map_err(|e| Failure::Runtime(e.to_string()))?;
            s.push('\n');
            s
        }
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Applies a source event, except a driver view that arrives before the first full LIST:
/// it waits for it, so executors known only from the driver are named and matched to
/// their events the same way whichever source answered first (status prints the same
/// bytes for the same cluster).
fn apply_after_first_list(
    store: &mut crate::store::Store,
    held: &mut Vec<crate::source::SourceEvent>,
    ev: crate::source::SourceEvent,
) {
    if store.view().full_snapshot_at.is_none()
        && matches!(ev, crate::source::SourceEvent::DriverExecutors { .. })
    {
        held.push(ev);
        return;
    }
    store.apply(ev);
    if store.view().full_snapshot_at.is_some() {
        for ev in held.drain(..) {
            store.apply(ev);
        }
    }
}
