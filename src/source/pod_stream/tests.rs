use std::collections::BTreeSet;

use kube::api::DeleteParams;
use kube::runtime::watcher;
use spark_triage_sim::testing::{client, eventually};
use spark_triage_sim::{SimOptions, scenario, start};

use super::*;

fn pod(name: &str) -> String {
    format!(r#"{{"metadata": {{"name": "{name}", "namespace": "n", "resourceVersion": "7"}}}}"#)
}

/// The continue is sent on as soon as the list's metadata is read, before its items; when
/// the metadata comes last, at the end; a last page sends none.
#[test]
fn a_pages_continue_is_sent_on_before_its_items_are_decoded() {
    let text = format!(
        r#"{{"kind": "PodList", "metadata": {{"continue": "tok", "resourceVersion": "9"}},
            "items": [{}, {}], "extra": [1]}}"#,
        pod("a"),
        pod("b")
    );
    let (head, mut next) = oneshot::channel();
    let page = decode_page(&text, head).expect("a page");
    assert_eq!(next.try_recv().expect("sent"), Some("tok".to_owned()));
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.items[1].pod.name, "b");
    assert_eq!(
        (page.next.as_deref(), page.resource_version.as_deref()),
        (Some("tok"), Some("9"))
    );

    let last = format!(
        r#"{{"items": [{}], "metadata": {{"resourceVersion": "9", "continue": ""}}}}"#,
        pod("a")
    );
    let (head, mut next) = oneshot::channel();
    let page = decode_page(&last, head).expect("a page");
    assert_eq!(next.try_recv().expect("sent"), None, "the last page");
    assert_eq!((page.items.len(), page.next), (1, None));

    // No metadata, null items: nothing next, no version (the stream says NoResourceVersion).
    let (head, mut next) = oneshot::channel();
    let page = decode_page(r#"{"items": null}"#, head).expect("a page");
    assert_eq!(next.try_recv().expect("sent"), None);
    assert!(page.items.is_empty() && page.resource_version.is_none());
}

/// A page that is not JSON, or not a list, is an error; its head is never sent, so the
/// fetcher stops there.
#[test]
fn an_unreadable_page_is_an_error_and_names_no_next_page() {
    for text in [
        r#"{"items": [}"#,
        "[]",
        r#"{"metadata": {"continue": 3}}"#,
        "",
    ] {
        let (head, mut next) = oneshot::channel();
        assert!(decode_page(text, head).is_err(), "{text}");
        assert!(next.try_recv().is_err(), "{text}: no head");
    }
    // Trailing bytes after the list.
    let (head, _next) = oneshot::channel();
    assert!(decode_page(r#"{"items": []} x"#, head).is_err());
}

/// Against the simulator's real HTTP API, over several pages: the same pods as kube's
/// own watcher lists, each once, then InitDone, then the watch's deletion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_the_same_pods_as_kubes_watcher_then_watches() {
    let sim = start(SimOptions::new(scenario::scale(3, 400, 0.0)).for_external_clients())
        .await
        .expect("simulator starts");
    let kube = client(&sim).await;
    let api: Api<LeanPod> = Api::all(kube.clone());
    let selector = "spark-role".to_owned();
    eventually(60, "1,203 Spark pods", || {
        let api = api.clone();
        async move {
            let n = api
                .list(&ListParams::default().labels("spark-role"))
                .await
                .ok()?
                .items
                .len();
            (n == 1203).then_some(())
        }
    })
    .await;

    let names = |events: &[Event<LeanPod>]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::InitApply(p) => Some(format!("{}/{}", p.pod.namespace, p.pod.name)),
                _ => None,
            })
            .collect()
    };
    let until_done = |s: BoxStream<'static, Result<Event<LeanPod>, Error>>| async move {
        let mut s = s;
        let mut out = Vec::new();
        while let Some(item) = s.next().await {
            let e = item.expect("no error");
            let done = matches!(e, Event::InitDone);
            out.push(e);
            if done {
                break;
            }
        }
        (out, s)
    };
    let (ours, mut stream) = until_done(watch(api.clone(), kube, Some(selector)).boxed()).await;
    let (kubes, _) =
        until_done(watcher(api.clone(), watcher::Config::default().labels("spark-role")).boxed())
            .await;
    assert!(matches!(ours.first(), Some(Event::Init)));
    let (ours, kubes) = (names(&ours), names(&kubes));
    assert_eq!(ours.len(), 1203, "each pod once");
    assert_eq!(
        ours.iter().collect::<BTreeSet<_>>().len(),
        1203,
        "no pod twice"
    );
    assert_eq!(ours, kubes, "the same pods in the same order");

    // The watch that follows: a deletion is delivered.
    let victim = ours[7].split_once('/').expect("ns/name");
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client(&sim).await, victim.0);
    pods.delete(victim.1, &DeleteParams::default().grace_period(0))
        .await
        .expect("deleted");
    let deleted = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(item) = stream.next().await {
            if let Ok(Event::Delete(p)) = item
                && p.pod.name == victim.1
            {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(deleted, Ok(true), "the deletion of {victim:?} is watched");
}
