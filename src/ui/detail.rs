//! The detail popup: container statuses, each finding with evidence and hint, Spark's view,
//! events newest first, transitions.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use spark_triage_core::allocator::Controller;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::cost::{RerunKind, ms};
use spark_triage_core::model::{ContainerState, quantity};

use super::theme;
use crate::app::{App, EventsRead, Mode};
use crate::store;
use crate::store::{ExecutorRecord, Gone, times};

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(e) = app.selected() else {
        return;
    };
    let Some(r) = super::popup_area(area) else {
        return;
    };
    let mut lines: Vec<Line<'_>> = Vec::new();
    header_section(app, e, &mut lines);
    containers_section(e, &mut lines);
    findings_section(app, e, &mut lines);
    cost_section(app, e, &mut lines);
    driver_section(app, e, &mut lines);
    spark_section(app, e, &mut lines);
    lines.push(Line::raw(""));
    lines.push(Line::styled("Events (newest first)", theme::title()));
    if e.events.is_empty() {
        lines.push(Line::styled(
            format!("  {}", no_events(app, e)),
            app.theme.dim(),
        ));
    }
    for ev in e.events.iter().rev() {
        lines.push(Line::raw(format!("  {}", ev.describe())));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Transitions", theme::title()));
    for t in &e.history {
        lines.push(Line::raw(format!(
            "  {} {}{}",
            times::shown(&app.when(&t.at), t.clock),
            t.state,
            t.note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        )));
    }
    super::scrolled_popup(
        f,
        r,
        &format!(" Executor {} · ↑↓ scroll · Esc close ", e.id),
        lines,
        app,
    );
}

/// The executor's state, pod, node and times, how it went (deleted, missing, restarted,
/// driver-only), and the controller that owns it.
fn header_section(app: &App, e: &ExecutorRecord, lines: &mut Vec<Line<'_>>) {
    let (letter, style) = app.theme.cell(e);
    lines.push(Line::from(vec![
        Span::styled(format!("executor {} ", e.id), theme::title()),
        Span::styled(format!("[{letter}] {}", e.state()), style),
        Span::raw(format!("  pod {}/{}", e.pod.namespace, e.pod.name)),
    ]));
    // The cluster's times (creation, the end, the deletion); this view's own sight only
    // where nothing else says, and labelled so.
    let (created, clock) = times::created(e);
    // The node as describe says it: the pod's, else why it is not known (its events being
    // read, none naming one, never scheduled).
    let mut times = format!(
        "node {} · created {}",
        e.pod
            .node_name
            .as_deref()
            .map_or_else(|| format!("<{}>", no_node(app, e)), str::to_owned),
        times::shown(&app.when(&created), clock)
    );
    if let Some((ended, clock)) = times::ended(e) {
        times.push_str(&format!(
            " · ended {}",
            times::shown(&app.when(&ended), clock)
        ));
    }
    times.push_str(&format!(" · Spark container {}", e.spark_container));
    lines.push(Line::styled(times, app.theme.dim()));
    let gone_at = times::gone(e).map(|(t, clock)| times::shown(&app.when(&t), clock));
    match &e.gone {
        Some(Gone::Deleted { .. }) => lines.push(Line::styled(
            format!(
                "pod deleted at {} (tombstone)",
                gone_at.unwrap_or_default()
            ),
            app.theme.dim(),
        )),
        Some(Gone::Missing {
            at, spark_verdict, ..
        }) => {
            lines.push(Line::styled(
                format!("pod missing since the LIST at {}", app.when(at)),
                style,
            ));
            lines.push(Line::raw(format!("  {spark_verdict}")));
        }
        Some(Gone::Restarted { at, as_id }) => lines.push(Line::styled(
            format!(
                "its container restarted in place at {}: the pod went on as executor {as_id} (shown as this executor ended)",
                app.when(at)
            ),
            app.theme.dim(),
        )),
        Some(Gone::DriverOnly { at }) => lines.push(Line::styled(
            format!(
                "no pod seen: known only from the driver since {} (pod rebuilt from Spark's reason)",
                app.when(at)
            ),
            app.theme.dim(),
        )),
        None => {}
    }
    // Spark's statefulset or deployment allocator: a controller, not the driver, owns it.
    if let Some(c) = Controller::of(&e.pod) {
        lines.push(Line::styled(
            format!(
                "owned by {} (which the driver owns); after a kill, {}",
                c.describe(),
                c.after_kill()
            ),
            app.theme.dim(),
        ));
        if e.pod.is_held()
            && e.pod.deletion.is_some()
            && let Some(blocks) = c.blocks()
        {
            lines.push(Line::styled(
                format!("held while deleted: the pod {blocks}"),
                app.theme.severity(Severity::Warn),
            ));
        }
    }
}

