//! The live view's start: connecting with a way out (q, Esc, Ctrl-C), then the TUI on a
//! connection's sources with the recorder's tee and the view's forgetting (`spark-triage`
//! and `demo`).

use std::io::IsTerminal;

use spark_triage_core::text;

use crate::app::{App, Context, Mode, Session, ViewSettings};
use crate::effect::{ActionLog, Captures, Runner};
use crate::failure::Failure;
use crate::publish::metrics;
use crate::publish::metrics::Metrics;
use crate::record::recorder;
use crate::settings::ReadOnly;
use crate::source::clock::Clock;
use crate::source::connection::{Connection, LiveOptions};
use crate::source::switch::{Reconfigure, Switcher};
use crate::source::{SourceEvent, connection};
use crate::tui;

/// The TUI on a connection: sources feed the app until the user quits.
pub(crate) async fn tui_on(
    conn: Connection,
    mode: Mode,
    readonly: ReadOnly,
    record: Option<&std::path::Path>,
    forget_after: std::time::Duration,
    reconfigure: Option<Reconfigure>,
    view: ViewSettings,
) -> Result<(), Failure> {
    if !std::io::stdout().is_terminal() {
        return Err(Failure::Usage("the live view needs a terminal; use `spark-triage status` for output to a pipe or file".into()));
    }
    // Bound before anything starts: a port in use is said at once, nothing left running.
    let (metrics, metrics_task) = match view.metrics_addr {
        Some(addr) => {
            let m = Metrics::for_view();
            m.watch_credentials(conn.credentials.clone());
            let task = metrics::serve(addr, m.clone()).await?;
            (Some(m), Some(task))
        }
        None => (None, None),
    };
    let (tx, rx) = tokio::sync::mpsc::channel(65_536);
    let runner = Runner {
        client: conn.client.clone(),
        user: conn.user.clone(),
        context: conn.context.clone(),
        server: conn.server.clone(),
        log: ActionLog::from_env(),
        events: Some(tx.clone()),
        focus: Some(conn.focus.clone()),
        captures: Captures::of_lines(view.log_tail_lines),
        clock: conn.clock.clone(),
    };
    let switcher = Switcher::start(conn.clone(), tx.clone(), reconfigure);
    let mut tasks = vec![tokio::spawn(forget_every(
        forget_after,
        tx,
        conn.clock.clone(),
    ))];
    tasks.extend(metrics_task);
    let rx = match record {
        Some(path) => {
            let (tee, task) = recorder::tee_to_file(&conn, path, rx)?;
            tasks.push(task);
            tee
        }
        None => rx,
    };
    let app = App::on_cluster(
        Context {
            context: conn.context.clone(),
            scope: conn.describe_scope(),
            readonly,
            mode,
        },
        Session {
            metrics,
            // On the cluster's clock, which the header's ages are read on (a demo's may
            // run fast).
            stale_after: conn.stale_after().mul_f64(conn.clock.rate()),
            forget_after,
            // Absolute, so the copied command works from any directory.
            kubeconfig: conn.kubeconfig.as_ref().map(|p| {
                std::path::absolute(p)
                    .unwrap_or_else(|_| p.clone())
                    .display()
                    .to_string()
            }),
            contexts: kubeconfig_contexts(conn.kubeconfig.as_deref()),
        },
    );
    let result = tui::run(
        app,
        rx,
        Some(runner),
        Some(switcher),
        Some(conn.clock.clone()),
        view,
    )
    .await;
    for t in tasks {
        t.abort();
    }
    result
        .map(|_| ())
        .map_err(|e| Failure::Runtime(format!("terminal: {e}")))
}

/// The kubeconfig's context names (the `:ctx` prompt completes them).
fn kubeconfig_contexts(path: Option<&std::path::Path>) -> Vec<String> {
    let kc = match path {
        Some(p) => kube::config::Kubeconfig::read_from(p).ok(),
        None => kube::config::Kubeconfig::read().ok(),
    };
    kc.map(|kc| kc.contexts.into_iter().map(|c| c.name).collect())
        .unwrap_or_default()
}

/// The view's memory stays bounded: executors gone longer than `after` are forgotten (the
/// recorder's mechanism: a `Forget` event, recorded too, so a replay forgets the same).
async fn forget_every(
    after: std::time::Duration,
    tx: tokio::sync::mpsc::Sender<SourceEvent>,
    clock: Clock,
) {
    let Ok(horizon) = chrono::Duration::from_std(after) else {
        return;
    };
    let every = (after / 4).clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(60),
    );
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        let now = clock.now();
        let ev = SourceEvent::Forget {
            before: now - horizon,
            at: now,
        };
        if tx.send(ev).await.is_err() {
            return;
        }
    }
}

/// Raw mode while connecting (so `q` is read at once), undone on every path.
struct RawMode;

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// Connects for the live view, saying so; q, Esc, Ctrl-C or a signal give up (`None`).
pub(crate) async fn connect_watched(opts: &LiveOptions) -> Result<Option<Connection>, Failure> {
    use crossterm::event::{Event, EventStream, KeyCode, KeyEventKind, KeyModifiers};
    use futures::StreamExt;
    if !std::io::stdout().is_terminal() {
        return Err(Failure::Usage("the live view needs a terminal; use `spark-triage status` for output to a pipe or file".into()));
    }
    let line = format!(
        "connecting to the API server (gives up after {}; q to quit now)…",
        text::human_std_duration(opts.timeout())
    );
    eprint!("{line}\r\n");
    // The rows it took (it wraps on a narrow terminal), to take back.
    let cols = crossterm::terminal::size().map_or(80, |(c, _)| usize::from(c.max(1)));
    let rows = line.chars().count().div_ceil(cols).max(1);
    let _raw = crossterm::terminal::enable_raw_mode()
        .ok()
        .map(|()| RawMode);
    let mut keys = EventStream::new();
    let mut keys_open = true;
    let mut signals = tui::signal_stream();
    let conn = connection::connect(opts);
    tokio::pin!(conn);
    // The line is taken back once connected or given up (it was left on the terminal after
    // quitting); an error keeps it, as the context of the message under it.
    let erase = || {
        if std::io::stderr().is_terminal() {
            eprint!("\r{}", "\x1b[1A\x1b[2K".repeat(rows));
        }
    };
    loop {
        tokio::select! {
            c = &mut conn => {
                if c.is_ok() {
                    erase();
                }
                return c.map(Some).map_err(Failure::from);
            }
            k = keys.next(), if keys_open => match k {
                Some(Ok(Event::Key(k))) if k.kind == KeyEventKind::Press
                    && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                        || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL))) =>
                {
                    erase();
                    return Ok(None);
                }
                Some(Ok(_)) => {}
                None | Some(Err(_)) => keys_open = false,
            },
            () = signals.recv() => {
                erase();
                return Ok(None);
            }
        }
    }
}
