//! The command line: the top-level clap definition, kubectl-plugin naming, dispatch to
//! `commands::*`, exit codes.
//!
//! Exit codes (stable): 0 ok; 1 runtime failure with a one-line cause on stderr; 2 usage
//! error. Data goes to stdout, diagnostics to stderr.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use spark_triage_sim::scenario::BUILT_IN;

use crate::app::ViewSettings;
use crate::failure::Failure;
use crate::flags::{
    ClusterArgs, LiveArgs, ViewArgs, WatchArgs, WriteArgs, config, configured, switch_context,
};
use crate::{commands, redact};

mod hoist;

/// Watch and explain the executor pods of Apache Spark applications on Kubernetes.
#[derive(Debug, Parser)]
/// Each command takes only the flags it uses; the live view's flags given before a command
/// that takes them are its flags (`spark-triage -n NS status` is `status -n NS`).
#[command(
    name = "spark-triage",
    version,
    propagate_version = true,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub view: ViewArgs,
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
    Explain(commands::explain::ExplainArgs),
    /// Run a simulated Kubernetes cluster with Spark applications (for demos, tests, training).
    ///
    /// Prints its URL and a kubeconfig path, then serves until Ctrl-C. kubectl and
    /// spark-triage work against it unmodified: `kubectl --kubeconfig F get pods -A`.
    // Its help's list of scenarios is made from the built-in ones: `command()`.
    Sim(commands::sim::SimArgs),
    /// Print every Spark application's executors once (or after watching for a while), then exit.
    ///
    /// Waits for the first full LIST (and the events), or keeps watching for `--for`, so that
    /// executors which come and go meanwhile are kept as tombstones.
    Status(commands::status::StatusArgs),
    /// The live view on a simulated cluster running in-process: nothing else needed.
    Demo(commands::demo::DemoArgs),
    /// Record what the cluster shows (headless) to FILE, until --duration or Ctrl-C.
    Record(commands::record::RecordArgs),
    /// Serve the verdicts to AI agents over the Model Context Protocol (stdio, or --http on loopback): read-only tools over the cluster, a recording or an event log.
    Mcp(commands::mcp::McpArgs),
    /// Delete executor pods of an application (Spark replaces them under new ids).
    #[command(
        after_help = "Examples:\n  spark-triage kill --app etl-nightly 7 8 --yes\n  spark-triage kill --app etl-nightly --state pending --older-than 10m --dry-run"
    )]
    Kill(commands::kill::KillArgs),
    /// Hold an application's executor pods after Spark deletes them (a runtime deleteOnTermination=false).
    Hold(commands::hold::HoldArgs),
    /// Remove the tool's hold from pods (only its own finalizer; others are untouched).
    Release(commands::hold::ReleaseArgs),
    /// Replay a recording in the live view, on a timeline (Space plays, n/N steps, f jumps to failures, : seeks).
    Replay(commands::replay::ReplayArgs),
    /// Write a post-mortem of a recording: failures, findings, OOM breakdown, pending, missing, churn, recommendations.
    Report(commands::report::ReportArgs),
    /// Write a directory's segments (a flight recorder's) over a window as one tar, to take them off a pod.
    #[command(after_help = "Examples:\n  \
        kubectl exec -n spark-triage deploy/spark-triage-recorder -- spark-triage export /data --since 24h > night.tar\n  \
        spark-triage replay night.tar\n  \
        spark-triage report night.tar --from 02:00 --to 04:00")]
    Export(commands::export::ExportArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell).
    #[command(after_help = "Examples:\n  \
        source <(spark-triage completions bash)   # or zsh; fish: spark-triage completions fish | source\n  \
        kubectl-spark_triage completions bash   # for the plugin binary's own name\n\
        kubectl spark-triage <TAB> completes through kubectl_complete-spark_triage (kubectl 1.26+).\n\
bash, zsh and fish ask this binary at each Tab: --context, -n, --app and --scenario values come\n\
from the kubeconfig and the cluster (at most 2.5 s; nothing is offered when it does not answer).")]
    Completions(commands::shell::CompletionsArgs),
    /// Print the man page, or write one page per command with --out DIR.
    Man(commands::shell::ManArgs),
    /// Completion candidates in Cobra's format, for kubectl's plugin completion.
    #[command(name = "__complete", hide = true)]
    Complete(commands::shell::CompleteArgs),
}

/// The command line's definition, with `sim --help` listing every built-in scenario (the
/// same list its error for an unknown one gives).
fn command() -> clap::Command {
    let scenarios: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
    Cli::command().mut_subcommand("sim", |s| {
        s.after_help(format!(
            "Scenarios: {} (the default is mixed), scale (with --apps/--executors/--churn), or a \
             YAML file (docs/simulator.md).\n\
             Faults (repeatable): drop-watches=D, expire-watches, latency=D, error-rate=F, \
             deny=VERBS, forbid=RESOURCES, restart-after=D, event-ttl=D, silent-driver=NAME-PREFIXES",
            scenarios.join(", ")
        ))
    })
}

