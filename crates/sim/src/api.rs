//! The HTTP face of the simulator: routes Kubernetes API paths to the store, with the wire
//! details real clients depend on (spec: kubernetes-api-subset §1–§2). One handler parses
//! the path itself, because Kubernetes paths (`services/{name}:{port}/proxy/…`, trailing `?`,
//! cluster-wide and namespaced forms of one resource) fit a router poorly.

use std::{
    collections::{HashMap, VecDeque},
    convert::Infallible,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{FromRequestParts, Request, State, ws::WebSocketUpgrade},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use super::{
    discovery,
    error::ApiError,
    events_view,
    faults::Faults,
    logs::Logs,
    patch::{self, PatchType},
    selector::{FieldKind, FieldSelector, LabelSelector},
    spark_rest,
    store::{ChangeType, DeleteOptions, Deleted, Obj, Query, Resource, Store},
    table::{self, Include},
};

/// One request, for tests and `/_sim/requests`.
#[derive(Debug, Clone, Serialize)]
pub struct RequestRecord {
    pub method: String,
    pub uri: String,
    /// It asked to upgrade to a WebSocket.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub websocket: bool,
}

/// Shared state of the API server.
#[derive(Debug)]
pub struct ApiState {
    pub store: Arc<Store>,
    pub logs: Arc<Logs>,
    pub faults: Faults,
    /// Bumped to end every watch and log stream (restart, drop-watches).
    pub drop_watches: watch::Receiver<u64>,
    pub requests: Mutex<VecDeque<RequestRecord>>,
    pub server_addr: String,
    pub user: String,
    pub spark: Arc<super::control::SparkRegistry>,
    /// How often watches that allow bookmarks get one (the real cacher: about a minute).
    pub bookmark_every: Duration,
    /// The process kubelet is on: a service proxy with no simulated driver behind it
    /// forwards to `127.0.0.1:<targetPort>` (where a real driver's UI listens).
    pub forward_local: bool,
}

const MAX_REQUEST_LOG: usize = 100_000;
const MAX_BODY: usize = 16 * 1024 * 1024;

impl ApiState {
    fn record(&self, method: &Method, uri: &axum::http::Uri, websocket: bool) {
        let mut log = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() >= MAX_REQUEST_LOG {
            log.pop_front();
        }
        log.push_back(RequestRecord {
            method: method.to_string(),
            uri: uri.to_string(),
            websocket,
        });
    }

    pub fn request_log(&self) -> Vec<RequestRecord> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// Which API a path used for events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Core,
    EventsV1,
}

#[derive(Debug)]
enum Route {
    Doc(Value),
    Collection {
        view: View,
        resource: Resource,
        ns: Option<String>,
    },
    Item {
        view: View,
        resource: Resource,
        ns: String,
        name: String,
    },
    Sub {
        resource: Resource,
        ns: String,
        name: String,
        sub: String,
    },
    /// `services/{svc[:port]}/proxy/…` or (`to_pod`) `pods/{pod[:port]}/proxy/…`.
    Proxy {
        ns: String,
        to_pod: bool,
        target: String,
        rest: String,
    },
    AccessReview,
}

fn route(path: &str, server_addr: &str) -> Result<Route, ApiError> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let nf = || ApiError::not_found_path(path);
    let res = |s: &str| Resource::from_plural(s).ok_or_else(nf);
    match segs.as_slice() {
        ["api"] => Ok(Route::Doc(discovery::api_versions(server_addr))),
        ["api", "v1"] => Ok(Route::Doc(discovery::core_v1())),
        ["apis"] => Ok(Route::Doc(discovery::api_groups())),
        ["apis", g] => discovery::api_group(g).map(Route::Doc).ok_or_else(nf),
        ["apis", g, "v1"] => discovery::group_resources(g).map(Route::Doc).ok_or_else(nf),
        [
            "apis",
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
        ] => Ok(Route::AccessReview),
        ["apis", "events.k8s.io", "v1", "events"] => Ok(Route::Collection {
            view: View::EventsV1,
            resource: Resource::Events,
            ns: None,
        }),
        ["apis", "events.k8s.io", "v1", "namespaces", ns, "events"] => Ok(Route::Collection {
            view: View::EventsV1,
            resource: Resource::Events,
            ns: Some((*ns).to_owned()),
        }),
        [
            "apis",
            "events.k8s.io",
            "v1",
            "namespaces",
            ns,
            "events",
            name,
        ] => Ok(Route::Item {
            view: View::EventsV1,
            resource: Resource::Events,
            ns: (*ns).to_owned(),
            name: (*name).to_owned(),
        }),
        [
            "api",
            "v1",
            "namespaces",
            ns,
            kind @ ("services" | "pods"),
            target,
            "proxy",
            rest @ ..,
        ] => Ok(Route::Proxy {
            ns: (*ns).to_owned(),
            to_pod: *kind == "pods",
            target: (*target).to_owned(),
            rest: rest.join("/"),
        }),
        ["api", "v1", r] => Ok(Route::Collection {
            view: View::Core,
            resource: res(r)?,
            ns: None,
        }),
        ["api", "v1", r, name] if !res(r)?.namespaced() => Ok(Route::Item {
            view: View::Core,
            resource: res(r)?,
            ns: String::new(),
            name: (*name).to_owned(),
        }),
        ["api", "v1", "namespaces", ns, r] if res(r)?.namespaced() => Ok(Route::Collection {
            view: View::Core,
            resource: res(r)?,
            ns: Some((*ns).to_owned()),
        }),
        ["api", "v1", "namespaces", ns, r, name] if res(r)?.namespaced() => Ok(Route::Item {
            view: View::Core,
            resource: res(r)?,
            ns: (*ns).to_owned(),
            name: (*name).to_owned(),
        }),
        ["api", "v1", "namespaces", ns, r, name, sub] if res(r)?.namespaced() => Ok(Route::Sub {
            resource: res(r)?,
            ns: (*ns).to_owned(),
            name: (*name).to_owned(),
            sub: (*sub).to_owned(),
        }),
        _ => Err(nf()),
    }
}

