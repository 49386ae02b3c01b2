//! The top bar (context, scope, source health, age of the last full LIST, mode, read-only)
//! and the footer (key hints from the keymap, or the filter being typed).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::text;

use super::theme;
use crate::app;
use crate::app::keymap::{Action as A, Action, Entry};
use crate::app::{App, Focus, Mode, StateFilter};
use crate::effect::Denied;
use crate::source::Health;
use crate::store::{Freshness, Snapshot};

/// One part of the header, with what it may become when the bar is too narrow.
struct Part {
    text: String,
    short: Option<String>,
    style: Style,
}

impl Part {
    fn new(text: impl Into<String>, style: Style) -> Self {
        Self {
            text: text.into(),
            short: None,
            style,
        }
    }

    fn or(mut self, short: impl Into<String>) -> Self {
        self.short = Some(short.into());
        self
    }
}

/// How the header gives way, first to last, until it fits: the mode, the context and the
/// namespace stay (k9s's habit), cut only when nothing else is left to drop.
#[derive(Clone, Copy)]
enum Give {
    Drop(usize),
    Shorten(usize),
    /// The LIST's age when it is only news (a STALE alarm stays).
    DropFresh,
    /// The context cut with `…` to what is left, keeping at least this many characters.
    FitCtx(usize),
}

const TITLE: usize = 0;
const MODE: usize = 1;
const CTX: usize = 2;
const SCOPE: usize = 3;
const LIST: usize = 4;
const SOURCES: usize = 5;
const FORGOTTEN: usize = 6;
const READ_ONLY: usize = 7;

/// The alarms (STALE, a failing source, READ-ONLY) outlast a long context's tail: an EKS
/// ARN is cut before they go.
const GIVE: &[Give] = &[
    Give::Drop(TITLE),
    Give::Drop(FORGOTTEN),
    Give::Shorten(LIST),
    Give::Shorten(SCOPE),
    Give::Shorten(SOURCES),
    Give::Shorten(READ_ONLY),
    Give::Shorten(MODE),
    Give::DropFresh,
    Give::FitCtx(16),
    Give::Drop(LIST),
    Give::Drop(SOURCES),
    Give::FitCtx(8),
    Give::Drop(READ_ONLY),
];

pub fn render_top(app: &App, f: &mut Frame<'_>, area: Rect) {
    if area.height == 0 {
        return;
    }
    let snap = app.store.view();
    let mode = match app.ctx.mode {
        Mode::Live => Part::new(" LIVE ", app.theme.badge(Color::Green)),
        Mode::Demo => Part::new(" DEMO ", app.theme.badge(Color::Cyan)),
        Mode::Replay => Part::new(" REPLAY ", app.theme.badge(Color::Yellow)).or(" RPL "),
    };
    let scope = app.scope_text();
    let short_scope = match scope.strip_prefix("namespace ") {
        Some(ns) => format!("ns {ns}"),
        None if scope == "all namespaces" => "ns all".to_owned(),
        None => scope.to_owned(),
    };
    // The watchdog (the store's one rule): no LIST succeeded within the limit. A replay
    // has none: its LISTs are as old as they were.
    let limit = app.stale_after.unwrap_or(std::time::Duration::MAX);
    let list = list_part(app, snap, limit);
    let bad = troubles(app);
    let error = app.theme.severity(Severity::Error);
    let sources = sources_part(app, snap, area, &bad, error);
    let forgotten = forgotten_part(app, snap);
    let read_only = if app.ctx.readonly.on() {
        Part::new(" │ READ-ONLY", app.theme.severity(Severity::Warn)).or(" │ RO")
    } else {
        Part::new("", Style::default())
    };
    let parts = vec![
        Part::new("spark-triage ", theme::title()),
        mode,
        Part::new(format!(" ctx {} │ ", app.context_name()), Style::default()),
        Part::new(scope.to_owned(), Style::default()).or(short_scope),
        list,
        sources,
        forgotten,
        read_only,
    ];
    let stale = matches!(
        snap.now.map(|now| snap.freshness(now, limit)),
        Some(Freshness::Stale(_))
    );
    let parts = give_way(app, parts, area, stale);
    let spans: Vec<Span<'_>> = parts
        .into_iter()
        .filter(|p| !p.text.is_empty())
        .map(|p| Span::styled(p.text, p.style))
        .collect();
    let first = Rect { height: 1, ..area };
    f.render_widget(Paragraph::new(Line::from(spans)), first);
    if area.height >= 2 && !bad.is_empty() {
        render_errors(f, area, &bad, error);
    }
}

