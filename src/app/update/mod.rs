//! `update`: keys, clicks, source events and ticks in; state changes and effects out.
//! The prompts (kill, hold, logs) and their confirmations live in `prompts`.

mod act;

use act::act;

use super::prompts::{confirm_key, hold_prompt, kill_prompt, logs};
use super::*;
use crate::effect;
use crate::effect::HoldTarget;
use crate::settings::ReadOnly;

/// The only mutator.
pub fn update(app: &mut App, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Source(ev) => return update(app, Msg::Sources(vec![ev])),
        Msg::Sources(events) => {
            let mut switched = false;
            for ev in events {
                switched |= matches!(ev, SourceEvent::ScopeChanged { .. });
                app.store.apply(ev);
            }
            if switched {
                app.forget_scope();
            }
            app.fix_selection();
            return automatic(app, false);
        }
        Msg::Tick(at) => {
            app.store.apply(SourceEvent::Tick { at });
            let mut effects = automatic(app, true);
            // A followed log is fetched again each tick (it stays at its newest line).
            if app.popup == Some(Popup::Log)
                && let Some(view) = app.log_view.as_ref().filter(|v| v.follow)
            {
                effects.push(super::prompts::fetch_again(view));
            }
            return effects;
        }
        Msg::Resize(w, h) => app.size = (w, h),
        Msg::Mouse(m) => {
            app.pin_selection();
            mouse(app, m);
        }
        Msg::Permissions(p) => app.perms.merge(p),
        Msg::Switched {
            context,
            scope,
            readonly,
            stale_after,
        } => {
            app.stale_after = Some(stale_after);
            if let Some(ro) = readonly {
                app.ctx.readonly = ro;
            }
            app.notice = Some(format!(
                "now context {context}, {scope}{}",
                match &app.ctx.readonly {
                    ReadOnly::On(why) => format!(" (read-only: {why})"),
                    ReadOnly::Off => String::new(),
                }
            ));
        }
        Msg::SwitchFailed(why) => app.notice = Some(format!("not switched: {why}")),
        Msg::Namespaces(names) => super::command_line::told_namespaces(app, names),
        Msg::ActionDone { text, pods, denied } => {
            for p in pods {
                app.in_flight.remove(&p);
            }
            if let Some((ns, verb)) = denied {
                app.perms.deny(&ns, &verb);
            }
            app.notice = Some(text);
        }
        Msg::ReplayAdvance(ms) => {
            if let Some(mut r) = app.replay.take() {
                if r.playing {
                    let step = ms.saturating_mul(u64::from(r.speed)).min(i64::MAX as u64) as i64;
                    let to = r.position + chrono::Duration::milliseconds(step);
                    r.seek(&mut app.store, to);
                    app.store.take_finished();
                }
                app.replay = Some(r);
                app.fix_selection();
            }
        }
        Msg::EventsRead {
            namespace,
            pod,
            result,
        } => app.evidence.answered(&namespace, &pod, result),
        Msg::LogFetched { pod, lines } => {
            // Gone meanwhile (the API's 404): what is left of it, in words.
            let gone = app
                .selected()
                .filter(|e| e.pod.name == pod)
                .map(|e| super::prompts::gone_words(app, e));
            let lines = match (lines, gone) {
                (Err(e), Some(words)) if e.contains("not found") => Err(words),
                (l, _) => l,
            };
            if let Some(view) = app.log_view.as_mut().filter(|l| l.pod == pod) {
                // The pod is gone and its log was not kept: say why it was not.
                view.lines = lines.map_err(|e| match app.evidence.note(&view.namespace, &pod) {
                    Some(note) => format!("{e}; log {note}"),
                    None => e,
                });
            }
        }
        Msg::Key(k) => {
            if k.kind == KeyEventKind::Release {
                return Vec::new();
            }
            if app.popup == Some(Popup::Confirm) {
                return confirm_key(app, k.code);
            }
            // The `:` prompt takes every key (replay's controls too) until Enter or Esc.
            if app.command.is_some() {
                return super::command_line::key(app, k);
            }
            if app.replay.is_some()
                && app.popup.is_none()
                && !app.editing_filter
                && let Some(effects) = replay_key(app, k)
            {
                return effects;
            }
            if app.popup == Some(Popup::Log)
                && (k.code != KeyCode::Esc
                    || app.log_view.as_ref().is_some_and(|v| v.search.is_some()))
                && let Some(effects) = super::prompts::log_key(app, k.code)
            {
                return effects;
            }
            // Replay controls move the clock, not the choice of app; anything else pins it.
            app.pin_selection();
            if app.editing_filter {
                match k.code {
                    KeyCode::Enter => app.editing_filter = false,
                    KeyCode::Esc => {
                        app.editing_filter = false;
                        app.filter.clear();
                    }
                    _ => {
                        super::prompts::edit_line(&mut app.filter, &mut app.prompt_cursor, &k);
                    }
                }
                app.fix_selection();
                return Vec::new();
            }
            if let Some(action) = app.keymap.action_for(k) {
                return act(app, action);
            }
        }
    }
    Vec::new()
}

