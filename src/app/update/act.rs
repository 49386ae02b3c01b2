//! An action (from the keymap, a click, the command line) applied to the view: what a
//! popup lets through, copying, moving the selection or the scroll, and the rest.

use super::*;

pub(super) fn act(app: &mut App, action: Action) -> Vec<Effect> {
    if let Some(used) = popup_owns(app, action) {
        return used;
    }
    match action {
        Action::Quit => return app.quit(),
        Action::Mark => {
            if let (Some(a), Some(id)) = (app.current_app(), app.selected_exec) {
                let key = (a.namespace.clone(), a.app_id.clone(), id);
                if !app.marked.remove(&key) {
                    app.marked.insert(key);
                }
            }
        }
        Action::Kill => kill_prompt(app),
        Action::Hold => hold_prompt(app),
        Action::Logs => return logs(app),
        Action::CopyName | Action::CopyCommand => return copy(app, action),
        Action::Command => return super::command_line::open(app),
        Action::Describe => {
            if app.selected().is_some() {
                app.scroll = 0;
                app.popup = Some(Popup::Describe);
                return super::evidence::gone_events(app);
            }
        }
        Action::ToggleUtc => {
            app.show_utc = !app.show_utc;
            app.notice = Some(if app.display_offset().is_none() {
                "times in UTC".to_owned()
            } else {
                "times in local time".to_owned()
            });
        }
        Action::Help => {
            app.scroll = 0;
            app.popup = if app.popup == Some(Popup::Help) {
                None
            } else {
                Some(Popup::Help)
            }
        }
        Action::Close => {
            if app.popup.is_some() {
                app.popup = None;
                app.log_view = None;
            } else {
                app.filter.clear();
                app.state_filter = StateFilter::All;
                app.fix_selection();
            }
        }
        Action::NextPane => {
            app.focus = match app.focus {
                Focus::Apps => Focus::Executors,
                Focus::Executors => Focus::Apps,
            };
        }
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom
        | Action::Left
        | Action::Right => move_by(app, action),
        Action::ToggleView => {
            app.view = match app.view {
                View::Map => View::Table,
                View::Table => View::Map,
            };
        }
        Action::Detail => {
            if app.focus == Focus::Apps {
                app.focus = Focus::Executors;
            } else if app.selected().is_some() {
                app.popup = Some(Popup::Detail);
                app.scroll = 0;
                return super::evidence::gone_events(app);
            }
        }
        Action::Timeline => {
            app.popup = Some(Popup::Timeline);
            app.scroll = 0;
        }
        Action::Filter => {
            app.editing_filter = true;
            app.prompt_cursor = None;
        }
        Action::StateFilter => {
            app.state_filter = app.state_filter.next();
            app.fix_selection();
        }
        Action::Sort => {
            app.sort = match app.sort {
                Sort::Id => Sort::State,
                Sort::State => Sort::Age,
                Sort::Age => Sort::Id,
            };
        }
    }
    Vec::new()
}

/// A popup owns the keys while it is open: scrolling, help, closing, copying what it is
/// about and quitting act; nothing else does (nothing moves beneath it, so Esc returns to
/// the executor that was read about). `Some`: the key was used up here.
fn popup_owns(app: &mut App, action: Action) -> Option<Vec<Effect>> {
    if app.popup.is_some() {
        match action {
            Action::Quit
            | Action::Help
            | Action::Close
            | Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::ToggleUtc
            | Action::CopyName
            | Action::CopyCommand => {}
            Action::Top => {
                app.scroll = 0;
                return Some(Vec::new());
            }
            Action::Bottom if app.popup != Some(Popup::Timeline) => {
                app.scroll = app.popup_max_scroll.get();
                return Some(Vec::new());
            }
            _ => return Some(Vec::new()),
        }
    }
    None
}