/// The LIST's age (or that none came yet), an alarm once past the watchdog's limit.
fn list_part(app: &App, snap: &Snapshot, limit: std::time::Duration) -> Part {
    let human =
        |age: chrono::Duration| text::human_duration(chrono::Duration::seconds(age.num_seconds()));
    match snap.now.map(|now| snap.freshness(now, limit)) {
        Some(Freshness::Stale(age)) => Part::new(
            format!(" │ STALE: no LIST for {}", human(age)),
            app.theme.alarm(),
        )
        .or(format!(" │ STALE {}", human(age))),
        Some(Freshness::Fresh(age)) => {
            Part::new(format!(" │ last LIST {} ago", human(age)), Style::default())
                .or(format!(" │ LIST {} ago", human(age)))
        }
        // A replay waits for nothing: its recording has no LIST up to here (an event log
        // has none at all).
        Some(Freshness::Waiting) | None if app.ctx.mode == Mode::Replay => {
            Part::new(" │ no LIST recorded", Style::default()).or(" │ no LIST")
        }
        Some(Freshness::Waiting) | None => {
            Part::new(" │ waiting for the first LIST", Style::default()).or(" │ no LIST yet")
        }
    }
}

/// The sources' health: connecting, ok, or which fail (their errors when there is no
/// second line for them).
fn sources_part(
    app: &App,
    snap: &Snapshot,
    area: Rect,
    bad: &[(&str, String, Option<String>)],
    error: Style,
) -> Part {
    let connecting = snap
        .health
        .values()
        .any(|h| matches!(h, Health::Connecting));
    if bad.is_empty() && connecting {
        Part::new(" │ sources connecting", app.theme.dim()).or(" │ connecting")
    } else if bad.is_empty() {
        Part::new(" │ sources ok", app.theme.ok()).or("")
    } else if area.height >= 2 {
        // The errors have the line below.
        let n = bad.len();
        Part::new(
            format!(" │ {n} source{} failing", if n == 1 { "" } else { "s" }),
            error,
        )
        .or(" │ failing")
    } else {
        let all: Vec<String> = bad
            .iter()
            .map(|(k, what, _)| format!("{k}: {what}"))
            .collect();
        Part::new(format!(" │ {}", all.join("; ")), error).or(" │ failing")
    }
}

/// What the view no longer shows: executors forgotten past the horizon, endings trimmed.
fn forgotten_part(app: &App, snap: &Snapshot) -> Part {
    // Forgetting applies: executors gone longer than the horizon are no longer shown; past
    // the store's bound, the first to end are counted, not shown.
    let mut gone = Vec::new();
    if let (Some(after), true) = (app.forget_after, snap.forgotten > 0) {
        gone.push(format!(
            "gone >{} forgotten",
            humantime::format_duration(after)
        ));
    }
    if snap.trimmed > 0 {
        gone.push(format!("{} ended counted, not kept", snap.trimmed));
    }
    if gone.is_empty() {
        Part::new("", Style::default())
    } else {
        Part::new(format!(" │ {}", gone.join(", ")), app.theme.dim())
    }
}

/// The header given way (`GIVE`, then the namespace cut) until it fits the bar's width.
fn give_way(app: &App, mut parts: Vec<Part>, area: Rect, stale: bool) -> Vec<Part> {
    let width = |parts: &[Part]| -> usize { parts.iter().map(|p| p.text.chars().count()).sum() };
    let room = usize::from(area.width);
    let ctx_name = app.context_name();
    let fit_ctx = |parts: &mut [Part], keep: usize| {
        let others = width(parts) - parts[CTX].text.chars().count();
        let frame = " ctx  │ ".chars().count();
        let ctx_room = room.saturating_sub(others + frame).max(keep);
        parts[CTX].text = format!(" ctx {} │ ", super::fit(ctx_name, ctx_room));
    };
    for give in GIVE {
        if width(&parts) <= room {
            break;
        }
        match *give {
            Give::Drop(i) => parts[i].text.clear(),
            Give::Shorten(i) => {
                if let Some(s) = parts[i].short.take() {
                    parts[i].text = s;
                }
            }
            Give::DropFresh if !stale => parts[LIST].text.clear(),
            Give::DropFresh => {}
            Give::FitCtx(keep) => fit_ctx(&mut parts, keep),
        }
    }
    // Still too wide (a long namespace at 60 columns): the namespace is cut with `…` to
    // what is left, never at the screen's edge.
    if width(&parts) > room {
        let others = width(&parts) - parts[SCOPE].text.chars().count();
        let left = room.saturating_sub(others).max(4);
        let scope: Vec<char> = parts[SCOPE].text.chars().collect();
        if scope.len() > left {
            // Mid-name: a namespace is one word, and its head is what tells it apart.
            parts[SCOPE].text = scope[..left - 1].iter().collect::<String>() + "…";
        }
    }
    parts
}

