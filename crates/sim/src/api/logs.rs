//! Container logs: a tail, the previous container's, or followed until the container ends,
//! with the kubelet's errors for a container that has not started.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{ApiState, Params, text};
use crate::error::ApiError;
use crate::store::Resource;

pub(super) fn pod_log(st: &ApiState, ns: &str, name: &str, params: &Params) -> Response {
    let Some(pod) = st.store.get(Resource::Pods, ns, name) else {
        return ApiError::not_found(Resource::Pods, name).into_response();
    };
    let containers: Vec<String> = pod.value()["spec"]["containers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let container = match params.get("container") {
        Some(c) => c.to_owned(),
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            ))
            .into_response();
        }
    };
    let previous = params.flag("previous");
    let statuses = pod.value()["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let status = statuses.iter().find(|s| s["name"] == container.as_str());
    if !containers.contains(&container) {
        return ApiError::bad_request(format!("container {container} is not valid for pod {name}"))
            .into_response();
    }
    if !previous
        && let Some(reason) = status
            .and_then(|s| s["state"]["waiting"]["reason"].as_str())
            .or(if status.is_none() {
                Some("ContainerCreating")
            } else {
                None
            })
    {
        let why = match reason {
            "ErrImagePull" => "image can't be pulled",
            "ImagePullBackOff" => "trying and failing to pull image",
            other => other,
        };
        return ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: {why}"
        ))
        .into_response();
    }
    let tail = params.get("tailLines").and_then(|t| t.parse().ok());
    let Some(read) = st.logs.read(ns, name, &container, previous, tail) else {
        if previous {
            return ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            ))
            .into_response();
        }
        return text(StatusCode::OK, "");
    };
    if !params.flag("follow") || previous || read.finished {
        let mut s = read.lines.join("\n");
        if !s.is_empty() {
            s.push('\n');
        }
        return text(StatusCode::OK, s);
    }
    // Follow: stream what is there, then new lines as they come, until the container ends.
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    let logs = st.logs.clone();
    let mut changes = logs.changes();
    let mut stop = st.drop_watches.clone();
    let (ns, name) = (ns.to_owned(), name.to_owned());
    let start_offset = logs
        .since(&ns, &name, &container, 0)
        .map_or(0, |r| r.lines.len());
    tokio::spawn(async move {
        let first: String = read.lines.iter().map(|l| format!("{l}\n")).collect();
        if tx.send(Ok(Bytes::from(first))).await.is_err() {
            return;
        }
        let mut offset = start_offset;
        loop {
            tokio::select! {
                () = tx.closed() => return,
                r = changes.changed() => if r.is_err() { return },
                _ = stop.changed() => return,
            }
            let Some(r) = logs.since(&ns, &name, &container, offset) else {
                return; // the pod is gone
            };
            offset += r.lines.len();
            if !r.lines.is_empty() {
                let chunk: String = r.lines.iter().map(|l| format!("{l}\n")).collect();
                if tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                    return;
                }
            }
            if r.finished {
                return;
            }
        }
    });
    let mut resp = Response::new(Body::from_stream(ReceiverStream::new(rx)));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
