//! `update` as a pure function: keys, mouse and source events in, state and effects out.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use serde_json::json;
use spark_triage_core::model::testing::pod;
use spark_triage_core::model::{HOLD_EXPIRES, HOLD_FINALIZER};

use super::*;
use crate::app::with_cursor;
use crate::evidence::SAME_CAUSE;
use crate::settings::ReadOnly;
use crate::tui;

fn key(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn exec(app: &str, id: i64, phase: &str) -> SourceEvent {
    let p = pod(
        json!({"metadata": {"name": format!("{app}-exec-{id}"), "resourceVersion": id.to_string(),
            "labels": {"spark-app-selector": format!("spark-{app}"), "spark-app-name": app, "spark-role": "executor", "spark-exec-id": id.to_string()}},
        "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": phase}}),
    );
    SourceEvent::PodUpserted {
        pod: std::sync::Arc::new(p),
        at: chrono::DateTime::UNIX_EPOCH,
    }
}

/// A live app at 80×24 with nothing in it.
fn fresh() -> App {
    let mut app = App::new(Context {
        context: "c".into(),
        scope: "s".into(),
        readonly: ReadOnly::Off,
        mode: Mode::Live,
    });
    update(&mut app, Msg::Resize(80, 24));
    app
}

fn app_with(n: i64) -> App {
    let mut app = fresh();
    for id in 1..=n {
        update(
            &mut app,
            Msg::Source(exec(
                "etl",
                id,
                if id % 5 == 0 { "Pending" } else { "Running" },
            )),
        );
    }
    update(&mut app, Msg::Source(exec("zeta", 1, "Running")));
    // The session starts on the apps pane (j/k move between apps); these tests work in the
    // executors pane, as after a Tab.
    assert_eq!(app.focus, Focus::Apps);
    update(&mut app, key(KeyCode::Tab));
    app
}

