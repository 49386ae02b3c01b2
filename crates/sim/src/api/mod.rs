//! The HTTP face of the simulator: routes Kubernetes API paths to the store, with the wire
//! details real clients depend on (docs/simulator.md, "What is simulated"). One handler
//! parses the path itself, because Kubernetes paths (`services/{name}:{port}/proxy/…`,
//! trailing `?`, cluster-wide and namespaced forms of one resource) fit a router poorly.
//!
//! `routing` turns a request into a [`Route`] and a [`Ctx`]; `objects` serves the verbs on
//! stored objects, `watch` the watches (HTTP and WebSocket), `logs` the container logs and
//! `proxy` the service and pod proxies to the Spark-like drivers.

mod logs;
mod objects;
mod proxy;
mod requests;
mod routing;
mod watch;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use objects::ItemRequest;
pub use requests::RequestRecord;
use routing::{ApiGroup, Params, Render, Route, build_query, render_mode, route};
use serde_json::{Value, json};
use tokio::sync::watch as signal;

use crate::error::ApiError;
use crate::faults::Faults;
use crate::logs::Logs;
use crate::spark_registry::SparkRegistry;
use crate::store::{Obj, ObjectStore, Resource};
use crate::{discovery, events_view, spark_rest, table};

/// Shared state of the API server.
#[derive(Debug)]
pub struct ApiState {
    pub store: Arc<ObjectStore>,
    pub logs: Arc<Logs>,
    pub faults: Faults,
    /// Bumped to end every watch and log stream (restart, drop-watches).
    pub drop_watches: signal::Receiver<u64>,
    pub requests: Mutex<VecDeque<RequestRecord>>,
    /// How many requests were ever recorded (the log keeps the newest).
    pub recorded: std::sync::atomic::AtomicU64,
    pub server_addr: String,
    pub user: String,
    pub spark: Arc<SparkRegistry>,
    /// How often watches that allow bookmarks get one (the real cacher: about a minute).
    pub bookmark_every: Duration,
    /// The process kubelet is on: a service proxy with no simulated driver behind it
    /// forwards to `127.0.0.1:<targetPort>` (where a real driver's UI listens).
    pub forward_local: bool,
    /// Whether a service has a ready endpoint, as last worked out, and when: a proxied
    /// request reuses it for a second (the endpoints controller lags as much), instead of
    /// matching the service's selector against every pod of the namespace (100k at scale).
    pub endpoints: Mutex<std::collections::HashMap<(String, String), (std::time::Instant, bool)>>,
    /// The bearer tokens accepted, once a client sets them (`PUT /_sim/tokens`); until then
    /// (or after `DELETE`) every request is, as on a cluster with anonymous access.
    pub tokens: Mutex<Option<std::collections::HashSet<String>>>,
    /// The CRDs installed of `Resource::OPTIONAL` (the others are not served: 404, and
    /// absent from discovery).
    pub installed: Vec<Resource>,
}

const MAX_BODY: usize = 16 * 1024 * 1024;

impl ApiState {
    fn has_endpoints(&self, service: &Obj) -> bool {
        let key = (service.namespace().to_owned(), service.name().to_owned());
        let now = std::time::Instant::now();
        let mut memo = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, ready)) = memo.get(&key)
            && now.duration_since(*at) < Duration::from_secs(1)
        {
            return *ready;
        }
        let ready = spark_rest::has_endpoints(&self.store, &self.spark, service);
        if memo.len() > 10_000 {
            memo.clear();
        }
        memo.insert(key, (now, ready));
        ready
    }

    /// The Forbidden answer when the `deny` fault covers this verb on this resource.
    fn check(&self, verb: &str, resource: &str, ns: Option<&str>) -> Result<(), ApiError> {
        if self.faults.denies(verb, resource) {
            return Err(ApiError::forbidden(&self.user, verb, resource, ns));
        }
        Ok(())
    }

    /// [`Self::check`] for a stored resource, worded with its API group.
    fn check_res(&self, verb: &str, resource: Resource, ns: Option<&str>) -> Result<(), ApiError> {
        if self.faults.denies(verb, resource.plural()) {
            let group = resource
                .group_version()
                .split_once('/')
                .map_or("", |(g, _)| g);
            return Err(ApiError::forbidden_in(
                &self.user,
                verb,
                resource.plural(),
                group,
                ns,
            ));
        }
        Ok(())
    }
}

/// One request to a resource, as every handler reads it: the server, the API group the path
/// used, the resource, the query parameters and the rendering the client accepts. Owned, so
/// a watch can take it into its task.
#[derive(Debug, Clone)]
struct Ctx {
    st: Arc<ApiState>,
    group: ApiGroup,
    resource: Resource,
    params: Params,
    render: Render,
}

impl Ctx {
    /// Events read through `events.k8s.io/v1` are converted; everything else is as stored.
    fn converts(&self) -> bool {
        self.group == ApiGroup::EventsV1 && self.resource == Resource::Events
    }

    /// The object as this group shows it, serialised.
    fn view_bytes(&self, obj: &Obj) -> Bytes {
        if self.converts() {
            Bytes::from(serde_json::to_vec(&events_view::to_v1(&obj.value())).unwrap_or_default())
        } else {
            obj.json()
        }
    }

