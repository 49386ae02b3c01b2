//! The live view (no subcommand): connect, then the TUI on the sources.

use std::process::ExitCode;

use crate::app::Mode;
use crate::failure::Failure;
use crate::flags::LiveArgs;
use crate::record::recorder;
use crate::source::switch::Reconfigure;
use crate::{diagnostics, tui};

pub(crate) fn run(live_args: &LiveArgs, reconfigure: Reconfigure) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    recorder::refuse_existing(live_args.record.as_deref(), false)?;
    diagnostics::init(live_args.log_file.as_deref());
    let readonly = live_args.readonly.clone();
    super::block_on(async move {
        let Some(mut conn) = tui::connect_watched(&opts).await? else {
            return Ok(ExitCode::SUCCESS);
        };
        conn.extra = live_args.event_logs(&Default::default());
        tui::tui_on(
            conn,
            Mode::Live,
            readonly,
            live_args.record.as_deref(),
            live_args.forget_after,
            Some(reconfigure),
            live_args.view.clone(),
        )
        .await?;
        Ok(ExitCode::SUCCESS)
    })
}
