//! The `:` prompt: `:app NAME`, `:ns NAME|all`, `:ctx NAME`, `:q`, with Tab completion of
//! the verb and of context, namespace and app names, and a history walked with Up/Down.

use crossterm::event::KeyCode;

use super::{App, Effect, Namespaces, SwitchTo};

/// Lines kept in the history.
const HISTORY: usize = 100;

/// `:` typed: an empty prompt; the cluster's namespaces are asked for once per scope.
pub(super) fn open(app: &mut App) -> Vec<Effect> {
    app.command = Some(String::new());
    app.prompt_cursor = None;
    app.history_pos = None;
    if app.namespaces == Namespaces::NotAsked && app.ctx.mode != super::Mode::Replay {
        app.namespaces = Namespaces::Asked { tab_waiting: None };
        return vec![Effect::ListNamespaces];
    }
    Vec::new()
}

/// The cluster's answer: a Tab pressed while it was awaited is completed now, if the
/// prompt still holds the line it was pressed on. An answer nobody awaits (the scope was
/// switched since it was asked) is dropped: the new scope asks again.
pub(super) fn told_namespaces(app: &mut App, names: Vec<String>) {
    if !matches!(app.namespaces, Namespaces::Asked { .. }) {
        return;
    }
    let waiting = take_waiting_tab(app);
    app.namespaces = Namespaces::Told(names);
    if let Some(line) = waiting
        && app.command.as_deref() == Some(line.as_str())
    {
        app.command = Some(complete(app, &line));
        app.prompt_cursor = None;
    }
}

/// Said while a Tab waits for the cluster's namespaces.
const ASKING: &str = "asking the cluster for its namespaces…";

/// A key while the prompt is open.
pub(super) fn key(app: &mut App, k: crossterm::event::KeyEvent) -> Vec<Effect> {
    let code = k.code;
    let Some(mut buf) = app.command.take() else {
        return Vec::new();
    };
    if matches!(code, KeyCode::Enter | KeyCode::Esc) {
        take_waiting_tab(app); // the prompt closes: it completes nothing
    }
    match code {
        KeyCode::Enter => {
            let line = buf.trim().to_owned();
            if !line.is_empty() && app.history.last() != Some(&line) {
                app.history.push(line.clone());
                if app.history.len() > HISTORY {
                    app.history.remove(0);
                }
            }
            app.history_pos = None;
            return command(app, &line);
        }
        KeyCode::Esc => {
            app.history_pos = None;
            return Vec::new();
        }
        KeyCode::Backspace
        | KeyCode::Delete
        | KeyCode::Left
        | KeyCode::Right
        | KeyCode::Home
        | KeyCode::End
        | KeyCode::Char(_) => {
            super::prompts::edit_line(&mut buf, &mut app.prompt_cursor, &k);
        }
        KeyCode::Up if !app.history.is_empty() => {
            let pos = app
                .history_pos
                .map_or(app.history.len() - 1, |p| p.saturating_sub(1));
            app.history_pos = Some(pos);
            buf = app.history[pos].clone();
        }
        KeyCode::Down => match app.history_pos {
            Some(p) if p + 1 < app.history.len() => {
                app.history_pos = Some(p + 1);
                buf = app.history[p + 1].clone();
            }
            Some(_) => {
                app.history_pos = None;
                buf.clear();
            }
            None => {}
        },
        KeyCode::Tab if awaits_namespaces(app, &buf) => {
            app.namespaces = Namespaces::Asked {
                tab_waiting: Some(buf.clone()),
            };
            app.notice = Some(ASKING.to_owned());
        }
        KeyCode::Tab => buf = complete(app, &buf),
        _ => {}
    }
    if matches!(code, KeyCode::Up | KeyCode::Down | KeyCode::Tab) {
        app.prompt_cursor = None; // a line set whole: the cursor at its end
    }
    app.command = Some(buf);
    Vec::new()
}

/// The line a Tab waits on for the namespaces, if any, taken with its notice.
fn take_waiting_tab(app: &mut App) -> Option<String> {
    let Namespaces::Asked { tab_waiting } = &mut app.namespaces else {
        return None;
    };
    let line = tab_waiting.take()?;
    if app.notice.as_deref() == Some(ASKING) {
        app.notice = None;
    }
    Some(line)
}

const VERBS: [&str; 5] = ["app", "ctx", "ns", "q", "quit"];