/// Query parameters; a repeated key keeps its last value.
#[derive(Debug, Default)]
struct Params(HashMap<String, String>);

impl Params {
    fn parse(q: Option<&str>) -> Self {
        Self(
            form_urlencoded::parse(q.unwrap_or_default().as_bytes())
                .into_owned()
                .collect(),
        )
    }
    fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str).filter(|s| !s.is_empty())
    }
    fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1"))
    }
}

fn json_body(code: StatusCode, body: impl Into<Body>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn json_value(code: StatusCode, v: &Value) -> Response {
    json_body(code, serde_json::to_vec(v).unwrap_or_default())
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json_value(code, &self.status())
    }
}

fn text(code: StatusCode, s: impl Into<String>) -> Response {
    let mut r = Response::new(Body::from(s.into()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// How objects are rendered for this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Render {
    Json,
    Table(Include),
    Metadata,
}

fn render_mode(headers: &HeaderMap, params: &Params) -> Render {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // The first acceptable type wins; kubectl lists Table first, JSON as the fallback.
    let first = accept.split(',').next().unwrap_or_default();
    if first.contains("as=Table") {
        Render::Table(Include::parse(params.get("includeObject")))
    } else if first.contains("as=PartialObjectMetadata") {
        Render::Metadata
    } else {
        Render::Json
    }
}

/// The simulator's own control endpoints (not Kubernetes API):
/// `POST /_sim/namespaces/{ns}/pods/{name}/vanish` removes a pod with no watch event, as if
/// the deletion was missed (Spark notices at its next full poll).
fn sim_control(st: &ApiState, method: &Method, rest: &str) -> Response {
    let parts: Vec<&str> = rest.split('/').collect();
    match (method, parts.as_slice()) {
        (&Method::POST, ["namespaces", ns, "pods", name, "vanish"]) => {
            if st.store.vanish(Resource::Pods, ns, name) {
                st.logs.remove_pod(ns, name);
                json_value(StatusCode::OK, &json!({"vanished": format!("{ns}/{name}")}))
            } else {
                ApiError::not_found(Resource::Pods, name).into_response()
            }
        }
        _ => ApiError::not_found_path(&format!("/_sim/{rest}")).into_response(),
    }
}

/// The whole API: every request comes through here.
pub async fn handle(State(st): State<Arc<ApiState>>, req: Request) -> Response {
    let method = req.method().clone();
    let uri = req.uri().clone();
    let websocket = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    st.record(&method, &uri, websocket);
    let path = uri.path().to_owned();
    match path.as_str() {
        "/healthz" | "/readyz" | "/livez" => return text(StatusCode::OK, "ok"),
        "/version" => return json_value(StatusCode::OK, &discovery::version()),
        "/_sim/requests" => {
            return json_value(
                StatusCode::OK,
                &serde_json::to_value(st.request_log()).unwrap_or_default(),
            );
        }
        _ => {}
    }
    if let Some(rest) = path.strip_prefix("/_sim/") {
        return sim_control(&st, &method, rest);
    }
    if let Some(l) = st.faults.latency {
        tokio::time::sleep(l).await;
    }
    let is_discovery = path == "/api"
        || path == "/apis"
        || path.starts_with("/api/v1?")
        || path == "/api/v1"
        || (path.starts_with("/apis/") && path.matches('/').count() <= 3);
    if st.faults.error_rate > 0.0 && !is_discovery && fastrand::f64() < st.faults.error_rate {
        return ApiError::internal("injected fault: error-rate").into_response();
    }
    let params = Params::parse(uri.query());
    let r = match route(&path, &st.server_addr) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let render = render_mode(req.headers(), &params);
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned();
    match r {
        Route::Doc(v) => json_value(StatusCode::OK, &v),
        Route::AccessReview => {
            let body = match read_body(req).await {
                Ok(b) => b,
                Err(e) => return e.into_response(),
            };
            access_review(&st, &body)
        }
        Route::Proxy {
            ns,
            to_pod,
            target,
            rest,
        } => {
            let resource = if to_pod {
                "pods/proxy"
            } else {
                "services/proxy"
            };
            if st.faults.denies("get", resource) {
                return ApiError::forbidden(&st.user, "get", resource, Some(&ns)).into_response();
            }
            if to_pod {
                return pod_proxy(&st, &ns, &target, &rest);
            }
            let query = uri.query().map(str::to_owned);
            proxy(&st, &ns, &target, &rest, query.as_deref()).await
        }
        Route::Collection { view, resource, ns } => {
            let watching = params.flag("watch");
            let verb = match (&method, watching) {
                (&Method::GET, true) => "watch",
                (&Method::GET, false) => "list",
                (&Method::POST, _) => "create",
                (&Method::DELETE, _) => "deletecollection",
                _ => return ApiError::method_not_allowed().into_response(),
            };
            if st.faults.denies(verb, resource.plural()) {
                return ApiError::forbidden(&st.user, verb, resource.plural(), ns.as_deref())
                    .into_response();
            }
            let query = match build_query(view, resource, ns.clone(), &params) {
                Ok(q) => q,
                Err(e) => return e.into_response(),
            };
            match verb {
                "watch" if websocket && st.faults.no_websocket => {
                    ApiError::unavailable("WebSocket watches are refused (fault no-websocket)")
                        .into_response()
                }
                "watch" if websocket => {
                    let (mut parts, _) = req.into_parts();
                    match WebSocketUpgrade::from_request_parts(&mut parts, &st).await {
                        Ok(ws) => {
                            let st2 = st.clone();
                            ws.on_upgrade(move |socket| {
                                watch_ws(st2, view, resource, query, params, render, socket)
                            })
                        }
                        Err(e) => e.into_response(),
                    }
                }
                "watch" => watch_http(st, view, resource, query, params, render),
                "list" => list(&st, view, resource, &query, &params, render),
                "create" => {
                    let body = match read_json(req).await {
                        Ok(b) => b,
                        Err(e) => return e.into_response(),
                    };
                    create(
                        &st,
                        view,
                        resource,
                        ns.as_deref().unwrap_or_default(),
                        body,
                        &params,
                    )
                }
                _ => {
                    let body = read_body(req).await.unwrap_or_default();
                    delete_collection(&st, view, resource, &query, &body, &params)
                }
            }
        }
        Route::Item {
            view,
            resource,
            ns,
            name,
        } => {
            let verb = match method {
                Method::GET => "get",
                Method::PUT => "update",
                Method::PATCH => "patch",
                Method::DELETE => "delete",
                _ => return ApiError::method_not_allowed().into_response(),
            };
            if st.faults.denies(verb, resource.plural()) {
                return ApiError::forbidden(&st.user, verb, resource.plural(), Some(&ns))
                    .into_response();
            }
            let body = match read_body(req).await {
                Ok(b) => b,
                Err(e) => return e.into_response(),
            };
            item(
                &st,
                verb,
                view,
                resource,
                &ns,
                &name,
                &body,
                &content_type,
                &params,
                render,
                false,
            )
        }
        Route::Sub {
            resource,
            ns,
            name,
            sub,
        } => {
            let body = match read_body(req).await {
                Ok(b) => b,
                Err(e) => return e.into_response(),
            };
            match (resource, sub.as_str(), &method) {
                (_, "status", m) => {
                    let verb = match *m {
                        Method::GET => "get",
                        Method::PUT => "update",
                        Method::PATCH => "patch",
                        _ => return ApiError::method_not_allowed().into_response(),
                    };
                    if st.faults.denies(verb, resource.plural()) {
                        return ApiError::forbidden(&st.user, verb, "pods/status", Some(&ns))
                            .into_response();
                    }
                    item(
                        &st,
                        verb,
                        View::Core,
                        resource,
                        &ns,
                        &name,
                        &body,
                        &content_type,
                        &params,
                        render,
                        true,
                    )
                }
                (Resource::Pods, "log", &Method::GET) => pod_log(&st, &ns, &name, &params),
                (Resource::Pods, "eviction", &Method::POST) => {
                    if st.faults.denies("create", "pods/eviction")
                        || st.faults.denies("delete", "pods")
                    {
                        return ApiError::forbidden(&st.user, "create", "pods/eviction", Some(&ns))
                            .into_response();
                    }
                    evict(&st, &ns, &name, &body)
                }
                _ => ApiError::not_found_path(&path).into_response(),
            }
        }
    }
}

async fn read_body(req: Request) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(req.into_body(), MAX_BODY)
        .await
        .map_err(|e| ApiError::bad_request(format!("cannot read the request body: {e}")))
}

async fn read_json(req: Request) -> Result<Value, ApiError> {
    let body = read_body(req).await?;
    serde_json::from_slice(&body).or_else(|_| {
        std::str::from_utf8(&body)
            .ok()
            .and_then(|s| serde_saphyr::from_str::<Value>(s).ok())
            .ok_or_else(|| ApiError::bad_request("the request body is not valid JSON or YAML"))
    })
}

fn field_kind(view: View, resource: Resource) -> FieldKind {
    match (view, resource) {
        (_, Resource::Pods) => FieldKind::Pod,
        (View::Core, Resource::Events) => FieldKind::CoreEvent,
        (View::EventsV1, Resource::Events) => FieldKind::EventsV1,
        _ => FieldKind::Generic,
    }
}

fn build_query(
    view: View,
    resource: Resource,
    ns: Option<String>,
    params: &Params,
) -> Result<Query, ApiError> {
    let labels = LabelSelector::parse(params.get("labelSelector").unwrap_or_default())
        .map_err(|e| ApiError::bad_request(e.0))?;
    let fields = FieldSelector::parse(
        params.get("fieldSelector").unwrap_or_default(),
        field_kind(view, resource),
    )
    .map_err(|e| ApiError::bad_request(e.0))?;
    Ok(Query {
        namespace: ns,
        labels,
        fields,
    })
}

/// The object as this view shows it, serialised.
fn view_bytes(view: View, resource: Resource, obj: &Obj) -> Bytes {
    if view == View::EventsV1 && resource == Resource::Events {
        Bytes::from(serde_json::to_vec(&events_view::to_v1(&obj.value)).unwrap_or_default())
    } else {
        obj.json.clone()
    }
}

fn view_value(view: View, resource: Resource, obj: &Obj) -> Value {
    if view == View::EventsV1 && resource == Resource::Events {
        events_view::to_v1(&obj.value)
    } else {
        obj.value.clone()
    }
}

fn api_version(view: View, resource: Resource) -> &'static str {
    if view == View::EventsV1 && resource == Resource::Events {
        "events.k8s.io/v1"
    } else {
        "v1"
    }
}

