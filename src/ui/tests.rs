//! Frame snapshots: every pane and popup at 60×16, 80×24, 120×40 and 200×50, on a recorded session of the
//! simulator's `mixed` scenario (so the data and its times are fixed).

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use spark_triage_core::model::driver::PeakMemory;
use spark_triage_core::model::{
    DriverExecutor, ExecutorPod, HOLD_EXPIRES, HOLD_FINALIZER, Role, testing,
};

use crate::app::{App, Confirm, Context, Mode, Msg, Popup, StateFilter, View, update};
use crate::commands::replay;
use crate::output::report::Window;
use crate::output::{report, status};
use crate::settings::ReadOnly;
use crate::source::{DriverView, Health, SourceEvent, SourceKind};
use crate::{record, source};

fn session() -> App {
    let bytes = include_bytes!("../../tests/fixtures/mixed-session.ndjson");
    let rec = record::read("mixed-session", &bytes[..]).expect("fixture reads");
    assert!(rec.damaged.is_empty());
    let mut app = App::new(Context {
        context: "kind-spark".into(),
        scope: "namespace spark-jobs".into(),
        readonly: ReadOnly::Off,
        mode: Mode::Replay,
    });
    for ev in rec.events {
        update(&mut app, Msg::Source(ev));
    }
    app
}

fn select_app(app: &mut App, name: &str) {
    let i = app
        .apps()
        .iter()
        .position(|a| a.app_name.as_deref() == Some(name))
        .expect("app by name");
    app.select_app_at(i);
}

fn etl_exec(app: &mut App, id: i64) {
    select_app(app, "etl-nightly");
    app.selected_exec = Some(id);
}

fn draw(app: &mut App, w: u16, h: u16) -> String {
    update(app, Msg::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| super::render(app, f)).expect("draw");
    format!("{}", t.backend())
}

/// [`draw`] as a terminal that cannot show more than ASCII sees it (`LANG=C`).
fn draw_ascii(app: &mut App, w: u16, h: u16) -> String {
    update(app, Msg::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| {
        super::render(app, f);
        super::glyphs::to_ascii(f.buffer_mut());
    })
    .expect("draw");
    format!("{}", t.backend())
}

macro_rules! frames {
    ($name:ident, $setup:expr) => {
        #[test]
        fn $name() {
            let mut app = session();
            #[allow(clippy::redundant_closure_call)]
            ($setup)(&mut app);
            insta::assert_snapshot!(concat!(stringify!($name), "_60x16"), draw(&mut app, 60, 16));
            insta::assert_snapshot!(concat!(stringify!($name), "_80x24"), draw(&mut app, 80, 24));
            insta::assert_snapshot!(
                concat!(stringify!($name), "_120x40"),
                draw(&mut app, 120, 40)
            );
            insta::assert_snapshot!(
                concat!(stringify!($name), "_200x50"),
                draw(&mut app, 200, 50)
            );
        }
    };
}

frames!(state_map, |app: &mut App| etl_exec(app, 7));
frames!(table, |app: &mut App| {
    etl_exec(app, 9);
    app.view = View::Table;
});
frames!(describe_popup, |app: &mut App| {
    etl_exec(app, 7);
    app.popup = Some(Popup::Describe);
});

frames!(detail_popup, |app: &mut App| {
    etl_exec(app, 7);
    app.popup = Some(Popup::Detail);
});
frames!(missing_detail, |app: &mut App| {
    etl_exec(app, 10);
    app.popup = Some(Popup::Detail);
});
frames!(help_popup, |app: &mut App| app.popup = Some(Popup::Help));
// The watchdog: no LIST succeeded within two polls and a timeout, and the poll says why.
frames!(stale_sources, |app: &mut App| {
    etl_exec(app, 7);
    // One second's polls and no timeout: stale after two seconds.
    app.stale_after = Some(std::time::Duration::from_secs(2));
    let at = app.store.view().now.expect("a clock");
    update(
        app,
        Msg::Source(source::SourceEvent::SourceHealth {
            source: SourceKind::PodPoll,
            health: Health::Retrying {
                error: "no complete answer within 30s (--request-timeout)".into(),
            },
            at,
        }),
    );
});
frames!(timeline_popup, |app: &mut App| {
    etl_exec(app, 7);
    app.popup = Some(Popup::Timeline);
});
frames!(filtering, |app: &mut App| {
    etl_exec(app, 12);
    app.editing_filter = true;
    app.filter = "unsch".into();
});