/// Replay controls: the effects when the key was one of them (a command typed at `:`
/// may quit), `None` when it was not.
fn replay_key(app: &mut App, k: KeyEvent) -> Option<Vec<Effect>> {
    let code = k.code;
    let mut r = app.replay.take()?;
    let mut used = true;
    if let Some(buf) = r.seeking.as_mut() {
        match code {
            KeyCode::Enter => {
                let typed = std::mem::take(buf);
                r.seeking = None;
                let verb = typed.split_whitespace().next().unwrap_or_default();
                if super::command_line::is_command(verb) {
                    // `:app NAME` (and the others, `:q` among them) as in the live view's.
                    app.store.take_finished();
                    app.replay = Some(r);
                    let effects = super::command_line::command(app, typed.trim());
                    app.fix_selection();
                    return Some(effects);
                }
                match r.parse_moment(&typed) {
                    Some(t) => {
                        r.seek(&mut app.store, t);
                        app.notice = None;
                    }
                    None => {
                        app.notice = Some(format!(
                            "cannot read {typed:?} as a time (as --at: 10:43:00, RFC 3339, 90s \
                             after the start, -2m before the end) or a command (app NAME)"
                        ))
                    }
                }
            }
            KeyCode::Esc => r.seeking = None,
            _ => {
                super::prompts::edit_line(buf, &mut app.prompt_cursor, &k);
            }
        }
    } else {
        match code {
            KeyCode::Char(' ') => r.playing = !r.playing,
            KeyCode::Char('+' | '=') => r.faster(),
            KeyCode::Char('-') => r.slower(),
            // A notice about the moment left ("no failure after this moment") goes with it.
            KeyCode::Char('n') => {
                if let Some(t) = r.next_change() {
                    r.seek(&mut app.store, t);
                    app.notice = None;
                }
            }
            KeyCode::Char('N') => {
                if let Some(t) = r.previous_change() {
                    r.seek(&mut app.store, t);
                    app.notice = None;
                }
            }
            KeyCode::Char(c @ ('f' | 'F')) => {
                let found = if c == 'f' {
                    r.next_failure()
                } else {
                    r.previous_failure()
                }
                .cloned();
                match found {
                    Some(failure) => {
                        r.seek(&mut app.store, failure.at);
                        app.notice = None;
                        // The selection goes to what failed.
                        app.selected_app = Some(failure.app);
                        app.selected_exec = failure.executor;
                    }
                    None if c == 'f' => {
                        app.notice = Some("no failure after this moment".to_owned());
                    }
                    None => app.notice = Some("no failure before this moment".to_owned()),
                }
            }
            KeyCode::Char(':') => {
                r.seeking = Some(String::new());
                app.prompt_cursor = None;
            }
            _ => used = false,
        }
    }
    app.store.take_finished();
    app.replay = Some(r);
    app.fix_selection();
    used.then(Vec::new)
}

/// A scrolling popup (detail, help, describe) stays within its last page as last drawn.
fn clamp_scroll(app: &mut App) {
    if matches!(
        app.popup,
        Some(Popup::Detail | Popup::Help | Popup::Describe)
    ) {
        app.scroll = app.scroll.min(app.popup_max_scroll.get());
    }
}