fn metadata_only(obj: &Obj) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.value["metadata"]})
}

fn list(
    st: &ApiState,
    view: View,
    resource: Resource,
    q: &Query,
    params: &Params,
    render: Render,
) -> Response {
    let limit = params
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let page = match st.store.list(resource, q, limit, params.get("continue")) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    match render {
        Render::Table(include) => {
            // Tables read the stored (core) shape, so both event views share them.
            let objs: Vec<&Obj> = page.items.iter().map(|o| o.as_ref()).collect();
            json_value(
                StatusCode::OK,
                &table::table(
                    resource,
                    &objs,
                    page.rv,
                    page.continue_token.as_deref(),
                    include,
                    st.store.clock.now(),
                    true,
                ),
            )
        }
        Render::Metadata => {
            let items: Vec<Value> = page.items.iter().map(|o| metadata_only(o)).collect();
            json_value(
                StatusCode::OK,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                        "metadata": {"resourceVersion": page.rv.to_string(), "continue": page.continue_token.unwrap_or_default()},
                        "items": items}),
            )
        }
        Render::Json => {
            let mut meta = json!({"resourceVersion": page.rv.to_string()});
            if let Some(c) = &page.continue_token {
                meta["continue"] = json!(c);
            }
            if let Some(n) = page.remaining {
                meta["remainingItemCount"] = json!(n);
            }
            let mut out = Vec::with_capacity(
                page.items.iter().map(|o| o.json.len() + 1).sum::<usize>() + 128,
            );
            out.extend_from_slice(
                format!(
                    "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
                    resource.kind(),
                    api_version(view, resource),
                    meta
                )
                .as_bytes(),
            );
            for (i, o) in page.items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&view_bytes(view, resource, o));
            }
            out.extend_from_slice(b"]}");
            json_body(StatusCode::OK, out)
        }
    }
}