#[test]
fn empty_and_tiny_screens_do_not_panic() {
    let mut empty = App::new(Context {
        context: "c".into(),
        scope: "all namespaces".into(),
        readonly: ReadOnly::flag(),
        mode: Mode::Live,
    });
    insta::assert_snapshot!("empty_80x24", draw(&mut empty, 80, 24));
    // A misspelt namespace: said where the apps would be, with where Spark runs.
    update(
        &mut empty,
        Msg::Source(source::SourceEvent::ScopeNote {
            text: "namespace \"spark-job\" does not exist; Spark applications run in: spark-jobs"
                .into(),
            at: chrono::DateTime::UNIX_EPOCH,
        }),
    );
    let frame = draw(&mut empty, 80, 24);
    insta::assert_snapshot!("empty_scope_note_80x24", frame);
    let mut app = session();
    etl_exec(&mut app, 7);
    for (w, h) in [(1, 1), (2, 2), (5, 3), (20, 6), (0, 0), (300, 2)] {
        for popup in [
            None,
            Some(Popup::Detail),
            Some(Popup::Help),
            Some(Popup::Timeline),
        ] {
            app.popup = popup;
            for view in [View::Map, View::Table] {
                app.view = view;
                let _ = draw(&mut app, w.max(1), h.max(1));
            }
        }
    }
}

/// The etl app held: the driver carries the hold annotation, executor 11 the finalizer.
fn held(app: &mut App) {
    let bytes = include_bytes!("../../tests/fixtures/mixed-session.ndjson");
    let rec = record::read("mixed-session", &bytes[..]).expect("fixture reads");
    let last = |pred: &dyn Fn(&ExecutorPod) -> bool| {
        rec.events
            .iter()
            .rev()
            .find_map(|e| match e {
                source::SourceEvent::PodUpserted { pod, .. } if pred(pod) => Some((**pod).clone()),
                _ => None,
            })
            .expect("pod in fixture")
    };
    let mut driver = last(&|p| {
        p.role() == Some(Role::Driver) && p.label("spark-app-name") == Some("etl-nightly")
    });
    driver
        .tool_annotations
        .insert(HOLD_EXPIRES.into(), "2099-01-01T00:00:00Z".into());
    let mut eleven =
        last(&|p| p.label("spark-app-name") == Some("etl-nightly") && p.executor_id() == Some(11));
    eleven.finalizers.push(HOLD_FINALIZER.into());
    eleven.resource_version = Some("999999".into());
    let at = app.store.view().now.expect("now");
    for pod in [driver, eleven] {
        update(
            app,
            Msg::Source(source::SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(pod),
                at,
            }),
        );
    }
}

