//! From a request to what it asks for: the path parsed into a [`Route`], the query
//! parameters, the rendering the client accepts, and the selectors as a store query.

use std::collections::HashMap;

use axum::http::{HeaderMap, header};
use serde_json::Value;

use crate::discovery;
use crate::error::ApiError;
use crate::selector::{FieldKind, FieldSelector, LabelSelector};
use crate::store::{Query, Resource};
use crate::table::Include;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ApiGroup {
    Core,
    EventsV1,
    /// A resource of another API group (the batch schedulers' CRDs), served as stored.
    Extension,
}

#[derive(Debug)]
pub(super) enum Route {
    Doc(Value),
    Collection {
        group: ApiGroup,
        resource: Resource,
        ns: Option<String>,
    },
    Item {
        group: ApiGroup,
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

pub(super) fn route(
    path: &str,
    server_addr: &str,
    installed: &[Resource],
) -> Result<Route, ApiError> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let nf = || ApiError::not_found_path(path);
    let ext = |g: &str, v: &str, r: &str| {
        ext(g, v, r).filter(|r| !Resource::OPTIONAL.contains(r) || installed.contains(r))
    };
    let res = |s: &str| Resource::from_plural(s).ok_or_else(nf);
    match segs.as_slice() {
        ["api"] => Ok(Route::Doc(discovery::api_versions(server_addr))),
        ["api", "v1"] => Ok(Route::Doc(discovery::core_v1())),
        ["apis"] => Ok(Route::Doc(discovery::api_groups(installed))),
        ["apis", g] => discovery::api_group(g, installed)
            .map(Route::Doc)
            .ok_or_else(nf),
        ["apis", g, v] => discovery::group_resources(g, v, installed)
            .map(Route::Doc)
            .ok_or_else(nf),
        [
            "apis",
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
        ] => Ok(Route::AccessReview),
        ["apis", "events.k8s.io", "v1", "events"] => Ok(Route::Collection {
            group: ApiGroup::EventsV1,
            resource: Resource::Events,
            ns: None,
        }),
        ["apis", "events.k8s.io", "v1", "namespaces", ns, "events"] => Ok(Route::Collection {
            group: ApiGroup::EventsV1,
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
            group: ApiGroup::EventsV1,
            resource: Resource::Events,
            ns: (*ns).to_owned(),
            name: (*name).to_owned(),
        }),
        ["apis", g, v, r] if ext(g, v, r).is_some() => Ok(Route::Collection {
            group: ApiGroup::Extension,
            resource: ext(g, v, r).ok_or_else(nf)?,
            ns: None,
        }),
        ["apis", g, v, "namespaces", ns, r] if ext(g, v, r).is_some() => Ok(Route::Collection {
            group: ApiGroup::Extension,
            resource: ext(g, v, r).ok_or_else(nf)?,
            ns: Some((*ns).to_owned()),
        }),
        ["apis", g, v, "namespaces", ns, r, name] if ext(g, v, r).is_some() => Ok(Route::Item {
            group: ApiGroup::Extension,
            resource: ext(g, v, r).ok_or_else(nf)?,
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
            // Its trailing slash kept: a driver's UI tells `/metrics/json/` from the bare path.
            rest: if path.ends_with('/') && !rest.is_empty() {
                format!("{}/", rest.join("/"))
            } else {
                rest.join("/")
            },
        }),
        ["api", "v1", r] => Ok(Route::Collection {
            group: ApiGroup::Core,
            resource: res(r)?,
            ns: None,
        }),
        ["api", "v1", r, name] if !res(r)?.namespaced() => Ok(Route::Item {
            group: ApiGroup::Core,
            resource: res(r)?,
            ns: String::new(),
            name: (*name).to_owned(),
        }),
        ["api", "v1", "namespaces", ns, r] if res(r)?.namespaced() => Ok(Route::Collection {
            group: ApiGroup::Core,
            resource: res(r)?,
            ns: Some((*ns).to_owned()),
        }),
        ["api", "v1", "namespaces", ns, r, name] if res(r)?.namespaced() => Ok(Route::Item {
            group: ApiGroup::Core,
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

/// A resource of an API group other than the built-in ones (`scheduling.volcano.sh`, …).
fn ext(group: &str, version: &str, plural: &str) -> Option<Resource> {
    Resource::from_group(&format!("{group}/{version}"), plural)
        .filter(|r| r.group_version() != "v1")
}

/// Query parameters; a repeated key keeps its last value.

#[derive(Debug, Default, Clone)]
pub(super) struct Params(HashMap<String, String>);

impl Params {
    pub(super) fn parse(q: Option<&str>) -> Self {
        Self(
            form_urlencoded::parse(q.unwrap_or_default().as_bytes())
                .into_owned()
                .collect(),
        )
    }
    pub(super) fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str).filter(|s| !s.is_empty())
    }
    pub(super) fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1"))
    }
}

/// How objects are rendered for this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Render {
    Json,
    Table(Include),
    Metadata,
}

pub(super) fn render_mode(headers: &HeaderMap, params: &Params) -> Render {
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

pub(super) fn field_kind(group: ApiGroup, resource: Resource) -> FieldKind {
    match (group, resource) {
        (_, Resource::Pods) => FieldKind::Pod,
        (ApiGroup::Core, Resource::Events) => FieldKind::CoreEvent,
        (ApiGroup::EventsV1, Resource::Events) => FieldKind::EventsV1,
        _ => FieldKind::Generic,
    }
}

pub(super) fn build_query(
    group: ApiGroup,
    resource: Resource,
    ns: Option<String>,
    params: &Params,
) -> Result<Query, ApiError> {
    let labels = LabelSelector::parse(params.get("labelSelector").unwrap_or_default())
        .map_err(|e| ApiError::bad_request(e.0))?;
    let fields = FieldSelector::parse(
        params.get("fieldSelector").unwrap_or_default(),
        field_kind(group, resource),
    )
    .map_err(|e| ApiError::bad_request(e.0))?;
    Ok(Query {
        namespace: ns,
        labels,
        fields,
    })
}