fn create(
    st: &ApiState,
    view: View,
    resource: Resource,
    ns: &str,
    mut body: Value,
    params: &Params,
) -> Response {
    if view == View::EventsV1 {
        body = events_view::to_core(&body);
    }
    if params.get("dryRun").is_some() {
        return json_value(StatusCode::CREATED, &body);
    }
    match st.store.create(resource, ns, body) {
        Ok(obj) => json_value(StatusCode::CREATED, &view_value(view, resource, &obj)),
        Err(e) => e.into_response(),
    }
}

fn delete_options(body: &[u8], params: &Params) -> DeleteOptions {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    // Eviction bodies carry them as `deleteOptions` (kube-rs: `delete_options`).
    let opts = if v.get("deleteOptions").is_some() {
        &v["deleteOptions"]
    } else if v.get("delete_options").is_some() {
        &v["delete_options"]
    } else {
        &v
    };
    DeleteOptions {
        grace_period_seconds: opts["gracePeriodSeconds"].as_i64().or_else(|| {
            params
                .get("gracePeriodSeconds")
                .and_then(|g| g.parse().ok())
        }),
        precondition_uid: opts["preconditions"]["uid"].as_str().map(str::to_owned),
        precondition_rv: opts["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
        dry_run: opts["dryRun"].as_array().is_some_and(|a| !a.is_empty())
            || params.get("dryRun").is_some(),
    }
}

fn deleted_response(view: View, resource: Resource, d: &Deleted) -> Response {
    let obj = d.obj();
    if resource == Resource::Pods {
        return json_value(StatusCode::OK, &obj.value);
    }
    match d {
        Deleted::Pending(_) => json_value(StatusCode::OK, &view_value(view, resource, obj)),
        Deleted::Gone(_) => json_value(
            StatusCode::OK,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": obj.name(), "kind": resource.plural(), "uid": obj.value["metadata"]["uid"]}}),
        ),
    }
}

fn delete_collection(
    st: &ApiState,
    view: View,
    resource: Resource,
    q: &Query,
    body: &[u8],
    params: &Params,
) -> Response {
    let opts = delete_options(body, params);
    let (items, _) = st.store.list_all(resource, q);
    let mut deleted = Vec::new();
    for o in items {
        if let Ok(d) = st.store.delete(resource, o.namespace(), o.name(), &opts) {
            deleted.push(view_value(view, resource, d.obj()));
        }
    }
    json_value(
        StatusCode::OK,
        &json!({"kind": format!("{}List", resource.kind()), "apiVersion": api_version(view, resource),
                "metadata": {"resourceVersion": st.store.current_rv().to_string()}, "items": deleted}),
    )
}

#[expect(
    clippy::too_many_arguments,
    reason = "one dispatch point for every single-object verb"
)]
fn item(
    st: &ApiState,
    verb: &str,
    view: View,
    resource: Resource,
    ns: &str,
    name: &str,
    body: &[u8],
    content_type: &str,
    params: &Params,
    render: Render,
    status_only: bool,
) -> Response {
    match verb {
        "get" => match st.store.get(resource, ns, name) {
            Some(o) => match render {
                Render::Table(include) => json_value(
                    StatusCode::OK,
                    &table::table(
                        resource,
                        &[&o],
                        o.rv(),
                        None,
                        include,
                        st.store.clock.now(),
                        true,
                    ),
                ),
                Render::Metadata => json_value(StatusCode::OK, &metadata_only(&o)),
                Render::Json => json_body(StatusCode::OK, view_bytes(view, resource, &o)),
            },
            None => ApiError::not_found(resource, name).into_response(),
        },
        "delete" => match st
            .store
            .delete(resource, ns, name, &delete_options(body, params))
        {
            Ok(d) => deleted_response(view, resource, &d),
            Err(e) => e.into_response(),
        },
        "update" => {
            let mut v: Value = match serde_json::from_slice(body) {
                Ok(v) => v,
                Err(e) => {
                    return ApiError::bad_request(format!(
                        "the request body is not valid JSON: {e}"
                    ))
                    .into_response();
                }
            };
            if view == View::EventsV1 {
                v = events_view::to_core(&v);
            }
            if v["metadata"]["name"].as_str().is_some_and(|n| n != name) {
                return ApiError::bad_request(
                    "the name of the object does not match the name on the URL",
                )
                .into_response();
            }
            match st.store.update(resource, ns, name, v, status_only) {
                Ok(o) => json_value(StatusCode::OK, &view_value(view, resource, &o)),
                Err(e) => e.into_response(),
            }
        }
        _ => {
            let Some(kind) = PatchType::from_content_type(content_type) else {
                return ApiError::unsupported_media(content_type).into_response();
            };
            let current = st.store.get(resource, ns, name);
            let Some(current) = current else {
                if kind == PatchType::Apply {
                    let v = match patch::apply(&json!({}), kind, body) {
                        Ok(v) => v,
                        Err(e) => return e.into_response(),
                    };
                    return create(st, view, resource, ns, v, params);
                }
                return ApiError::not_found(resource, name).into_response();
            };
            let base = view_value(view, resource, &current);
            let mut patched = match patch::apply(&base, kind, body) {
                Ok(v) => v,
                Err(e) => return e.into_response(),
            };
            if view == View::EventsV1 {
                patched = events_view::to_core(&patched);
            }
            // A resourceVersion in the patch is a precondition; without one, patch the
            // current version.
            if patched["metadata"]["resourceVersion"] == base["metadata"]["resourceVersion"] {
                patched["metadata"]["resourceVersion"] = json!(current.rv().to_string());
            }
            match st.store.update(resource, ns, name, patched, status_only) {
                Ok(o) => json_value(StatusCode::OK, &view_value(view, resource, &o)),
                Err(e) => e.into_response(),
            }
        }
    }
}

