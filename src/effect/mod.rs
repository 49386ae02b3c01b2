//! The only code that writes to the cluster: kill executors, hold and release their pods,
//! fetch logs. Every write passes one gate (read-only mode, then the permission the API
//! granted through a SelfSubjectAccessReview) and is written to the actions log.
//!
//! Holding: the tool's finalizer `spark-triage.dev/hold` keeps an executor pod after Spark
//! deletes it (it stays Terminating with its final status), with an expiry annotation so any
//! instance can release it later. The app-level hold lives on the driver pod as the same
//! annotation, so every instance watching the app holds its new executors too. Releasing
//! removes only the tool's own finalizer, with a JSON patch whose `test` op guarantees no
//! other finalizer is touched.

use std::{
    collections::BTreeMap,
    io::Write,
    path::{Path, PathBuf},
};

use chrono::{DateTime, Utc};
use k8s_openapi::api::{
    authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec},
    core::v1::Pod,
};
use kube::{
    Api, Client,
    api::{DeleteParams, LogParams, Patch, PatchParams, PostParams},
};
use serde::Serialize;
use serde_json::json;

use crate::model::{HOLD_EXPIRES, HOLD_FINALIZER, fmt_time};

/// Why a write is not allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    #[error("read-only mode (--readonly)")]
    ReadOnly,
    #[error("missing permission: {verb} pods in namespace {namespace}")]
    Permission { verb: String, namespace: String },
}

/// What the API said the current user may do, per namespace and verb.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    allowed: BTreeMap<(String, String), bool>,
}

impl Permissions {
    /// Asks the API (SelfSubjectAccessReview) about `delete` and `patch` on pods in each
    /// namespace. A failing review counts as denied.
    pub async fn check(client: &Client, namespaces: &[String]) -> Self {
        let mut allowed = BTreeMap::new();
        for ns in namespaces {
            for verb in ["delete", "patch"] {
                allowed.insert((ns.clone(), verb.to_owned()), can(client, ns, verb).await);
            }
        }
        Self { allowed }
    }

    pub fn allow_all(namespaces: &[String]) -> Self {
        let mut allowed = BTreeMap::new();
        for ns in namespaces {
            for verb in ["delete", "patch"] {
                allowed.insert((ns.clone(), verb.to_owned()), true);
            }
        }
        Self { allowed }
    }

    /// Adds answers about more namespaces.
    pub fn merge(&mut self, other: Permissions) {
        self.allowed.extend(other.allowed);
    }

    /// Whether this namespace was asked about.
    pub fn knows(&self, namespace: &str) -> bool {
        self.allowed.keys().any(|(ns, _)| ns == namespace)
    }

    /// Records a 403 seen on a write.
    pub fn deny(&mut self, namespace: &str, verb: &str) {
        self.allowed
            .insert((namespace.to_owned(), verb.to_owned()), false);
    }

    /// `Ok` when `verb` on pods in `namespace` may be done. Unknown namespaces are allowed
    /// (the API will say no if not, and that is recorded).
    pub fn gate(&self, readonly: bool, namespace: &str, verb: &str) -> Result<(), Denied> {
        if readonly {
            return Err(Denied::ReadOnly);
        }
        match self.allowed.get(&(namespace.to_owned(), verb.to_owned())) {
            Some(false) => Err(Denied::Permission {
                verb: verb.to_owned(),
                namespace: namespace.to_owned(),
            }),
            _ => Ok(()),
        }
    }
}

async fn can(client: &Client, namespace: &str, verb: &str) -> bool {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_owned()),
                verb: Some(verb.to_owned()),
                resource: Some("pods".to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    api.create(&PostParams::default(), &review)
        .await
        .ok()
        .and_then(|r| r.status)
        .is_some_and(|s| s.allowed)
}

/// A failed write, in one line.
#[derive(Debug, thiserror::Error)]
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
}

