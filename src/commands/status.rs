//! `status`: every app's executors once (or after watching a while), then exit; or a
//! recording's state at a moment.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use spark_triage_core::text;

use crate::failure::Failure;
use crate::flags::{ClusterArgs, LiveArgs, ReadLimits, WatchArgs, completers, parse_duration};
use crate::output::progress::Progress;
use crate::output::status::StatusReport;
use crate::output::yaml::to_string;
use crate::output::{AppOrder, json, status};
use crate::record::timeline::Reading;
use crate::record::{State, timeline};
use crate::redact;
use crate::source::connection::Connection;
use crate::source::{Scope, SourceEvent, live, scope};
use crate::store::{Snapshot, Store};

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = StatusOutput::Table)]
    pub output: StatusOutput,
    /// Keep watching this long before printing (Ctrl-C or SIGTERM prints at once).
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    pub for_duration: Option<std::time::Duration>,
    /// Only this application (id or name).
    #[arg(long, value_name = "APP", add = clap_complete::ArgValueCompleter::new(completers::apps))]
    pub app: Option<String>,
    /// Read a recording (a file, or a directory of segments) or a Spark event log (a file,
    /// an `eventlog_v2_*` directory, or a directory of them) instead of a cluster.
    #[arg(long, value_name = "FILE|DIR")]
    pub recording: Option<std::path::PathBuf>,
    /// With --recording: the moment, RFC 3339, a local time (2026-12-01 03:00, 03:00),
    /// before the end (-2h) or after the start (90s); default: its end.
    #[arg(
        long,
        value_name = "TIME",
        requires = "recording",
        allow_hyphen_values = true
    )]
    pub at: Option<String>,
    /// The order of the applications: the most trouble first (the live view's), or by name.
    #[arg(long, value_enum, default_value_t = AppOrder::Trouble)]
    pub sort: AppOrder,
    /// Exit 3 when any executor in scope has an error-severity verdict (for cron and
    /// alerting); the output is printed as usual.
    #[arg(long)]
    pub exit_code: bool,
    #[command(flatten)]
    pub limits: ReadLimits,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub watch: WatchArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusOutput {
    Table,
    Wide,
    Json,
    Yaml,
    /// `pod/NAME` per executor whose pod exists.
    Name,
}

/// What the sources could not do, on stderr (once: the table and the JSON stay data; the
/// JSON also carries them as `problems`).
fn warn(report: &StatusReport) {
    for p in &report.problems {
        eprintln!("warning: {}", redact::escape_controls(p));
    }
}

fn print_status(report: &StatusReport, output: StatusOutput) -> Result<(), Failure> {
    match output {
        StatusOutput::Json => json::write(report),
        StatusOutput::Table => super::write_stdout(&status::render_table(report, false)),
        StatusOutput::Wide => super::write_stdout(&status::render_table(report, true)),
        StatusOutput::Yaml => super::write_stdout(&yaml(report)?),
        StatusOutput::Name => super::write_stdout(&report.names()),
    }
}

/// The report as YAML, safe for a terminal (`output::yaml`).
fn yaml(report: &StatusReport) -> Result<String, Failure> {
    to_string(report)
}

/// Prints the answer and says how to exit. The process ends with it: its memory goes back
/// whole, not record by record (at 100,000 executors freeing the store and the report one
/// by one took a tenth of the first view's time), so the report is forgotten here and the
/// store it borrows by the caller.
fn answer(report: StatusReport, args: &StatusArgs) -> Result<ExitCode, Failure> {
    print_status(&report, args.output)?;
    let exit = exit_status(&report, args);
    std::mem::forget(report);
    Ok(exit)
}

/// The answer given, the store its report borrowed is not freed either (see [`answer`]).
fn answered(exit: Result<ExitCode, Failure>, store: Store) -> Result<ExitCode, Failure> {
    std::mem::forget(store);
    exit
}

