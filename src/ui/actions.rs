//! The confirm popup (kill, hold, quit with holds) and the log popup.

use ratatui::{
    Frame,
    layout::Rect,
    text::{Line, Span},
    widgets::{Block, Borders, Clear, Paragraph, Wrap},
};

use super::{centered, theme};
use crate::{
    app::{App, Confirm},
    spark::AFTER_KILL,
};

pub fn render_confirm(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(c) = &app.confirm else { return };
    let mut lines: Vec<Line<'_>> = Vec::new();
    let title = match c {
        Confirm::Kill { targets, force } => {
            lines.push(Line::styled(
                format!("Delete {} executor pod(s):", targets.len()),
                theme::title(),
            ));
            for t in targets.iter().take(12) {
                lines.push(Line::raw(format!(
                    "  {}/{} (executor {})",
                    t.namespace, t.pod, t.executor
                )));
            }
            if targets.len() > 12 {
                lines.push(Line::raw(format!("  … and {} more", targets.len() - 12)));
            }
            lines.push(Line::raw(""));
            lines.push(Line::raw(if *force {
                "Grace period 0: the containers are killed at once (SIGKILL, exit 137).".to_owned()
            } else {
                "Grace period: each pod's own (SIGTERM, then SIGKILL after it).".to_owned()
            }));
            // Pods of a StatefulSet or a Deployment's ReplicaSet: that controller replaces them.
            for l in crate::effect::replacements(targets.iter().filter_map(|t| t.via.as_ref())) {
                lines.push(Line::raw(l));
            }
            if *force
                && crate::effect::any_statefulset(targets.iter().filter_map(|t| t.via.as_ref()))
            {
                lines.push(Line::styled(
                    crate::effect::FORCE_STATEFULSET,
                    theme::severity(crate::diagnose::Severity::Warn),
                ));
            }
            if targets.iter().any(|t| t.via.is_none()) {
                lines.push(Line::raw(AFTER_KILL));
            }
            lines.push(Line::raw(""));
            lines.push(Line::from(vec![
                Span::styled(" y/Enter ", theme::alarm()),
                Span::raw(" delete   "),
                Span::styled(" f ", theme::title()),
                Span::raw(if *force {
                    " use the pods' grace   "
                } else {
                    " force (grace 0)   "
                }),
                Span::styled(" n/Esc ", theme::title()),
                Span::raw(" cancel"),
            ]));
            " Kill executors? "
        }
        Confirm::Hold { on, app_id, .. } => {
            let record = app.store.view().apps.values().find(|a| &a.app_id == app_id);
            let name = record
                .and_then(|a| a.app_name.clone())
                .unwrap_or_else(|| app_id.clone());
            // What holding costs an app whose executors a StatefulSet owns.
            let cost = record.and_then(|a| {
                a.executors.values().find_map(|e| {
                    spark_triage_core::allocator::Controller::of(&e.pod)?
                        .any_pod()
                        .hold_cost()
                })
            });
            if *on {
                lines.push(Line::styled(
                    format!("Hold the executor pods of {name}?"),
                    theme::title(),
                ));
                lines.push(Line::raw(format!(
                    "Adds the finalizer {} to its executor pods (and to new ones while any spark-triage watches), \
                     so when Spark deletes an executor its pod stays Terminating with its final status and log. \
                     Expires in {}; any instance releases it then.",
                    crate::model::HOLD_FINALIZER,
                    crate::diagnose::human_duration(app.hold_ttl)
                )));
                if let Some(cost) = cost {
                    lines.push(Line::styled(
                        format!("Its executors belong to a StatefulSet: {cost}."),
                        theme::severity(crate::diagnose::Severity::Warn),
                    ));
                }
            } else {
                lines.push(Line::styled(
                    format!("Release the hold on {name}?"),
                    theme::title(),
                ));
                lines.push(Line::raw(
                    "Removes only spark-triage's finalizer; pods Spark already deleted then go.",
                ));
            }
            lines.push(Line::raw(""));
            lines.push(Line::from(vec![
                Span::styled(" y/Enter ", theme::selected()),
                Span::raw(" yes   "),
                Span::styled(" n/Esc ", theme::title()),
                Span::raw(" cancel"),
            ]));
            if *on { " Hold on " } else { " Hold off " }
        }
        Confirm::QuitWithHolds => {
            lines.push(Line::styled(
                "This session turned holds on. Release them before quitting?",
                theme::title(),
            ));
            lines.push(Line::raw(
                "Held pods stay Terminating until released (or until their hold expires).",
            ));
            lines.push(Line::raw(""));
            lines.push(Line::from(vec![
                Span::styled(" y/Enter ", theme::selected()),
                Span::raw(" release and quit   "),
                Span::styled(" n ", theme::title()),
                Span::raw(" keep them and quit   "),
                Span::styled(" Esc ", theme::title()),
                Span::raw(" stay"),
            ]));
            " Quit "
        }
    };
    // As tall as its lines once wrapped at the popup's width (the key line last, never cut
    // off by a long sentence above it), plus the borders and a spare row.
    let inner = usize::from(90.min(area.width).saturating_sub(2)).max(1);
    let rows: usize = lines.iter().map(|l| super::wrapped_rows(l, inner)).sum();
    let r = centered(area, 90, u16::try_from(rows + 3).unwrap_or(u16::MAX));
    if r.width < 3 || r.height < 3 {
        return;
    }
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        super::title_text(title, r.width),
        theme::title(),
    ));
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        r,
    );
}

pub fn render_log(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(log) = &app.log_view else { return };
    let Some(r) = super::popup_area(area) else {
        return;
    };
    let term = log.term.as_deref().filter(|t| !t.is_empty());
    let lines: Vec<Line<'_>> = match &log.lines {
        Ok(l) if l.is_empty() => vec![Line::styled("(empty log)", theme::dim())],
        Ok(l) => l
            .iter()
            .map(|x| match term {
                Some(t) if x.contains(t) => Line::styled(x.clone(), theme::selected()),
                _ => Line::raw(x.clone()),
            })
            .collect(),
        Err(e) => vec![Line::styled(
            e.clone(),
            theme::severity(crate::diagnose::Severity::Warn),
        )],
    };
    let mut how = if log.captured {
        "captured when it ended".to_owned()
    } else if log.previous {
        "previous container".to_owned()
    } else if log.follow {
        "following".to_owned()
    } else {
        "fetched now".to_owned()
    };
    match (&log.search, term) {
        (Some(s), _) => how.push_str(&format!(" · /{s}▏")),
        (None, Some(t)) => how.push_str(&format!(" · /{t} (n older)")),
        _ => {}
    }
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        super::title_text(
            &format!(
                " Log of {} ({how}) · ↑↓ g/G · / search · p previous · f follow · Esc close ",
                log.pod
            ),
            r.width,
        ),
        theme::title(),
    ));
    // Newest at the bottom, shown first: the scroll counts lines up from the end.
    let shown = usize::from(r.height.saturating_sub(2));
    let top = lines.len().saturating_sub(shown);
    let top = top.saturating_sub(usize::from(app.scroll));
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .scroll((u16::try_from(top).unwrap_or(u16::MAX), 0)),
        r,
    );
}