fn evict(st: &ApiState, ns: &str, name: &str, body: &[u8]) -> Response {
    let Some(_) = st.store.get(Resource::Pods, ns, name) else {
        return ApiError::not_found(Resource::Pods, name).into_response();
    };
    let now = super::clock::fmt_time(st.store.clock.now());
    st.store.modify(Resource::Pods, ns, name, |p| {
        super::kube_status::set_condition(
            p,
            "DisruptionTarget",
            "True",
            "EvictionByEvictionAPI",
            "Eviction API: evicting",
            &now,
        );
        true
    });
    match st.store.delete(
        Resource::Pods,
        ns,
        name,
        &delete_options(body, &Params::default()),
    ) {
        Ok(_) => json_value(
            StatusCode::CREATED,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        ),
        Err(e) => e.into_response(),
    }
}

fn access_review(st: &ApiState, body: &[u8]) -> Response {
    let mut review: Value = serde_json::from_slice(body).unwrap_or_else(|_| json!({}));
    let attrs = &review["spec"]["resourceAttributes"];
    let verb = attrs["verb"].as_str().unwrap_or_default().to_owned();
    let mut resource = attrs["resource"].as_str().unwrap_or_default().to_owned();
    if let Some(sub) = attrs["subresource"].as_str().filter(|s| !s.is_empty()) {
        resource = format!("{resource}/{sub}");
    }
    let denied = st.faults.denies(&verb, &resource);
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!("SelfSubjectAccessReview");
    review["status"] = if denied {
        json!({"allowed": false, "denied": true, "reason": format!("simulated RBAC: {verb} on {resource} is denied (--fault deny)")})
    } else {
        json!({"allowed": true, "reason": "simulated RBAC: allowed"})
    };
    json_value(StatusCode::CREATED, &review)
}