    fn view_value(&self, obj: &Obj) -> Value {
        if self.converts() {
            events_view::to_v1(&obj.value())
        } else {
            obj.value()
        }
    }

    fn api_version(&self) -> &'static str {
        if self.converts() {
            "events.k8s.io/v1"
        } else {
            self.resource.group_version()
        }
    }

    /// One object as the client asked for it (JSON, metadata only, or a one-row table).
    fn render_one(&self, obj: &Obj) -> Bytes {
        match self.render {
            Render::Json => self.view_bytes(obj),
            Render::Metadata => {
                Bytes::from(serde_json::to_vec(&metadata_only(obj)).unwrap_or_default())
            }
            Render::Table(include) => Bytes::from(
                serde_json::to_vec(&table::table(
                    self.resource,
                    &[obj],
                    obj.rv(),
                    None,
                    include,
                    self.st.store.clock.now(),
                    true,
                ))
                .unwrap_or_default(),
            ),
        }
    }
}

fn metadata_only(obj: &Obj) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.metadata()})
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

/// `PUT /_sim/tokens` with a JSON array: only these bearer tokens are accepted from now on
/// (a revoked token is refused at its next request, as by kube-apiserver); `DELETE`: any.
async fn set_tokens(st: &ApiState, method: &Method, req: Request) -> Response {
    let mut tokens = st.tokens.lock().unwrap_or_else(|e| e.into_inner());
    match *method {
        Method::DELETE => {
            *tokens = None;
            json_value(StatusCode::OK, &json!({"tokens": null}))
        }
        Method::PUT => {
            drop(tokens);
            let Ok(body) = axum::body::to_bytes(req.into_body(), 1024 * 1024).await else {
                return ApiError::bad_request("the body is too large").into_response();
            };
            let Ok(list) = serde_json::from_slice::<Vec<String>>(&body) else {
                return ApiError::bad_request("expected a JSON array of tokens").into_response();
            };
            let n = list.len();
            *st.tokens.lock().unwrap_or_else(|e| e.into_inner()) = Some(list.into_iter().collect());
            json_value(StatusCode::OK, &json!({"tokens": n}))
        }
        _ => ApiError::method_not_allowed().into_response(),
    }
}

/// Whether the request asks to upgrade to a WebSocket.
fn wants_websocket(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Whether the request's bearer token is accepted (any is, until tokens are set).
fn authenticated(st: &ApiState, headers: &axum::http::HeaderMap) -> bool {
    let tokens = st.tokens.lock().unwrap_or_else(|e| e.into_inner());
    let Some(tokens) = tokens.as_ref() else {
        return true;
    };
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| tokens.contains(t.trim()))
}

/// Discovery is never failed by the error-rate fault (clients cache it and would only retry).
fn is_discovery(path: &str) -> bool {
    path == "/api"
        || path == "/apis"
        || path.starts_with("/api/v1?")
        || path == "/api/v1"
        || (path.starts_with("/apis/") && path.matches('/').count() <= 3)
}

/// [`handle`], with the `Date` header on the simulated clock (as a real API server sends
/// its own): a client that reads the cluster's time from it agrees with the timestamps.
pub async fn dated(state: State<Arc<ApiState>>, req: Request) -> Response {
    let now = state.0.store.clock.now();
    let st = state.0.clone();
    let started = std::time::Instant::now();
    let websocket = wants_websocket(req.headers());
    let n = st.record(req.method(), req.uri(), websocket);
    let mut resp = handle(state, req).await;
    st.answered(
        n,
        started.elapsed(),
        axum::body::HttpBody::size_hint(resp.body()).exact(),
    );
    if let Ok(v) = HeaderValue::from_str(&now.format("%a, %d %b %Y %H:%M:%S GMT").to_string()) {
        resp.headers_mut().insert(header::DATE, v);
    }
    resp
}

/// The whole API: every request comes through here.
pub async fn handle(State(st): State<Arc<ApiState>>, req: Request) -> Response {
    let method = req.method().clone();
    let uri = req.uri().clone();
    let websocket = wants_websocket(req.headers());
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
    if path == "/_sim/tokens" {
        return set_tokens(&st, &method, req).await;
    }
    if let Some(rest) = path.strip_prefix("/_sim/") {
        return sim_control(&st, &method, rest);
    }
    if !authenticated(&st, req.headers()) {
        return ApiError::unauthorized().into_response();
    }
    if let Some(l) = st.faults.latency {
        tokio::time::sleep(l).await;
    }
    if st.faults.error_rate > 0.0 && !is_discovery(&path) && fastrand::f64() < st.faults.error_rate
    {
        return ApiError::internal("injected fault: error-rate").into_response();
    }
    let params = Params::parse(uri.query());
    let r = match route(&path, &st.server_addr, &st.installed) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let render = render_mode(req.headers(), &params);
    let cx = |group, resource, params| Ctx {
        st: st.clone(),
        group,
        resource,
        params,
        render,
    };
    let answer = match r {
        Route::Doc(v) => Ok(json_value(StatusCode::OK, &v)),
        Route::AccessReview => read_body(req)
            .await
            .map(|body| objects::access_review(&st, &body))
            .map_err(IntoResponse::into_response),
        Route::Proxy {
            ns,
            to_pod,
            target,
            rest,
        } => proxy::serve(&st, &ns, to_pod, &target, &rest, uri.query()).await,
        Route::Collection {
            group,
            resource,
            ns,
        } => collection(cx(group, resource, params), &method, ns, websocket, req).await,
        Route::Item {
            group,
            resource,
            ns,
            name,
        } => item(cx(group, resource, params), &method, &ns, &name, req).await,
        Route::Sub {
            resource,
            ns,
            name,
            sub,
        } => {
            let cx = cx(ApiGroup::Core, resource, params);
            match subresource(cx, &method, &ns, &name, &sub, req).await {
                Ok(Some(answer)) => Ok(answer),
                Ok(None) => Err(ApiError::not_found_path(&path).into_response()),
                Err(e) => Err(e),
            }
        }
    };
    answer.unwrap_or_else(|e| e)
}

