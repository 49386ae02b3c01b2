//! The writes themselves: delete a pod, add and remove the hold finalizer (JSON patches
//! whose `test` ops leave every other finalizer alone), mark an app's hold on its driver,
//! and read a container's log.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Api, Client};
use serde_json::json;
use spark_triage_core::model::{HOLD_EXPIRES, HOLD_FINALIZER, fmt_time};

use super::Denied;
use crate::redact;
use crate::source::errors;

/// A failed write, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("{0}")]
    Denied(#[from] Denied),
    #[error("{verb} {namespace}/{pod}: forbidden ({message})")]
    Forbidden {
        verb: String,
        namespace: String,
        pod: String,
        message: String,
    },
    #[error("{verb} {namespace}/{pod}: {message}")]
    Api {
        verb: String,
        namespace: String,
        pod: String,
        message: String,
    },
    #[error("{verb} {namespace}/{pod}: not found (already gone)")]
    NotFound {
        verb: String,
        namespace: String,
        pod: String,
    },
}

impl WriteError {
    /// The pod is gone (a 404).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    fn from_kube(verb: &str, namespace: &str, pod: &str, e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) if s.code == 404 => Self::NotFound {
                verb: verb.to_owned(),
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
            },
            kube::Error::Api(s) if s.code == 403 => Self::Forbidden {
                verb: verb.to_owned(),
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
                message: redact::one_line(&s.message),
            },
            other => Self::Api {
                verb: verb.to_owned(),
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
                message: errors::error_line(&other),
            },
        }
    }
}

/// Deletes an executor pod, only the one seen (`uid`: a precondition, so a pod recreated
/// under the same name, as a StatefulSet's are, is left alone). `grace` `None` = the pod's
/// own grace period.
pub async fn kill(
    client: &Client,
    namespace: &str,
    pod: &str,
    uid: Option<&str>,
    grace: Option<u32>,
) -> Result<(), WriteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let dp = DeleteParams {
        grace_period_seconds: grace,
        preconditions: uid.map(|u| Preconditions {
            uid: Some(u.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    api.delete(pod, &dp)
        .await
        .map(|_| ())
        .map_err(|e| WriteError::from_kube("delete", namespace, pod, e))
}

/// Marks a pod as killed by spark-triage (who, when) just before its deletion, so every
/// other view of the cluster (a recorder, another terminal, a later `status`) says the kill
/// was the tool's and not an incident. With `uid`, only on that pod; a JSON patch whose
/// `test` pins the version read, so nothing else the pod carries is touched.
pub async fn mark_killed(
    client: &Client,
    namespace: &str,
    pod: &str,
    uid: Option<&str>,
    by: &str,
    at: DateTime<Utc>,
) -> Result<(), WriteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let current = api
        .get(pod)
        .await
        .map_err(|e| WriteError::from_kube("get", namespace, pod, e))?;
    if uid.is_some_and(|u| current.metadata.uid.as_deref() != Some(u)) {
        return Err(WriteError::Api {
            verb: "patch".to_owned(),
            namespace: namespace.to_owned(),
            pod: pod.to_owned(),
            message: "the pod was replaced by another of the same name since it was seen; nothing written".to_owned(),
        });
    }
    let mut ops = vec![json!({"op": "test", "path": "/metadata/resourceVersion",
        "value": current.metadata.resource_version})];
    if current.metadata.annotations.is_none() {
        ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
    }
    ops.push(
        json!({"op": "add", "path": "/metadata/annotations/spark-triage.dev~1killed-at",
        "value": fmt_time(&at)}),
    );
    ops.push(
        json!({"op": "add", "path": "/metadata/annotations/spark-triage.dev~1killed-by",
        "value": by}),
    );
    json_patch_pod(&api, namespace, pod, ops)
        .await
        .map(|_| ())
        .map_err(|e| WriteError::from_kube("patch", namespace, pod, e))
}

/// Takes [`mark_killed`]'s mark off again (the deletion it announced was refused): best
/// effort, a pod left marked says a kill that did not happen.
pub async fn unmark_killed(client: &Client, namespace: &str, pod: &str) -> Result<(), WriteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let ops = vec![
        json!({"op": "remove", "path": "/metadata/annotations/spark-triage.dev~1killed-at"}),
        json!({"op": "remove", "path": "/metadata/annotations/spark-triage.dev~1killed-by"}),
    ];
    json_patch_pod(&api, namespace, pod, ops)
        .await
        .map(|_| ())
        .map_err(|e| WriteError::from_kube("patch", namespace, pod, e))
}

/// Adds the hold finalizer (if absent) and sets the expiry annotation, without touching
/// other finalizers (the patch tests the list it read). Retries once if the pod changed.
/// With `uid`, only on that pod: one recreated under its name is refused.
pub async fn hold_pod(
    client: &Client,
    namespace: &str,
    pod: &str,
    uid: Option<&str>,
    expires: DateTime<Utc>,
) -> Result<bool, WriteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    for attempt in 0..3 {
        let current = api
            .get(pod)
            .await
            .map_err(|e| WriteError::from_kube("get", namespace, pod, e))?;
        if let Some(uid) = uid
            && current.metadata.uid.as_deref() != Some(uid)
        {
            return Err(WriteError::Api {
                verb: "patch".to_owned(),
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
                message: "the pod was replaced by another of the same name since it was seen; nothing written".to_owned(),
            });
        }
        if current.metadata.deletion_timestamp.is_some() {
            return Ok(false); // finalizers cannot be added to a deleting pod
        }
        let finalizers = current.metadata.finalizers.clone().unwrap_or_default();
        let mut ops = Vec::new();
        if !finalizers.iter().any(|f| f == HOLD_FINALIZER) {
            if current.metadata.finalizers.is_none() {
                ops.push(
                    json!({"op": "add", "path": "/metadata/finalizers", "value": [HOLD_FINALIZER]}),
                );
            } else {
                ops.push(
                    json!({"op": "test", "path": "/metadata/finalizers", "value": finalizers}),
                );
                ops.push(
                    json!({"op": "add", "path": "/metadata/finalizers/-", "value": HOLD_FINALIZER}),
                );
            }
        }
        if current.metadata.annotations.is_none() {
            ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
        }
        ops.push(json!({"op": "add", "path": "/metadata/annotations/spark-triage.dev~1hold-expires", "value": fmt_time(&expires)}));
        match json_patch_pod(&api, namespace, pod, ops).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.code == 422 && attempt < 2 => continue,
            Err(e) => return Err(WriteError::from_kube("patch", namespace, pod, e)),
        }
    }
    Ok(false)
}

