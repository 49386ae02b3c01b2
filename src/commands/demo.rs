//! `demo`: the live view on a simulated cluster running in-process.

use std::process::ExitCode;

use clap::Args;
use spark_triage_sim::{SimOptions, scenario, start};

use crate::app::Mode;
use crate::failure::Failure;
use crate::flags::{LiveArgs, ViewArgs, WatchArgs, WriteArgs, completers};
use crate::record::recorder;
use crate::source::clock::Clock;
use crate::source::connection::LiveOptions;
use crate::{diagnostics, tui};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// A built-in scenario or a scenario file (docs/simulator.md).
    #[arg(long, default_value = "mixed", add = clap_complete::ArgValueCompleter::new(completers::scenarios))]
    pub scenario: String,
    /// Time scale of the simulation.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Seed for the simulation.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub view: ViewArgs,
    /// The configuration file (default: $SPARK_TRIAGE_CONFIG, else
    /// $XDG_CONFIG_HOME/spark-triage/config.toml when it exists; docs/configuration.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

pub(crate) fn run(live_args: &LiveArgs, args: DemoArgs) -> Result<ExitCode, Failure> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(Failure::Usage(format!(
            "--speed {}: must be a positive number",
            args.speed
        )));
    }
    recorder::refuse_existing(live_args.record.as_deref(), false)?;
    diagnostics::init(live_args.log_file.as_deref());
    let scenario = scenario::load(&args.scenario).map_err(Failure::Usage)?;
    let mut opts = SimOptions::new(scenario);
    opts.speed = args.speed;
    opts.seed = args.seed;
    let poll = live_args.poll_interval;
    let readonly = live_args.readonly.clone();
    let record = live_args.record.clone();
    super::block_on(async move {
        let sim = start(opts).await?;
        // The simulator's clock may run faster than real time: ages are read on it.
        let clock = sim.clock();
        let rate = clock.speed();
        let paced =
            |d: std::time::Duration| d.div_f64(rate).max(std::time::Duration::from_millis(250));
        let live = LiveOptions {
            clock: Some(Clock::of_cluster(move || clock.now(), rate)),
            kubeconfig: Some(sim.kubeconfig.clone()),
            all_namespaces: true,
            // Spark's pace on the simulator's clock: at --speed 4 a 30 s poll is 7.5 s.
            poll_interval: paced(poll),
            driver_poll: live_args.options().driver_poll.map(paced),
            ..Default::default()
        };
        let mut conn = super::connect(&live).await?;
        conn.context = format!("demo ({} scenario)", args.scenario);
        conn.extra = live_args.event_logs(&Default::default());
        let r = tui::tui_on(
            conn,
            Mode::Demo,
            readonly,
            record.as_deref(),
            live_args.forget_after,
            None,
            live_args.view.clone(),
        )
        .await;
        let _ = std::fs::remove_file(&sim.kubeconfig);
        sim.stop().await;
        r?;
        Ok(ExitCode::SUCCESS)
    })
}
