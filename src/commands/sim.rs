//! `sim`: the simulated cluster as a server for other clients.

use std::process::ExitCode;

use clap::Args;
use spark_triage_sim::process::ProcessOptions;
use spark_triage_sim::{Fault, Scenario, SimOptions, scenario, start};

use crate::failure::Failure;
use crate::flags::completers;

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Address to listen on (loopback only); port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// A built-in scenario name or a scenario file.
    #[arg(long, default_value = "mixed", add = clap_complete::ArgValueCompleter::new(completers::scenarios))]
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
    pub faults: Vec<Fault>,
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
fn process_options(args: &SimArgs) -> Result<Option<ProcessOptions>, Failure> {
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
    Ok(Some(ProcessOptions {
        spark_home,
        work_dir,
        java: None,
    }))
}

/// The scenario named on the command line (`scale` is generated from its flags).
fn scenario_of(args: &SimArgs) -> Result<Scenario, Failure> {
    if args.scenario == "scale" {
        return Ok(scenario::scale(args.apps, args.executors, args.churn));
    }
    scenario::load(&args.scenario).map_err(Failure::Usage)
}

pub(crate) fn run(args: SimArgs) -> Result<ExitCode, Failure> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(Failure::Usage(format!(
            "--speed {}: must be a positive number",
            args.speed
        )));
    }
    let mut opts = SimOptions::new(scenario_of(&args)?);
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
    super::block_on(async move {
        let sim = start(opts).await?;
        super::write_stdout(&format!(
            "spark-triage simulator ({} scenario) listening on {}\nkubeconfig: {}\n  kubectl --kubeconfig {} get pods -A\nCtrl-C to stop.\n",
            args.scenario,
            sim.url,
            sim.kubeconfig.display(),
            sim.kubeconfig.display()
        ))?;
        if let Some(dir) = &work_dir {
            super::write_stdout(&format!(
                "process kubelet: executor containers run as local JVMs; pod dirs and logs in {}\n",
                dir.display()
            ))?;
        }
        super::wait_for_signal().await;
        // A clean stop ends the watches first; a simulator too busy to stop in time is
        // left to the process exit (a signal must always end it).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), sim.stop()).await;
        Ok(ExitCode::SUCCESS)
    })
}