/// Sends a JSON patch (RFC 6902) built from `ops` to a pod.
async fn json_patch_pod(
    api: &Api<Pod>,
    namespace: &str,
    pod: &str,
    ops: Vec<serde_json::Value>,
) -> Result<Pod, kube::Error> {
    let patch: json_patch::Patch = serde_json::from_value(json!(ops)).map_err(|e| {
        kube::Error::Api(Box::new(kube::core::Status {
            code: 400,
            reason: "BadRequest".into(),
            message: format!("patch for {namespace}/{pod}: {e}"),
            ..kube::core::Status::default()
        }))
    })?;
    api.patch(pod, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
}

/// Removes only the tool's finalizer (a `test` op pins its position) and its annotation.
pub async fn release_pod(client: &Client, namespace: &str, pod: &str) -> Result<bool, WriteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    for attempt in 0..3 {
        let Some(current) = api
            .get_opt(pod)
            .await
            .map_err(|e| WriteError::from_kube("get", namespace, pod, e))?
        else {
            return Ok(false);
        };
        let finalizers = current.metadata.finalizers.clone().unwrap_or_default();
        let mut ops = Vec::new();
        if let Some(i) = finalizers.iter().position(|f| f == HOLD_FINALIZER) {
            ops.push(json!({"op": "test", "path": format!("/metadata/finalizers/{i}"), "value": HOLD_FINALIZER}));
            ops.push(json!({"op": "remove", "path": format!("/metadata/finalizers/{i}")}));
        }
        if current
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(HOLD_EXPIRES))
        {
            ops.push(json!({"op": "remove", "path": "/metadata/annotations/spark-triage.dev~1hold-expires"}));
        }
        if ops.is_empty() {
            return Ok(false);
        }
        match json_patch_pod(&api, namespace, pod, ops).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if (s.code == 422 || s.code == 404) && attempt < 2 => continue,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(false),
            Err(e) => return Err(WriteError::from_kube("patch", namespace, pod, e)),
        }
    }
    Ok(false)
}

/// Marks (or clears) the app-level hold on the driver pod.
pub async fn mark_app_hold(
    client: &Client,
    namespace: &str,
    driver: &str,
    expires: Option<DateTime<Utc>>,
) -> Result<(), WriteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let value = expires
        .map(|e| json!(fmt_time(&e)))
        .unwrap_or(serde_json::Value::Null);
    let patch = json!({"metadata": {"annotations": {HOLD_EXPIRES: value}}});
    api.patch(driver, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map(|_| ())
        .map_err(|e| WriteError::from_kube("patch", namespace, driver, e))
}
