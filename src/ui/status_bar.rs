//! The top bar (context, scope, source health, age of the last full LIST, mode, read-only)
//! and the footer (key hints from the keymap, or the filter being typed).

use ratatui::{
    Frame,
    layout::Rect,
    style::Color,
    text::{Line, Span},
    widgets::Paragraph,
};

use super::theme;
use crate::{
    app::{App, Mode},
    source::Health,
    store::Freshness,
};

pub fn render_top(app: &App, f: &mut Frame<'_>, area: Rect) {
    if area.height == 0 {
        return;
    }
    let snap = app.store.view();
    let mode = match app.ctx.mode {
        Mode::Live => Span::styled(" LIVE ", app.theme.badge(Color::Green)),
        Mode::Demo => Span::styled(" DEMO ", app.theme.badge(Color::Cyan)),
        Mode::Replay => Span::styled(" REPLAY ", app.theme.badge(Color::Yellow)),
    };
    let mut spans = vec![
        Span::styled("spark-triage ", theme::title()),
        mode,
        Span::raw(format!(" ctx {} │ ", app.context_name())),
        // Index 3: the scope, the first thing to go when the bar is too wide.
        Span::raw(format!("{} │ ", app.scope_text())),
    ];
    // The watchdog (the store's one rule): no LIST succeeded within the limit. A replay
    // has none: its LISTs are as old as they were.
    let limit = app.stale_after.unwrap_or(std::time::Duration::MAX);
    let human = |age: chrono::Duration| {
        spark_triage_core::diagnose::human_duration(chrono::Duration::seconds(age.num_seconds()))
    };
    match snap.now.map(|now| snap.freshness(now, limit)) {
        Some(Freshness::Stale(age)) => spans.push(Span::styled(
            format!("STALE: no LIST for {}", human(age)),
            app.theme.alarm(),
        )),
        Some(Freshness::Fresh(age)) => {
            spans.push(Span::raw(format!("last LIST {} ago", human(age))))
        }
        // A replay waits for nothing: its recording has no LIST up to here (an event log
        // has none at all).
        Some(Freshness::Waiting) | None if app.ctx.mode == Mode::Replay => {
            spans.push(Span::raw("no LIST recorded"))
        }
        Some(Freshness::Waiting) | None => spans.push(Span::raw("waiting for the first LIST")),
    }
    let bad: Vec<String> = snap
        .health
        .iter()
        .filter_map(|(k, h)| match h {
            Health::Connected => None,
            Health::Connecting => Some(format!("{}: connecting", k.as_str())),
            Health::Retrying { error } => Some(format!("{}: retrying ({error})", k.as_str())),
            Health::Forbidden { permission } => {
                Some(format!("{}: forbidden ({permission})", k.as_str()))
            }
        })
        .collect();
    if bad.is_empty() {
        spans.push(Span::styled(" │ sources ok", app.theme.ok()));
    } else {
        spans.push(Span::styled(
            format!(" │ {}", bad.join("; ")),
            app.theme
                .severity(spark_triage_core::diagnose::Severity::Error),
        ));
    }
    // Forgetting applies: executors gone longer than the horizon are no longer shown.
    if let Some(after) = app.forget_after
        && snap.forgotten > 0
    {
        spans.push(Span::styled(
            format!(" │ gone >{} forgotten", humantime::format_duration(after)),
            app.theme.dim(),
        ));
    }
    if app.ctx.readonly.on() {
        spans.push(Span::styled(
            " │ READ-ONLY",
            app.theme
                .severity(spark_triage_core::diagnose::Severity::Warn),
        ));
    }
    let width: usize = spans.iter().map(Span::width).sum();
    if width > usize::from(area.width) {
        spans.remove(3);
        // Still too wide: the program's name goes too (the mode badge stays).
        if spans.iter().map(Span::width).sum::<usize>() > usize::from(area.width) {
            spans.remove(0);
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

pub fn render_footer(app: &App, f: &mut Frame<'_>, area: Rect) {
    if area.height == 0 {
        return;
    }
    let line = if let Some(cmd) = &app.command {
        Line::from(vec![
            Span::styled(":", theme::title()),
            Span::raw(cmd.clone()),
            Span::raw(
                "▏  Enter run · Esc cancel · Tab complete · ↑↓ history · app NAME, ns NAME|all, ctx NAME, q",
            ),
        ])
    } else if app.editing_filter {
        Line::from(vec![
            Span::styled("filter: ", theme::title()),
            Span::raw(app.filter.clone()),
            Span::raw("▏  Enter keep · Esc clear"),
        ])
    } else if let Some(n) = &app.notice {
        // The flash line: an action's result, why a key is off (until the next move).
        Line::styled(
            super::fit(&n.replace('\n', " "), usize::from(area.width)),
            app.theme
                .severity(spark_triage_core::diagnose::Severity::Warn),
        )
    } else {
        let mut spans = Vec::new();
        let ns = app
            .current_app()
            .map(|a| a.namespace.clone())
            .unwrap_or_default();
        // (label, words, off-reason) per hinted key, in the keymap's order (its priority):
        // the help's first words when they all fit, else the footer's own word.
        let full: usize = app
            .keymap
            .entries()
            .iter()
            .filter(|e| e.binding.hint.is_some())
            .map(|e| e.label.chars().count() + short(e.binding.help).chars().count() + 3)
            .sum();
        let compact_words = full > usize::from(area.width);
        let mut hints: Vec<(&str, &str, Option<String>)> = Vec::new();
        for (e, word) in app
            .keymap
            .entries()
            .iter()
            .filter_map(|e| Some((e, e.binding.hint?)))
        {
            let b = e.binding;
            let verb = match b.action {
                crate::app::keymap::Action::Kill => Some("delete"),
                crate::app::keymap::Action::Hold => Some("patch"),
                _ => None,
            };
            let disabled = verb.and_then(|v| {
                if app.ctx.mode == Mode::Replay {
                    return Some("replay".to_owned());
                }
                app.perms
                    .gate(&app.ctx.readonly, &ns, v)
                    .err()
                    .map(|e| match e {
                        crate::effect::Denied::ReadOnly(_) => "read-only".to_owned(),
                        crate::effect::Denied::Permission { verb, .. } => {
                            format!("no {verb} permission")
                        }
                        crate::effect::Denied::Unlogged(_) => "not logged".to_owned(),
                    })
            });
            hints.push((
                e.label.as_str(),
                if compact_words { word } else { short(b.help) },
                disabled,
            ));
        }
        // The full words if they fit, else the first two words of each, else as many hints
        // as fit: a hint is never cut in the middle.
        let width = usize::from(area.width);
        let text = |h: &(&str, &str, Option<String>), compact: bool| -> (String, String) {
            let words = h.1.to_owned();
            let words = match &h.2 {
                Some(why) if !compact => format!("{words} (off: {why})"),
                Some(_) => format!("{words} (off)"),
                None => words,
            };
            (format!("{} ", h.0), format!("{words}  "))
        };
        let total = |compact: bool| -> usize {
            hints
                .iter()
                .map(|h| {
                    let (a, b) = text(h, compact);
                    a.chars().count() + b.chars().count()
                })
                .sum()
        };
        let compact = total(false) > width;
        let mut used = 0;
        for h in &hints {
            let (label, words) = text(h, compact);
            let w = label.chars().count() + words.chars().count();
            if used + w > width {
                break;
            }
            used += w;
            let style = if h.2.is_some() {
                app.theme.dim()
            } else {
                theme::title()
            };
            spans.push(Span::styled(label, style));
            spans.push(Span::styled(words, app.theme.dim()));
        }
        if !app.filter.is_empty() || app.state_filter != crate::app::StateFilter::All {
            spans.insert(
                0,
                Span::styled(
                    format!("[{} /{}] ", app.state_filter.label(), app.filter),
                    app.theme
                        .severity(spark_triage_core::diagnose::Severity::Warn),
                ),
            );
        }
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The first words of a help text, for the footer.
fn short(help: &str) -> &str {
    help.split([':', '(', ',']).next().unwrap_or(help).trim()
}
