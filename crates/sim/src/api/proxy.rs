//! The proxies to the Spark-like drivers' REST API: `services/{svc[:port]}/proxy/…` (with a
//! forward to a real local driver when the process kubelet runs one) and
//! `pods/{pod[:port]}/proxy/…`.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{ApiState, json_body};
use crate::error::ApiError;
use crate::spark_rest;
use crate::store::Resource;

/// A proxy route, after the `get` permission on `services/proxy` or `pods/proxy`.
pub(super) async fn serve(
    st: &ApiState,
    ns: &str,
    to_pod: bool,
    target: &str,
    rest: &str,
    query: Option<&str>,
) -> Result<Response, Response> {
    let resource = if to_pod {
        "pods/proxy"
    } else {
        "services/proxy"
    };
    st.check("get", resource, Some(ns))
        .map_err(IntoResponse::into_response)?;
    if st.faults.silences(target) {
        // Until the client gives up (every client has a timeout), or the server drops its
        // connections (restart-after, drop-watches): it never answers.
        let mut stop = st.drop_watches.clone();
        let _ = stop.changed().await;
        return Err(ApiError::unavailable("the connection was dropped").into_response());
    }
    Ok(if to_pod {
        pod_proxy(st, ns, target, rest)
    } else {
        proxy(st, ns, target, rest, query).await
    })
}

/// `pods/{name}:{port}/proxy/…`: the Spark-like driver of that pod answers.
fn pod_proxy(st: &ApiState, ns: &str, pod: &str, rest: &str) -> Response {
    let name = pod.split(':').next().unwrap_or(pod);
    let Some(p) = st.store.get(Resource::Pods, ns, name) else {
        return ApiError::not_found(Resource::Pods, name).into_response();
    };
    if p.phase() != "Running" {
        return ApiError::unavailable(format!("pod {name} is not running")).into_response();
    }
    match spark_rest::serve_app(&st.spark, ns, |a| a.driver_pod == name, rest) {
        Some((code, body)) => json_body(StatusCode::from_u16(code).unwrap_or(StatusCode::OK), body),
        None => ApiError::unavailable(format!(
            "error trying to reach service: dial tcp {name}: connect: connection refused"
        ))
        .into_response(),
    }
}

async fn proxy(st: &ApiState, ns: &str, svc: &str, rest: &str, query: Option<&str>) -> Response {
    let (name, port) = match svc.rsplit_once(':') {
        Some((scheme_or_name, p)) if !p.is_empty() => (
            scheme_or_name
                .trim_start_matches("http:")
                .trim_start_matches("https:"),
            Some(p),
        ),
        _ => (svc, None),
    };
    let Some(service) = st.store.get(Resource::Services, ns, name) else {
        return ApiError::not_found(Resource::Services, name).into_response();
    };
    let ready = st.has_endpoints(&service);
    match spark_rest::serve(ready, &st.spark, &service, port, rest, query) {
        Ok((code, body)) => json_body(StatusCode::from_u16(code).unwrap_or(StatusCode::OK), body),
        Err(e) if st.forward_local && e.code == 503 && ready => {
            let Some(target) = spark_rest::target_port(&service, port) else {
                return e.into_response();
            };
            match spark_rest::forward_local(target, rest, query).await {
                Ok((code, body)) => Response::builder()
                    .status(StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY))
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(axum::body::Body::from(body))
                    .unwrap_or_else(|_| ApiError::internal("proxy").into_response()),
                Err(why) => ApiError::unavailable(format!(
                    "error trying to reach service: dial tcp 127.0.0.1:{target}: {why}"
                ))
                .into_response(),
            }
        }
        Err(e) => e.into_response(),
    }
}
