//! The confirm popup (kill, hold, quit with holds) and the log popup.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use spark_triage_core::allocator::Controller;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::HOLD_FINALIZER;
use spark_triage_core::spark::AFTER_KILL;
use spark_triage_core::text;

use super::{centered, theme};
use crate::app::{App, Confirm, Target};
use crate::effect;
use crate::effect::FORCE_STATEFULSET;

pub fn render_confirm(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(c) = &app.confirm else { return };
    let mut lines: Vec<Line<'_>> = Vec::new();
    let title = match c {
        Confirm::Kill { targets, force } => kill_lines(app, targets, *force, &mut lines),
        Confirm::Hold {
            on,
            app_id,
            namespace,
        } => hold_lines(app, *on, app_id, namespace, &mut lines),
        Confirm::QuitWithHolds => quit_lines(&mut lines),
    };
    // The keys on the bottom border, on screen whatever the size (at 60x16 a long list
    // once pushed them out of the box, leaving a confirm with no way to answer).
    let keys = lines.pop().unwrap_or_default();
    if lines.last().is_some_and(|l| l.width() == 0) {
        lines.pop();
    }
    // As tall as its lines once wrapped at the popup's width, plus the borders.
    let inner = usize::from(90.min(area.width).saturating_sub(2)).max(1);
    let rows: usize = lines.iter().map(|l| super::wrapped_rows(l, inner)).sum();
    let r = centered(area, 90, u16::try_from(rows + 2).unwrap_or(u16::MAX));
    if r.width < 3 || r.height < 3 {
        return;
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(
            super::title_text(title, r.width),
            theme::title(),
        ))
        .title_bottom(keys);
    super::clear_popup(f, r);
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        r,
    );
}

/// The kill confirm's lines (the pods, the grace, what replaces them, the keys last); its title.
fn kill_lines(
    app: &App,
    targets: &[Target],
    force: bool,
    lines: &mut Vec<Line<'_>>,
) -> &'static str {
    lines.push(Line::styled(
        format!(
            "Delete {} executor pod(s) {}:",
            targets.len(),
            where_(app, targets.iter().map(|t| t.namespace.as_str()))
        ),
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
    lines.push(Line::raw(if force {
        "Grace period 0: the containers are killed at once (SIGKILL, exit 137).".to_owned()
    } else {
        "Grace period: each pod's own (SIGTERM, then SIGKILL after it).".to_owned()
    }));
    // Pods of a StatefulSet or a Deployment's ReplicaSet: that controller replaces them.
    for l in effect::replacements(targets.iter().filter_map(|t| t.via.as_ref())) {
        lines.push(Line::raw(l));
    }
    if force && effect::any_statefulset(targets.iter().filter_map(|t| t.via.as_ref())) {
        lines.push(Line::styled(
            FORCE_STATEFULSET,
            app.theme.severity(Severity::Warn),
        ));
    }
    if targets.iter().any(|t| t.via.is_none()) {
        lines.push(Line::raw(AFTER_KILL));
    }
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled(" y ", app.theme.alarm()),
        Span::raw(" delete   "),
        Span::styled(" f ", theme::title()),
        Span::raw(if force {
            " use the pods' grace   "
        } else {
            " force (grace 0)   "
        }),
        Span::styled(" n/Esc ", theme::title()),
        Span::raw(" cancel"),
    ]));
    " Kill executors? "
}

/// The hold (or release) confirm's lines (what it does, its cost, the keys last); its title.
fn hold_lines(
    app: &App,
    on: bool,
    app_id: &str,
    namespace: &str,
    lines: &mut Vec<Line<'_>>,
) -> &'static str {
    let at = where_(app, [namespace]);
    let record = app.store.view().apps.values().find(|a| a.app_id == app_id);
    let name = record
        .and_then(|a| a.app_name.clone())
        .unwrap_or_else(|| app_id.to_owned());
    // What holding costs an app whose executors a StatefulSet owns.
    let cost = record.and_then(|a| {
        a.executors
            .values()
            .find_map(|e| Controller::of(&e.pod)?.any_pod().hold_cost())
    });
    if on {
        lines.push(Line::styled(
            format!("Hold the executor pods of {name} {at}?"),
            theme::title(),
        ));
        lines.push(Line::raw(format!(
            "Adds the finalizer {} to its executor pods (and to new ones while any spark-triage watches), \
             so when Spark deletes an executor its pod stays Terminating with its final status and log. \
             Expires in {}; any instance releases it then.",
            HOLD_FINALIZER,
            text::human_duration(app.hold_ttl)
        )));
        if let Some(cost) = cost {
            lines.push(Line::styled(
                format!("Its executors belong to a StatefulSet: {cost}."),
                app.theme.severity(Severity::Warn),
            ));
        }
    } else {
        lines.push(Line::styled(
            format!("Release the hold on {name} {at}?"),
            theme::title(),
        ));
        lines.push(Line::raw(
            "Removes only spark-triage's finalizer; pods Spark already deleted then go.",
        ));
    }
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled(" y ", theme::selected()),
        Span::raw(" yes   "),
        Span::styled(" n/Esc ", theme::title()),
        Span::raw(" cancel"),
    ]));
    if on { " Hold on " } else { " Hold off " }
}

