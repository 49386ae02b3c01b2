//! The live view (no subcommand): connect, then the TUI on the sources.

use crate::flags::LiveArgs;
use std::process::ExitCode;

use crate::failure::Failure;

pub(crate) fn run(
    live_args: &LiveArgs,
    reconfigure: crate::source::switch::Reconfigure,
) -> Result<ExitCode, Failure> {
    let opts = live_args.options();
    crate::record::recorder::refuse_existing(live_args.record.as_deref(), false)?;
    crate::diagnostics::init(live_args.log_file.as_deref());
    let readonly = live_args.readonly.clone();
    super::block_on(async move {
        let Some(mut conn) = crate::tui::connect_watched(&opts).await? else {
            return Ok(ExitCode::SUCCESS);
        };
        conn.extra = live_args.event_logs(&Default::default());
        crate::tui::tui_on(
            conn,
            crate::app::Mode::Live,
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
