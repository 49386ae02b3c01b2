//! `kill`: delete executor pods of an app (only what its driver owns, unless told).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use spark_triage_core::classify;
use spark_triage_core::classify::ClassifyOptions;
use spark_triage_core::model::ExecutorState;
use spark_triage_core::spark::AFTER_KILL;

use crate::actions::Selection;
use crate::effect::{ActionLog, Denied, FORCE_STATEFULSET};
use crate::failure::Failure;
use crate::flags::{ClusterArgs, LiveArgs, WriteArgs, completers, parse_duration};
use crate::{actions, effect};

#[derive(Debug, Args)]
pub struct KillArgs {
    /// The application (spark-app-selector id or spark-app-name).
    #[arg(long, add = clap_complete::ArgValueCompleter::new(completers::apps))]
    pub app: String,
    /// Executor ids to kill.
    #[arg(value_name = "EXEC_ID")]
    pub ids: Vec<i64>,
    /// Only executors in this Spark state.
    #[arg(long, value_parser = parse_state)]
    pub state: Option<ExecutorState>,
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
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

fn parse_state(s: &str) -> Result<ExecutorState, String> {
    ExecutorState::ALL
        .into_iter()
        .find(|st| st.as_str() == s)
        .ok_or_else(|| format!("{s:?} is not a state (pending, running, succeeded, failed, deleted, terminating, unknown)"))
}

pub(crate) fn run(live_args: &LiveArgs, args: KillArgs) -> Result<ExitCode, Failure> {
    if args.ids.is_empty() && args.state.is_none() && args.older_than.is_none() {
        return Err(Failure::Usage(
            "say which executors: EXEC_ID…, or --state and/or --older-than".into(),
        ));
    }
    // Read-only refuses before anything is read or planned (a plan printed and then
    // refused reads as if it had been carried out); a dry run writes nothing and is let be.
    if !args.dry_run
        && let Some(no) = Denied::read_only(&live_args.readonly)
    {
        return Err(Failure::Runtime(format!("refusing: {no}")));
    }
    let opts = live_args.options();
    super::block_on(async move {
        let conn = super::connect(&opts).await?;
        let pods = actions::app_pods(&conn, &args.app).await?;
        let sel = Selection {
            ids: args.ids.clone(),
            state: args.state,
            older_than: args.older_than,
        };
        let chosen = actions::select(&pods, &sel, chrono::Utc::now());
        let mut out = String::new();
        if chosen.is_empty() {
            // Nothing deleted is not what was asked: say what there is, and fail.
            let mut ids: Vec<i64> = pods.iter().filter_map(|p| p.executor_id()).collect();
            ids.sort_unstable();
            ids.dedup();
            let there = match ids.is_empty() {
                true => "it has no executor pods".to_owned(),
                false => format!(
                    "its executor pods: {}",
                    ids.iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return Err(Failure::Runtime(format!(
                "no executor of {} matches; {there}",
                args.app
            )));
        }
        let (mut targets, unowned) = effect::by_owner(chosen, &pods);
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
            targets.extend(unowned.iter().map(|(p, _)| (p.clone(), None)));
        }
        // Pods of a StatefulSet or ReplicaSet: their chain to the driver read now, so the
        // plan holds only what the delete (which reads it again) will not refuse.
        let (targets, refused) = actions::verify_chains(&conn, targets).await;
        for (p, why) in &refused {
            out.push_str(&format!(
                "skip {}/{} (executor {}): {why}\n",
                p.namespace,
                p.name,
                p.executor_id().unwrap_or_default()
            ));
        }
        if targets.is_empty() {
            super::write_stdout(&out)?;
            return Err(Failure::Runtime(
                "nothing deleted: no matching pod is owned by the app's driver".into(),
            ));
        }
        let verb = if args.dry_run {
            "would delete"
        } else {
            "will delete"
        };
        for (p, via) in &targets {
            let resolved = ClassifyOptions::default().resolve(p);
            let state = classify::classify(p, &resolved.config);
            out.push_str(&format!(
                "{verb} {}/{} (executor {}, {state})\n",
                p.namespace,
                p.name,
                p.executor_id().unwrap_or_default()
            ));
            if let Some(via) = via {
                out.push_str(&format!(
                    "  owned by {}, which the app's driver owns\n",
                    via.controller.describe()
                ));
            }
        }
        let vias = || targets.iter().filter_map(|(_, via)| via.as_ref());
        for l in effect::replacements(vias()) {
            out.push_str(&l);
            out.push('\n');
        }
        if args.force && effect::any_statefulset(vias()) {
            out.push_str(FORCE_STATEFULSET);
            out.push('\n');
        }
        if targets.iter().any(|(_, via)| via.is_none()) {
            out.push_str(AFTER_KILL);
            out.push('\n');
        }
        super::write_stdout(&out)?;
        if args.dry_run {
            return Ok(ExitCode::SUCCESS);
        }
        if !args.yes {
            if !std::io::stdin().is_terminal() {
                return Err(Failure::Runtime(
                    "refusing to delete without --yes when not on a terminal".into(),
                ));
            }
            if !super::confirm(&format!(
                "Delete {} pod(s) in context {}?",
                targets.len(),
                conn.context
            )) {
                return Err(Failure::Runtime("not confirmed; nothing deleted".into()));
            }
        }
        let grace = if args.force {
            Some(0)
        } else {
            args.grace_period
        };
        let mut out = String::new();
        let r = actions::kill(
            &conn,
            &targets,
            grace,
            &live_args.readonly,
            &ActionLog::from_env(),
            &mut out,
        )
        .await;
        super::action_done(&out, r)
    })
}