/// Whether a word is one of `:`'s commands (replay's `:` takes them beside a time).
pub(super) fn is_command(word: &str) -> bool {
    VERBS.contains(&word) || matches!(word, "a" | "namespace" | "context")
}

/// The line completed as far as it is unambiguous; when several names remain, they are
/// listed in the flash line.
fn complete(app: &mut App, line: &str) -> String {
    let (verb, arg) = match line.split_once(' ') {
        Some((v, a)) => (v, Some(a.trim_start())),
        None => (line, None),
    };
    let (prefix, arg, names): (String, &str, Vec<String>) = match arg {
        None => (
            String::new(),
            verb,
            VERBS.iter().map(|v| (*v).to_owned()).collect(),
        ),
        Some(arg) => {
            let names = match verb {
                "ns" | "namespace" => namespaces(app),
                "ctx" | "context" => app.contexts.clone(),
                "app" | "a" => app
                    .apps()
                    .iter()
                    .map(|a| a.app_name.clone().unwrap_or_else(|| a.app_id.clone()))
                    .collect(),
                _ => Vec::new(),
            };
            (format!("{verb} "), arg, names)
        }
    };
    let mut matching: Vec<String> = names.into_iter().filter(|n| n.starts_with(arg)).collect();
    matching.sort();
    matching.dedup();
    match matching.as_slice() {
        [] => {
            app.notice = Some(format!("nothing to complete for {line:?}"));
            line.to_owned()
        }
        [one] => {
            app.notice = None;
            format!("{prefix}{one}{}", if prefix.is_empty() { " " } else { "" })
        }
        many => {
            let common = common_prefix(many);
            app.notice = Some(many.join("  "));
            format!(
                "{prefix}{}",
                if common.len() > arg.len() {
                    common
                } else {
                    arg
                }
            )
        }
    }
}

/// A Tab on `ns …` while the cluster's namespaces are awaited and nothing known matches:
/// the completion waits for the answer.
fn awaits_namespaces(app: &App, line: &str) -> bool {
    let Some(("ns" | "namespace", arg)) = line.split_once(' ') else {
        return false;
    };
    let arg = arg.trim_start();
    matches!(app.namespaces, Namespaces::Asked { .. })
        && !namespaces(app).iter().any(|n| n.starts_with(arg))
}

/// The namespaces to offer: the cluster's (when it told), those with apps, and `all`.
fn namespaces(app: &App) -> Vec<String> {
    let mut out: Vec<String> = match &app.namespaces {
        Namespaces::Told(names) => names.clone(),
        _ => Vec::new(),
    };
    out.extend(app.store.view().apps.keys().map(|(ns, _)| ns.clone()));
    out.push("all".to_owned());
    out
}

fn common_prefix(names: &[String]) -> &str {
    let first = names[0].as_str();
    let mut end = first.len();
    for n in &names[1..] {
        end = first
            .char_indices()
            .zip(n.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8())
            .min(end);
    }
    &first[..end]
}

/// `:ns NAME|all` and `:ctx NAME`: the sources are rebuilt in the new scope (an effect the
/// terminal loop runs); the answer comes back as `Msg::Switched` or `Msg::SwitchFailed`.
fn switch(app: &mut App, verb: &str, arg: &str) -> Vec<Effect> {
    let ns = matches!(verb, "ns" | "namespace");
    if app.ctx.mode == super::Mode::Replay {
        app.notice = Some(format!(
            "a replay shows what was recorded ({} in {}); switch when recording",
            app.scope_text(),
            app.context_name()
        ));
        return Vec::new();
    }
    if arg.is_empty() {
        app.notice = Some(match ns {
            true => format!(
                "this is {}: :ns NAME or :ns all (Tab completes)",
                app.scope_text()
            ),
            false => format!(
                "this is context {}: :ctx NAME (Tab completes)",
                app.context_name()
            ),
        });
        return Vec::new();
    }
    if !app.held_here.is_empty() {
        app.notice = Some(format!(
            "this view holds the pods of {} app(s): release them (H) before switching, \
             or they stay held until their time is up",
            app.held_here.len()
        ));
        return Vec::new();
    }
    let to = match (ns, arg) {
        (true, "all" | "-A" | "*") => SwitchTo::AllNamespaces,
        (true, name) => SwitchTo::Namespace(name.to_owned()),
        (false, name) => SwitchTo::Context(name.to_owned()),
    };
    let already = match &to {
        SwitchTo::AllNamespaces => app.scope_text().starts_with("all namespaces"),
        SwitchTo::Namespace(n) => {
            app.scope_text().split(" · ").next() == Some(&format!("namespace {n}"))
        }
        SwitchTo::Context(c) => app.context_name() == c,
    };
    if already {
        app.notice = Some(format!(
            "already {}",
            match ns {
                true => app.scope_text().to_owned(),
                false => format!("context {}", app.context_name()),
            }
        ));
        return Vec::new();
    }
    app.notice = Some(match &to {
        SwitchTo::AllNamespaces => "switching to all namespaces…".to_owned(),
        SwitchTo::Namespace(n) => format!("switching to namespace {n}…"),
        SwitchTo::Context(c) => format!("switching to context {c}…"),
    });
    vec![Effect::Switch(to)]
}