/// Each container's state, readiness and restarts.
fn containers_section(e: &ExecutorRecord, lines: &mut Vec<Line<'_>>) {
    lines.push(Line::raw(""));
    lines.push(Line::styled("Containers", theme::title()));
    for c in e.pod.container_statuses() {
        let state = match &c.state {
            ContainerState::Running { .. } => "running".to_owned(),
            ContainerState::Waiting { reason, .. } => {
                format!("waiting ({})", reason.as_deref().unwrap_or("-"))
            }
            ContainerState::Terminated(t) => format!(
                "terminated exit {} ({})",
                t.exit_code,
                t.reason.as_deref().unwrap_or("-")
            ),
            ContainerState::None => "-".to_owned(),
        };
        lines.push(Line::raw(format!(
            "  {} · {} · ready {} · restarts {}",
            c.name, state, c.ready, c.restart_count
        )));
    }
}

/// Each finding (the cause first) with its evidence and hint.
/// What this executor's loss cost the app (its event log's stages and tasks), when it
/// cost any.
fn cost_section(app: &App, e: &ExecutorRecord, lines: &mut Vec<Line<'_>>) {
    let Some(a) = app.current_app() else {
        return;
    };
    let Some(cost) = a.cost.as_deref() else {
        return;
    };
    let Some(loss) = cost.losses.iter().find(|l| l.executor == e.id) else {
        return;
    };
    let cause = e
        .verdict
        .cause()
        .map(|f| store::cause_label(f.code, e.exit_code()));
    lines.push(Line::raw(""));
    lines.push(Line::styled("What its loss cost", theme::title()));
    lines.push(Line::raw(format!(
        "  {}",
        loss.line(cause.as_deref(), cost.run_ms)
    )));
    for r in &loss.reruns {
        lines.push(Line::styled(
            format!(
                "      stage {} attempt {} ({}): {} tasks, {} of task time",
                r.stage,
                r.attempt,
                match r.kind {
                    RerunKind::Recompute => "recomputed",
                    RerunKind::Retry => "retried",
                },
                r.tasks,
                ms(r.task_ms)
            ),
            app.theme.dim(),
        ));
    }
}

fn findings_section(app: &App, e: &ExecutorRecord, lines: &mut Vec<Line<'_>>) {
    lines.push(Line::raw(""));
    lines.push(Line::styled("Findings", theme::title()));
    if e.findings().is_empty() {
        lines.push(Line::styled("  none", app.theme.dim()));
    }
    for (i, fd) in e.findings().iter().enumerate() {
        lines.push(Line::from(vec![
            Span::styled(
                format!(
                    "  {}[{}] {} ",
                    if i == 0 { "cause " } else { "" },
                    fd.severity.as_str(),
                    fd.code
                ),
                app.theme.severity(fd.severity),
            ),
            Span::raw(fd.summary.clone()),
            Span::styled(
                format!(
                    " ({}{})",
                    fd.witness.as_str(),
                    if fd.reconstructed {
                        ", reconstructed"
                    } else {
                        ""
                    }
                ),
                app.theme.dim(),
            ),
        ]));
        for ev in &fd.evidence {
            lines.push(Line::styled(
                format!("      evidence: {ev}"),
                app.theme.dim(),
            ));
        }
        lines.push(Line::raw(format!("      hint: {}", fd.hint)));
    }
}