/// `GET` (list or watch), `POST` and `DELETE` on a collection.
async fn collection(
    cx: Ctx,
    method: &Method,
    ns: Option<String>,
    websocket: bool,
    req: Request,
) -> Result<Response, Response> {
    let verb = match (method, cx.params.flag("watch")) {
        (&Method::GET, true) => "watch",
        (&Method::GET, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::DELETE, _) => "deletecollection",
        _ => return Err(ApiError::method_not_allowed().into_response()),
    };
    cx.st
        .check_res(verb, cx.resource, ns.as_deref())
        .map_err(IntoResponse::into_response)?;
    let query = build_query(cx.group, cx.resource, ns.clone(), &cx.params)
        .map_err(IntoResponse::into_response)?;
    Ok(match verb {
        "watch" if websocket && cx.st.faults.no_websocket => {
            ApiError::unavailable("WebSocket watches are refused (fault no-websocket)")
                .into_response()
        }
        "watch" if websocket => {
            let (mut parts, _) = req.into_parts();
            let ws = WebSocketUpgrade::from_request_parts(&mut parts, &cx.st)
                .await
                .map_err(IntoResponse::into_response)?;
            ws.on_upgrade(move |socket| watch::over_websocket(cx, query, socket))
        }
        "watch" => watch::over_http(cx, query),
        "list" => cx.list(&query),
        "create" => {
            let body = read_json(req).await.map_err(IntoResponse::into_response)?;
            cx.create(ns.as_deref().unwrap_or_default(), body)
        }
        _ => {
            let body = read_body(req).await.unwrap_or_default();
            cx.delete_collection(&query, &body)
        }
    })
}

fn content_type(req: &Request) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned()
}

/// `GET`, `PUT`, `PATCH` and `DELETE` on one object.
async fn item(
    cx: Ctx,
    method: &Method,
    ns: &str,
    name: &str,
    req: Request,
) -> Result<Response, Response> {
    let verb = match *method {
        Method::GET => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => return Err(ApiError::method_not_allowed().into_response()),
    };
    cx.st
        .check_res(verb, cx.resource, Some(ns))
        .map_err(IntoResponse::into_response)?;
    let content_type = content_type(&req);
    let body = read_body(req).await.map_err(IntoResponse::into_response)?;
    let target = ItemRequest {
        ns,
        name,
        body: &body,
        content_type: &content_type,
        status_only: false,
    };
    Ok(cx.item(verb, &target))
}

/// `status`, `log` and `eviction`; `None` for any other subresource.
async fn subresource(
    cx: Ctx,
    method: &Method,
    ns: &str,
    name: &str,
    sub: &str,
    req: Request,
) -> Result<Option<Response>, Response> {
    let content_type = content_type(&req);
    let body = read_body(req).await.map_err(IntoResponse::into_response)?;
    let answer = match (cx.resource, sub, method) {
        (_, "status", m) => {
            let verb = match *m {
                Method::GET => "get",
                Method::PUT => "update",
                Method::PATCH => "patch",
                _ => return Err(ApiError::method_not_allowed().into_response()),
            };
            if cx.st.faults.denies(verb, cx.resource.plural()) {
                return Err(
                    ApiError::forbidden(&cx.st.user, verb, "pods/status", Some(ns)).into_response(),
                );
            }
            let target = ItemRequest {
                ns,
                name,
                body: &body,
                content_type: &content_type,
                status_only: true,
            };
            cx.item(verb, &target)
        }
        (Resource::Pods, "log", &Method::GET) => logs::pod_log(&cx.st, ns, name, &cx.params),
        (Resource::Pods, "eviction", &Method::POST) => {
            if cx.st.faults.denies("create", "pods/eviction")
                || cx.st.faults.denies("delete", "pods")
            {
                return Err(
                    ApiError::forbidden(&cx.st.user, "create", "pods/eviction", Some(ns))
                        .into_response(),
                );
            }
            objects::evict(&cx.st, ns, name, &body)
        }
        _ => return Ok(None),
    };
    Ok(Some(answer))
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
