//! The prompts an action opens (kill, hold, the log popup) and what their confirmation
//! turns into: the write gate (read-only, permissions, ownership) is checked here, before
//! any effect leaves.

use spark_triage_core::model::driver::reason_headline;

use super::{drivers_of, write_gate, *};
use crate::effect;
use crate::store::times::{Clock, gone, shown};
use crate::store::{ExecutorRecord, Gone};

pub(super) fn kill_prompt(app: &mut App) {
    let Some(a) = app.current_app().cloned() else {
        return;
    };
    if let Err(why) = write_gate(app, &a.namespace, "delete") {
        app.notice = Some(format!("kill disabled: {why}"));
        return;
    }
    let marked: Vec<i64> = app
        .marked
        .iter()
        .filter(|(ns, id, _)| *ns == a.namespace && *id == a.app_id)
        .map(|(_, _, e)| *e)
        .collect();
    let ids = if marked.is_empty() {
        app.selected_exec.into_iter().collect()
    } else {
        marked
    };
    let drivers = drivers_of(&a);
    let mut skipped = Vec::new();
    let targets: Vec<Target> = ids
        .into_iter()
        .filter_map(|id| a.executors.get(&id))
        .filter(|e| e.gone.is_none())
        .filter_map(|e| match effect::owner_of(&e.pod, &drivers) {
            Ok(via) => Some(Target {
                namespace: a.namespace.clone(),
                app_id: a.app_id.clone(),
                pod: e.pod.name.clone(),
                executor: e.id,
                uid: e.pod.uid.clone(),
                via,
            }),
            Err(why) => {
                skipped.push(format!("executor {} ({why})", e.id));
                None
            }
        })
        .collect();
    if !skipped.is_empty() {
        app.notice = Some(format!(
            "not killing what the app's driver does not own: {} (the CLI's kill --force-unowned can)",
            skipped.join("; ")
        ));
        if targets.is_empty() {
            return;
        }
    }
    if targets.is_empty() {
        app.notice = Some("nothing to kill: the executor's pod is gone".to_owned());
        return;
    }
    app.confirm = Some(Confirm::Kill {
        targets,
        force: false,
    });
    app.popup = Some(Popup::Confirm);
}

pub(super) fn hold_prompt(app: &mut App) {
    let Some(a) = app.current_app().cloned() else {
        return;
    };
    if let Err(why) = write_gate(app, &a.namespace, "patch") {
        app.notice = Some(format!("hold disabled: {why}"));
        return;
    }
    let on = a.driver.as_ref().and_then(|d| d.hold_until).is_none()
        && !a.executors.values().any(|e| e.pod.is_held());
    app.confirm = Some(Confirm::Hold {
        namespace: a.namespace.clone(),
        app_id: a.app_id.clone(),
        on,
    });
    app.popup = Some(Popup::Confirm);
}

