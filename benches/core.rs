//! Budgets for the hot paths at 10,000 executors: Spark's classification, store ingest
//! (watch upserts and a full LIST), and one full render of the state map and the table.
//! `cargo bench --bench core`; figures go in the closing notes, not in tests.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use spark_triage::app::{App, Context, Mode, Msg, View, update};
use spark_triage::settings::ReadOnly;
use spark_triage::source::{DriverView, SourceEvent};
use spark_triage::store::Store;
use spark_triage::ui;
use spark_triage_core::classify::{ClassifyConfig, classify};
use spark_triage_core::model::{DriverExecutor, ExecutorPod};

const N: i64 = 10_000;

fn pods() -> Vec<ExecutorPod> {
    (1..=N)
        .map(|id| {
            let state = match id % 10 {
                0 => json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
                1 => json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}),
                _ => json!({"running": {"startedAt": "2026-11-29T10:00:00Z"}}),
            };
            let phase = match id % 10 {
                0 => "Failed",
                1 => "Pending",
                _ => "Running",
            };
            let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("big-app-0123456789abcdef-exec-{id}"), "namespace": "spark-scale", "uid": format!("uid-{id}"),
                    "resourceVersion": (id + 100).to_string(), "creationTimestamp": "2026-11-29T10:00:00Z",
                    "labels": {"spark-app-selector": "spark-big", "spark-app-name": "big-app", "spark-role": "executor",
                               "spark-exec-id": id.to_string(), "spark-exec-resourceprofile-id": "0"}},
                "spec": {"restartPolicy": "Never", "nodeName": format!("node-{}", id % 100),
                    "containers": [{"name": "spark-kubernetes-executor", "image": "apache/spark:4.0.1",
                        "resources": {"requests": {"cpu": "1", "memory": "4505Mi"}, "limits": {"memory": "4505Mi"}},
                        "env": [{"name": "SPARK_EXECUTOR_ID", "value": id.to_string()}]}]},
                "status": {"phase": phase, "startTime": "2026-11-29T10:00:00Z",
                    "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
                    "containerStatuses": [{"name": "spark-kubernetes-executor", "image": "apache/spark:4.0.1", "imageID": "",
                        "ready": phase == "Running", "restartCount": 0, "state": state}]}
            }))
            .expect("pod");
            ExecutorPod::from_pod(&pod)
        })
        .collect()
}

fn at() -> chrono::DateTime<chrono::Utc> {
    "2026-11-29T10:05:00Z".parse().expect("time")
}

fn loaded_store(pods: &[ExecutorPod]) -> Store {
    let mut s = Store::new();
    for p in pods {
        s.apply(SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(p.clone()),
            at: at(),
        });
    }
    s
}

fn bench(c: &mut Criterion) {
    let pods = pods();
    let config = ClassifyConfig::default();
    c.bench_function("classify 10k pods", |b| {
        b.iter(|| {
            for p in &pods {
                black_box(classify(p, &config));
            }
        });
    });
    c.bench_function("store: 10k watch upserts (new executors)", |b| {
        b.iter(|| black_box(loaded_store(&pods)));
    });
    let store = loaded_store(&pods);
    c.bench_function("store: full LIST of 10k over 10k known", |b| {
        b.iter_batched(
            || (Store::new(), loaded_store(&pods)),
            |(_, mut s)| {
                s.apply(SourceEvent::PodsListed {
                    pods: pods.iter().cloned().map(std::sync::Arc::new).collect(),
                    resource_version: Some(1_000_000),
                    at: at(),
                });
                black_box(s)
            },
            criterion::BatchSize::LargeInput,
        );
    });
    // The driver's allexecutors for all 10k, read every 10 s; a reader (the UI) holds the
    // previous snapshot, so every record a view touches is copied.
    let view = |secs: i64| {
        SourceEvent::DriverExecutors {
        namespace: "spark-scale".into(),
        app_id: "spark-big".into(),
        view: DriverView::Ok {
            executors: (1..=N)
                .map(|id| DriverExecutor {
                    id,
                    active: id % 10 != 0,
                    host_port: None,
                    pod_name: None,
                    add_time: Some(at()),
                    remove_time: (id % 10 == 0).then(at),
                    remove_reason: (id % 10 == 0).then(|| {
                        format!("The executor with id {id} exited with exit code 137(SIGKILL, possible container OOM).")
                    }),
                    removed_again: Vec::new(),
                    active_tasks: 1,
                    failed_tasks: 0,
                    completed_tasks: 10,
                    tasks_lost: 0,
                    max_memory: Some(1 << 30),
                    peak: Default::default(),
                })
                .collect(),
        },
        at: at() + chrono::Duration::seconds(secs),
    }
    };
    c.bench_function(
        "store: driver view of 10k executors, unchanged but for time",
        |b| {
            b.iter_batched(
                || {
                    let mut s = loaded_store(&pods);
                    s.apply(view(10));
                    let held = s.snapshot();
                    (s, held, view(20))
                },
                |(mut s, held, v)| {
                    s.apply(v);
                    black_box((s, held))
                },
                criterion::BatchSize::LargeInput,
            );
        },
    );
    c.bench_function("store: snapshot of 10k executors", |b| {
        b.iter(|| black_box(store.snapshot()))
    });
    let upserts: Vec<SourceEvent> = pods
        .iter()
        .map(|p| SourceEvent::PodUpserted {
            pod: std::sync::Arc::new(p.clone()),
            at: at(),
        })
        .collect();
    c.bench_function("app: 10k upserts in one drained batch", |b| {
        b.iter_batched(
            || {
                let ctx = Context {
                    context: "b".into(),
                    scope: "s".into(),
                    readonly: ReadOnly::Off,
                    mode: Mode::Demo,
                };
                (App::new(ctx), upserts.clone())
            },
            |(mut app, events)| {
                black_box(update(&mut app, Msg::Sources(events)));
                app
            },
            criterion::BatchSize::LargeInput,
        );
    });
    let mut app = App::new(Context {
        context: "bench".into(),
        scope: "all namespaces".into(),
        readonly: ReadOnly::Off,
        mode: Mode::Live,
    });
    for p in &pods {
        update(
            &mut app,
            Msg::Source(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(p.clone()),
                at: at(),
            }),
        );
    }
    update(&mut app, Msg::Resize(200, 50));
    app.show_executor(5_000, View::Map);
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    c.bench_function("render 200x50 state map, 10k executors", |b| {
        b.iter(|| {
            terminal
                .draw(|f| ui::render(&app, f))
                .map(|_| ())
                .expect("draw")
        });
    });
    app.show_executor(5_000, View::Table);
    c.bench_function("render 200x50 table, 10k executors", |b| {
        b.iter(|| {
            terminal
                .draw(|f| ui::render(&app, f))
                .map(|_| ())
                .expect("draw")
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
