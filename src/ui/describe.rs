//! `D`: the selected executor's pod as `kubectl describe pod` would show it (name, node,
//! labels, owner, status, conditions, containers with resources and states, events), from
//! what the tool kept: it works after the pod is gone, when kubectl no longer can.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use spark_triage_core::model::{ContainerState, ExecutorPod};

use super::theme;
use crate::app::App;
use crate::store::times::Clock;
use crate::store::{ExecutorRecord, times};

fn field(name: &str, value: impl Into<String>) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{name:<16}"), theme::title()),
        Span::raw(value.into()),
    ])
}

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(e) = app.selected() else { return };
    let Some(r) = super::popup_area(area) else {
        return;
    };
    let p = e.ended.as_deref().unwrap_or(&e.pod);
    let mut lines = identity_lines(app, e, p);
    let status = p.status.clone().unwrap_or_default();
    lines.push(field(
        "Status:",
        status.phase.clone().unwrap_or_else(|| "<none>".into()),
    ));
    if let Some(reason) = &status.reason {
        lines.push(field("Reason:", reason.clone()));
    }
    if let Some(m) = &status.message {
        lines.push(field("Message:", m.clone()));
    }
    container_lines(app, p, &mut lines);
    lines.push(Line::styled("Conditions:", theme::title()));
    if status.conditions.is_empty() {
        lines.push(Line::raw("  <none>"));
    }
    for c in &status.conditions {
        let mut text = format!("  {:<18} {}", c.type_, c.status);
        if let Some(r) = &c.reason {
            text.push_str(&format!("  {r}"));
        }
        if let Some(m) = &c.message {
            text.push_str(&format!(": {m}"));
        }
        lines.push(Line::raw(text));
    }
    event_lines(app, e, &mut lines);
    super::scrolled_popup(
        f,
        r,
        &format!(" Describe executor {} · ↑↓ scroll · Esc close ", e.id),
        lines,
        app,
    );
}

/// The pod's name, place and times (created, deleted, gone), labels, owner and finalizers.
fn identity_lines(app: &App, e: &ExecutorRecord, p: &ExecutorPod) -> Vec<Line<'static>> {
    let mut lines = vec![
        field("Name:", p.name.clone()),
        field("Namespace:", p.namespace.clone()),
        field(
            "Node:",
            p.node_name
                .clone()
                .or_else(|| e.pod.node_name.clone())
                .map_or_else(
                    || format!("<{}>", super::detail::no_node(app, e)),
                    |n| n.to_string(),
                ),
        ),
        field(
            "Start Time:",
            p.status
                .as_ref()
                .and_then(|s| s.start_time.as_ref())
                .map_or_else(|| "<unknown>".into(), |t| app.when(t)),
        ),
        // The pod's creationTimestamp, else the driver's addTime (a pod never seen).
        field("Created:", {
            let (at, clock) = times::created(e);
            match clock {
                Clock::Seen => "<unknown>".to_owned(),
                Clock::Pod => app.when(&at),
                c => format!("{} (the {}'s time)", app.when(&at), c.as_str()),
            }
        }),
    ];
    if let Some(d) = &p.deletion {
        lines.push(field(
            "Deletion:",
            format!(
                "requested {} (grace {}s)",
                app.when(&d.at),
                d.grace_period_seconds
                    .map_or_else(|| "?".to_owned(), |g| g.to_string())
            ),
        ));
    }
    if let Some((at, clock)) = times::gone(e) {
        let how = match clock {
            Clock::Deletion => "deleted",
            Clock::Driver => "removed by the driver",
            _ => "gone",
        };
        lines.push(field(
            "Gone:",
            format!(
                "{how} {} (the pod no longer exists)",
                times::shown(&app.when(&at), clock)
            ),
        ));
    }
    lines.push(Line::styled("Labels:", theme::title()));
    for (k, v) in &p.labels {
        lines.push(Line::raw(format!("  {k}={v}")));
    }
    if let Some(o) = &p.owner {
        lines.push(field("Controlled By:", format!("{}/{}", o.kind, o.name)));
    }
    if !p.finalizers.is_empty() {
        lines.push(field("Finalizers:", p.finalizers.join(", ")));
    }
    lines
}

/// Each container's image, requests and limits, and its state, last state and restarts.
fn container_lines(app: &App, p: &ExecutorPod, lines: &mut Vec<Line<'static>>) {
    lines.push(Line::styled("Containers:", theme::title()));
    for c in &p.containers {
        lines.push(Line::styled(format!("  {}:", c.name), theme::title()));
        lines.push(Line::raw(format!(
            "    Image:     {}",
            c.image.as_deref().unwrap_or("<none>")
        )));
        lines.push(Line::raw(format!(
            "    Requests:  cpu {}  memory {}",
            c.requests.cpu.as_deref().unwrap_or("-"),
            c.requests.memory.as_deref().unwrap_or("-")
        )));
        lines.push(Line::raw(format!(
            "    Limits:    cpu {}  memory {}",
            c.limits.cpu.as_deref().unwrap_or("-"),
            c.limits.memory.as_deref().unwrap_or("-")
        )));
        if let Some(s) = p.container_status(&c.name) {
            lines.push(Line::raw(format!(
                "    State:     {}",
                state(app, &s.state)
            )));
            if !matches!(s.last_state, ContainerState::None) {
                lines.push(Line::raw(format!(
                    "    Last:      {}",
                    state(app, &s.last_state)
                )));
            }
            lines.push(Line::raw(format!(
                "    Ready: {}  Restarts: {}",
                s.ready, s.restart_count
            )));
        }
    }
}

/// The pod's events, newest first (or why there are none).
fn event_lines(app: &App, e: &ExecutorRecord, lines: &mut Vec<Line<'static>>) {
    lines.push(Line::styled("Events (newest first):", theme::title()));
    if e.events.is_empty() {
        lines.push(Line::raw(format!(
            "  <{}>",
            super::detail::no_events(app, e)
        )));
    }
    for ev in e.events.iter().rev() {
        lines.push(Line::raw(format!(
            "  {:<8} {:<18} {}{}  {}",
            ev.type_.as_deref().unwrap_or("-"),
            ev.reason.as_deref().unwrap_or("-"),
            ev.last_seen
                .as_ref()
                .or(ev.first_seen.as_ref())
                .map_or_else(|| "-".into(), |t| app.when(t)),
            if ev.count > 1 {
                format!(" (×{})", ev.count)
            } else {
                String::new()
            },
            ev.message.as_deref().unwrap_or("")
        )));
    }
}

fn state(app: &App, s: &ContainerState) -> String {
    match s {
        ContainerState::None => "<none>".into(),
        ContainerState::Waiting { reason, message } => format!(
            "Waiting: {}{}",
            reason.as_deref().unwrap_or("-"),
            message
                .as_deref()
                .map_or_else(String::new, |m| format!(" ({m})"))
        ),
        ContainerState::Running { started_at } => format!(
            "Running since {}",
            started_at
                .as_ref()
                .map_or_else(|| "?".into(), |t| app.when(t))
        ),
        ContainerState::Terminated(t) => format!(
            "Terminated: exit {}{}{}",
            t.exit_code,
            t.reason
                .as_deref()
                .map_or_else(String::new, |r| format!(" ({r})")),
            t.finished_at
                .as_ref()
                .map_or_else(String::new, |at| format!(" at {}", app.when(at)))
        ),
    }
}