/// Keys of the log popup: `p` previous container, `f` follow, `/` search and `n` the next
/// older match, `g`/`G` oldest/newest line. `None`: not a log key (the keymap handles it).
pub(super) fn log_key(app: &mut App, code: crossterm::event::KeyCode) -> Option<Vec<Effect>> {
    use crossterm::event::KeyCode;
    let view = app.log_view.as_mut()?;
    if let Some(buf) = view.search.as_mut() {
        match code {
            KeyCode::Enter => {
                let term = std::mem::take(buf);
                view.search = None;
                view.term = (!term.is_empty()).then_some(term);
                app.scroll = 0;
                jump_to_match(app, true);
            }
            KeyCode::Esc => view.search = None,
            KeyCode::Backspace => {
                buf.pop();
            }
            KeyCode::Char(c) => buf.push(c),
            _ => {}
        }
        return Some(Vec::new());
    }
    match code {
        KeyCode::Char('/') => view.search = Some(String::new()),
        KeyCode::Char('n') if view.term.is_some() => jump_to_match(app, false),
        KeyCode::Char('g') | KeyCode::Home => {
            // From the end: as many lines as there are (the render stops at the first).
            let n = view.lines.as_ref().map_or(0, Vec::len);
            app.scroll = u16::try_from(n).unwrap_or(u16::MAX);
        }
        KeyCode::Char('G') | KeyCode::End => app.scroll = 0,
        KeyCode::Char('w') => {
            view.wrap = !view.wrap;
            view.hscroll = 0;
        }
        KeyCode::Left | KeyCode::Char('h') if !view.wrap => {
            view.hscroll = view.hscroll.saturating_sub(8);
        }
        KeyCode::Right | KeyCode::Char('l') if !view.wrap => {
            view.hscroll = view.hscroll.saturating_add(8);
        }
        KeyCode::Char('p' | 'f') if view.gone => {
            app.notice = Some("the pod is gone: nothing more to fetch".into());
        }
        KeyCode::Char('p' | 'f') if view.captured => {
            app.notice = Some(
                "this is the tail captured when the executor ended: nothing more to fetch".into(),
            );
        }
        KeyCode::Char('p') => {
            view.previous = !view.previous;
            view.follow = false;
            view.lines = Err("fetching…".to_owned());
            app.scroll = 0;
            return Some(vec![fetch_again(view)]);
        }
        KeyCode::Char('f') => {
            view.follow = !view.follow;
            view.previous = false;
            app.scroll = 0;
            return Some(vec![fetch_again(view)]);
        }
        _ => return None,
    }
    Some(Vec::new())
}

/// The fetch that refreshes the log popup (follow, previous container).
pub(super) fn fetch_again(view: &LogView) -> Effect {
    Effect::FetchLog {
        namespace: view.namespace.clone(),
        pod: view.pod.clone(),
        container: view.container.clone(),
        previous: view.previous,
        capture: false,
    }
}

/// Scrolls (counted from the newest line) so the newest match is the bottom line (`first`),
/// or the next match older than the bottom line.
fn jump_to_match(app: &mut App, first: bool) {
    let Some(view) = &app.log_view else { return };
    let (Some(term), Ok(lines)) = (&view.term, &view.lines) else {
        return;
    };
    let bottom = lines
        .len()
        .saturating_sub(1 + usize::from(app.scroll).min(lines.len()));
    let end = if first { bottom + 1 } else { bottom };
    let found = lines[..end.min(lines.len())]
        .iter()
        .rposition(|l| l.contains(term.as_str()));
    match found {
        Some(i) => {
            app.scroll = u16::try_from(lines.len() - 1 - i).unwrap_or(u16::MAX);
            app.notice = None;
        }
        None => app.notice = Some(format!("{term:?}: no older match")),
    }
}

/// What is left of a gone pod's log: when it went, that none was captured, and Spark's
/// own words about the executor (its removal reason), when known.
pub(super) fn gone_words(app: &App, e: &ExecutorRecord) -> String {
    let when = gone(e).map(|(t, clock)| {
        let how = match clock {
            Clock::Deletion => "deleted",
            Clock::Driver => "removed by the driver",
            _ => "gone",
        };
        format!("{how} at {}", shown(&app.when(&t), clock))
    });
    let exec = e.driver.as_ref().and_then(|d| d.exec.as_ref());
    let reason = exec
        .and_then(|x| x.remove_reason.as_deref())
        .map(reason_headline)
        .filter(|r| !r.is_empty())
        .map(std::borrow::Cow::into_owned)
        .or_else(|| e.verdict.spark.as_ref().map(|s| s.message.clone()));
    let mut text = format!(
        "The pod is {}; no log was captured (the view did not see it end, or its capture was \
         not allowed).",
        when.unwrap_or_else(|| "gone".to_owned())
    );
    if let Some(r) = reason {
        text.push_str(&format!(" Spark's reason: {r}"));
    }
    // The event log's later removals of it (a heartbeat timeout racing a kill).
    let again: Vec<std::borrow::Cow<'_, str>> = exec
        .map(|x| {
            x.removed_again
                .iter()
                .map(|r| reason_headline(r))
                .filter(|r| !r.is_empty())
                .collect()
        })
        .unwrap_or_default();
    if !again.is_empty() {
        text.push_str(&format!(" Then: {}", again.join("; ")));
    }
    text
}