/// `pods/{name}:{port}/proxy/…`: the Spark-like driver of that pod answers.
fn pod_proxy(st: &ApiState, ns: &str, pod: &str, rest: &str) -> Response {
    let name = pod.split(':').next().unwrap_or(pod);
    let Some(p) = st.store.get(Resource::Pods, ns, name) else {
        return ApiError::not_found(Resource::Pods, name).into_response();
    };
    if p.value["status"]["phase"] != "Running" {
        return ApiError::unavailable(format!("pod {name} is not running")).into_response();
    }
    match spark_rest::serve_app(&st.spark, ns, |a| a.driver_pod == name, rest) {
        Some((code, v)) => json_value(StatusCode::from_u16(code).unwrap_or(StatusCode::OK), &v),
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
    match spark_rest::serve(&st.store, &st.spark, &service, port, rest, query) {
        Ok((code, v)) => json_value(StatusCode::from_u16(code).unwrap_or(StatusCode::OK), &v),
        Err(e)
            if st.forward_local
                && e.code == 503
                && spark_rest::has_endpoints(&st.store, &service) =>
        {
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

fn pod_log(st: &ApiState, ns: &str, name: &str, params: &Params) -> Response {
    let Some(pod) = st.store.get(Resource::Pods, ns, name) else {
        return ApiError::not_found(Resource::Pods, name).into_response();
    };
    let containers: Vec<String> = pod.value["spec"]["containers"]
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
    let statuses = pod.value["status"]["containerStatuses"]
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

fn render_obj(
    view: View,
    resource: Resource,
    obj: &Obj,
    render: Render,
    now: chrono::DateTime<chrono::Utc>,
) -> Bytes {
    match render {
        Render::Json => view_bytes(view, resource, obj),
        Render::Metadata => {
            Bytes::from(serde_json::to_vec(&metadata_only(obj)).unwrap_or_default())
        }
        Render::Table(include) => Bytes::from(
            serde_json::to_vec(&table::table(
                resource,
                &[obj],
                obj.rv(),
                None,
                include,
                now,
                true,
            ))
            .unwrap_or_default(),
        ),
    }
}

fn bookmark(resource: Resource, view: View, rv: u64, initial_end: bool) -> Vec<u8> {
    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let mut obj = json!({"kind": resource.kind(), "apiVersion": api_version(view, resource), "metadata": meta});
    if resource == Resource::Pods {
        obj["spec"] = json!({"containers": null});
        obj["status"] = json!({});
    }
    event_line("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
}

/// Produces watch event lines into `tx` until the client leaves, the timeout passes, or a
/// fault/restart ends the watch.
async fn watch_loop(
    st: Arc<ApiState>,
    view: View,
    resource: Resource,
    q: Query,
    params: Params,
    render: Render,
    tx: mpsc::Sender<Vec<u8>>,
) {
    let send_initial = params.flag("sendInitialEvents");
    let bookmarks = params.flag("allowWatchBookmarks");
    let rv: Option<u64> = match params.get("resourceVersion") {
        None | Some("0") => None,
        Some(v) => match v.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                let e = ApiError::bad_request(format!("invalid resource version: {v}"));
                let _ = tx
                    .send(event_line(
                        "ERROR",
                        &serde_json::to_vec(&e.status()).unwrap_or_default(),
                    ))
                    .await;
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
        let _ = tx
            .send(event_line(
                "ERROR",
                &serde_json::to_vec(&e.status()).unwrap_or_default(),
            ))
            .await;
        return;
    }
    let sub = match st.store.subscribe(resource, &q, rv) {
        Ok(s) => s,
        Err(e) => {
            // Errors after the watch was accepted travel inside the 200 stream (kube-rs and
            // client-go relist on a 410 ERROR event; an HTTP 410 would make them spin).
            let _ = tx
                .send(event_line(
                    "ERROR",
                    &serde_json::to_vec(&e.status()).unwrap_or_default(),
                ))
                .await;
            return;
        }
    };
    let now = || st.store.clock.now();
    let mut last_rv = sub.rv;
    for o in &sub.initial {
        if tx
            .send(event_line(
                "ADDED",
                &render_obj(view, resource, o, render, now()),
            ))
            .await
            .is_err()
        {
            return;
        }
    }
    if send_initial
        && tx
            .send(bookmark(resource, view, sub.rv, true))
            .await
            .is_err()
    {
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
    let mut pending: VecDeque<Arc<super::store::Change>> = sub.replay.into();
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
                    if bookmarks && tx.send(bookmark(resource, view, last_rv, false)).await.is_err() {
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
        let line = event_line(
            kind,
            &render_obj(view, resource, &change.new, render, now()),
        );
        if tx.send(line).await.is_err() {
            return;
        }
    }
}

fn watch_http(
    st: Arc<ApiState>,
    view: View,
    resource: Resource,
    q: Query,
    params: Params,
    render: Render,
) -> Response {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(256);
    tokio::spawn(watch_loop(st, view, resource, q, params, render, tx));
    let stream = ReceiverStream::new(rx).map(|mut line| {
        line.push(b'\n');
        Ok::<_, Infallible>(Bytes::from(line))
    });
    json_body(StatusCode::OK, Body::from_stream(stream))
}

async fn watch_ws(
    st: Arc<ApiState>,
    view: View,
    resource: Resource,
    q: Query,
    params: Params,
    render: Render,
    mut socket: axum::extract::ws::WebSocket,
) {
    use axum::extract::ws::Message;
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(256);
    tokio::spawn(watch_loop(st, view, resource, q, params, render, tx));
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