/// What the driver's REST API said about this executor.
fn driver_section(app: &App, e: &ExecutorRecord, lines: &mut Vec<Line<'_>>) {
    let Some(seen) = &e.driver else { return };
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        format!("Driver's view (read {})", app.when(&seen.at)),
        theme::title(),
    ));
    let Some(d) = &seen.exec else {
        lines.push(Line::raw("  not in the driver's executor list"));
        return;
    };
    let mib = |b: u64| format!("{} MiB", b >> 20);
    lines.push(Line::raw(format!(
        "  {} · added {} · tasks {} done, {} failed, {} running",
        if d.active { "active" } else { "removed" },
        d.add_time
            .as_ref()
            .map_or_else(|| "-".to_owned(), |t| app.when(t)),
        d.completed_tasks,
        d.failed_tasks,
        d.active_tasks
    )));
    let mut mem = Vec::new();
    if let Some(h) = d.peak.jvm_heap {
        mem.push(format!("JVM heap {}", mib(h)));
    }
    if let Some(o) = d.peak.jvm_off_heap {
        mem.push(format!("off-heap {}", mib(o)));
    }
    if let Some(r) = d.peak.process_tree_rss {
        mem.push(format!("process-tree RSS {}", mib(r)));
    }
    if !mem.is_empty() {
        let limit = e
            .pod
            .container_spec(&e.spark_container)
            .and_then(|c| c.limits.memory.clone());
        let share = match (
            d.peak.container_estimate(),
            limit.as_deref().and_then(quantity::parse).map(|b| b as u64),
        ) {
            (Some(p), Some(l)) if l > 0 => format!(
                " = {}% of the {} limit",
                p * 100 / l,
                limit.unwrap_or_default()
            ),
            _ => String::new(),
        };
        lines.push(Line::raw(format!(
            "  peak memory: {}{share}",
            mem.join(", ")
        )));
    }
    if let Some(r) = &d.remove_reason {
        lines.push(Line::raw(format!(
            "  removed {}:",
            d.remove_time
                .as_ref()
                .map_or_else(|| "-".to_owned(), |t| app.when(t))
        )));
        for l in r.trim().lines().filter(|l| !l.trim().is_empty()) {
            lines.push(Line::styled(
                format!("    {}", l.replace('\t', "  ")),
                app.theme.dim(),
            ));
        }
    }
}

/// Spark's view of the ending: exit, counting, version, witness and its message.
fn spark_section(app: &App, e: &ExecutorRecord, lines: &mut Vec<Line<'_>>) {
    if let Some(v) = &e.verdict.spark {
        lines.push(Line::raw(""));
        lines.push(Line::styled("Spark's view", theme::title()));
        lines.push(Line::raw(format!(
            "  exit {} · {} · Spark {}",
            v.exit_description,
            super::executors::counted_text(v),
            v.spark_version
                .as_deref()
                .unwrap_or("version unknown (4.x rules)")
        )));
        lines.push(Line::styled(
            format!(
                "  from the {}{} · {}",
                v.witness.as_str(),
                if v.reconstructed {
                    " (reconstructed)"
                } else {
                    ""
                },
                e.verdict.ending.describe()
            ),
            app.theme.dim(),
        ));
        for l in v.message.trim().lines() {
            lines.push(Line::styled(
                format!("  {}", l.replace('\t', "  ")),
                app.theme.dim(),
            ));
        }
    }
}

/// Why an executor shows no events: none in the cluster (read), being read, not read (and
/// why), or none seen by the event watch (which reads warnings and a few reasons). "Not
/// read" and "none" never look the same.
pub(super) fn no_events(app: &App, e: &ExecutorRecord) -> String {
    if app.ctx.mode == Mode::Replay {
        return "none recorded".to_owned();
    }
    match app.evidence.events(&e.pod.namespace, &e.pod.name) {
        Some(EventsRead::Reading) => "reading its events from the cluster…".to_owned(),
        Some(EventsRead::Read(0)) => {
            "none in the cluster (read: events expire an hour after their last time)".to_owned()
        }
        Some(EventsRead::Read(n)) => format!("none matched this pod yet ({n} read)"),
        Some(EventsRead::Failed(why)) => format!("not read: {why}"),
        None if e.gone.is_some() => {
            "not read yet (its pod is gone; they are read when you open this)".to_owned()
        }
        None => "none seen (the event watch reads warnings and a few reasons)".to_owned(),
    }
}

/// Why a pod's node is not known: its events (the kubelet's name it) are not read yet, or
/// it was never scheduled.
pub(super) fn no_node(app: &App, e: &ExecutorRecord) -> String {
    match app.evidence.events(&e.pod.namespace, &e.pod.name) {
        _ if app.ctx.mode == Mode::Replay => "none recorded".to_owned(),
        Some(EventsRead::Reading) => "not known yet: reading its events".to_owned(),
        Some(EventsRead::Read(_)) => "none (no kubelet event names one)".to_owned(),
        Some(EventsRead::Failed(why)) => format!("not known: its events were not read ({why})"),
        None if e.gone.is_some() => "not known: the pod was gone before it was seen".to_owned(),
        None => "none (not scheduled)".to_owned(),
    }
}