/// The exit status: 3 under `--exit-code` when an executor's verdict is an error.
fn exit_status(report: &StatusReport, args: &StatusArgs) -> ExitCode {
    if args.exit_code && report.has_errors() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

pub(crate) fn run(live_args: &LiveArgs, args: StatusArgs) -> Result<ExitCode, Failure> {
    if let Some(path) = &args.recording {
        let at = args.at.as_deref();
        // The segment holding the moment, streamed: its opening state, then its events.
        let (_, state, _, _) = timeline::read_state(
            path,
            &Reading {
                app: args.app.clone(),
                ..args.limits.reading()
            },
            at,
            at,
            |_, until| State {
                until,
                ..Default::default()
            },
        )?;
        let store = state.store;
        let report = status::report(store.view(), args.app.as_deref()).sorted(args.sort);
        warn(&report);
        no_such_app(&report, store.view(), args.app.as_deref(), "the recording")?;
        return answered(answer(report, &args), store);
    }
    let opts = live_args.options();
    super::block_on(async move {
        // On a terminal, a spinner says what is awaited; off one, nothing (stdout is the answer).
        let mut progress = Progress::spinner("connecting to the API server");
        let mut conn = super::connect(&opts).await?;
        conn.extra = live_args.event_logs(&args.limits.reading().store);
        let logs = conn.extra.is_some();
        // The event logs are waited for a request's timeout at most (a slow store does not
        // hold the cluster's answer; it is said after).
        let logs_by = tokio::time::Instant::now() + opts.timeout();
        // Ready: the cluster's sources answered, and each app's event log was looked for;
        // the drivers too, or the grace given them past the rest is over (`drivers_by`).
        let drivers = opts.driver_poll.is_some();
        let mut drivers_by: Option<tokio::time::Instant> = None;
        let ready = |v: &Snapshot, drivers_by: Option<tokio::time::Instant>| {
            let now = tokio::time::Instant::now();
            let grace_over = drivers_by.is_some_and(|by| now >= by);
            status::ready_past_grace(v, drivers, grace_over, |ns, app| conn.listed.has(ns, app))
                && (!logs || status::event_logs_read(v) || now >= logs_by)
        };
        progress.set(format!(
            "waiting for the first full LIST from {}",
            conn.server
        ));
        let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
        let tasks = live::spawn(&conn, tx);
        let mut store = Store::new();
        let start = tokio::time::Instant::now();
        let want = args.for_duration.unwrap_or_default();
        // The first LIST is immediate; allow for a slow server and one retry.
        let give_up = start + 2 * opts.timeout() + want;
        let mut held = Vec::new();
        let stop = super::wait_for_signal();
        tokio::pin!(stop);
        loop {
            let now = tokio::time::Instant::now();
            if drivers_by.is_none() && status::ready(store.view(), false) {
                drivers_by = Some(now.max(start + status::DRIVER_WAIT));
            }
            if ready(store.view(), drivers_by) && now >= start + want {
                break;
            }
            // At the deadline, a complete view of the cluster is the answer (whatever the
            // drivers still reading), else why there is none.
            if now >= give_up && status::ready(store.view(), false) {
                break;
            } else if now >= give_up {
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
            let wake = if ready(store.view(), drivers_by) {
                start + want
            } else if let Some(by) = drivers_by.filter(|by| now < *by) {
                by
            } else if logs && now < logs_by {
                // The logs' wait ends before the cluster's.
                give_up.min(logs_by)
            } else {
                give_up
            };
            if progress.shown() && ready(store.view(), drivers_by) {
                let left = (start + want).saturating_duration_since(now);
                progress.update(|| {
                    let n: usize = store.view().apps.values().map(|a| a.executors.len()).sum();
                    format!(
                        "watching {}: {} apps, {n} executors, {} to go",
                        conn.scope.describe(),
                        store.view().apps.len(),
                        text::human_duration(chrono::Duration::from_std(left).unwrap_or_default())
                    )
                });
            }
            tokio::select! {
                ev = rx.recv() => match ev {
                    Some(ev) => super::apply_after_first_list(&mut store, &mut held, ev),
                    None => break,
                },
                // The spinner's line changes at least once a second.
                () = tokio::time::sleep(std::time::Duration::from_secs(1)), if progress.shown() => {}
                () = tokio::time::sleep_until(wake) => {}
                // Ctrl-C or SIGTERM ends a long `--for` early: print what was seen so far.
                () = &mut stop, if ready(store.view(), drivers_by) => break,
            }
        }
        while let Ok(ev) = rx.try_recv() {
            super::apply_after_first_list(&mut store, &mut held, ev);
        }
        for ev in held {
            store.apply(ev);
        }
        as_of_now(&mut store, &conn, drivers);
        for t in tasks {
            t.abort();
        }
        progress.clear();
        if logs && !status::event_logs_read(store.view()) {
            eprintln!(
                "warning: the event logs (--event-log-dir) were not read within {}: the \
                 executors that ended before now are from the cluster and the drivers only",
                text::human_std_duration(opts.timeout())
            );
        }
        let report = status::report(store.view(), args.app.as_deref()).sorted(args.sort);
        warn(&report);
        no_such_app(
            &report,
            store.view(),
            args.app.as_deref(),
            &conn.scope.describe(),
        )?;
        if report.apps.is_empty() {
            scope_check(&conn).await?;
        }
        answered(answer(report, &args), store)
    })
}

/// The store as the answer tells it: a driver still reading said to be (rather than waited
/// for), and as of now on the cluster's clock (a wait, a pending driver's, is as long as it
/// is now, not as when its app last changed).
fn as_of_now(store: &mut Store, conn: &Connection, drivers: bool) {
    if drivers {
        let late: Vec<SourceEvent> = status::drivers_unanswered(store.view())
            .map(|a| status::still_reading(a, conn.clock.now()))
            .collect();
        for ev in late {
            store.apply(ev);
        }
    }
    store.apply(SourceEvent::Tick {
        at: conn.clock.now(),
    });
}

/// `--app NAME` that matches nothing is a mistake, not an empty answer: exit 1, naming the
/// applications that are there.
fn no_such_app(
    report: &StatusReport,
    snap: &Snapshot,
    app: Option<&str>,
    scope: &str,
) -> Result<(), Failure> {
    let Some(want) = app else {
        return Ok(());
    };
    if !report.apps.is_empty() {
        return Ok(());
    }
    Err(Failure::Runtime(status::unknown_app(snap, want, scope)))
}

/// Nothing found in a namespace: a namespace that does not exist is an error (exit 1);
/// either way, say where Spark applications do run when the API lets us list drivers.
async fn scope_check(conn: &Connection) -> Result<(), Failure> {
    let (Scope::Namespace(ns), Some(f)) = (&conn.scope, scope::facts(conn).await) else {
        return Ok(());
    };
    let hint = f.elsewhere();
    if f.namespace_missing {
        return Err(Failure::Runtime(format!(
            "namespace {ns:?} not found in context {}{hint}",
            conn.context
        )));
    }
    if let Some(why) = f.selector_excludes(ns, conn.user_selector.as_deref()) {
        eprintln!("note: {why}");
    } else if !hint.is_empty() {
        eprintln!("note: no Spark applications in namespace {ns}{hint}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_writes_no_terminal_control_from_cluster_data() {
        let report = StatusReport {
            apps: Vec::new(),
            full_snapshot_at: None,
            problems: vec!["pod watch: \u{1b}]0;pwned\u{7} \u{9b}2J".to_owned()],
            housekeeping: Vec::new(),
        };
        let text = yaml(&report).expect("yaml");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains("pwned"), "{text}");
    }
}