/// glibc's malloc gives threads up to eight arenas per core and returns little of them: at
/// 100 apps of 1,000 executors on 2 cores, the first view held 507 MiB for a 382 MB heap.
/// One arena per core (two at least): 452 MiB, 0.2 s slower (3.9 s); one in all: 425 MiB
/// but 4.3 s (the store's thread and the decoding workers wait for each other's malloc).
/// The user's own setting (`MALLOC_ARENA_MAX`, or `arena_max` in `GLIBC_TUNABLES`) stays.
/// Called first in [`main`], before anything that could start a thread.
#[allow(unsafe_code)]
fn malloc_arena_per_core() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none()
        && !std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"))
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only sets a malloc parameter, and no other thread runs yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// The process entry point shared by `spark-triage` and `kubectl-spark_triage`.
pub fn main() -> ExitCode {
    malloc_arena_per_core();
    commands::shell::answer_the_shell(command);
    let args: Vec<OsString> = std::env::args_os().collect();
    let mut cmd = command();
    if invoked_as_plugin(&args) {
        cmd = cmd
            .name("kubectl spark-triage")
            .bin_name("kubectl spark-triage");
    }
    let program = cmd.get_name().to_owned();
    // kubectl's habit: the live view's flags before the command are the command's.
    let args = match hoist::hoist(args, &cmd) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{program}: {msg}");
            return ExitCode::from(2);
        }
    };
    let parsed = cmd
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, given(&m))));
    let (cli, given) = match parsed {
        Ok(p) => p,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli, &given) {
        Ok(code) => code,
        Err(f) => {
            eprintln!(
                "{program}: {}",
                redact::one_line(&redact::credentials(&f.to_string()))
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

/// The flags given on the command line (clap's ids), of the command that runs: a
/// configuration file sets only the others.
pub(crate) fn given(m: &clap::ArgMatches) -> std::collections::BTreeSet<String> {
    let sub = m.subcommand().map_or(m, |(_, s)| s);
    sub.ids()
        .filter(|id| sub.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.as_str().to_owned())
        .collect()
}

fn run(cli: Cli, given: &std::collections::BTreeSet<String>) -> Result<ExitCode, Failure> {
    let live = |c: &ClusterArgs, w: Option<&WatchArgs>, wr: Option<&WriteArgs>| {
        configured(LiveArgs::of(c, w, wr, None), given)
    };
    match cli.command {
        Some(Command::Explain(args)) => commands::explain::run(args),
        Some(Command::Sim(args)) => commands::sim::run(args),
        Some(Command::Status(args)) => {
            commands::status::run(&live(&args.cluster, Some(&args.watch), None)?, args)
        }
        Some(Command::Demo(args)) => {
            // The demo's cluster is in-process: only the file's top level applies.
            let mut l = LiveArgs::local(&args.watch, &args.write, &args.view);
            let file = config::Config::load(args.config.as_deref())?;
            let top = config::Settings {
                namespace: None,
                all_namespaces: None,
                selector: None,
                request_timeout: None,
                ..file.top
            };
            config::apply(&mut l, &top, &|id| given.contains(id));
            l.view = config::view_settings(&top, l.view.clone());
            commands::demo::run(&l, args)
        }
        Some(Command::Record(args)) => {
            commands::record::run(&live(&args.cluster, Some(&args.watch), None)?, args)
        }
        Some(Command::Mcp(args)) => {
            commands::mcp::run(&live(&args.cluster, Some(&args.watch), None)?, args)
        }
        Some(Command::Kill(args)) => {
            commands::kill::run(&live(&args.cluster, None, Some(&args.write))?, args)
        }
        Some(Command::Hold(args)) => {
            commands::hold::run(&live(&args.cluster, None, Some(&args.write))?, args)
        }
        Some(Command::Release(args)) => {
            commands::hold::release(&live(&args.cluster, None, Some(&args.write))?, args)
        }
        Some(Command::Replay(args)) => {
            let file = config::Config::load(args.config.as_deref())?;
            let utc = if given.contains("utc") {
                args.utc
            } else {
                file.top.time_zone == Some(config::TimeZone::Utc) || args.utc
            };
            let flags = ViewSettings {
                utc,
                ..Default::default()
            };
            commands::replay::run(args, config::view_settings(&file.top, flags))
        }
        Some(Command::Report(args)) => commands::report::run(args),
        Some(Command::Export(args)) => commands::export::run(args),
        Some(Command::Completions(args)) => commands::shell::completions(args, Cli::command),
        Some(Command::Man(args)) => commands::shell::man(args, command()),
        Some(Command::Complete(args)) => commands::shell::complete(args, command()),
        None => {
            let raw = LiveArgs::of(
                &cli.cluster,
                Some(&cli.watch),
                Some(&cli.write),
                Some(&cli.view),
            );
            let l = configured(raw.clone(), given)?;
            commands::live::run(&l, switch_context(raw, given))
        }
    }
}

#[cfg(test)]
mod tests {
    use spark_triage_sim::scenario::BUILT_IN;

    /// `sim --help` names every built-in scenario, as its error for an unknown one does.
    #[test]
    fn sim_help_lists_every_built_in_scenario() {
        let mut cmd = super::command();
        let help = cmd
            .find_subcommand_mut("sim")
            .expect("sim")
            .render_long_help()
            .to_string();
        for (name, _) in BUILT_IN {
            assert!(help.contains(name), "{name} in\n{help}");
        }
    }
}