impl WriteError {
    fn from_kube(verb: &str, namespace: &str, pod: &str, e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) if s.code == 403 => Self::Forbidden {
                verb: verb.to_owned(),
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
                message: crate::redact::one_line(&s.message),
            },
            other => Self::Api {
                verb: verb.to_owned(),
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
                message: crate::source::errors::describe(&other),
            },
        }
    }
}

/// Deletes an executor pod. `grace` `None` = the pod's own grace period.
pub async fn kill(
    client: &Client,
    namespace: &str,
    pod: &str,
    grace: Option<u32>,
) -> Result<(), WriteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let dp = DeleteParams {
        grace_period_seconds: grace,
        ..DeleteParams::background()
    };
    api.delete(pod, &dp)
        .await
        .map(|_| ())
        .map_err(|e| WriteError::from_kube("delete", namespace, pod, e))
}

/// Adds the hold finalizer (if absent) and sets the expiry annotation, without touching
/// other finalizers (the patch tests the list it read). Retries once if the pod changed.
pub async fn hold_pod(
    client: &Client,
    namespace: &str,
    pod: &str,
    expires: DateTime<Utc>,
) -> Result<bool, WriteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    for attempt in 0..3 {
        let current = api
            .get(pod)
            .await
            .map_err(|e| WriteError::from_kube("get", namespace, pod, e))?;
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

/// The tail of a container's log (`previous` for the instance before the last restart).
pub async fn fetch_log(
    client: &Client,
    namespace: &str,
    pod: &str,
    container: &str,
    previous: bool,
    tail: i64,
) -> Result<String, String> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let lp = LogParams {
        container: Some(container.to_owned()),
        previous,
        tail_lines: Some(tail),
        ..LogParams::default()
    };
    api.logs(pod, &lp).await.map_err(|e| match e {
        kube::Error::Api(s) => crate::redact::one_line(&s.message),
        other => crate::source::errors::describe(&other),
    })
}

/// One line of the actions log.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ActionRecord {
    pub at: String,
    pub user: String,
    pub action: String,
    pub target: String,
    pub result: String,
}

/// Appends actions to a JSON-lines file (default `$XDG_STATE_HOME/spark-triage/actions.log`).
#[derive(Debug, Clone)]
pub struct ActionLog {
    path: Option<PathBuf>,
}

impl ActionLog {
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
        Some(base.join("spark-triage").join("actions.log"))
    }

    pub fn new(path: Option<PathBuf>) -> Self {
        Self { path }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Writes one record; a log that cannot be written is reported, never fatal.
    pub fn append(&self, rec: &ActionRecord) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("actions log {}: {e}", path.display()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("actions log {}: {e}", path.display()))?;
        let mut line = serde_json::to_vec(rec).map_err(|e| e.to_string())?;
        line.push(b'\n');
        f.write_all(&line)
            .map_err(|e| format!("actions log {}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_says_why() {
        let mut p = Permissions::allow_all(&["spark-jobs".to_owned()]);
        assert_eq!(p.gate(false, "spark-jobs", "delete"), Ok(()));
        assert_eq!(p.gate(true, "spark-jobs", "delete"), Err(Denied::ReadOnly));
        p.deny("spark-jobs", "patch");
        assert_eq!(
            p.gate(false, "spark-jobs", "patch")
                .unwrap_err()
                .to_string(),
            "missing permission: patch pods in namespace spark-jobs"
        );
        assert_eq!(p.gate(false, "elsewhere", "patch"), Ok(()));
    }

    #[test]
    fn the_actions_log_appends_json_lines() {
        let dir = std::env::temp_dir().join(format!("st-actions-{}", std::process::id()));
        let log = ActionLog::new(Some(dir.join("a.log")));
        let rec = ActionRecord {
            at: "t".into(),
            user: "u".into(),
            action: "kill".into(),
            target: "ns/p".into(),
            result: "ok".into(),
        };
        log.append(&rec).unwrap();
        log.append(&rec).unwrap();
        let text = std::fs::read_to_string(dir.join("a.log")).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.starts_with("{\"at\":\"t\",\"user\":\"u\",\"action\":\"kill\""));
        let _ = std::fs::remove_dir_all(dir);
    }
}
