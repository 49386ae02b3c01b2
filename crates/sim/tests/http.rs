//! The simulator through real HTTP with the real kube client: lists, watches, deletion,
//! events, logs, proxy, access reviews, and each fault.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

use std::collections::BTreeSet;
use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{
    DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use spark_triage_sim::testing::{
    client, eventually, phase, plain_pod, start_sim, start_sim_with, wait_running,
};

fn api_status(e: &kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_with_pagination_and_selectors() {
    let sim = start_sim("empty", 1.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    for i in 0..12 {
        let role = if i % 3 == 0 { "driver" } else { "executor" };
        pods.create(
            &PostParams::default(),
            &plain_pod(&format!("p-{i:02}"), &[("spark-role", role)]),
        )
        .await
        .unwrap();
    }
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(5);
    let mut pages = 0;
    loop {
        let page = pods.list(&lp).await.unwrap();
        assert!(
            page.metadata
                .resource_version
                .as_deref()
                .is_some_and(|rv| !rv.is_empty())
        );
        assert!(page.items.len() <= 5);
        names.extend(page.items.iter().map(ResourceExt::name_any));
        pages += 1;
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = ListParams::default().limit(5).continue_token(&c),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names.len(), 12);
    assert_eq!(names.iter().collect::<BTreeSet<_>>().len(), 12);
    let execs = pods
        .list(&ListParams::default().labels("spark-role in (executor)"))
        .await
        .unwrap();
    assert_eq!(execs.items.len(), 8);
    let not = pods
        .list(&ListParams::default().labels("spark-role!=executor,!missing"))
        .await
        .unwrap();
    assert_eq!(not.items.len(), 4);
    let e = pods
        .list(&ListParams::default().labels("spark-role in executor"))
        .await
        .unwrap_err();
    assert_eq!(api_status(&e), (400, "BadRequest".into()));
    let e = pods
        .list(&ListParams::default().fields("spec.nope=x"))
        .await
        .unwrap_err();
    assert_eq!(api_status(&e), (400, "BadRequest".into()));
    let one = pods
        .list(&ListParams::default().fields("metadata.name=p-03"))
        .await
        .unwrap();
    assert_eq!(one.items.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_resumes_from_history_and_expires_with_410_in_the_stream() {
    let sim = start_sim_with("empty", 1.0, &[], |o| o.history = 16).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    pods.create(&PostParams::default(), &plain_pod("a", &[]))
        .await
        .unwrap();
    let rv = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    pods.create(&PostParams::default(), &plain_pod("b", &[]))
        .await
        .unwrap();
    // Resume: the change after `rv` is replayed.
    let mut stream = pods
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    let first = stream.try_next().await.unwrap().unwrap();
    match first {
        WatchEvent::Added(p) => assert_eq!(p.name_any(), "b"),
        other => panic!("expected ADDED b, got {other:?}"),
    }
    // Push `rv` out of the history window: the resume gets 410 Expired inside a 200 stream.
    for i in 0..40 {
        pods.create(
            &PostParams::default(),
            &plain_pod(&format!("filler-{i}"), &[]),
        )
        .await
        .unwrap();
    }
    let mut stream = pods
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert!(
                s.message.starts_with("too old resource version"),
                "{}",
                s.message
            );
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    drop(sim);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_ends_initial_events_with_a_bookmark() {
    let sim = start_sim("empty", 1.0, &[]).await;
    let c = client(&sim).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    for n in ["x", "y"] {
        pods.create(&PostParams::default(), &plain_pod(n, &[]))
            .await
            .unwrap();
    }
    let mut stream = pods
        .watch(&WatchParams::default().initial_events().timeout(10), "0")
        .await
        .unwrap()
        .boxed();
    let mut added = 0;
    loop {
        match stream.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(_) => added += 1,
            WatchEvent::Bookmark(b) => {
                assert!(
                    b.metadata
                        .annotations
                        .contains_key("k8s.io/initial-events-end")
                );
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, 2);
    // kube-runtime's streaming-list watcher reaches InitDone and then sees changes.
    let w = watcher(pods.clone(), watcher::Config::default().streaming_lists());
    let mut objs = w.default_backoff().applied_objects().boxed();
    let mut seen = BTreeSet::new();
    pods.create(&PostParams::default(), &plain_pod("z", &[]))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while seen.len() < 3 {
            let p = objs.try_next().await.unwrap().unwrap();
            seen.insert(p.name_any());
        }
    })
    .await
    .expect("watcher delivers x, y, z");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_keep_a_deleted_pod_until_released_and_graceful_deletion_ends_it() {
    let sim = start_sim("empty", 1.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    let mut held = plain_pod("held", &[]);
    held.metadata.finalizers = Some(vec![
        "example.com/keep".into(),
        "spark-triage.dev/hold".into(),
    ]);
    pods.create(&PostParams::default(), &held).await.unwrap();
    pods.create(&PostParams::default(), &plain_pod("free", &[]))
        .await
        .unwrap();
    wait_running(&pods, "held").await;
    wait_running(&pods, "free").await;

    // Graceful deletion: the pod stays Terminating, the kubelet stops it (143), then it goes.
    let deleting = pods
        .delete("free", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(deleting.metadata.deletion_grace_period_seconds, Some(30));
    eventually(10, "free gone", || async {
        pods.get_opt("free").await.unwrap().is_none().then_some(())
    })
    .await;

    // With finalizers: stopped and kept, status intact.
    pods.delete("held", &DeleteParams::default()).await.unwrap();
    let kept = eventually(10, "held stopped", || async {
        let p = pods.get("held").await.unwrap();
        (phase(&p) == "Failed").then_some(p)
    })
    .await;
    assert!(kept.metadata.deletion_timestamp.is_some());
    let term = kept.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!(term.exit_code, 143);
    // Adding a finalizer to a deleting object is forbidden.
    let add =
        json!([{"op": "add", "path": "/metadata/finalizers/-", "value": "late.example.com/x"}]);
    let e = pods
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::<json_patch::Patch>::Json(serde_json::from_value(add).unwrap()),
        )
        .await
        .unwrap_err();
    assert_eq!(api_status(&e).0, 403);
    // Release ours with a test op (never clobbering others), then the other one.
    let release = json!([{"op": "test", "path": "/metadata/finalizers/1", "value": "spark-triage.dev/hold"},
                         {"op": "remove", "path": "/metadata/finalizers/1"}]);
    pods.patch(
        "held",
        &PatchParams::default(),
        &Patch::<json_patch::Patch>::Json(serde_json::from_value(release.clone()).unwrap()),
    )
    .await
    .unwrap();
    let still = pods.get("held").await.unwrap();
    assert_eq!(
        still.metadata.finalizers.as_deref(),
        Some(&["example.com/keep".to_owned()][..])
    );
    // The same test op now fails: 422, nothing changed.
    let e = pods
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::<json_patch::Patch>::Json(serde_json::from_value(release).unwrap()),
        )
        .await
        .unwrap_err();
    assert_eq!(api_status(&e).0, 422);
    pods.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(pods.get_opt("held").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_served_by_both_apis_from_one_store() {
    let sim = start_sim("empty", 1.0, &[]).await;
    let c = client(&sim).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    pods.create(&PostParams::default(), &plain_pod("ev", &[]))
        .await
        .unwrap();
    let pod = wait_running(&pods, "ev").await;
    let uid = pod.uid().unwrap();
    let core: Api<Event> = Api::namespaced(c.clone(), "default");
    let lp =
        ListParams::default().fields(&format!("involvedObject.name=ev,involvedObject.uid={uid}"));
    let reasons: BTreeSet<String> = core
        .list(&lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    for r in ["Scheduled", "Pulling", "Pulled", "Created", "Started"] {
        assert!(reasons.contains(r), "{r} in {reasons:?}");
    }
    let v1: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(c.clone(), "default");
    let list = v1
        .list(&ListParams::default().fields("regarding.name=ev,reason=Scheduled"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let e = &list.items[0];
    assert!(
        e.note
            .as_deref()
            .unwrap()
            .starts_with("Successfully assigned default/ev to ")
    );
    assert_eq!(e.reporting_controller.as_deref(), Some("default-scheduler"));
    // Each API accepts only its own field labels.
    assert_eq!(
        api_status(
            &v1.list(&ListParams::default().fields("involvedObject.name=ev"))
                .await
                .unwrap_err()
        )
        .0,
        400
    );
    assert_eq!(
        api_status(
            &core
                .list(&ListParams::default().fields("regarding.name=ev"))
                .await
                .unwrap_err()
        )
        .0,
        400
    );
    // An event created through events.k8s.io is seen through core/v1.
    let posted: k8s_openapi::api::events::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "ev.custom"}, "eventTime": "2026-11-29T10:00:00.000000Z", "action": "Triage",
        "reason": "Held", "note": "held for inspection", "type": "Normal", "reportingController": "spark-triage.dev/hold",
        "reportingInstance": "test", "regarding": {"kind": "Pod", "name": "ev", "namespace": "default", "uid": uid}
    }))
    .unwrap();
    v1.create(&PostParams::default(), &posted).await.unwrap();
    let got = core.get("ev.custom").await.unwrap();
    assert_eq!(got.message.as_deref(), Some("held for inspection"));
    assert_eq!(got.involved_object.name.as_deref(), Some("ev"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_follow_ends_when_the_container_ends() {
    let sim = start_sim("oom-storm", 2.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "spark-jobs");
    let exec = eventually(15, "a running executor", || async {
        pods.list(&ListParams::default().labels("spark-role=executor"))
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|p| phase(p) == "Running")
    })
    .await;
    let name = exec.name_any();
    let lp = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let reader = pods.log_stream(&name, &lp).await.unwrap();
    let lines: Vec<String> =
        tokio::time::timeout(Duration::from_secs(20), reader.lines().try_collect())
            .await
            .expect("follow ends when the container is OOMKilled")
            .unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Successfully registered with driver")),
        "{lines:?}"
    );
    let tail = pods
        .logs(
            &name,
            &LogParams {
                tail_lines: Some(1),
                ..LogParams::default()
            },
        )
        .await;
    // The pod may already be deleted by the Spark-like driver; if not, tail gives one line.
    if let Ok(t) = tail {
        assert!(t.lines().count() <= 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_proxy_reaches_the_driver_rest_api() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let c = client(&sim).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "spark-jobs");
    let driver = eventually(10, "etl driver running", || async {
        pods.list(&ListParams::default().labels("spark-role=driver,spark-app-name=etl-nightly"))
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|p| phase(p) == "Running")
    })
    .await;
    let app = driver.labels()["spark-app-selector"].clone();
    let svc = driver.name_any().replace("-driver", "-driver-svc");
    let path =
        format!("/api/v1/namespaces/spark-jobs/services/{svc}:spark-ui/proxy/api/v1/applications");
    let apps: serde_json::Value = c
        .request(http::Request::get(path).body(vec![]).unwrap())
        .await
        .unwrap();
    assert_eq!(apps[0]["id"], app.as_str());
    let path = format!(
        "/api/v1/namespaces/spark-jobs/services/{svc}:4040/proxy/api/v1/applications/{app}/allexecutors"
    );
    let execs: serde_json::Value = eventually(10, "executors registered", || {
        let c = c.clone();
        let path = path.clone();
        async move {
            let v: serde_json::Value = c
                .request(http::Request::get(path).body(vec![]).unwrap())
                .await
                .ok()?;
            (v.as_array()?.len() > 3).then_some(v)
        }
    })
    .await;
    assert_eq!(execs[0]["id"], "driver");
    // The metrics servlet as Spark's Jetty serves it: the bare path is a redirect, the
    // slash the JSON (no dynamic allocation here: no allocation gauges).
    let metrics = |tail: &str| {
        http::Request::get(format!(
            "/api/v1/namespaces/spark-jobs/services/{svc}:spark-ui/proxy/{tail}"
        ))
        .body(vec![])
        .unwrap()
    };
    let m: serde_json::Value = c.request(metrics("metrics/json/")).await.unwrap();
    assert!(m["gauges"].is_object(), "{m}");
    assert!(!m.to_string().contains("ExecutorAllocationManager"), "{m}");
    let bare = c
        .send(metrics("metrics/json").map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(bare.status().as_u16(), 301);
    let e = c
        .request::<serde_json::Value>(
            http::Request::get("/api/v1/namespaces/spark-jobs/services/nope:4040/proxy/")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(api_status(&e).0, 404);
}

async fn can(c: &Client, verb: &str) -> bool {
    let api: Api<SelfSubjectAccessReview> = Api::all(c.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("default".into()),
                verb: Some(verb.into()),
                resource: Some("pods".into()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    api.create(&PostParams::default(), &review)
        .await
        .unwrap()
        .status
        .unwrap()
        .allowed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_review_and_the_deny_fault() {
    let sim = start_sim("empty", 1.0, &[]).await;
    let c = client(&sim).await;
    assert!(can(&c, "delete").await);
    let denied = start_sim("empty", 1.0, &["deny=delete,patch"]).await;
    let c = client(&denied).await;
    assert!(!can(&c, "delete").await);
    assert!(!can(&c, "patch").await);
    assert!(can(&c, "list").await);
    let pods: Api<Pod> = Api::namespaced(c, "default");
    pods.create(&PostParams::default(), &plain_pod("d", &[]))
        .await
        .unwrap();
    let e = pods
        .delete("d", &DeleteParams::default())
        .await
        .unwrap_err();
    assert_eq!(api_status(&e), (403, "Forbidden".into()));
    let e = pods
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_status(&e).0, 403);
    assert!(denied.requests().iter().any(|r| r.method == "DELETE"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_and_error_rate_faults() {
    let sim = start_sim("empty", 1.0, &["latency=300ms"]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    let t = std::time::Instant::now();
    pods.list(&ListParams::default()).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
    let sim = start_sim("empty", 1.0, &["error-rate=1"]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    let e = pods.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_status(&e), (500, "InternalError".into()));
}

/// A kube-runtime watcher sees every pod created while `faults` disturb the watch.
async fn watcher_survives(faults: &[&str], spread: Duration) {
    let sim = start_sim("empty", 1.0, faults).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    // The fault happens: a plain watch (no resume, a 290 s timeout of its own) is cut by
    // the server within seconds. Without it the watcher's survival below proves nothing.
    let cut = {
        let pods = pods.clone();
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let mut stream = pods
                .watch(&WatchParams::default().timeout(290), "0")
                .await
                .expect("a plain watch opens")
                .boxed();
            tokio::time::timeout(Duration::from_secs(20), async {
                while let Some(Ok(_)) = stream.next().await {}
            })
            .await
            .ok()
            .map(|()| started.elapsed())
        })
    };
    let mut objs = watcher(pods.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let mut seen = BTreeSet::new();
    let creator = {
        let pods = pods.clone();
        tokio::spawn(async move {
            for i in 0..6 {
                tokio::time::sleep(spread).await;
                // Retry creates that race a restart.
                for _ in 0..50 {
                    if pods
                        .create(&PostParams::default(), &plain_pod(&format!("w-{i}"), &[]))
                        .await
                        .is_ok()
                    {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        })
    };
    tokio::time::timeout(Duration::from_secs(30), async {
        while seen.len() < 6 {
            match objs.next().await {
                Some(Ok(p)) => {
                    seen.insert(p.name_any());
                }
                Some(Err(_)) => {} // reported, then recovered by the watcher
                None => panic!("watcher ended"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("watcher under {faults:?} saw only {seen:?}"));
    creator.await.unwrap();
    let cut = cut.await.unwrap();
    assert!(
        cut.is_some(),
        "under {faults:?} a plain watch was not cut within 20 s: the fault did not happen"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_survives_dropped_watches() {
    watcher_survives(&["drop-watches=700ms"], Duration::from_millis(400)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_relists_when_resumes_expire() {
    watcher_survives(
        &["drop-watches=700ms", "expire-watches"],
        Duration::from_millis(400),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_survives_a_server_restart_with_version_continuity() {
    let sim = start_sim("empty", 1.0, &["restart-after=1s"]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    pods.create(&PostParams::default(), &plain_pod("before", &[]))
        .await
        .unwrap();
    let rv_before: u64 = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let rv_after: u64 = eventually(10, "server back", || async {
        pods.list(&ListParams::default())
            .await
            .ok()?
            .metadata
            .resource_version?
            .parse()
            .ok()
    })
    .await;
    assert!(rv_after >= rv_before);
    drop(sim);
    watcher_survives(&["restart-after=1s"], Duration::from_millis(400)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_expire_after_their_ttl() {
    let sim = start_sim("empty", 1.0, &["event-ttl=1s"]).await;
    let c = client(&sim).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    pods.create(&PostParams::default(), &plain_pod("short", &[]))
        .await
        .unwrap();
    wait_running(&pods, "short").await;
    let events: Api<Event> = Api::namespaced(c, "default");
    let lp = ListParams::default().fields("involvedObject.name=short");
    assert!(!events.list(&lp).await.unwrap().items.is_empty());
    eventually(15, "events expired", || async {
        events
            .list(&lp)
            .await
            .unwrap()
            .items
            .is_empty()
            .then_some(())
    })
    .await;
}

/// The expiry skips its pass while nothing it saw can be past the ttl; an event a client
/// writes already old (the tool's own `--emit-events` stamps the wall clock, behind a fast
/// simulated one) still goes at the next pass, not an hour later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_a_client_writes_already_old_expires_at_the_next_pass() {
    let sim = start_sim("empty", 10.0, &[]).await;
    let events: Api<Event> = Api::namespaced(client(&sim).await, "default");
    let old = |name: &str| -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "gone", "namespace": "default"},
            "reason": "Killing", "message": "Stopping container", "type": "Normal", "count": 1,
            "firstTimestamp": "2000-01-01T00:00:00Z", "lastTimestamp": "2000-01-01T00:00:00Z",
        }))
        .unwrap()
    };
    let gone = |name: &'static str| {
        let events = events.clone();
        async move { events.get_opt(name).await.unwrap().is_none().then_some(()) }
    };
    // A first old event goes at a pass; from then on the passes know the oldest event
    // kept (none: nothing due for an hour) and are skipped.
    events
        .create(&PostParams::default(), &old("probe"))
        .await
        .unwrap();
    eventually(15, "the probe expired", || gone("probe")).await;
    // The second is written after that pass: only the write's mark brings a pass forward.
    events
        .create(&PostParams::default(), &old("old"))
        .await
        .unwrap();
    eventually(5, "the old event expired", || gone("old")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_that_allow_bookmarks_get_them() {
    let sim = start_sim_with("empty", 1.0, &[], |o| {
        o.bookmark_every = Duration::from_millis(200)
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    pods.create(&PostParams::default(), &plain_pod("a", &[]))
        .await
        .unwrap();
    let rv = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = pods
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    let bookmark = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            // The pod's own changes (scheduling, start) come too; skip them.
            if let WatchEvent::Bookmark(b) = stream.try_next().await.unwrap().unwrap() {
                return b;
            }
        }
    })
    .await
    .expect("a bookmark within 3s");
    assert_eq!(bookmark.types.kind, "Pod");
    assert!(
        bookmark.metadata.resource_version.parse::<u64>().unwrap() >= rv.parse::<u64>().unwrap()
    );
    // Without allowWatchBookmarks, none come.
    let mut quiet = pods
        .watch(&WatchParams::default().disable_bookmarks().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    let saw_bookmark = tokio::time::timeout(Duration::from_millis(700), async {
        while let Ok(Some(e)) = quiet.try_next().await {
            if matches!(e, WatchEvent::Bookmark(_)) {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(!saw_bookmark);
}

/// fabric8 (the client inside Spark's driver) tries a WebSocket watch first: it must get a
/// 101 and one text frame per event, replaying existing pods as ADDED when no version is
/// given (Spark creates pods before its watch is up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_watch_like_fabric8() {
    use tokio_tungstenite::tungstenite::Message;
    let sim = start_sim("empty", 1.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    pods.create(
        &PostParams::default(),
        &plain_pod("early", &[("spark-role", "executor")]),
    )
    .await
    .unwrap();
    let url = format!(
        "ws://{}/api/v1/namespaces/default/pods?allowWatchBookmarks=true&labelSelector=spark-role%3Dexecutor%2Cspark-exec-inactive%21%3Dtrue&watch=true",
        sim.addr
    );
    let (mut ws, resp) = tokio_tungstenite::connect_async(url)
        .await
        .expect("websocket upgrade");
    assert_eq!(resp.status(), 101);
    let mut first = None;
    while first.is_none() {
        match tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Message::Text(t) => {
                first = Some(serde_json::from_str::<serde_json::Value>(&t).unwrap())
            }
            _ => continue,
        }
    }
    let first = first.unwrap();
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["metadata"]["name"], "early");
    pods.create(
        &PostParams::default(),
        &plain_pod("later", &[("spark-role", "executor")]),
    )
    .await
    .unwrap();
    let later = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Message::Text(t) = ws.next().await.unwrap().unwrap() {
                let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                if v["object"]["metadata"]["name"] == "later" {
                    return v;
                }
            }
        }
    })
    .await
    .expect("the new pod arrives as a frame");
    assert_eq!(later["type"], "ADDED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_patches_conflicts_eviction_and_collection_deletes() {
    let sim = start_sim("empty", 1.0, &[]).await;
    let pods: Api<Pod> = Api::namespaced(client(&sim).await, "default");
    for i in 1..=4 {
        let p = plain_pod(
            &format!("e-{i}"),
            &[
                ("spark-app-selector", "spark-1"),
                ("spark-role", "executor"),
                ("spark-exec-id", &i.to_string()),
            ],
        );
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    let e = pods
        .create(&PostParams::default(), &plain_pod("e-1", &[]))
        .await
        .unwrap_err();
    assert_eq!(api_status(&e), (409, "AlreadyExists".into()));
    for i in 1..=4 {
        wait_running(&pods, &format!("e-{i}")).await;
    }
    // Strategic merge: containers merge by name; apply creates when missing.
    let smp = json!({"metadata": {"labels": {"team": "data"}}, "spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}});
    let p = pods
        .patch("e-1", &PatchParams::default(), &Patch::Strategic(smp))
        .await
        .unwrap();
    assert_eq!(p.labels()["team"], "data");
    let containers = p.spec.unwrap().containers;
    assert_eq!(
        (containers.len(), containers[0].image.as_deref()),
        (1, Some("busybox:1.37"))
    );
    let applied = pods
        .patch(
            "applied",
            &PatchParams::apply("spark-triage-test"),
            &Patch::Apply(plain_pod("applied", &[])),
        )
        .await
        .unwrap();
    assert_eq!(applied.name_any(), "applied");
    // A stale resourceVersion on update is a 409 Conflict.
    let mut stale = pods.get("e-2").await.unwrap();
    pods.patch(
        "e-2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    )
    .await
    .unwrap();
    stale.labels_mut().insert("y".into(), "2".into());
    let e = pods
        .replace("e-2", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(api_status(&e), (409, "Conflict".into()));
    // /status replaces only the status.
    let mut st = pods.get_status("e-2").await.unwrap();
    st.status.as_mut().unwrap().message = Some("hello".into());
    let after = pods
        .replace_status("e-2", &PostParams::default(), &st)
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().message.as_deref(), Some("hello"));
    // Eviction: DisruptionTarget, then graceful deletion.
    pods.evict("e-3", &kube::api::EvictParams::default())
        .await
        .unwrap();
    let evicted = pods.get("e-3").await.unwrap();
    assert!(evicted.metadata.deletion_timestamp.is_some());
    let conds = evicted.status.unwrap().conditions.unwrap();
    assert!(
        conds.iter().any(|c| c.type_ == "DisruptionTarget"
            && c.reason.as_deref() == Some("EvictionByEvictionAPI"))
    );
    // Spark's collection delete: field and label selectors together.
    let lp = ListParams::default()
        .labels("spark-app-selector=spark-1,spark-role=executor,spark-exec-id in (1,4)")
        .fields("status.phase=Running");
    let deleted = pods
        .delete_collection(&DeleteParams::default(), &lp)
        .await
        .unwrap()
        .left()
        .unwrap();
    let mut names: Vec<String> = deleted.items.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, vec!["e-1", "e-4"]);
    eventually(10, "e-1 and e-4 gone", || async {
        (pods.get_opt("e-1").await.unwrap().is_none()
            && pods.get_opt("e-4").await.unwrap().is_none())
        .then_some(())
    })
    .await;
    assert!(pods.get_opt("e-2").await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_simulator_removes_the_kubeconfig_it_chose() {
    let sim = start_sim("mixed", 1.0, &[]).await;
    let path = sim.kubeconfig.clone();
    assert!(path.exists(), "{} written at start", path.display());
    sim.stop().await;
    assert!(!path.exists(), "{} left behind after stop", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_quota_refuses_pods_past_its_limit_and_counts_the_rest() {
    use k8s_openapi::api::core::v1::ResourceQuota;
    let sim = start_sim("empty", 1.0, &[]).await;
    let client = client(&sim).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "spark-jobs");
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "small"},
        "spec": {"hard": {"requests.cpu": "250m", "pods": "5"}}
    }))
    .unwrap();
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("quota created");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "spark-jobs");
    for name in ["a", "b"] {
        pods.create(&PostParams::default(), &plain_pod(name, &[]))
            .await
            .expect("fits the quota");
    }
    let err = pods
        .create(&PostParams::default(), &plain_pod("c", &[]))
        .await
        .expect_err("past the quota");
    let kube::Error::Api(s) = &err else {
        panic!("{err:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        s.message,
        "pods \"c\" is forbidden: exceeded quota: small, requested: requests.cpu=100m, used: requests.cpu=200m, limited: requests.cpu=250m"
    );
    // The quota controller's count, as `kubectl describe quota` shows it.
    let used = eventually(5, "quota status", || async {
        let q = quotas.get("small").await.ok()?;
        let used = q.status?.used?;
        (used.get("pods").map(|q| q.0.as_str()) == Some("2")).then_some(used)
    })
    .await;
    assert_eq!(used["requests.cpu"].0, "200m");
    // A quota on limits.cpu refuses a pod that sets none.
    let limits: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "limits"}, "spec": {"hard": {"limits.cpu": "10"}}
    }))
    .unwrap();
    quotas
        .create(&PostParams::default(), &limits)
        .await
        .expect("quota created");
    quotas
        .delete("small", &DeleteParams::default())
        .await
        .expect("deleted");
    let err = pods
        .create(&PostParams::default(), &plain_pod("d", &[]))
        .await
        .expect_err("no cpu limit");
    assert!(
        err.to_string()
            .contains("failed quota: limits: must specify limits.cpu for: main"),
        "{err}"
    );
}