/// What the tool does by itself after new data: read the evidence of executors that ended
/// badly or wait too long (`evidence.rs` decides which), hold new executors of held apps,
/// release expired holds (on ticks).
fn automatic(app: &mut App, tick: bool) -> Vec<Effect> {
    let finished = app.store.take_finished();
    if app.ctx.mode == Mode::Replay {
        return Vec::new();
    }
    let now = app.store.view().now.unwrap_or_default();
    let mut effects = super::evidence::reads(app, finished, now, tick);
    let apps: Vec<Arc<AppRecord>> = app.store.view().apps.values().cloned().collect();
    for a in apps {
        let hold_until = a
            .driver
            .as_ref()
            .and_then(|d| d.hold_until)
            .filter(|u| *u > now);
        // Between ticks only a held app has work, and at a tick only one with pods held
        // (to release): nothing to look at per executor.
        if hold_until.is_none() && (!tick || a.held() == 0) {
            continue;
        }
        if write_gate(app, &a.namespace, "patch").is_err() {
            continue;
        }
        let drivers = drivers_of(&a);
        for e in a.executors.values().filter(|e| e.gone.is_none()) {
            let hold = hold_until.and_then(|until| {
                if e.pod.is_held() || e.pod.deletion.is_some() {
                    return None;
                }
                let via = effect::owner_of(&e.pod, &drivers).ok()?;
                Some((until, via))
            });
            let release = hold.is_none() && tick && e.pod.is_held() && e.pod.hold_due(now);
            if hold.is_none() && !release {
                continue;
            }
            let key = (e.pod.namespace.to_string(), e.pod.name.clone());
            if !app.in_flight.insert(key) {
                continue;
            }
            effects.push(match hold {
                Some((until, via)) => Effect::HoldPod {
                    namespace: e.pod.namespace.to_string(),
                    pod: HoldTarget::of(&e.pod, via),
                    until,
                },
                None => Effect::ReleasePod {
                    namespace: e.pod.namespace.to_string(),
                    pod: e.pod.name.clone(),
                    expired: true,
                },
            });
        }
    }
    effects
}

/// Clicks select: an app in the apps pane, an executor in the map or table.
fn mouse(app: &mut App, m: MouseEvent) {
    // A popup owns the mouse too: the wheel scrolls it, clicks do not reach beneath.
    if app.popup.is_some() {
        match m.kind {
            MouseEventKind::ScrollDown if app.popup == Some(Popup::Log) => {
                app.scroll = app.scroll.saturating_sub(1)
            }
            MouseEventKind::ScrollUp if app.popup == Some(Popup::Log) => {
                app.scroll = app.scroll.saturating_add(1)
            }
            MouseEventKind::ScrollDown => app.scroll = app.scroll.saturating_add(1),
            MouseEventKind::ScrollUp => app.scroll = app.scroll.saturating_sub(1),
            _ => {}
        }
        return;
    }
    match m.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            let layout = layout::layout(app.size, app);
            if let Some(i) = layout.app_at(m.column, m.row) {
                let (first, rows) = app.apps_window.get();
                if i >= rows {
                    return; // the pane's spare row below its last app
                }
                let i = i + first;
                app.focus = Focus::Apps;
                let len = app.apps().len();
                if i < len {
                    app.select_app_at(i);
                    app.selected_exec = None;
                    app.fix_selection();
                }
            } else if let Some(i) = layout.executor_at(m.column, m.row, app) {
                app.focus = Focus::Executors;
                app.select_index(i);
            }
        }
        MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
            let step = if m.kind == MouseEventKind::ScrollDown {
                1
            } else {
                -1
            };
            if layout::layout(app.size, app)
                .app_at(m.column, m.row)
                .is_some()
            {
                app.move_app(step);
            } else {
                app.move_exec(step);
            }
        }
        _ => {}
    }
}

/// What a live session needs from the world after any change: the driver view pointed at
/// the app in view, and the permissions of every namespace seen (asked once each). Apart
/// from `update` so that `update`'s effects stay the user's; the TUI runs both.
pub fn housekeeping(app: &mut App) -> Vec<Effect> {
    let mut effects = Vec::new();
    let focus = app
        .current_app()
        .map(|a| (a.namespace.clone(), a.app_id.clone()));
    if app.driver_focus.as_ref() != Some(&focus) {
        app.driver_focus = Some(focus.clone());
        effects.push(Effect::FocusDriver(focus));
    }
    let new: BTreeSet<String> = app
        .apps()
        .iter()
        .map(|a| a.namespace.clone())
        .filter(|ns| !app.permissions_asked.contains(ns))
        .collect();
    if !new.is_empty() {
        app.permissions_asked.extend(new.iter().cloned());
        effects.push(Effect::CheckPermissions {
            namespaces: new.into_iter().collect(),
        });
    }
    effects
}
