//! The incident strip above the executors: how the selected app's executors ended (by
//! cause), what is missing or waiting; its failure budget, last failure and the change to
//! make; then the app's settings that change verdicts. Wraps onto its lines rather than
//! cutting a word at the border.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::text::human_duration;

use super::theme;
use crate::app::App;
use crate::store;

/// The app verdicts the executors' line of the strip says in its own words.
fn told_by_executors(code: Code) -> bool {
    matches!(
        code,
        Code::CrashLoop
            | Code::ExecutorsFailed
            | Code::ExecutorsMissing
            | Code::ExecutorsPending
            | Code::ExecutorsWaiting
            | Code::NodeFailures
    )
}

pub fn render(app: &App, f: &mut Frame<'_>, area: Rect) {
    if area.height == 0 || area.width < 3 {
        return;
    }
    let mut lines = lines(app, area.height >= 2);
    lines.truncate(usize::from(area.height));
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), area);
}

/// The rows the strip needs at this width, wrapped (the layout gives it as many as it can:
/// the failure budget and the change to make are never the rows cut).
pub fn rows(app: &App, width: u16) -> u16 {
    let width = usize::from(width).max(1);
    let n: usize = lines(app, true)
        .iter()
        .map(|l| super::wrapped_rows(l, width))
        .sum();
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn lines(app: &App, all: bool) -> Vec<Line<'static>> {
    let Some(a) = app.current_app() else {
        return Vec::new();
    };
    let name = a.title();
    let inc = a.incident();
    let now = app.store.view().now;
    let sep = || Span::styled(" · ", app.theme.dim());
    // The app's verdict first when it is more than a plain run: the cause, then the rest.
    let verdict = a.verdict();
    let cause = verdict.cause();
    // A plain run, or a verdict the executors' line below says itself (their endings,
    // missing, pending); any other (the driver, the operator, a quota, a refusal, a stalled
    // scale-up, a streaming app preempted) leads, so the strip never reads "no failures"
    // under an app the list calls in error.
    let plain = !verdict.about_driver()
        && (cause.severity == Severity::Info || told_by_executors(cause.code));
    let head = (!plain).then(|| {
        Line::from(vec![
            Span::styled(format!("{name}: "), theme::title()),
            Span::styled(cause.summary.clone(), app.theme.severity(cause.severity)),
        ])
    });
    let mut first = vec![Span::styled(
        if plain {
            format!("{name}: ")
        } else {
            "executors: ".to_owned()
        },
        theme::title(),
    )];
    if inc.is_quiet() {
        let c = a.counts();
        first.push(Span::styled(
            format!("no failures · {} running", c.running),
            app.theme.ok(),
        ));
    }
    for (i, (label, n)) in inc.causes.iter().enumerate() {
        if i > 0 {
            first.push(sep());
        }
        first.push(Span::styled(
            format!("{n} {label}"),
            app.theme.severity(Severity::Error),
        ));
    }
    if inc.missing > 0 {
        if !inc.causes.is_empty() {
            first.push(sep());
        }
        first.push(Span::styled(
            format!("{} missing", inc.missing),
            app.theme.missing(),
        ));
    }
    if !inc.pending.is_empty() {
        if !inc.causes.is_empty() || inc.missing > 0 {
            first.push(sep());
        }
        let total: usize = inc.pending.iter().map(|(_, n)| n).sum();
        let why: Vec<String> = inc
            .pending
            .iter()
            .map(|(r, n)| format!("{r} ×{n}"))
            .collect();
        first.push(Span::styled(
            format!("{total} pending: {}", why.join(", ")),
            app.theme.severity(Severity::Warn),
        ));
    }
    // The change to make on its own line, the setting first: it is what the reader acts on,
    // and a narrow pane wraps the rest of the line, not the setting.
    let driver_fix = (!plain)
        .then(|| store::suggestion(&cause.hint))
        .flatten()
        .map(|conf| (verdict.label(), conf));
    let fix = driver_fix
        .as_ref()
        .or(inc.suggestion.as_ref())
        .map(|(cause, conf)| {
            Line::from(vec![
                Span::styled(conf.clone(), theme::title()),
                Span::styled(format!(" (for {cause})"), app.theme.dim()),
            ])
        });
    let mut second = Vec::new();
    if let Some(b) = &inc.budget {
        second.push(Span::raw(b.clone()));
    }
    if let Some((id, label, at)) = &inc.last_failure {
        if !second.is_empty() {
            second.push(sep());
        }
        let ago = now.map_or_else(String::new, |n| format!(" {} ago", human_duration(n - *at)));
        second.push(Span::raw(format!("last: executor {id} {label}{ago}")));
    }
    if let Some(h) = a.cost_headline() {
        if !second.is_empty() {
            second.push(sep());
        }
        second.push(Span::raw(format!("cost: {h}")));
    }
    let dot = if a.config.from_driver {
        a.config.delete_on_termination.to_string()
    } else {
        "?".to_owned()
    };
    let mut third = format!(
        "deleteOnTermination={dot} · held {} · kept by Spark {}",
        inc.held, inc.kept
    );
    if a.driver.as_ref().and_then(|d| d.hold_until).is_some() {
        third.push_str(" · HOLD ON");
    }
    match a.driver_api.as_ref().map(|d| (&d.unavailable, d.active)) {
        Some((Some(r), _)) => {
            // When it was read: a driver Pending at the last read may be Running by now.
            let read_at = a.driver_api.as_ref().map(|d| d.at);
            let ago = match (now, read_at) {
                (Some(n), Some(at)) if n > at => format!(" (read {} ago)", human_duration(n - at)),
                _ => String::new(),
            };
            third.push_str(&format!(" · driver view unavailable{ago}: {r}"));
        }
        Some((None, n)) => third.push_str(&format!(" · driver: {n} active")),
        None => {}
    }
    let mut lines: Vec<Line> = head.into_iter().collect();
    if a.operator.is_some() && a.driver.is_none() && a.executors.is_empty() {
        // No pod yet: the object's verdict is all there is (no executors, no settings), and
        // what to do about it.
        if all && !cause.hint.is_empty() {
            lines.push(Line::styled(format!("→ {}", cause.hint), app.theme.dim()));
        }
        return lines;
    }
    lines.push(Line::from(first));
    if all {
        lines.extend(fix);
        if !second.is_empty() {
            lines.push(Line::from(second));
        }
        lines.push(Line::styled(third, app.theme.dim()));
    }
    lines
}