/// A `:` command.
pub(super) fn command(app: &mut App, text: &str) -> Vec<Effect> {
    let (verb, arg) = text.split_once(' ').unwrap_or((text, ""));
    let arg = arg.trim();
    match verb {
        "q" | "quit" => return app.quit(),
        "app" | "a" if !arg.is_empty() => {
            let found: Vec<(String, String)> = {
                let all = app.apps();
                let exact: Vec<_> = all
                    .iter()
                    .filter(|a| a.app_id == arg || a.app_name.as_deref() == Some(arg))
                    .collect();
                let pick = if exact.is_empty() {
                    all.iter()
                        .filter(|a| a.app_name.as_deref().unwrap_or(&a.app_id).contains(arg))
                        .collect()
                } else {
                    exact
                };
                pick.iter()
                    .map(|a| (a.namespace.clone(), a.app_id.clone()))
                    .collect()
            };
            match found.as_slice() {
                [one] => {
                    app.selected_app = Some(one.clone());
                    app.selected_exec = None;
                    app.fix_selection();
                    app.notice = None;
                }
                [] => app.notice = Some(format!("no application matches {arg:?}")),
                _ => {
                    app.notice = Some(format!(
                        "{} applications match {arg:?}: be more precise",
                        found.len()
                    ));
                }
            }
        }
        "ns" | "namespace" | "ctx" | "context" => return switch(app, verb, arg),
        _ => {
            app.notice = Some(format!(
                "unknown command {text:?}: :app NAME, :ns NAME|all, :ctx NAME, :q (Tab completes)"
            ));
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyEvent, KeyModifiers};
    use spark_triage_core::model::testing;

    use super::*;
    use crate::app::{Context, Mode, Msg, update};
    use crate::settings::ReadOnly;
    use crate::source::SourceEvent;

    fn app() -> App {
        let mut app = App::new(Context {
            context: "kind-a".into(),
            scope: "namespace spark-jobs".into(),
            readonly: ReadOnly::Off,
            mode: Mode::Live,
        });
        app.contexts = vec!["kind-a".into(), "prod-eu".into(), "prod-us".into()];
        update(&mut app, Msg::Resize(80, 24));
        app
    }

    fn press(app: &mut App, code: KeyCode) -> Vec<Effect> {
        update(app, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    fn type_(app: &mut App, text: &str) {
        for c in text.chars() {
            press(app, KeyCode::Char(c));
        }
    }

    #[test]
    fn tab_completes_verbs_contexts_and_namespaces() {
        let mut app = app();
        assert_eq!(
            press(&mut app, KeyCode::Char(':')),
            vec![Effect::ListNamespaces]
        );
        type_(&mut app, "c");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.command.as_deref(), Some("ctx "));
        type_(&mut app, "p");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.command.as_deref(), Some("ctx prod-"), "the common part");
        assert_eq!(
            app.notice.as_deref(),
            Some("prod-eu  prod-us"),
            "and what remains"
        );
        type_(&mut app, "u");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.command.as_deref(), Some("ctx prod-us"));
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            vec![Effect::Switch(SwitchTo::Context("prod-us".into()))]
        );
        // The cluster's namespaces, once told.
        update(
            &mut app,
            Msg::Namespaces(vec!["default".into(), "kube-system".into()]),
        );
        assert!(press(&mut app, KeyCode::Char(':')).is_empty(), "asked once");
        type_(&mut app, "ns d");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.command.as_deref(), Some("ns default"));
        press(&mut app, KeyCode::Esc);
        assert!(app.command.is_none());
    }

    /// A Tab typed before the cluster said its namespaces (a slow cluster, or a quick
    /// typist) is completed when the answer comes, not answered "nothing to complete".
    #[test]
    fn a_tab_before_the_namespaces_are_told_completes_when_they_are() {
        let mut app = app();
        assert_eq!(
            press(&mut app, KeyCode::Char(':')),
            vec![Effect::ListNamespaces]
        );
        type_(&mut app, "ns kube-s");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.command.as_deref(), Some("ns kube-s"), "waits");
        assert_eq!(
            app.notice.as_deref(),
            Some("asking the cluster for its namespaces…")
        );
        update(
            &mut app,
            Msg::Namespaces(vec!["default".into(), "kube-system".into()]),
        );
        assert_eq!(app.command.as_deref(), Some("ns kube-system"));
        assert_eq!(app.notice, None);
        // Closed before the answer: the waiting Tab completes nothing in a later prompt, and
        // an answer for a scope switched away from is dropped.
        let mut late = self::app();
        press(&mut late, KeyCode::Char(':'));
        type_(&mut late, "ns kube-s");
        press(&mut late, KeyCode::Tab);
        press(&mut late, KeyCode::Esc);
        assert_eq!(late.notice, None, "the waiting notice goes with the prompt");
        press(&mut late, KeyCode::Char(':'));
        type_(&mut late, "ns kube-s");
        update(&mut late, Msg::Namespaces(vec!["kube-system".into()]));
        assert_eq!(
            late.command.as_deref(),
            Some("ns kube-s"),
            "no Tab pressed here"
        );
        let mut switched = self::app();
        update(&mut switched, Msg::Namespaces(vec!["old-cluster".into()]));
        assert_eq!(
            switched.namespaces,
            Namespaces::NotAsked,
            "not asked: dropped"
        );
        // Told: a Tab that matches nothing says so at once.
        type_(&mut app, "x");
        press(&mut app, KeyCode::Tab);
        assert_eq!(
            app.notice.as_deref(),
            Some("nothing to complete for \"ns kube-systemx\"")
        );
    }

    #[test]
    fn up_and_down_walk_the_history() {
        let mut app = app();
        for line in ["ns default", "app etl", "app etl", "ns all"] {
            press(&mut app, KeyCode::Char(':'));
            type_(&mut app, line);
            press(&mut app, KeyCode::Enter);
        }
        assert_eq!(
            app.history,
            ["ns default", "app etl", "ns all"],
            "no repeats"
        );
        press(&mut app, KeyCode::Char(':'));
        press(&mut app, KeyCode::Up);
        assert_eq!(app.command.as_deref(), Some("ns all"));
        press(&mut app, KeyCode::Up);
        press(&mut app, KeyCode::Up);
        press(&mut app, KeyCode::Up);
        assert_eq!(
            app.command.as_deref(),
            Some("ns default"),
            "stops at the oldest"
        );
        press(&mut app, KeyCode::Down);
        assert_eq!(app.command.as_deref(), Some("app etl"));
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Down);
        assert_eq!(app.command.as_deref(), Some(""), "past the newest: empty");
    }

    #[test]
    fn a_switch_drops_the_old_scope_and_the_header_follows() {
        let mut app = app();
        let t = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let pod = testing::pod(serde_json::json!({
            "metadata": {"name": "etl-exec-1", "namespace": "spark-jobs", "uid": "u1",
                "resourceVersion": "5", "labels": {"spark-app-selector": "spark-1",
                "spark-role": "executor", "spark-exec-id": "1", "spark-app-name": "etl"}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": "Running"}}));
        update(
            &mut app,
            Msg::Source(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(pod),
                at: t,
            }),
        );
        assert_eq!(app.apps().len(), 1);
        app.marked
            .insert(("spark-jobs".into(), "spark-1".into(), 1));
        update(
            &mut app,
            Msg::Source(SourceEvent::ScopeChanged {
                context: "prod-eu".into(),
                scope: "namespace default".into(),
                at: t,
            }),
        );
        assert!(app.apps().is_empty(), "nothing of the old scope");
        assert!(app.marked.is_empty());
        assert_eq!(
            (app.context_name(), app.scope_text()),
            ("prod-eu", "namespace default")
        );
        assert_eq!(app.store.view().now, Some(t), "the clock goes on");
    }

    #[test]
    fn a_replay_does_not_switch() {
        let mut app = app();
        app.ctx.mode = Mode::Replay;
        assert!(command(&mut app, "ns default").is_empty());
        assert!(
            app.notice
                .as_deref()
                .unwrap()
                .starts_with("a replay shows what was recorded")
        );
    }
}
