//! The verbs on stored objects: list, create, delete a collection, and get, update, patch,
//! delete one object; evictions and access reviews.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{ApiGroup, ApiState, Ctx, Params, Render, json_body, json_value, metadata_only};
use crate::error::ApiError;
use crate::patch::{self, PatchType};
use crate::store::{DeleteOptions, Deleted, Obj, Query, Resource};
use crate::{clock, events_view, kube_status, table};

/// A single-object request: which object, and the body it came with.
#[derive(Debug)]
pub(super) struct ItemRequest<'a> {
    pub ns: &'a str,
    pub name: &'a str,
    pub body: &'a [u8],
    pub content_type: &'a str,
    /// Through the `status` subresource: only the status changes.
    pub status_only: bool,
}

impl Ctx {
    pub(super) fn list(&self, q: &Query) -> Response {
        let st = &self.st;
        let limit = self
            .params
            .get("limit")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        // A LIST under a field selector reads every object (500,000 events): this worker's
        // other requests go to another meanwhile.
        let list = || {
            st.store
                .list(self.resource, q, limit, self.params.get("continue"))
        };
        let page = match if q.fields.is_empty() {
            list()
        } else {
            on_this_thread(list)
        } {
            Ok(p) => p,
            Err(e) => return e.into_response(),
        };
        match self.render {
            Render::Table(include) => {
                // Tables read the stored (core) shape, so both event views share them.
                let objs: Vec<&Obj> = page.items.iter().map(|o| o.as_ref()).collect();
                json_value(
                    StatusCode::OK,
                    &table::table(
                        self.resource,
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
                let mut out = Vec::with_capacity(page.items.len() * 4096 + 128);
                out.extend_from_slice(
                    format!(
                        "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
                        self.resource.kind(),
                        self.api_version(),
                        meta
                    )
                    .as_bytes(),
                );
                for (i, o) in page.items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(&self.view_bytes(o));
                }
                out.extend_from_slice(b"]}");
                json_body(StatusCode::OK, out)
            }
        }
    }

    pub(super) fn create(&self, ns: &str, mut body: Value) -> Response {
        if self.group == ApiGroup::EventsV1 {
            body = events_view::to_core(&body);
        }
        if self.params.get("dryRun").is_some() {
            return json_value(StatusCode::CREATED, &body);
        }
        match self.st.store.create(self.resource, ns, body) {
            Ok(obj) => json_value(StatusCode::CREATED, &self.view_value(&obj)),
            Err(e) => e.into_response(),
        }
    }

    pub(super) fn delete_collection(&self, q: &Query, body: &[u8]) -> Response {
        let opts = delete_options(body, &self.params);
        let (items, _) = self.st.store.list_all(self.resource, q);
        let mut deleted = Vec::new();
        for o in items {
            if let Ok(d) = self
                .st
                .store
                .delete(self.resource, o.namespace(), o.name(), &opts)
            {
                deleted.push(self.view_value(d.obj()));
            }
        }
        json_value(
            StatusCode::OK,
            &json!({"kind": format!("{}List", self.resource.kind()), "apiVersion": self.api_version(),
                    "metadata": {"resourceVersion": self.st.store.current_rv().to_string()}, "items": deleted}),
        )
    }

    /// One dispatch point for every single-object verb.
    pub(super) fn item(&self, verb: &str, r: &ItemRequest<'_>) -> Response {
        match verb {
            "get" => self.get(r),
            "delete" => self.delete(r),
            "update" => self.update(r),
            _ => self.patch(r),
        }
    }

    fn get(&self, r: &ItemRequest<'_>) -> Response {
        let Some(o) = self.st.store.get(self.resource, r.ns, r.name) else {
            return ApiError::not_found(self.resource, r.name).into_response();
        };
        match self.render {
            Render::Table(include) => json_value(
                StatusCode::OK,
                &table::table(
                    self.resource,
                    &[&o],
                    o.rv(),
                    None,
                    include,
                    self.st.store.clock.now(),
                    true,
                ),
            ),
            Render::Metadata => json_value(StatusCode::OK, &metadata_only(&o)),
            Render::Json => json_body(StatusCode::OK, self.view_bytes(&o)),
        }
    }

    fn delete(&self, r: &ItemRequest<'_>) -> Response {
        let opts = delete_options(r.body, &self.params);
        match self.st.store.delete(self.resource, r.ns, r.name, &opts) {
            Ok(d) => self.deleted_response(&d),
            Err(e) => e.into_response(),
        }
    }

    fn update(&self, r: &ItemRequest<'_>) -> Response {
        let mut v: Value = match serde_json::from_slice(r.body) {
            Ok(v) => v,
            Err(e) => {
                return ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
                    .into_response();
            }
        };
        if self.group == ApiGroup::EventsV1 {
            v = events_view::to_core(&v);
        }
        if v["metadata"]["name"].as_str().is_some_and(|n| n != r.name) {
            return ApiError::bad_request(
                "the name of the object does not match the name on the URL",
            )
            .into_response();
        }
        match self
            .st
            .store
            .update(self.resource, r.ns, r.name, v, r.status_only)
        {
            Ok(o) => json_value(StatusCode::OK, &self.view_value(&o)),
            Err(e) => e.into_response(),
        }
    }

    fn patch(&self, r: &ItemRequest<'_>) -> Response {
        let Some(kind) = PatchType::from_content_type(r.content_type) else {
            return ApiError::unsupported_media(r.content_type).into_response();
        };
        let Some(current) = self.st.store.get(self.resource, r.ns, r.name) else {
            // Server-side apply creates what is not there.
            if kind == PatchType::Apply {
                return match patch::apply(&json!({}), kind, r.body) {
                    Ok(v) => self.create(r.ns, v),
                    Err(e) => e.into_response(),
                };
            }
            return ApiError::not_found(self.resource, r.name).into_response();
        };
        let base = self.view_value(&current);
        let mut patched = match patch::apply(&base, kind, r.body) {
            Ok(v) => v,
            Err(e) => return e.into_response(),
        };
        if self.group == ApiGroup::EventsV1 {
            patched = events_view::to_core(&patched);
        }
        // A resourceVersion in the patch is a precondition; without one, patch the current
        // version.
        if patched["metadata"]["resourceVersion"] == base["metadata"]["resourceVersion"] {
            patched["metadata"]["resourceVersion"] = json!(current.rv().to_string());
        }
        match self
            .st
            .store
            .update(self.resource, r.ns, r.name, patched, r.status_only)
        {
            Ok(o) => json_value(StatusCode::OK, &self.view_value(&o)),
            Err(e) => e.into_response(),
        }
    }

    fn deleted_response(&self, d: &Deleted) -> Response {
        let obj = d.obj();
        if self.resource == Resource::Pods {
            return json_value(StatusCode::OK, &obj.value());
        }
        match d {
            Deleted::Pending(_) => json_value(StatusCode::OK, &self.view_value(obj)),
            Deleted::Gone(_) => json_value(
                StatusCode::OK,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "details": {"name": obj.name(), "kind": self.resource.plural(), "uid": obj.uid()}}),
            ),
        }
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

pub(super) fn evict(st: &ApiState, ns: &str, name: &str, body: &[u8]) -> Response {
    let Some(_) = st.store.get(Resource::Pods, ns, name) else {
        return ApiError::not_found(Resource::Pods, name).into_response();
    };
    let now = clock::fmt_time(st.store.clock.now());
    st.store.modify(Resource::Pods, ns, name, |p| {
        kube_status::set_condition(
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

pub(super) fn access_review(st: &ApiState, body: &[u8]) -> Response {
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

/// Runs `f`, a long read, letting the runtime move this worker's other tasks elsewhere
/// (on a multi-threaded runtime; elsewhere it just runs).
fn on_this_thread<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
