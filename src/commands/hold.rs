//! `hold` and `release`: the tool's finalizer on an app's executor pods.

use std::process::ExitCode;

use clap::Args;

use crate::effect::ActionLog;
use crate::failure::Failure;
use crate::flags::{ClusterArgs, LiveArgs, WriteArgs, completers};
use crate::{actions, flags};

#[derive(Debug, Args)]
pub struct HoldArgs {
    /// The application (id or name).
    #[arg(long, add = clap_complete::ArgValueCompleter::new(completers::apps))]
    pub app: String,
    /// on or off.
    #[arg(value_parser = ["on", "off"])]
    pub switch: String,
    /// How long the hold lasts (1s to 30d); any instance releases it after that.
    #[arg(long, default_value = "2h", value_parser = flags::parse_ttl)]
    pub ttl: std::time::Duration,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["app", "all", "expired"])))]
pub struct ReleaseArgs {
    /// Release this application's pods.
    #[arg(long, add = clap_complete::ArgValueCompleter::new(completers::apps))]
    pub app: Option<String>,
    /// Release every held pod in scope.
    #[arg(long)]
    pub all: bool,
    /// Release only holds past their expiry, in scope.
    #[arg(long)]
    pub expired: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

pub(crate) fn run(live_args: &LiveArgs, args: HoldArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    super::block_on(async move {
        let conn = super::connect(&opts).await?;
        let pods = actions::app_pods(&conn, &args.app).await?;
        let mut out = String::new();
        let r = if args.switch == "on" {
            actions::hold_on(
                &conn,
                &pods,
                args.ttl,
                &live_args.readonly,
                &ActionLog::from_env(),
                &mut out,
            )
            .await
        } else {
            actions::release(
                &conn,
                &pods,
                false,
                &live_args.readonly,
                &ActionLog::from_env(),
                &mut out,
            )
            .await
        };
        super::action_done(&out, r)
    })
}

pub(crate) fn release(live_args: &LiveArgs, args: ReleaseArgs) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    super::block_on(async move {
        let conn = super::connect(&opts).await?;
        let pods = match &args.app {
            Some(app) => actions::app_pods(&conn, app).await,
            None => actions::all_pods(&conn).await,
        }?;
        let mut out = String::new();
        let r = actions::release(
            &conn,
            &pods,
            args.expired,
            &live_args.readonly,
            &ActionLog::from_env(),
            &mut out,
        )
        .await;
        super::action_done(&out, r)
    })
}