pub(super) fn logs(app: &mut App) -> Vec<Effect> {
    let Some(e) = app.selected().cloned() else {
        return Vec::new();
    };
    // Deleted or vanished, or removed by the driver before any pod was seen: its log cannot
    // be fetched (a pod restarted as another executor, or one the driver still counts
    // active, can still be asked).
    let removed_unseen = matches!(e.gone, Some(Gone::DriverOnly { .. }))
        && !e
            .driver
            .as_ref()
            .and_then(|d| d.exec.as_ref())
            .is_some_and(|x| x.active);
    let gone =
        removed_unseen || matches!(e.gone, Some(Gone::Deleted { .. } | Gone::Missing { .. }));
    if let Some(tail) = &e.log_tail {
        app.log_view = Some(LogView {
            pod: e.pod.name.clone(),
            captured: true,
            lines: Ok(tail.to_vec()),
            gone,
            ..LogView::default()
        });
        app.popup = Some(Popup::Log);
        app.scroll = 0;
        return Vec::new();
    }
    if app.ctx.mode == Mode::Replay {
        app.log_view = Some(LogView {
            pod: e.pod.name.clone(),
            captured: false,
            lines: Err("no log was captured for this executor in the recording".to_owned()),
            gone: true,
            ..LogView::default()
        });
        app.popup = Some(Popup::Log);
        return Vec::new();
    }
    // A gone pod's log cannot be fetched: say when it went and what Spark said of it,
    // instead of the API's 404; its events are read once meanwhile.
    if gone {
        app.log_view = Some(LogView {
            pod: e.pod.name.clone(),
            captured: false,
            lines: Err(gone_words(app, &e)),
            namespace: e.pod.namespace.to_string(),
            gone: true,
            ..LogView::default()
        });
        app.popup = Some(Popup::Log);
        return super::evidence::gone_events(app);
    }
    let previous = e
        .pod
        .container_status(&e.spark_container)
        .is_some_and(|c| c.restart_count > 0);
    app.log_view = Some(LogView {
        pod: e.pod.name.clone(),
        captured: false,
        lines: Err("fetching…".to_owned()),
        namespace: e.pod.namespace.to_string(),
        container: e.spark_container.to_string(),
        previous,
        ..LogView::default()
    });
    app.popup = Some(Popup::Log);
    app.scroll = 0;
    vec![Effect::FetchLog {
        namespace: e.pod.namespace.to_string(),
        pod: e.pod.name.clone(),
        container: e.spark_container.to_string(),
        previous,
        capture: false,
    }]
}

pub(super) fn confirm_key(app: &mut App, code: KeyCode) -> Vec<Effect> {
    let Some(c) = app.confirm.clone() else {
        app.popup = None;
        return Vec::new();
    };
    match (code, &c) {
        (KeyCode::Char('f'), Confirm::Kill { targets, force }) => {
            app.confirm = Some(Confirm::Kill {
                targets: targets.clone(),
                force: !force,
            });
            Vec::new()
        }
        (KeyCode::Char('y'), _) => {
            app.popup = None;
            app.confirm = None;
            confirmed(app, c)
        }
        // A write is never confirmed by habit: Enter moves focus and opens details
        // elsewhere, so `K, Enter` must not delete pods.
        (KeyCode::Enter, _) => {
            app.notice =
                Some("Enter does not confirm: press y to go ahead, n or Esc to cancel".to_owned());
            Vec::new()
        }
        (KeyCode::Char('n'), Confirm::QuitWithHolds) => {
            app.should_quit = true;
            vec![Effect::Quit]
        }
        (KeyCode::Char('n') | KeyCode::Esc, _) => {
            app.popup = None;
            app.confirm = None;
            Vec::new()
        }
        _ => Vec::new(),
    }
}