frames!(kill_confirm_popup, |app: &mut App| {
    app.ctx.mode = Mode::Demo;
    etl_exec(app, 2);
    update(
        app,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(' '),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
    app.selected_exec = Some(3);
    update(
        app,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(' '),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
    update(
        app,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('K'),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
    assert_eq!(app.popup, Some(Popup::Confirm));
});
frames!(app_appears_above_the_selection, |app: &mut App| {
    app.ctx.mode = Mode::Demo;
    etl_exec(app, 2);
    let etl = app.current_app().map(|a| a.app_id.clone()).expect("etl");
    let key = |app: &mut App, c: char| {
        update(
            app,
            Msg::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char(c),
                crossterm::event::KeyModifiers::NONE,
            )),
        )
    };
    key(app, ' ');
    app.selected_exec = Some(3);
    key(app, ' ');
    // A new application appears while etl-nightly is selected.
    let at = app.store.view().now.expect("clock");
    let driver = testing::pod(serde_json::json!({
        "metadata": {"name": "aaa-new-driver", "namespace": "spark-jobs", "resourceVersion": "999999",
                     "labels": {"spark-app-selector": "spark-aaa", "spark-app-name": "aaa-new",
                                "spark-role": "driver"}},
        "status": {"phase": "Running"}
    }));
    update(
        app,
        Msg::Source(source::SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(driver),
            at,
        }),
    );
    // Sorted by trouble, then name: the new, healthy app goes before the other healthy
    // ones, which moves every app below etl-nightly's position in the list.
    let names: Vec<_> = app.apps().iter().map(|a| a.app_name.clone()).collect();
    assert!(names.contains(&Some("aaa-new".to_owned())), "{names:?}");
    assert_eq!(
        app.current_app().map(|a| a.app_id.clone()),
        Some(etl.clone()),
        "the selection stays on etl-nightly"
    );
    key(app, 'K');
    match &app.confirm {
        Some(Confirm::Kill { targets, .. }) => {
            let got: Vec<(&str, i64)> = targets
                .iter()
                .map(|t| (t.app_id.as_str(), t.executor))
                .collect();
            assert_eq!(got, vec![(etl.as_str(), 2), (etl.as_str(), 3)]);
        }
        other => panic!("expected the kill confirm, got {other:?}"),
    }
});
frames!(hold_indicator, |app: &mut App| {
    held(app);
    etl_exec(app, 11);
});
frames!(hold_confirm_popup, |app: &mut App| {
    app.ctx.mode = Mode::Demo;
    etl_exec(app, 11);
    update(
        app,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('H'),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
});
frames!(disabled_actions, |app: &mut App| {
    app.ctx.readonly = ReadOnly::flag();
    app.ctx.mode = Mode::Live;
    etl_exec(app, 2);
    update(
        app,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('K'),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
    assert_eq!(app.popup, None);
    assert_eq!(
        app.notice.as_deref(),
        Some("kill disabled: read-only mode (--readonly)")
    );
});
frames!(log_pane, |app: &mut App| {
    let at = app.store.view().now.expect("now");
    let pod = app
        .apps()
        .iter()
        .find(|a| a.app_name.as_deref() == Some("etl-nightly"))
        .and_then(|a| a.executors.get(&8))
        .map(|e| e.pod.name.clone())
        .expect("exec 8");
    let lines = vec![
        "26/11/29 23:52:24 INFO Executor: Running task 5.0 in stage 2.0 (TID 41)".to_owned(),
        "26/11/29 23:52:25 ERROR Executor: Exception in task 5.0 in stage 2.0 (TID 41)".to_owned(),
        "java.lang.OutOfMemoryError: Java heap space".to_owned(),
        "\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)".to_owned(),
    ];
    update(
        app,
        Msg::Source(source::SourceEvent::LogCaptured {
            namespace: "spark-jobs".into(),
            pod,
            lines,
            at,
        }),
    );
    etl_exec(app, 8);
    update(
        app,
        Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('l'),
            crossterm::event::KeyModifiers::NONE,
        )),
    );
    assert_eq!(app.popup, Some(Popup::Log));
});

fn replay_at(secs: Option<i64>) -> App {
    let bytes = include_bytes!("../../tests/fixtures/mixed-session.ndjson");
    let rec = record::read("mixed-session", &bytes[..]).expect("fixture reads");
    let at = secs.map(|s| rec.header.started_at + chrono::Duration::seconds(s));
    let mut app = replay::replay_app(rec, at);
    if app
        .apps()
        .iter()
        .any(|a| a.app_name.as_deref() == Some("etl-nightly"))
    {
        etl_exec(&mut app, 7);
    }
    app
}

#[test]
fn replay_frames_at_three_moments() {
    for (name, secs) in [
        ("replay_at_8s", Some(8)),
        ("replay_at_30s", Some(30)),
        ("replay_at_end", Some(3600)),
    ] {
        let mut app = replay_at(secs);
        insta::assert_snapshot!(name, draw(&mut app, 120, 30));
    }
}

#[test]
fn two_replays_render_identical_frames() {
    let mut a = replay_at(None);
    let mut b = replay_at(None);
    let keys = [' ', '+', '+', 'n', 'n', 'f', 'N'];
    for app in [&mut a, &mut b] {
        for k in keys {
            update(
                app,
                Msg::Key(crossterm::event::KeyEvent::new(
                    crossterm::event::KeyCode::Char(k),
                    crossterm::event::KeyModifiers::NONE,
                )),
            );
            update(app, Msg::ReplayAdvance(1500));
        }
    }
    let fa = draw(&mut a, 160, 40);
    assert_eq!(fa, draw(&mut b, 160, 40));
    // And seeking back rebuilds the same state as playing forward to that moment.
    let pos = a.replay.as_ref().unwrap().position;
    let mut c = replay_at(None);
    let start = c.replay.as_ref().unwrap().start;
    let mut r = c.replay.take().unwrap();
    r.seek(&mut c.store, pos);
    r.playing = a.replay.as_ref().unwrap().playing;
    r.speed = a.replay.as_ref().unwrap().speed;
    c.replay = Some(r);
    // The same app and executor selected (`f` selects what failed; the default pick depends
    // on when it was made).
    c.selected_app = a.selected_app.clone();
    c.selected_exec = a.selected_exec;
    c.notice = a.notice.clone();
    update(&mut c, Msg::ReplayAdvance(0)); // settles the selection, as any update does
    assert!(pos > start);
    assert_eq!(fa, draw(&mut c, 160, 40));
}

