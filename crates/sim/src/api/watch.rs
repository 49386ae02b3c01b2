//! Watches: the initial events (for `sendInitialEvents` or no resourceVersion), the
//! replayed history from a resourceVersion, then live changes filtered by the selectors,
//! with bookmarks, the timeout, and faults that end or expire watches.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::Response;
use futures::StreamExt;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{Ctx, json_body};
use crate::error::ApiError;
use crate::store::{Change, ChangeType, Query, Resource};

/// One watch event line (no trailing newline).
fn event_line(kind: &str, object: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.push(b'}');
    out
}

/// An ERROR watch event carrying the error's Status.
fn error_line(e: &ApiError) -> Vec<u8> {
    event_line(
        "ERROR",
        &serde_json::to_vec(&e.status()).unwrap_or_default(),
    )
}

fn bookmark(cx: &Ctx, rv: u64, initial_end: bool) -> Vec<u8> {
    let resource = cx.resource;
    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let mut obj =
        json!({"kind": resource.kind(), "apiVersion": cx.api_version(), "metadata": meta});
    if resource == Resource::Pods {
        obj["spec"] = json!({"containers": null});
        obj["status"] = json!({});
    }
    event_line("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
}

/// Produces watch event lines into `tx` until the client leaves, the timeout passes, or a
/// fault/restart ends the watch.
async fn watch_loop(cx: Ctx, q: Query, tx: mpsc::Sender<Vec<u8>>) {
    let (st, params, resource) = (&cx.st, &cx.params, cx.resource);
    let send_initial = params.flag("sendInitialEvents");
    let bookmarks = params.flag("allowWatchBookmarks");
    let rv: Option<u64> = match params.get("resourceVersion") {
        None | Some("0") => None,
        Some(v) => match v.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                let e = ApiError::bad_request(format!("invalid resource version: {v}"));
                let _ = tx.send(error_line(&e)).await;
                return;
            }
        },
    };
    let rv = if send_initial { None } else { rv };
    if st.faults.expire_watches && rv.is_some() {
        let e = ApiError::expired(format!(
            "too old resource version: {} ({})",
            rv.unwrap_or(0),
            st.store.current_rv()
        ));
        let _ = tx.send(error_line(&e)).await;
        return;
    }
    let sub = match st.store.subscribe(resource, &q, rv) {
        Ok(s) => s,
        Err(e) => {
            // Errors after the watch was accepted travel inside the 200 stream (kube-rs and
            // client-go relist on a 410 ERROR event; an HTTP 410 would make them spin).
            let _ = tx.send(error_line(&e)).await;
            return;
        }
    };
    let mut last_rv = sub.rv;
    for o in &sub.initial {
        if tx
            .send(event_line("ADDED", &cx.render_one(o)))
            .await
            .is_err()
        {
            return;
        }
    }
    // The end of the initial events: asked for (`sendInitialEvents`), or, as kube-apiserver
    // 1.37 does, whenever initial events were sent (no resourceVersion, or 0) to a client
    // that allows bookmarks.
    let initial_end = send_initial || (bookmarks && rv.is_none());
    if initial_end && tx.send(bookmark(&cx, sub.rv, true)).await.is_err() {
        return;
    }
    let mut rx = sub.rx;
    let timeout = params
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map_or(Duration::from_secs(3600), Duration::from_secs);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut bookmark_tick = tokio::time::interval(st.bookmark_every);
    bookmark_tick.tick().await;
    let mut stop = st.drop_watches.clone();
    stop.mark_unchanged();
    let mut pending: VecDeque<Arc<Change>> = sub.replay.into();
    if let Some(last) = pending.back() {
        last_rv = last_rv.max(last.rv);
    }
    loop {
        let change = if let Some(c) = pending.pop_front() {
            c
        } else {
            tokio::select! {
                () = tx.closed() => return,
                () = &mut deadline => return,
                _ = stop.changed() => return,
                _ = bookmark_tick.tick() => {
                    if bookmarks && tx.send(bookmark(&cx, last_rv, false)).await.is_err() {
                        return;
                    }
                    continue;
                }
                r = rx.recv() => match r {
                    // Subscribed under the store's lock: everything here is newer than
                    // the replayed history and the initial state.
                    Ok(c) => c,
                    // A watcher too slow for the feed is closed without an ERROR (as the
                    // real cacher does); the client resumes from its last version.
                    Err(_) => return,
                },
            }
        };
        if change.resource != resource {
            continue;
        }
        last_rv = last_rv.max(change.rv);
        let matches_old = change.old.as_ref().is_some_and(|o| q.matches(o));
        let matches_new = q.matches(&change.new);
        let kind = match change.change {
            ChangeType::Added if matches_new => "ADDED",
            ChangeType::Modified if matches_old && matches_new => "MODIFIED",
            ChangeType::Modified if matches_new => "ADDED",
            ChangeType::Modified if matches_old => "DELETED",
            ChangeType::Deleted if matches_old || matches_new => "DELETED",
            _ => continue,
        };
        let line = event_line(kind, &cx.render_one(&change.new));
        if tx.send(line).await.is_err() {
            return;
        }
    }
}

/// A watch over HTTP: one JSON event per line of a chunked 200 answer.
pub(super) fn over_http(cx: Ctx, q: Query) -> Response {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(256);
    tokio::spawn(watch_loop(cx, q, tx));
    let stream = ReceiverStream::new(rx).map(|mut line| {
        line.push(b'\n');
        Ok::<_, Infallible>(Bytes::from(line))
    });
    json_body(StatusCode::OK, Body::from_stream(stream))
}

/// A watch over a WebSocket (kubectl 1.30+ and client-go's WebSocket transport): one event
/// per text message.
pub(super) async fn over_websocket(cx: Ctx, q: Query, mut socket: axum::extract::ws::WebSocket) {
    use axum::extract::ws::Message;
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
    tokio::spawn(watch_loop(cx, q, tx));
    loop {
        tokio::select! {
            line = rx.recv() => {
                let Some(line) = line else {
                    let _ = socket.send(Message::Close(None)).await;
                    return;
                };
                let text = String::from_utf8(line).unwrap_or_default();
                if socket.send(Message::Text(text.into())).await.is_err() {
                    return;
                }
            }
            msg = socket.recv() => match msg {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                _ => {}
            },
        }
    }
}