fn confirmed(app: &mut App, c: Confirm) -> Vec<Effect> {
    let now = app.store.view().now.unwrap_or_default();
    match c {
        Confirm::Kill { targets, force } => {
            for t in &targets {
                app.marked
                    .remove(&(t.namespace.clone(), t.app_id.clone(), t.executor));
            }
            app.notice = Some(format!("killing {} executor(s)…", targets.len()));
            vec![Effect::Kill {
                targets,
                grace: force.then_some(0),
            }]
        }
        Confirm::Hold {
            namespace,
            app_id,
            on,
        } => {
            let key = (namespace.clone(), app_id.clone());
            let Some(a) = app.store.view().apps.get(&key).cloned() else {
                return Vec::new();
            };
            let drivers = drivers_of(&a);
            let pods: Vec<HoldTarget> = a
                .executors
                .values()
                .filter(|e| e.gone.is_none())
                .filter_map(|e| {
                    let via = if on {
                        // A finalizer only on what the app's driver owns.
                        if e.pod.is_held() || e.pod.deletion.is_some() {
                            return None;
                        }
                        effect::owner_of(&e.pod, &drivers).ok()?
                    } else if e.pod.is_held() {
                        None
                    } else {
                        return None;
                    };
                    Some(HoldTarget::of(&e.pod, via))
                })
                .collect();
            for p in &pods {
                app.in_flight.insert((namespace.clone(), p.pod.clone()));
            }
            let until = on.then(|| now + app.hold_ttl);
            if on {
                app.held_here.insert(key);
            } else {
                app.held_here.remove(&key);
            }
            app.notice = Some(format!(
                "hold {} for {}…",
                if on { "on" } else { "off" },
                a.app_name.clone().unwrap_or(app_id.clone())
            ));
            vec![Effect::SetHold {
                namespace,
                app_id,
                driver: a.driver.as_ref().map(|d| d.pod.clone()),
                pods,
                until,
            }]
        }
        Confirm::QuitWithHolds => {
            let mut effects = Vec::new();
            for (ns, app_id) in std::mem::take(&mut app.held_here) {
                if let Some(a) = app.store.view().apps.get(&(ns.clone(), app_id.clone())) {
                    let pods = a
                        .executors
                        .values()
                        .filter(|e| e.pod.is_held())
                        .map(|e| HoldTarget::of(&e.pod, None))
                        .collect();
                    effects.push(Effect::SetHold {
                        namespace: ns,
                        app_id,
                        driver: a.driver.as_ref().map(|d| d.pod.clone()),
                        pods,
                        until: None,
                    });
                }
            }
            app.should_quit = true;
            effects.push(Effect::Quit);
            effects
        }
    }
}