/// Copies the selected executor's pod name, or the kubectl command that reads it; in the
/// apps pane (or with no executor), an operator's application's object name or its
/// `kubectl describe`.
fn copy(app: &mut App, action: Action) -> Vec<Effect> {
    // The kubeconfig and context only when they are a cluster's (not a demo's or a
    // recording's); the kubeconfig when one was given with --kubeconfig.
    let ctx = match app.ctx.mode {
        super::Mode::Live => format!(
            "{}--context {} ",
            app.kubeconfig
                .as_deref()
                .map(|k| format!("--kubeconfig {} ", shell_word(k)))
                .unwrap_or_default(),
            shell_word(app.context_name())
        ),
        _ => String::new(),
    };
    let object = app
        .current_app()
        .and_then(|a| a.operator.clone())
        .filter(|_| app.focus == Focus::Apps || app.selected().is_none());
    let text = if let Some(o) = object {
        if action == Action::CopyName {
            o.name.to_string()
        } else {
            format!(
                "kubectl {ctx}-n {} describe {} {}",
                shell_word(&o.namespace),
                o.kind.resource(),
                shell_word(&o.name)
            )
        }
    } else {
        let Some(e) = app.selected() else {
            app.notice = Some("no executor selected".to_owned());
            return Vec::new();
        };
        let (ns, name) = (e.pod.namespace.clone(), e.pod.name.clone());
        if action == Action::CopyName {
            name
        } else if e.gone.is_some() {
            format!("kubectl {ctx}-n {ns} get events --field-selector involvedObject.name={name}")
        } else {
            format!("kubectl {ctx}-n {ns} describe pod {name}")
        }
    };
    app.notice = Some(format!("copied: {text}"));
    vec![Effect::Copy(text)]
}

/// The selection or the popup's scroll moved (up, down, a page, the top, the bottom).
fn move_by(app: &mut App, action: Action) {
    let vertical_step = |app: &App| match app.view {
        View::Map => app.map_columns().max(1) as isize,
        View::Table => 1,
    };
    match action {
        // The log popup opens at its newest line and counts its scroll from the end: up
        // moves away from it.
        Action::Up | Action::Down if app.popup == Some(Popup::Log) => {
            app.scroll = if action == Action::Up {
                app.scroll.saturating_add(1)
            } else {
                app.scroll.saturating_sub(1)
            };
        }
        Action::PageUp | Action::PageDown if app.popup == Some(Popup::Log) => {
            app.scroll = if action == Action::PageUp {
                app.scroll.saturating_add(10)
            } else {
                app.scroll.saturating_sub(10)
            };
        }
        Action::Up | Action::Down if app.popup.is_some() => {
            app.scroll = if action == Action::Up {
                app.scroll.saturating_sub(1)
            } else {
                app.scroll.saturating_add(1)
            };
            clamp_scroll(app);
        }
        Action::Up if app.focus == Focus::Apps => app.move_app(-1),
        Action::Down if app.focus == Focus::Apps => app.move_app(1),
        Action::Up => {
            let s = vertical_step(app);
            app.move_exec(-s);
        }
        Action::Down => {
            let s = vertical_step(app);
            app.move_exec(s);
        }
        Action::Left => app.move_exec(-1),
        Action::Right => app.move_exec(1),
        Action::PageUp if app.popup.is_none() && app.focus == Focus::Apps => {
            let p = app.apps_page();
            app.move_app(-p);
        }
        Action::PageDown if app.popup.is_none() && app.focus == Focus::Apps => {
            let p = app.apps_page();
            app.move_app(p);
        }
        Action::Top if app.focus == Focus::Apps => app.move_app(isize::MIN / 2),
        Action::Bottom if app.focus == Focus::Apps => app.move_app(isize::MAX / 2),
        Action::PageUp => {
            if app.popup.is_some() {
                app.scroll = app.scroll.saturating_sub(10);
            } else {
                let p = app.page();
                app.move_exec(-p);
            }
        }
        Action::PageDown => {
            if app.popup.is_some() {
                app.scroll = app.scroll.saturating_add(10);
                clamp_scroll(app);
            } else {
                let p = app.page();
                app.move_exec(p);
            }
        }
        Action::Top => app.select_index(0),
        Action::Bottom => app.select_index(usize::MAX),
        _ => {}
    }
}

/// A word a shell reads back as itself: as it is when it is plain, else single-quoted.
fn shell_word(s: &str) -> String {
    // (A leading `=` is zsh's command expansion.)
    let plain = !s.is_empty()
        && !s.starts_with('=')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c));
    match plain {
        true => s.to_owned(),
        false => format!("'{}'", s.replace('\'', "'\\''")),
    }
}
