//! One app verdict, read by every output (#31): each built-in scenario is recorded for its
//! first minute through the real binary, then replayed into the live view's store; the
//! apps pane (the map), the incident strip, `status`, `report` and `explain` must say the
//! same verdict of every app. `explain` reads only what a `kubectl get -o json` taken at
//! the end holds (the pods still there and their events, no driver REST, no history), so
//! it is held to the verdicts those pods witness: the driver pod's own causes.

use std::collections::BTreeMap;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use spark_triage::app::{App, Context, Mode, Msg, update};
use spark_triage::output::report;
use spark_triage::output::report::Window;
use spark_triage::settings::ReadOnly;
use spark_triage::store::AppRecord;
use spark_triage::{record, ui};
use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::explain;
use spark_triage_core::model::{ExecutorPod, PodEvent};
use spark_triage_sim::scenario::BUILT_IN;

use super::common::{start_sim, triage};

/// Causes the driver pod itself witnesses: what `explain` on the pods at the end must say too.
const DRIVER_POD_CAUSES: [Code; 6] = [
    Code::DriverOomKilled,
    Code::DriverJvmOom,
    Code::ExecutorFailuresExceeded,
    Code::DriverFailed,
    Code::DriverStopped,
    Code::AppSucceeded,
];

fn frame(app: &mut App, w: u16, h: u16) -> Vec<String> {
    update(app, Msg::Resize(w, h));
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| ui::render(app, f)).expect("draw");
    let buf = t.backend().buffer().clone();
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect()
}

/// The pods of an app that a `kubectl get pods -o json` would list at the end, and their
/// events.
fn still_there(a: &AppRecord) -> (Vec<ExecutorPod>, Vec<PodEvent>) {
    let mut pods = Vec::new();
    let mut events = Vec::new();
    if let Some(d) = &a.driver
        && d.gone.is_none()
        && let Some(p) = &d.last
    {
        pods.push((**p).clone());
        events.extend(d.events.iter().cloned());
    }
    for e in a.executors.values().filter(|e| e.gone.is_none()) {
        pods.push((*e.pod).clone());
        events.extend(e.events.iter().cloned());
    }
    (pods, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_output_says_the_same_app_verdict_in_every_scenario() {
    let dir = std::env::temp_dir().join(format!("st-agree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let names: Vec<&str> = BUILT_IN
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| *n != "empty")
        .collect();
    // Four scenarios at a time: each is a simulator and a recorder on 2 cores.
    let mut files = Vec::new();
    for batch in names.chunks(4) {
        let mut set = tokio::task::JoinSet::new();
        for name in batch {
            let (name, dir) = (name.to_string(), dir.clone());
            set.spawn(async move {
                let sim = start_sim(&name, 8.0, &[]).await;
                let file = dir.join(format!("{name}.ndjson"));
                let (kc, f) = (
                    sim.kubeconfig.display().to_string(),
                    file.display().to_string(),
                );
                let args = [
                    "record",
                    &f,
                    "--kubeconfig",
                    &kc,
                    "-A",
                    "--duration",
                    "8s",
                    "--poll-interval",
                    "2s",
                ];
                let (code, _, err) = triage(&args).run().await;
                assert_eq!(code, 0, "{name}: {err}");
                (name, file)
            });
        }
        while let Some(r) = set.join_next().await {
            files.push(r.unwrap());
        }
    }
    files.sort();

    let mut checked = BTreeMap::new();
    for (name, file) in &files {
        let rec = record::open(file).unwrap();
        let whole = Window::default();
        let state = report::state_of(&rec, &whole);
        let report = report::from_state(name, &rec.header, &state, &whole);
        let report = serde_json::to_value(report).unwrap();
        let mut app = App::new(Context {
            context: "c".into(),
            scope: "s".into(),
            readonly: ReadOnly::flag(),
            mode: Mode::Replay,
        });
        update(&mut app, Msg::Sources(rec.events.clone()));
        // `status` replays the recording in its own process.
        let f = file.display().to_string();
        let (code, out, err) = triage(&["status", "--recording", &f, "-o", "json"])
            .run()
            .await;
        assert_eq!(code, 0, "{name}: {err}");
        let status: serde_json::Value = serde_json::from_str(&out).unwrap();
        let now = app.store().view().now.unwrap_or_default();
        let apps: Vec<_> = app.apps().into_iter().cloned().collect();
        assert!(!apps.is_empty(), "{name}: no app");
        for (i, a) in apps.iter().enumerate() {
            let v = a.verdict();
            let cause = v.cause();
            let code = cause.code.as_str();
            let what = format!(
                "{name}: {} ({code})",
                a.app_name.clone().unwrap_or_default()
            );
            let by_id = |doc: &serde_json::Value| -> String {
                doc["apps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["app_id"] == a.app_id.as_str())
                    .map(|x| x["verdict"]["cause"].as_str().unwrap_or("").to_owned())
                    .unwrap_or_else(|| panic!("{what}: not in {doc}"))
            };
            assert_eq!(by_id(&status), code, "{what}: status");
            assert_eq!(by_id(&report), code, "{what}: report");

            // The map: the app's second line carries its verdict unless it is a plain run.
            app.select_app_at(i);
            let lines = frame(&mut app, 240, 60);
            let name_line = lines
                .iter()
                .position(|l| {
                    l.contains(&format!("▶ {}", a.app_name.as_deref().unwrap_or(&a.app_id)))
                })
                .unwrap_or_else(|| panic!("{what}: not on the map\n{}", lines.join("\n")));
            let label = v.label();
            let shown: String = label.chars().take(12).collect();
            let plain = matches!(cause.code, Code::AppRunning | Code::DriverNotSeen)
                || v.severity() == Severity::Info
                    && a.driver.as_ref().and_then(|d| d.phase.as_deref()) == Some("Running");
            if !plain {
                assert!(
                    lines[name_line + 1].contains(&shown),
                    "{what}: the map says {:?}, not {label:?}",
                    lines[name_line + 1]
                );
            }
            // The strip: a verdict about the driver leads it, in the verdict's own words.
            if v.about_driver() {
                let start: String = cause.summary.chars().take(40).collect();
                assert!(
                    lines.iter().any(|l| l.contains(&start)),
                    "{what}: the strip does not say {start:?}\n{}",
                    lines.join("\n")
                );
            }

            // explain, on the pods still there: the driver pod's own causes agree.
            let (pods, events) = still_there(a);
            if DRIVER_POD_CAUSES.contains(&cause.code) && !pods.is_empty() {
                let x = explain::explain_with(
                    &pods,
                    &events,
                    &a.groups.objects,
                    &Default::default(),
                    now,
                );
                let said = x
                    .apps
                    .iter()
                    .find(|e| e.app_id == a.app_id)
                    .map(|e| e.verdict.cause);
                assert_eq!(said, Some(cause.code), "{what}: explain");
                *checked.entry("explain".to_owned()).or_insert(0) += 1;
            }
            *checked.entry(code.to_owned()).or_insert(0) += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    // The scenarios between them cover the driver's endings, waits and the plain run.
    for code in [
        "app-running",
        "driver-oom-killed",
        "driver-pending",
        "app-succeeded",
        "explain",
    ] {
        assert!(checked.contains_key(code), "no {code} in {checked:?}");
    }
}