/// A failed executor: the app it belongs to is in trouble.
fn failed(app: &str, id: i64) -> SourceEvent {
    let p = pod(
        json!({"metadata": {"name": format!("{app}-exec-{id}"), "resourceVersion": (100 + id).to_string(),
            "labels": {"spark-app-selector": format!("spark-{app}"), "spark-app-name": app, "spark-role": "executor", "spark-exec-id": id.to_string()}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor"}]},
        "status": {"phase": "Failed", "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "spark", "imageID": "",
            "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}}),
    );
    SourceEvent::PodUpserted {
        pod: std::sync::Arc::new(p),
        at: chrono::DateTime::UNIX_EPOCH,
    }
}

#[test]
fn the_app_in_trouble_comes_first_and_is_shown_until_the_operator_chooses() {
    let mut app = fresh();
    for id in 1..=3 {
        update(&mut app, Msg::Source(exec("etl", id, "Running")));
    }
    update(&mut app, Msg::Source(exec("zeta", 1, "Running")));
    assert_eq!(app.current_app().unwrap().app_name.as_deref(), Some("etl"));
    update(&mut app, Msg::Source(failed("zeta", 2)));
    let names: Vec<_> = app
        .apps()
        .iter()
        .map(|a| a.app_name.clone().unwrap())
        .collect();
    assert_eq!(names, ["zeta", "etl"], "trouble first, then by name");
    assert_eq!(
        app.current_app().unwrap().app_name.as_deref(),
        Some("zeta"),
        "nothing chosen yet: the worst app is shown"
    );
    assert_eq!(app.selected_exec, Some(2), "and its failed executor");
}

#[test]
fn the_first_executor_is_selected_and_arrows_move_through_the_map() {
    let mut app = app_with(30);
    assert_eq!(app.selected_exec, Some(1));
    update(&mut app, key(KeyCode::Right));
    assert_eq!(app.selected_exec, Some(2));
    let cols = i64::from(app.map_columns());
    update(&mut app, key(KeyCode::Down));
    assert_eq!(app.selected_exec, Some(2 + cols), "down moves one map row");
    update(&mut app, key(KeyCode::Char('G')));
    assert_eq!(app.selected_exec, Some(30));
    update(&mut app, key(KeyCode::Right));
    assert_eq!(app.selected_exec, Some(30), "stays at the end");
    update(&mut app, key(KeyCode::Char('v')));
    assert_eq!(app.view, View::Table);
    update(&mut app, key(KeyCode::Up));
    assert_eq!(app.selected_exec, Some(29), "in the table, up is one row");
}

#[test]
fn tab_switches_panes_and_apps_change_the_executors() {
    let mut app = app_with(3);
    update(&mut app, key(KeyCode::Tab));
    assert_eq!(app.focus, Focus::Apps);
    update(&mut app, key(KeyCode::Down));
    assert_eq!(app.current_app().unwrap().app_name.as_deref(), Some("zeta"));
    assert_eq!(app.visible().len(), 1);
    update(&mut app, key(KeyCode::Enter));
    assert_eq!(app.focus, Focus::Executors);
}

#[test]
fn filters_narrow_the_executors() {
    let mut app = app_with(12);
    update(&mut app, key(KeyCode::Char('/')));
    assert!(app.editing_filter);
    for c in "exec-1".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    assert_eq!(
        app.visible().iter().map(|e| e.id).collect::<Vec<_>>(),
        vec![1, 10, 11, 12]
    );
    update(&mut app, key(KeyCode::Enter));
    assert!(!app.editing_filter);
    update(&mut app, key(KeyCode::Esc));
    assert!(app.filter.is_empty());
    update(&mut app, key(KeyCode::Char('s'))); // problems
    update(&mut app, key(KeyCode::Char('s'))); // running
    update(&mut app, key(KeyCode::Char('s'))); // pending
    assert_eq!(app.state_filter, StateFilter::Only(ExecutorState::Pending));
    assert_eq!(
        app.visible().iter().map(|e| e.id).collect::<Vec<_>>(),
        vec![5, 10]
    );
    assert!(
        app.selected_exec.is_some_and(|id| id == 5 || id == 10),
        "selection follows the filter"
    );
}

#[test]
fn popups_open_and_close_and_quit_is_an_effect() {
    let mut app = app_with(3);
    update(&mut app, key(KeyCode::Enter));
    assert_eq!(app.popup, Some(Popup::Detail));
    update(&mut app, key(KeyCode::Down));
    assert_eq!(app.scroll, 1, "arrows scroll a popup");
    update(&mut app, key(KeyCode::Esc));
    assert_eq!(app.popup, None);
    update(&mut app, key(KeyCode::Char('?')));
    assert_eq!(app.popup, Some(Popup::Help));
    update(&mut app, key(KeyCode::Char('?')));
    assert_eq!(app.popup, None);
    assert_eq!(
        update(&mut app, key(KeyCode::Char('q'))),
        vec![Effect::Quit]
    );
    let mut app = app_with(1);
    let ctrl_c = Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(update(&mut app, ctrl_c), vec![Effect::Quit]);
}

#[test]
fn clicks_select_apps_and_executors() {
    let mut app = app_with(20);
    let l = layout::layout(app.size, &app);
    // Second cell of the first map row.
    let click = |x, y| {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        })
    };
    update(
        &mut app,
        click(l.main.x + 1 + layout::CELL_WIDTH, l.main.y + 1),
    );
    assert_eq!(app.selected_exec, Some(2));
    // The last line of the first app's entry is still the first app (two or three lines
    // per app, as the layout says and the pane draws); the next line the second app.
    update(
        &mut app,
        click(l.apps.x + 2, l.apps.y + 1 + l.app_rows.saturating_sub(1)),
    );
    assert_eq!(app.focus, Focus::Apps);
    let first = app.current_app().unwrap().app_name.clone();
    assert_ne!(first.as_deref(), Some("zeta"), "still the first app");
    update(&mut app, click(l.apps.x + 2, l.apps.y + 1 + l.app_rows));
    assert_eq!(app.focus, Focus::Apps);
    assert_eq!(app.current_app().unwrap().app_name.as_deref(), Some("zeta"));
}

fn live_app() -> App {
    let mut app = app_with(3);
    app.ctx.mode = Mode::Demo;
    app
}

#[test]
fn quitting_with_holds_asks_and_releases_by_default() {
    let mut app = live_app();
    // A driver so the hold has an app-level mark.
    let driver = pod(
        json!({"metadata": {"name": "etl-driver", "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}, "status": {"phase": "Running"}}),
    );
    update(
        &mut app,
        Msg::Source(SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(driver),
            at: chrono::DateTime::UNIX_EPOCH,
        }),
    );
    update(&mut app, key(KeyCode::Char('H')));
    assert_eq!(app.popup, Some(Popup::Confirm));
    let effects = update(&mut app, key(KeyCode::Char('y')));
    match &effects[..] {
        [
            Effect::SetHold {
                pods,
                until: Some(_),
                driver: Some(d),
                ..
            },
        ] => {
            assert_eq!(pods.len(), 3);
            assert_eq!(d, "etl-driver");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        update(&mut app, key(KeyCode::Char('q'))).is_empty(),
        "asks first"
    );
    assert_eq!(app.confirm, Some(Confirm::QuitWithHolds));
    // Enter answers nothing (a write is never confirmed by habit): y does.
    assert!(update(&mut app, key(KeyCode::Enter)).is_empty());
    assert_eq!(app.confirm, Some(Confirm::QuitWithHolds));
    let effects = update(&mut app, key(KeyCode::Char('y')));
    assert!(
        matches!(effects.first(), Some(Effect::SetHold { until: None, .. })),
        "{effects:?}"
    );
    assert_eq!(effects.last(), Some(&Effect::Quit));
}

#[test]
fn read_only_and_replays_cannot_act() {
    let mut app = live_app();
    app.ctx.readonly = ReadOnly::flag();
    assert!(update(&mut app, key(KeyCode::Char('K'))).is_empty());
    assert_eq!(app.popup, None);
    assert_eq!(
        app.notice.as_deref(),
        Some("kill disabled: read-only mode (--readonly)")
    );
    app.ctx.readonly = ReadOnly::Off;
    app.perms.deny("spark-jobs", "patch");
    update(&mut app, key(KeyCode::Char('H')));
    assert_eq!(
        app.notice.as_deref(),
        Some("hold disabled: missing permission: patch pods in namespace spark-jobs")
    );
    app.ctx.mode = Mode::Replay;
    update(&mut app, key(KeyCode::Char('K')));
    assert_eq!(
        app.notice.as_deref(),
        Some("kill disabled: a replay cannot act")
    );
}

#[test]
fn an_executor_that_ends_gets_its_log_captured() {
    let mut app = live_app();
    let failed = pod(
        json!({"metadata": {"name": "etl-exec-2", "resourceVersion": "50",
            "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "executor", "spark-exec-id": "2"}},
        "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
        "status": {"phase": "Failed", "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "s", "imageID": "",
            "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 52, "reason": "Error"}}}]}}),
    );
    let effects = update(
        &mut app,
        Msg::Source(SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(failed),
            at: chrono::DateTime::UNIX_EPOCH,
        }),
    );
    assert_eq!(
        effects,
        vec![
            Effect::ReadEvents {
                namespace: "spark-jobs".into(),
                pod: "etl-exec-2".into(),
            },
            Effect::FetchLog {
                namespace: "spark-jobs".into(),
                pod: "etl-exec-2".into(),
                container: "spark-kubernetes-executor".into(),
                previous: false,
                capture: true
            }
        ]
    );
    let lines = vec!["java.lang.OutOfMemoryError: Java heap space".to_owned()];
    update(
        &mut app,
        Msg::Source(SourceEvent::LogCaptured {
            namespace: "spark-jobs".into(),
            pod: "etl-exec-2".into(),
            lines: lines.clone(),
            at: chrono::DateTime::UNIX_EPOCH,
        }),
    );
    let rec = app.current_app().unwrap().executors[&2].clone();
    assert_eq!(rec.log_tail.as_deref(), Some(&lines));
    // Shown by `l` without asking the cluster again.
    app.selected_exec = Some(2);
    assert!(update(&mut app, key(KeyCode::Char('l'))).is_empty());
    assert_eq!(app.log_view.as_ref().map(|l| l.captured), Some(true));
}

#[test]
fn new_executors_of_a_held_app_are_held() {
    let mut app = live_app();
    let mut driver = pod(
        json!({"metadata": {"name": "etl-driver", "annotations": {"spark-triage.dev/hold-expires": "2099-01-01T00:00:00Z"},
            "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}, "status": {"phase": "Running"}}),
    );
    driver.resource_version = Some("1".into());
    let effects = update(
        &mut app,
        Msg::Source(SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(driver),
            at: chrono::DateTime::UNIX_EPOCH,
        }),
    );
    let held: Vec<&str> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::HoldPod { pod, .. } => Some(pod.pod.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(held, vec!["etl-exec-1", "etl-exec-2", "etl-exec-3"]);
    // Not asked twice while the request is under way.
    assert!(update(&mut app, Msg::Tick(chrono::DateTime::UNIX_EPOCH)).is_empty());
    // Read-only: nothing is held.
    let mut ro = live_app();
    ro.ctx.readonly = ReadOnly::flag();
    let driver = pod(
        json!({"metadata": {"name": "etl-driver", "annotations": {"spark-triage.dev/hold-expires": "2099-01-01T00:00:00Z"},
            "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}, "status": {"phase": "Running"}}),
    );
    assert!(
        update(
            &mut ro,
            Msg::Source(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(driver),
                at: chrono::DateTime::UNIX_EPOCH
            })
        )
        .is_empty()
    );
}

#[test]
fn the_kill_prompt_leaves_out_what_the_apps_driver_does_not_own() {
    let mut app = live_app();
    let driver = pod(
        json!({"metadata": {"name": "etl-driver", "uid": "d-1", "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}, "status": {"phase": "Running"}}),
    );
    // Executor 9 carries the app's labels but belongs to something else.
    let forged = pod(
        json!({"metadata": {"name": "etl-exec-9", "resourceVersion": "9",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s-1", "controller": true}],
            "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "executor", "spark-exec-id": "9"}},
        "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": "Running"}}),
    );
    // Executor 10 belongs to the app's StatefulSet (Spark's statefulset allocator).
    let mut sts = forged.clone();
    sts.name = "spark-s-spark-etl-0-0".into();
    sts.labels.insert("spark-exec-id".into(), "10".into());
    sts.owner.as_mut().unwrap().name = "spark-s-spark-etl-0".into();
    for p in [driver, forged, sts] {
        update(
            &mut app,
            Msg::Source(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(p),
                at: chrono::DateTime::UNIX_EPOCH,
            }),
        );
    }
    let i = app
        .apps()
        .iter()
        .position(|a| a.app_name.as_deref() == Some("etl"))
        .unwrap();
    app.select_app_at(i);
    app.selected_exec = Some(9);
    update(&mut app, key(KeyCode::Char('K')));
    assert_eq!(app.confirm, None);
    let notice = app.notice.clone().unwrap_or_default();
    assert!(
        notice.contains(
            "not killing what the app's driver does not own: executor 9 (owned by StatefulSet db"
        ),
        "{notice}"
    );
    // An executor the driver's namespace holds without an owner (client mode) is the app's;
    // one of the app's StatefulSet, with the chain to verify before the delete.
    for (id, via) in [(1, false), (10, true)] {
        app.selected_exec = Some(id);
        update(&mut app, key(KeyCode::Char('K')));
        match &app.confirm {
            Some(Confirm::Kill { targets, .. }) => assert_eq!(targets[0].via.is_some(), via),
            other => panic!("{other:?} {:?}", app.notice),
        }
        // `K, Enter` from habit deletes nothing: only y confirms.
        assert!(update(&mut app, key(KeyCode::Enter)).is_empty());
        assert!(matches!(app.confirm, Some(Confirm::Kill { .. })));
        assert!(
            app.notice
                .as_deref()
                .is_some_and(|n| n.starts_with("Enter does not confirm: press y")),
            "{:?}",
            app.notice
        );
        update(&mut app, key(KeyCode::Esc));
    }
    app.selected_exec = Some(1);
    update(&mut app, key(KeyCode::Char('K')));
    let effects = update(&mut app, key(KeyCode::Char('y')));
    assert!(
        matches!(effects.as_slice(), [Effect::Kill { targets, .. }] if targets[0].executor == 1),
        "{effects:?}"
    );
}

#[test]
fn housekeeping_points_the_driver_view_and_asks_permissions_once() {
    let mut app = app_with(3);
    let first = housekeeping(&mut app);
    let ns = app.current_app().unwrap().namespace.clone();
    assert_eq!(
        first,
        vec![
            Effect::FocusDriver(Some((ns.clone(), "spark-etl".into()))),
            Effect::CheckPermissions {
                namespaces: vec![ns.clone()]
            },
        ]
    );
    assert!(
        housekeeping(&mut app).is_empty(),
        "nothing changed, nothing asked"
    );
    app.select_app_at(1);
    assert_eq!(
        housekeeping(&mut app),
        vec![Effect::FocusDriver(Some((ns, "spark-zeta".into())))],
        "a namespace is asked about once"
    );
}

#[test]
fn y_copies_the_pod_name_and_capital_y_a_kubectl_command() {
    let mut app = app_with(3);
    let effects = update(&mut app, key(KeyCode::Char('y')));
    assert_eq!(effects, vec![Effect::Copy("etl-exec-1".to_owned())]);
    let effects = update(&mut app, key(KeyCode::Char('Y')));
    assert_eq!(
        effects,
        vec![Effect::Copy(
            "kubectl --context c -n spark-jobs describe pod etl-exec-1".to_owned()
        )]
    );
    // A kubeconfig given with --kubeconfig goes into the command, quoted for a shell.
    app.kubeconfig = Some("/tmp/on call/kc".into());
    let effects = update(&mut app, key(KeyCode::Char('Y')));
    assert_eq!(
        effects,
        vec![Effect::Copy(
            "kubectl --kubeconfig '/tmp/on call/kc' --context c -n spark-jobs describe pod etl-exec-1"
                .to_owned()
        )]
    );
    assert_eq!(
        tui::osc52("etl-exec-1"),
        "\u{1b}]52;c;ZXRsLWV4ZWMtMQ==\u{7}"
    );
}

#[test]
fn colon_commands_select_apps_and_switch_scope() {
    let mut app = app_with(3);
    let type_ = |app: &mut App, text: &str| {
        update(app, key(KeyCode::Char(':')));
        for c in text.chars() {
            update(app, key(KeyCode::Char(c)));
        }
        update(app, key(KeyCode::Enter))
    };
    type_(&mut app, "app zeta");
    assert_eq!(app.current_app().unwrap().app_name.as_deref(), Some("zeta"));
    assert!(app.command.is_none());
    type_(&mut app, "app tl");
    assert_eq!(
        app.current_app().unwrap().app_name.as_deref(),
        Some("etl"),
        "a unique part of the name is enough"
    );
    type_(&mut app, "app nosuch");
    assert_eq!(
        app.notice.as_deref(),
        Some("no application matches \"nosuch\"")
    );
    // A namespace or context switch is an effect the terminal loop runs.
    assert_eq!(
        type_(&mut app, "ns elsewhere"),
        vec![Effect::Switch(SwitchTo::Namespace("elsewhere".into()))]
    );
    assert_eq!(
        type_(&mut app, "ns all"),
        vec![Effect::Switch(SwitchTo::AllNamespaces)]
    );
    assert_eq!(
        type_(&mut app, "ctx prod"),
        vec![Effect::Switch(SwitchTo::Context("prod".into()))]
    );
    assert!(type_(&mut app, "ctx c").is_empty(), "already there");
    assert_eq!(app.notice.as_deref(), Some("already context c"));
    assert_eq!(type_(&mut app, "q"), vec![Effect::Quit]);
}

/// Executor `id` of app `etl`, running, then failed with `exit` (as a watch would send).
fn ends(app: &mut App, id: i64, exit: i32) -> Vec<Effect> {
    let mk = |phase: &str, state: serde_json::Value, rv: i64| {
        Msg::Source(SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(pod(
                json!({"metadata": {"name": format!("etl-exec-{id}"), "resourceVersion": rv.to_string(),
                "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "executor", "spark-exec-id": id.to_string()}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": phase, "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "s", "imageID": "",
                "ready": false, "restartCount": 0, "state": state}]}}),
            )),
            at: chrono::DateTime::UNIX_EPOCH + chrono::TimeDelta::seconds(id),
        })
    };
    update(app, mk("Running", json!({"running": {}}), 100 + id));
    let reason = if exit == 0 { "Completed" } else { "Error" };
    update(
        app,
        mk(
            if exit == 0 { "Succeeded" } else { "Failed" },
            json!({"terminated": {"exitCode": exit, "reason": reason}}),
            200 + id,
        ),
    )
}

#[test]
fn a_storm_of_one_cause_reads_the_evidence_of_a_few_and_says_why_not_the_rest() {
    let mut app = fresh();
    let reads = |e: &[Effect]| {
        e.iter()
            .filter(|e| matches!(e, Effect::FetchLog { capture: true, .. }))
            .count()
    };
    let read: usize = (10..40).map(|id| reads(&ends(&mut app, id, 52))).sum();
    assert_eq!(read, SAME_CAUSE, "one cause, one app: a few");
    // Another cause is read.
    assert_eq!(reads(&ends(&mut app, 50, 143)), 1);
    // One that ended well needs no evidence.
    assert_eq!(ends(&mut app, 60, 0), Vec::new());
    // The pod of an unread one is gone: its log popup says why nothing was kept.
    app.log_view = Some(LogView {
        pod: "etl-exec-39".into(),
        namespace: "spark-jobs".into(),
        ..LogView::default()
    });
    update(
        &mut app,
        Msg::LogFetched {
            pod: "etl-exec-39".into(),
            lines: Err("pods \"etl-exec-39\" not found".into()),
        },
    );
    let shown = app.log_view.as_ref().map(|l| l.lines.clone());
    let Some(Err(text)) = shown else {
        panic!("an error: {shown:?}")
    };
    assert!(
        text.contains("not found; log not captured: 3 executors of this app ended the same way")
            && text.contains("executors 10, 11, 12"),
        "{text}"
    );
}

#[test]
fn the_configured_hold_expiry_is_what_h_asks_for() {
    let mut app = live_app();
    app.hold_ttl = chrono::Duration::minutes(30);
    let driver = pod(
        json!({"metadata": {"name": "etl-driver", "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "driver"}},
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}, "status": {"phase": "Running"}}),
    );
    let at = chrono::DateTime::UNIX_EPOCH;
    update(
        &mut app,
        Msg::Source(SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(driver),
            at,
        }),
    );
    update(&mut app, key(KeyCode::Char('H')));
    let effects = update(&mut app, key(KeyCode::Char('y')));
    let until = effects.iter().find_map(|e| match e {
        Effect::SetHold { until, .. } => *until,
        _ => None,
    });
    let now = app.store.view().now.expect("a clock");
    assert_eq!(
        until,
        Some(now + chrono::Duration::minutes(30)),
        "{effects:?}"
    );
}

mod popups;

/// `/` and `:` edit like readline at the line's end: Ctrl-W deletes the word before, Ctrl-U
/// the line; Ctrl and Alt letters are never typed in.
#[test]
fn prompts_take_ctrl_w_and_ctrl_u_as_readline_does() {
    let ctrl = |c| Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
    let mut app = app_with(3);
    update(&mut app, key(KeyCode::Char('/')));
    for c in "oom exec-1".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    update(&mut app, ctrl('w'));
    assert_eq!(app.filter, "oom ");
    update(
        &mut app,
        Msg::Key(KeyEvent::new(KeyCode::Char('b'), KeyModifiers::ALT)),
    );
    assert_eq!(app.filter, "oom ", "Alt-B is not typed in");
    update(&mut app, ctrl('e'));
    update(&mut app, ctrl('u'));
    assert_eq!(app.filter, "");
    assert!(app.editing_filter, "still editing");
    update(&mut app, key(KeyCode::Esc));
    update(&mut app, key(KeyCode::Char(':')));
    for c in "ns spark-jobs".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    update(&mut app, ctrl('w'));
    assert_eq!(app.command.as_deref(), Some("ns "));
    update(&mut app, ctrl('u'));
    assert_eq!(app.command.as_deref(), Some(""));
    // A multi-byte space (macOS's Option-Space, U+00A0) ends a word too, whole.
    for c in "app\u{a0}etl".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    update(&mut app, ctrl('w'));
    assert_eq!(app.command.as_deref(), Some("app\u{a0}"));
}

/// The cursor moves as readline's: Ctrl-A/E to the ends, Alt-B/F by words, ←/→ by
/// characters; typing inserts at the cursor, Ctrl-K cuts to the end, Ctrl-U to the start,
/// Ctrl-W the word before the cursor; a line from history puts the cursor at its end. The
/// footer draws the cursor where it is.
#[test]
fn prompts_move_the_cursor_as_readline_does() {
    let ctrl = |c| Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
    let alt = |c| Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT));
    let mut app = app_with(3);
    update(&mut app, key(KeyCode::Char(':')));
    for c in "ns spark-jobs".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    update(&mut app, ctrl('a'));
    assert_eq!(app.prompt_cursor, Some(0));
    assert_eq!(
        with_cursor(app.command.as_deref().unwrap(), app.prompt_cursor),
        "▏ns spark-jobs"
    );
    update(&mut app, alt('f'));
    assert_eq!(app.prompt_cursor, Some(2), "the end of the word");
    update(&mut app, key(KeyCode::Right));
    // Inserted at the cursor, not at the end.
    for c in "my-".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    assert_eq!(app.command.as_deref(), Some("ns my-spark-jobs"));
    update(&mut app, ctrl('k'));
    assert_eq!(app.command.as_deref(), Some("ns my-"));
    assert_eq!(app.prompt_cursor, None, "at the end after Ctrl-K");
    update(&mut app, alt('b'));
    update(&mut app, ctrl('u'));
    assert_eq!(app.command.as_deref(), Some("my-"));
    assert_eq!(app.prompt_cursor, Some(0));
    update(&mut app, ctrl('e'));
    assert_eq!(app.prompt_cursor, None);
    update(&mut app, key(KeyCode::Left));
    update(&mut app, key(KeyCode::Left));
    update(&mut app, ctrl('w'));
    assert_eq!(
        app.command.as_deref(),
        Some("y-"),
        "the word before the cursor (m|y-)"
    );
    assert_eq!(app.prompt_cursor, Some(0));
    update(&mut app, key(KeyCode::Enter));
    // History: the line comes back whole, the cursor at its end.
    update(&mut app, key(KeyCode::Char(':')));
    update(&mut app, key(KeyCode::Up));
    assert_eq!(app.command.as_deref(), Some("y-"));
    assert_eq!(app.prompt_cursor, None);
    update(&mut app, key(KeyCode::Esc));
    // The filter edits the same way.
    update(&mut app, key(KeyCode::Char('/')));
    for c in "oom".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    update(&mut app, key(KeyCode::Home));
    update(&mut app, key(KeyCode::Char('j')));
    update(&mut app, key(KeyCode::Char('v')));
    update(&mut app, key(KeyCode::Char('m')));
    update(&mut app, key(KeyCode::Char(' ')));
    assert_eq!(app.filter, "jvm oom");
    update(&mut app, key(KeyCode::Delete));
    assert_eq!(app.filter, "jvm om");
    // Alt-D kills to the end of the word, as readline's kill-word.
    update(&mut app, ctrl('a'));
    update(&mut app, alt('d'));
    assert_eq!(app.filter, " om");
    assert_eq!(app.prompt_cursor, Some(0));
}

/// A hold past its expiry is released at the next tick, once, and one not yet due stays:
/// the tick looks for them in the apps that hold pods (a held pod that arrives after the
/// last look counts at once).
#[test]
fn an_expired_hold_is_released_at_a_tick_and_one_not_due_stays() {
    let mut app = live_app();
    let now = chrono::DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z")
        .unwrap()
        .to_utc();
    let releases = |effects: Vec<Effect>| -> Vec<String> {
        effects
            .into_iter()
            .filter_map(|e| match e {
                Effect::ReleasePod { pod, expired, .. } => Some(format!("{pod} {expired}")),
                _ => None,
            })
            .collect()
    };
    assert!(releases(update(&mut app, Msg::Tick(now))).is_empty());
    for (id, expires) in [(2, "2026-12-07T11:00:00Z"), (3, "2099-01-01T00:00:00Z")] {
        let p = pod(
            json!({"metadata": {"name": format!("etl-exec-{id}"), "resourceVersion": (10 + id).to_string(),
                "finalizers": [HOLD_FINALIZER], "annotations": {HOLD_EXPIRES: expires},
                "labels": {"spark-app-selector": "spark-etl", "spark-app-name": "etl", "spark-role": "executor", "spark-exec-id": id.to_string()}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]}, "status": {"phase": "Failed"}}),
        );
        let ev = SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(p),
            at: now,
        };
        update(&mut app, Msg::Source(ev));
    }
    assert_eq!(
        releases(update(&mut app, Msg::Tick(now))),
        ["etl-exec-2 true"]
    );
    // Not asked again while that release is under way.
    assert!(releases(update(&mut app, Msg::Tick(now))).is_empty());
}
