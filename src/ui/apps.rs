//! The applications pane: one entry per app with its driver phase, a bar of executor counts
//! by state, and the number of executors with error findings.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::model::ExecutorState;

use super::theme;
use crate::app::{App, Focus, layout};
use crate::store::AppRecord;

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect, per_app: u16) {
    if area.width < 3 || area.height < 3 {
        return;
    }
    let border = if app.focus == Focus::Apps {
        app.theme.focused_border()
    } else {
        Style::default()
    };
    let apps = app.apps();
    let current = app.selected_app_index();
    // The pane scrolls with its selection: as many apps as fit, from the remembered first.
    let per_app = per_app.max(1);
    let rows = usize::from(area.height.saturating_sub(2) / per_app);
    let first = layout::apps_offset(app.apps_window.get().0, current, apps.len(), rows);
    app.apps_window.set((first, rows.max(1)));
    let shown = apps.len().min(first + rows.max(1)) - first.min(apps.len());
    let title = if shown < apps.len() {
        let (from, to, of) = (first + 1, first + shown, apps.len());
        let long = format!(" Applications {from}-{to} of {of} ");
        if long.chars().count() + 2 <= usize::from(area.width) {
            long
        } else {
            format!(" Apps {from}-{to}/{of} ")
        }
    } else {
        format!(" Applications ({}) ", apps.len())
    };
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(Span::styled(title, theme::title()));
    if let Some(kept) = kept_line(app, usize::from(area.width.saturating_sub(4))) {
        block = block.title_bottom(Span::styled(kept, app.theme.severity(Severity::Warn)));
    }
    let inner_w = usize::from(area.width.saturating_sub(2));
    let mut lines = Vec::new();
    if apps.is_empty() {
        // Wrapped by hand: the pane holds two lines per app, and this is the only text.
        let (text, style) = match &app.store.view().scope_note {
            Some(note) => (note.as_str(), app.theme.severity(Severity::Warn)),
            None => ("no Spark applications in scope yet", app.theme.dim()),
        };
        let mut line = String::new();
        for word in text.split(' ') {
            if !line.is_empty() && line.chars().count() + 1 + word.len() > inner_w {
                lines.push(Line::styled(std::mem::take(&mut line), style));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(Line::styled(line, style));
    }
    for (i, a) in apps.iter().enumerate().skip(first).take(shown) {
        let selected = Some(i) == current;
        lines.push(app_head(app, a, selected, inner_w));
        app_bar_lines(app, a, inner_w, per_app, &mut lines);
    }
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// The namespaces' finished driver pods, when a pile (`drivers-kept`), in the pane's
/// bottom border: ` 412 finished drivers kept in etl ` (`status` says it whole).
fn kept_line(app: &App, room: usize) -> Option<String> {
    let snap = app.store.view();
    let kept = snap.housekeeping(snap.now?);
    let count: usize = kept.iter().map(|(k, _)| k.count).sum();
    let line = match kept.as_slice() {
        [] => return None,
        [(k, _)] => format!(" {count} finished drivers kept in {} ", k.namespace),
        more => format!(
            " {count} finished drivers kept in {} namespaces ",
            more.len()
        ),
    };
    let shorter = [
        format!(" {count} finished drivers kept "),
        format!(" {count} finished drivers "),
    ];
    std::iter::once(line)
        .chain(shorter)
        .find(|l| l.chars().count() <= room)
}

/// An app's first line: its name (marked when selected) and its count of alerts.
fn app_head(app: &App, a: &AppRecord, selected: bool, inner_w: usize) -> Line<'static> {
    let name = a.app_name.clone().unwrap_or_else(|| a.app_id.clone());
    let alerts = a.alerts();
    let room = inner_w.saturating_sub(if alerts > 0 { 6 } else { 2 });
    let mut head = vec![Span::styled(
        format!(
            "{}{}",
            if selected { "▶ " } else { "  " },
            super::fit(&name, room)
        ),
        if selected {
            theme::title()
        } else {
            Style::default()
        },
    )];
    if alerts > 0 {
        head.push(Span::styled(
            format!(" ⚠{alerts}"),
            app.theme.severity(Severity::Error),
        ));
    }
    Line::from(head)
}

/// An app's counts bar, then its verdict, driver phase and namespace as they fit (on a
/// third line when the pane gives each app three).
fn app_bar_lines(
    app: &App,
    a: &AppRecord,
    inner_w: usize,
    per_app: u16,
    lines: &mut Vec<Line<'_>>,
) {
    let c = a.counts();
    // The app's verdict when it is not a plain run: a driver that ended or waits says
    // so here, before any executor.
    let verdict = a.verdict();
    let healthy = matches!(verdict.cause().code, Code::AppRunning | Code::DriverNotSeen)
        || verdict.severity() == Severity::Info
            && a.driver.as_ref().and_then(|d| d.phase.as_deref()) == Some("Running");
    let driver = a
        .driver
        .as_ref()
        .and_then(|d| d.phase.clone())
        .unwrap_or_else(|| "?".to_owned());
    // Counts first (they say the most in a narrow pane), then the driver, then the
    // namespace, each dropped whole when it does not fit.
    let mut bar = vec![Span::raw("  ")];
    let mut used = 2;
    for (letter, s) in [
        ('R', ExecutorState::Running),
        ('P', ExecutorState::Pending),
        ('F', ExecutorState::Failed),
        ('D', ExecutorState::Deleted),
    ] {
        let n = c.get(s);
        if n > 0 {
            let t = format!("{n}{letter} ");
            used += t.chars().count();
            bar.push(Span::styled(t, app.theme.state_style(s)));
        }
    }
    if c.missing > 0 {
        let t = format!("{}M ", c.missing);
        used += t.chars().count();
        bar.push(Span::styled(t, app.theme.missing()));
    }
    let label = format!("{} ", verdict.label());
    let verdict_style = app.theme.severity(verdict.severity());
    // With a third line (a narrow pane with room): a verdict that does not fit whole
    // beside the counts goes under them (in place of the namespace); a healthy app's
    // driver phase and namespace have the line.
    if per_app >= 3 {
        let beside = !healthy && used + label.chars().count() <= inner_w;
        if beside {
            bar.push(Span::styled(label.clone(), verdict_style));
        }
        lines.push(Line::from(bar));
        let mut third = vec![Span::raw("  ")];
        if !healthy && !beside {
            third.push(Span::styled(
                super::fit(label.trim_end(), inner_w.saturating_sub(2)),
                verdict_style,
            ));
        } else {
            let rest: Vec<String> = healthy
                .then(|| format!("drv {driver}"))
                .into_iter()
                .chain([a.namespace.clone()])
                .collect();
            third.push(Span::styled(
                super::fit(&rest.join(" · "), inner_w.saturating_sub(2)),
                app.theme.dim(),
            ));
        }
        lines.push(Line::from(third));
        return;
    }
    if !healthy {
        let t = super::fit(&label, inner_w.saturating_sub(used)).to_string();
        used += t.chars().count();
        bar.push(Span::styled(t, verdict_style));
    }
    let drv = healthy.then(|| format!("· drv {driver} "));
    for extra in drv.into_iter().chain([format!("· {}", a.namespace)]) {
        let w = extra.chars().count();
        if used + w > inner_w {
            break;
        }
        used += w;
        bar.push(Span::styled(extra, app.theme.dim()));
    }
    lines.push(Line::from(bar));
}