/// The editing every one-line prompt (`/`, `:`, replay's `:`) shares, as readline has it:
/// ←/→ (Ctrl-B/F) a character, Alt-B/F (Ctrl-←/→) a word, Ctrl-A/E (Home/End) the line's
/// ends; Backspace (Ctrl-H) and Delete (Ctrl-D) a character, Ctrl-W the word before, Alt-D
/// the word after, Ctrl-U to the start, Ctrl-K to the end. `cursor` is in characters,
/// `None` at the end (where a line set whole, from history or completion, puts it). A
/// character typed with Ctrl or Alt is never inserted. `true` when the key was the
/// prompt's (edited, moved, or swallowed as a control key).
pub(super) fn edit_line(
    buf: &mut String,
    cursor: &mut Option<usize>,
    k: &crossterm::event::KeyEvent,
) -> bool {
    use crossterm::event::KeyModifiers;
    use tui_input::{Input, InputRequest as R};
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    let alt = k.modifiers.contains(KeyModifiers::ALT) || k.modifiers.contains(KeyModifiers::META);
    let request = match k.code {
        KeyCode::Backspace if alt => Some(R::DeletePrevWord),
        KeyCode::Backspace => Some(R::DeletePrevChar),
        KeyCode::Delete => Some(R::DeleteNextChar),
        KeyCode::Left if ctrl => Some(R::SetCursor(word_back(buf, *cursor))),
        KeyCode::Right if ctrl => Some(R::SetCursor(word_forward(buf, *cursor))),
        KeyCode::Left => Some(R::GoToPrevChar),
        KeyCode::Right => Some(R::GoToNextChar),
        KeyCode::Home => Some(R::GoToStart),
        KeyCode::End => Some(R::GoToEnd),
        KeyCode::Char(c) if ctrl => match c {
            'a' => Some(R::GoToStart),
            'e' => Some(R::GoToEnd),
            'b' => Some(R::GoToPrevChar),
            'f' => Some(R::GoToNextChar),
            'h' => Some(R::DeletePrevChar),
            'd' => Some(R::DeleteNextChar),
            'u' => Some(R::DeleteFromStart),
            'k' => Some(R::DeleteTillEnd),
            'w' => {
                // readline's unix-word-rubout: back to the whitespace before the word (a
                // multi-byte one too: U+00A0, U+3000), punctuation included.
                let at = cursor.unwrap_or_else(|| buf.chars().count());
                let head: String = buf.chars().take(at).collect();
                let kept = head.trim_end_matches(char::is_whitespace);
                let from = kept
                    .char_indices()
                    .rfind(|(_, c)| c.is_whitespace())
                    .map_or(0, |(i, c)| i + c.len_utf8());
                let from_chars = head[..from].chars().count();
                let tail: String = buf.chars().skip(at).collect();
                *buf = format!("{}{tail}", &head[..from]);
                *cursor = (!tail.is_empty()).then_some(from_chars);
                return true;
            }
            _ => None,
        },
        KeyCode::Char(c) if alt => match c {
            'b' => Some(R::SetCursor(word_back(buf, *cursor))),
            'f' => Some(R::SetCursor(word_forward(buf, *cursor))),
            'd' => {
                // readline's kill-word: to the end of this word or the next.
                let at = cursor.unwrap_or_else(|| buf.chars().count());
                let to = word_forward(buf, *cursor);
                let head: String = buf.chars().take(at).collect();
                let tail: String = buf.chars().skip(to).collect();
                *buf = format!("{head}{tail}");
                *cursor = (!tail.is_empty()).then_some(at);
                return true;
            }
            _ => None,
        },
        KeyCode::Char(c) => Some(R::InsertChar(c)),
        _ => return false,
    };
    if let Some(request) = request {
        let at = cursor.unwrap_or_else(|| buf.chars().count());
        let mut input = Input::new(std::mem::take(buf)).with_cursor(at);
        input.handle(request);
        let end = input.value().chars().count();
        *cursor = (input.cursor() < end).then_some(input.cursor());
        *buf = input.value().to_owned();
    }
    true
}

/// readline's backward-word: to the start of this word or the one before (a word is
/// letters and digits).
fn word_back(buf: &str, cursor: Option<usize>) -> usize {
    let chars: Vec<char> = buf.chars().collect();
    let mut at = cursor.unwrap_or(chars.len()).min(chars.len());
    while at > 0 && !chars[at - 1].is_alphanumeric() {
        at -= 1;
    }
    while at > 0 && chars[at - 1].is_alphanumeric() {
        at -= 1;
    }
    at
}

/// readline's forward-word: to the end of this word or the next.
fn word_forward(buf: &str, cursor: Option<usize>) -> usize {
    let chars: Vec<char> = buf.chars().collect();
    let mut at = cursor.unwrap_or(chars.len()).min(chars.len());
    while at < chars.len() && !chars[at].is_alphanumeric() {
        at += 1;
    }
    while at < chars.len() && chars[at].is_alphanumeric() {
        at += 1;
    }
    at
}

/// A prompt's line with its cursor drawn (`▏`) where `cursor` says (`None`: at the end).
pub fn with_cursor(buf: &str, cursor: Option<usize>) -> String {
    match cursor {
        Some(at) if at < buf.chars().count() => {
            let head: String = buf.chars().take(at).collect();
            let tail: String = buf.chars().skip(at).collect();
            format!("{head}▏{tail}")
        }
        _ => format!("{buf}▏"),
    }
}