/// The quit-with-holds confirm's lines (the keys last); its title.
fn quit_lines(lines: &mut Vec<Line<'_>>) -> &'static str {
    lines.push(Line::styled(
        "This session turned holds on. Release them before quitting?",
        theme::title(),
    ));
    lines.push(Line::raw(
        "Held pods stay Terminating until released (or until their hold expires).",
    ));
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled(" y ", theme::selected()),
        Span::raw(" release and quit   "),
        Span::styled(" n ", theme::title()),
        Span::raw(" keep them and quit   "),
        Span::styled(" Esc ", theme::title()),
        Span::raw(" stay"),
    ]));
    " Quit "
}

/// Where a write goes, for its confirm: the context and the namespaces ("in context prod-eu,
/// namespace spark-jobs"): with several contexts a `:ctx` away, the dialog says which.
fn where_<'a>(app: &App, namespaces: impl IntoIterator<Item = &'a str>) -> String {
    let mut ns: Vec<&str> = namespaces.into_iter().collect();
    ns.sort_unstable();
    ns.dedup();
    format!(
        "in context {}, namespace{} {}",
        app.ctx.context,
        if ns.len() == 1 { "" } else { "s" },
        ns.join(", ")
    )
}

pub fn render_log(app: &App, f: &mut Frame<'_>, area: Rect) {
    let Some(log) = &app.log_view else { return };
    let Some(r) = super::popup_area(area) else {
        return;
    };
    let term = log.term.as_deref().filter(|t| !t.is_empty());
    let inner_w = usize::from(r.width.saturating_sub(2)).max(1);
    // One row per screen line: a log line wrapped is cut into rows of the popup's width (so
    // scrolling counts rows exactly), each row knowing its log line.
    let mut rows: Vec<(Line<'_>, usize)> = Vec::new();
    match &log.lines {
        Ok(l) if l.is_empty() => rows.push((Line::styled("(empty log)", app.theme.dim()), 0)),
        Ok(l) => {
            for (i, x) in l.iter().enumerate() {
                let style = match term {
                    Some(t) if x.contains(t) => theme::selected(),
                    _ => ratatui::style::Style::default(),
                };
                // A tab is drawn as nothing by the terminal layer: four spaces.
                let x = x.replace('\t', "    ");
                if log.wrap {
                    let chars: Vec<char> = x.chars().collect();
                    for piece in chars.chunks(inner_w) {
                        rows.push((Line::styled(piece.iter().collect::<String>(), style), i));
                    }
                    if chars.is_empty() {
                        rows.push((Line::raw(""), i));
                    }
                } else {
                    rows.push((Line::styled(x, style), i));
                }
            }
        }
        // The API's error wrapped at words: its reason is at the end (`… is waiting to
        // start: ContainerCreating`), which one cut row never showed.
        Err(e) => rows.extend(
            super::wrap_words(e, inner_w)
                .into_iter()
                .map(|piece| (Line::styled(piece, app.theme.severity(Severity::Warn)), 0)),
        ),
    }
    let how = if log.captured && log.gone {
        "the pod is gone; the tail captured when it ended"
    } else if log.captured {
        "captured when it ended"
    } else if log.gone {
        "the pod is gone"
    } else if log.previous {
        "previous container"
    } else if log.follow {
        "following"
    } else {
        "fetched now"
    };
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        super::title_text(&format!(" Log of {} ({how}) ", log.pod), r.width),
        theme::title(),
    ));
    // The last row holds the search prompt, or the search's count, or the keys: whole at
    // every width (the title is cut first).
    let count = |t: &str| {
        log.lines
            .as_ref()
            .map_or(0, |l| l.iter().filter(|x| x.contains(t)).count())
    };
    let status = match (&log.search, term) {
        (Some(s), _) => format!("/{s}▏ {} matching · Enter find · Esc cancel", count(s)),
        (None, Some(t)) => format!("/{t}: {} matching · n older · / new search", count(t)),
        _ => format!(
            "↑↓ g/G · / search · w {} · p previous · f follow · Esc",
            if log.wrap { "unwrap" } else { "wrap · ←→" }
        ),
    };
    // Newest at the bottom, shown first: the scroll counts log lines up from the end.
    let shown = usize::from(r.height.saturating_sub(3));
    let lines_n = log.lines.as_ref().map_or(1, |l| l.len().max(1));
    let bottom_line = lines_n.saturating_sub(1 + usize::from(app.scroll));
    let end = rows
        .iter()
        .rposition(|(_, i)| *i <= bottom_line)
        .map_or(rows.len(), |p| p + 1);
    let top = end.saturating_sub(shown);
    let visible: Vec<Line<'_>> = rows
        .into_iter()
        .skip(top)
        .take(end - top)
        .map(|(l, _)| l)
        .collect();
    super::clear_popup(f, r);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let body = Rect {
        height: inner.height.saturating_sub(1),
        ..inner
    };
    f.render_widget(
        Paragraph::new(visible).scroll((0, if log.wrap { 0 } else { log.hscroll })),
        body,
    );
    if inner.height > 0 {
        let last = Rect {
            y: inner.y + inner.height - 1,
            height: 1,
            ..inner
        };
        f.render_widget(
            Paragraph::new(Line::styled(super::fit(&status, inner_w), app.theme.dim())),
            last,
        );
    }
}