/// The driver's REST view of etl-nightly 90 s after the session's end (every kind of
/// agreement and disagreement), and adhoc-analysis's driver out of reach.
fn driver_views(app: &mut App) {
    let now = app.store.view().now.expect("session has a clock") + chrono::Duration::seconds(90);
    let key = |name: &str| {
        app.apps()
            .iter()
            .find(|a| a.app_name.as_deref() == Some(name))
            .map(|a| (a.namespace.clone(), a.app_id.clone()))
            .expect("app")
    };
    let (ns, etl) = key("etl-nightly");
    let (_, adhoc) = key("adhoc-analysis");
    let exec = |id: i64, active: bool, reason: Option<&str>| DriverExecutor {
        id,
        active,
        host_port: Some(format!("10.244.1.{id}:7079")),
        pod_name: None,
        add_time: Some(now - chrono::Duration::seconds(300)),
        remove_time: (!active).then(|| now - chrono::Duration::seconds(200)),
        remove_reason: reason.map(str::to_owned),
        removed_again: Vec::new(),
        active_tasks: u64::from(active),
        failed_tasks: if active { 0 } else { 1 },
        completed_tasks: 12,
        tasks_lost: 0,
        max_memory: Some(2_388_236_697),
        peak: PeakMemory {
            jvm_heap: Some(3_100_000_000),
            jvm_off_heap: Some(400_000_000),
            process_tree_rss: None,
        },
    };
    let oom = "\nThe executor with id 7 exited with exit code 137(SIGKILL, possible container OOM).\n\n\n\nThe API gave the following container statuses:\n\n\n\t container name: spark-kubernetes-executor\n\t container image: apache/spark:4.0.1\n\t container state: terminated\n\t exit code: 137\n\t termination reason: OOMKilled\n      ";
    let mut executors: Vec<DriverExecutor> = (1..=6).map(|i| exec(i, true, None)).collect();
    executors.push(exec(7, false, Some(oom)));
    executors.push(exec(
        8,
        false,
        Some("\nThe executor with id 8 exited with exit code 52(JVM OOM).\n"),
    ));
    executors.push(exec(10, true, None));
    executors.push(exec(
        13,
        false,
        Some("Executor heartbeat timed out after 120000 ms"),
    ));
    executors.push(exec(20, false, Some("\nThe executor with id 20 exited with exit code 137(SIGKILL, possible container OOM).\n\n\t container name: spark-kubernetes-executor\n\t container state: terminated\n\t exit code: 137\n\t termination reason: OOMKilled\n")));
    for (app_id, view) in [
        (etl, DriverView::Ok { executors }),
        (
            adhoc,
            DriverView::Unavailable {
                reason: "forbidden: cannot get services/proxy in namespace spark-jobs".into(),
            },
        ),
    ] {
        update(
            app,
            Msg::Source(SourceEvent::DriverExecutors {
                namespace: ns.clone(),
                app_id,
                view,
                at: now,
            }),
        );
    }
}

frames!(driver_view_table, |app: &mut App| {
    driver_views(app);
    etl_exec(app, 13);
    app.view = View::Table;
});
frames!(driver_view_map, |app: &mut App| {
    driver_views(app);
    etl_exec(app, 10);
});
frames!(driver_view_detail, |app: &mut App| {
    driver_views(app);
    etl_exec(app, 13);
    app.popup = Some(Popup::Detail);
});
frames!(driver_view_unavailable, |app: &mut App| {
    driver_views(app);
    select_app(app, "adhoc-analysis");
});

// A read that failed a while ago says when: the driver may have started since.
frames!(driver_view_unavailable_read_earlier, |app: &mut App| {
    driver_views(app);
    let later = app.store.view().now.expect("time") + chrono::Duration::seconds(40);
    update(app, Msg::Tick(later));
    select_app(app, "adhoc-analysis");
});