/// The failing sources' errors on the bar's second line, in the first form that fits.
fn render_errors(
    f: &mut Frame<'_>,
    area: Rect,
    bad: &[(&str, String, Option<String>)],
    error: Style,
) {
    // Short: the last clause of each error (`Connection refused (os error 111)`), the
    // whole text in the help popup.
    // The first form that fits whole: with its state and the long pointer, then the
    // short pointer, then without the state (`retrying` is what the header's
    // `failing` says); else the last, cut at a word.
    let said = |with_what: bool| -> String {
        bad.iter()
            .map(|(k, what, err)| match (err, with_what) {
                (Some(e), true) => format!("{k}: {what}: {}", last_clause(e)),
                (Some(e), false) => format!("{k}: {}", last_clause(e)),
                (None, _) => format!("{k}: {what}"),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let room = usize::from(area.width);
    let forms = [
        format!("{} · ? for the full text", said(true)),
        format!("{} · ? more", said(true)),
        format!("{} · ? more", said(false)),
    ];
    let line = forms
        .iter()
        .find(|l| l.chars().count() <= room)
        .cloned()
        .unwrap_or_else(|| {
            let tail = " · ? more";
            let left = room.saturating_sub(tail.chars().count());
            format!("{}{tail}", super::fit(&said(false), left))
        });
    let second = Rect {
        y: area.y + 1,
        height: 1,
        ..area
    };
    f.render_widget(
        Paragraph::new(Line::styled(
            super::fit(&line, usize::from(area.width)),
            error,
        )),
        second,
    );
}

/// The failing sources: (source, what it is doing, its error when it has one).
pub(crate) fn troubles(app: &App) -> Vec<(&'static str, String, Option<String>)> {
    app.store
        .view()
        .health
        .iter()
        .filter_map(|(k, h)| match h {
            Health::Connected | Health::Connecting => None,
            Health::Retrying { error } => {
                Some((k.as_str(), "retrying".to_owned(), Some(error.clone())))
            }
            Health::Forbidden { permission } => {
                Some((k.as_str(), format!("forbidden ({permission})"), None))
            }
        })
        .collect()
}

/// The last clause of an error chain (`a: b: Connection refused (os error 111)` gives the
/// last), which says the most in the fewest words.
fn last_clause(error: &str) -> &str {
    let e = error.trim();
    match e.rfind(": ") {
        Some(i) if e[i + 2..].chars().count() >= 8 => &e[i + 2..],
        _ => e,
    }
}

pub fn render_footer(app: &App, f: &mut Frame<'_>, area: Rect) {
    if area.height == 0 {
        return;
    }
    let line = if let Some(cmd) = &app.command {
        Line::from(vec![
            Span::styled(":", theme::title()),
            Span::raw(app::with_cursor(cmd, app.prompt_cursor)),
            Span::raw(
                "  Enter run · Esc cancel · Tab complete · ↑↓ history · app NAME, ns NAME|all, ctx NAME, q",
            ),
        ])
    } else if app.editing_filter {
        Line::from(vec![
            Span::styled("filter: ", theme::title()),
            Span::raw(app::with_cursor(&app.filter, app.prompt_cursor)),
            Span::raw("  Enter keep · Esc clear"),
        ])
    } else if let Some(n) = &app.notice {
        // The flash line: an action's result, why a key is off (until the next move).
        Line::styled(
            super::fit(&n.replace('\n', " "), usize::from(area.width)),
            app.theme.severity(Severity::Warn),
        )
    } else {
        hints_line(app, area)
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The key hints that fit the footer (`?` always among them), after the filters in force.
fn hints_line(app: &App, area: Rect) -> Line<'static> {
    let mut spans = Vec::new();
    let hints = footer_hints(app, area);
    // The full words if they fit, else the first two words of each, else as many hints
    // as fit: a hint is never cut in the middle.
    // The filters in force lead the line; the hints have the rest.
    let filtered = !app.filter.is_empty() || app.state_filter != StateFilter::All;
    let prefix = filtered.then(|| format!("[{} /{}] ", app.state_filter.label(), app.filter));
    let width =
        usize::from(area.width).saturating_sub(prefix.as_ref().map_or(0, |p| p.chars().count()));
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
    // `?` is kept whatever else goes: it leads to every key not shown.
    let help_label = app
        .keymap
        .entries()
        .iter()
        .find(|e| e.action() == Action::Help)
        .map(|e| e.label.clone());
    let help_w = hints
        .iter()
        .find(|h| help_label.as_deref() == Some(h.0))
        .map_or(0, |h| {
            let (a, b) = text(h, compact);
            a.chars().count() + b.chars().count()
        });
    let mut used = 0;
    let (mut full, mut help_done) = (false, false);
    for h in &hints {
        let is_help = help_label.as_deref() == Some(h.0);
        let (label, words) = text(h, compact);
        let w = label.chars().count() + words.chars().count();
        if full && !is_help {
            continue;
        }
        let reserve = if is_help || help_done { 0 } else { help_w };
        if used + w + reserve > width {
            if !is_help {
                full = true;
                continue;
            }
            if used + w > width {
                break;
            }
        }
        help_done |= is_help;
        used += w;
        let style = if h.2.is_some() {
            app.theme.dim()
        } else {
            theme::title()
        };
        spans.push(Span::styled(label, style));
        spans.push(Span::styled(words, app.theme.dim()));
    }
    if let Some(p) = prefix {
        spans.insert(0, Span::styled(p, app.theme.severity(Severity::Warn)));
    }
    Line::from(spans)
}

/// Each hinted key in the footer's order: (label, words, why it is off), a replay's writes
/// left out.
fn footer_hints(app: &App, area: Rect) -> Vec<(&str, &str, Option<String>)> {
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
    let mut hinted: Vec<(&Entry, &str)> = app
        .keymap
        .entries()
        .iter()
        .filter_map(|e| Some((e, e.binding.hint?)))
        .collect();
    // The keys an on-call engineer reaches for first lead (the log, kill, detail), the
    // pane switch first while the apps pane has the focus; `?` and `q` close the line.
    hinted.sort_by_key(|(e, _)| hint_rank(e.action(), app.focus));
    for (e, word) in hinted {
        let b = e.binding;
        let verb = match b.action {
            Action::Kill => Some("delete"),
            Action::Hold => Some("patch"),
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
                    Denied::ReadOnly(_) => "read-only".to_owned(),
                    Denied::Permission { verb, .. } => {
                        format!("no {verb} permission")
                    }
                    Denied::Unlogged(_) => "not logged".to_owned(),
                })
        });
        // A replay cannot act: its off keys would only crowd the keys that work.
        if app.ctx.mode == Mode::Replay && verb.is_some() {
            continue;
        }
        hints.push((
            e.label.as_str(),
            if compact_words { word } else { short(b.help) },
            disabled,
        ));
    }
    hints
}

/// Where a hinted key stands in the footer (lower first): what a failing job needs at 80
/// columns comes before what is one `?` away.
fn hint_rank(a: Action, focus: Focus) -> u8 {
    match a {
        A::NextPane if focus == Focus::Apps => 0,
        A::Logs => 1,
        A::Kill => 2,
        A::Detail => 3,
        A::Filter => 4,
        A::Hold => 5,
        A::StateFilter => 6,
        A::Timeline => 7,
        A::ToggleView => 8,
        A::NextPane => 9,
        A::Help => 20,
        A::Quit => 21,
        _ => 15,
    }
}

/// The first words of a help text, for the footer.
fn short(help: &str) -> &str {
    help.split([':', '(', ',']).next().unwrap_or(help).trim()
}
