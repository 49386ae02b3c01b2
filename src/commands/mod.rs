//! One module per command: each owns its clap `Args` and its `run`. What they share is
//! here: the runtime, stdout, signals, the one connect helper, recordings, confirmation.

use std::io::Write;

use crate::actions::ActionError;
use crate::failure::Failure;
use crate::source::connection::{Connection, LiveOptions};
use crate::source::{SourceEvent, connection};
use crate::store::Store;
use crate::{redact, tui};

pub mod demo;
pub mod explain;
pub mod export;
pub mod hold;
pub mod kill;
pub mod live;
pub mod mcp;
pub mod record;
pub mod replay;
pub mod report;
pub mod shell;
pub mod sim;
pub mod status;

/// Prints what an action wrote (what it did, one line each), then its outcome.
pub(crate) fn action_done<T>(
    out: &str,
    r: Result<T, ActionError>,
) -> Result<std::process::ExitCode, Failure> {
    write_stdout(out)?;
    r?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Connects to the cluster the flags name (the one way every command does).
pub(crate) async fn connect(opts: &LiveOptions) -> Result<Connection, Failure> {
    Ok(connection::connect(opts).await?)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub(crate) fn write_stdout(text: &str) -> Result<(), Failure> {
    // Cluster data (names, messages) may hold escape sequences: never pass them through.
    let text = redact::escape_controls(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::Runtime(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Runtime(format!("cannot start the async runtime: {e}")))
}

/// Runs `f` on a fresh runtime, then shuts it down without waiting for blocking work a
/// timed-out request left behind (kube refreshes exec credentials on the blocking pool).
pub(crate) fn block_on<T>(
    f: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    let rt = runtime()?;
    let out = rt.block_on(f);
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    out
}

/// Ctrl-C, SIGTERM or SIGHUP (a closed terminal): listening starts at the call, so the
/// signal is caught (and files closed cleanly) even before the future is first polled.
pub(crate) fn wait_for_signal() -> impl std::future::Future<Output = ()> {
    let mut signals = tui::signal_stream();
    async move { signals.recv().await }
}

pub(crate) fn confirm(question: &str) -> bool {
    use std::io::BufRead;
    eprint!("{question} [y/N] ");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
}

/// Applies a source event, except a driver view that arrives before the first full LIST:
/// it waits for it, so executors known only from the driver are named and matched to
/// their events the same way whichever source answered first (status prints the same
/// bytes for the same cluster).
fn apply_after_first_list(store: &mut Store, held: &mut Vec<SourceEvent>, ev: SourceEvent) {
    if store.view().full_snapshot_at.is_none() && matches!(ev, SourceEvent::DriverExecutors { .. })
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