/// Counted / not counted, read from every place that shows it: the detail popup, the strip,
/// `status` (JSON and table) and `report`. They all read the verdict, so they must agree
/// for every executor of the shipped recordings.
#[test]
fn counted_agrees_across_detail_strip_status_and_report() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    for name in [
        "mixed.ndjson.zst",
        "oom-storm.ndjson.zst",
        "real-spark-oom.ndjson.zst",
    ] {
        let rec = record::open(&root.join(name)).expect("recording reads");
        let whole = Window::default();
        let state = report::state_of(&rec, &whole);
        let report = report::from_state(name, &rec.header, &state, &whole);
        let mut app = App::new(Context {
            context: "c".into(),
            scope: "s".into(),
            readonly: ReadOnly::flag(),
            mode: Mode::Replay,
        });
        update(&mut app, Msg::Sources(rec.events.clone()));
        // The report borrows the view; the app changes below (the selection).
        let view = app.store.view().clone();
        let status = status::report(&view, None);
        let table = status::render_table(&status, false);
        let mut checked = 0;
        for (ai, a) in app
            .apps()
            .into_iter()
            .cloned()
            .enumerate()
            .collect::<Vec<_>>()
        {
            let st = status
                .apps
                .iter()
                .find(|s| s.app_id == a.app_id)
                .expect("app in status");
            let rp = report
                .apps
                .iter()
                .find(|r| r.app_id == a.app_id)
                .expect("app in report");
            for e in a.executors.values() {
                let want = e.verdict.spark.as_ref().map(|s| s.counted);
                let what = format!("{name} {} executor {}", a.app_id, e.id);
                // status JSON and table
                let se = st
                    .executors
                    .iter()
                    .find(|x| x.id == e.id)
                    .expect("in status");
                assert_eq!(se.spark.as_ref().map(|s| s.counted), want, "{what}: status");
                let row = table
                    .lines()
                    .find(|l| l.contains(&format!("{} ", e.pod.name)) || l.ends_with(&e.pod.name))
                    .unwrap_or_else(|| panic!("{what}: no table row"));
                let word = match want {
                    None => " - ",
                    Some(true) => " counted ",
                    Some(false) => " not-counted ",
                };
                assert!(row.contains(word), "{what}: table row {row:?}");
                // report (ended executors only)
                if let Some(f) = rp.failures.iter().find(|f| f.executor == e.id) {
                    assert_eq!(Some(f.counted), want.or(Some(false)), "{what}: report");
                }
                // strip and detail
                app.select_app_at(ai);
                app.selected_exec = Some(e.id);
                app.state_filter = StateFilter::All;
                app.filter.clear();
                app.popup = None;
                let strip = draw(&mut app, 200, 50);
                app.popup = Some(Popup::Detail);
                app.scroll = 0;
                let detail = draw(&mut app, 200, 200);
                let counted = |s: &str| {
                    s.contains("; counted as a failure") || s.contains("· counted as a failure")
                };
                let not_counted = |s: &str| {
                    s.contains("not counted against the app")
                        || s.contains("not counted as a failure")
                };
                match want {
                    Some(true) => assert!(
                        counted(&strip) && counted(&detail) && !not_counted(&detail),
                        "{what}: strip/detail should say counted\n{strip}\n{detail}"
                    ),
                    Some(false) => assert!(
                        not_counted(&strip) && not_counted(&detail) && !counted(&detail),
                        "{what}: strip/detail should say not counted"
                    ),
                    None => assert!(
                        !counted(&detail) && !not_counted(&detail),
                        "{what}: no Spark account to show"
                    ),
                }
                checked += 1;
            }
        }
        assert!(checked >= 4, "{name}: only {checked} executors");
    }
}

mod allocators;
mod app_findings;
mod cost;
mod dense;
mod gone_from_log;
mod guide;
mod kills;
mod many_apps;
mod operators;
mod popup_keys;
mod reading;
mod sizes;
mod themes;

/// The first screen as it opens (no key pressed), at every size: the failure budget line
/// and the concrete `--conf` are each whole on one row (at 80x24 the budget was once not
/// drawn at all, cut under the wrapped `--conf`).
#[test]
fn the_first_screen_shows_the_budget_and_the_conf_whole_at_every_size() {
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let mut app = session();
        let frame = draw(&mut app, w, h);
        assert!(
            frame.contains("▶ etl-nightly"),
            "{w}x{h}: the worst app first:\n{frame}"
        );
        assert!(
            frame.contains("--conf spark.executor.memoryOverhead=1g"),
            "{w}x{h}: the --conf whole:\n{frame}"
        );
        assert!(
            frame.contains("failures 2/20 allowed (maxNumFailures)"),
            "{w}x{h}: the budget whole:\n{frame}"
        );
    }
}
