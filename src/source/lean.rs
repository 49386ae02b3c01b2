//! The kube client's resource types for the live sources, decoded straight into the lean
//! projections (`ExecutorPod`, `PodEvent`, `PresentPod`) instead of `k8s_openapi`'s full
//! objects: kube still makes the requests (watcher, pages, backoff), but a response is
//! never held as a whole `Pod`.
//!
//! kube asks a resource for its `ObjectMeta`; the watcher reads only `resourceVersion` from
//! it, so that is all these types keep there.

use std::borrow::Cow;

use k8s_openapi::{
    NamespaceResourceScope,
    api::core::v1::{Event, Pod},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::Resource;
use serde::{Deserialize, Deserializer};

use super::PresentPod;
use spark_triage_core::model::{ExecutorPod, PodEvent};

/// A pod, projected as it is decoded.
#[derive(Debug, Clone)]
pub struct LeanPod {
    pub pod: ExecutorPod,
    meta: ObjectMeta,
}

/// A core/v1 Event, projected as it is decoded.
#[derive(Debug, Clone)]
pub struct LeanEvent {
    pub event: PodEvent,
    meta: ObjectMeta,
}

/// A pod's metadata only (`Api<PodMeta>` asks for `PartialObjectMetadata`: the API server
/// sends no spec or status).
#[derive(Debug, Clone)]
pub struct PodMeta {
    pub pod: PresentPod,
    meta: ObjectMeta,
}

fn meta_with(resource_version: Option<String>) -> ObjectMeta {
    ObjectMeta {
        resource_version,
        ..ObjectMeta::default()
    }
}

impl<'de> Deserialize<'de> for LeanPod {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let pod = ExecutorPod::deserialize_api(d)?;
        let meta = meta_with(pod.resource_version.clone());
        Ok(Self { pod, meta })
    }
}

impl<'de> Deserialize<'de> for LeanEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (event, rv) = PodEvent::deserialize_api_versioned(d)?;
        Ok(Self {
            event,
            meta: meta_with(rv),
        })
    }
}

impl<'de> Deserialize<'de> for PodMeta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // The metadata goes through the pod projection (no spec or status arrive).
        let p = ExecutorPod::deserialize_api(d)?;
        let meta = meta_with(p.resource_version.clone());
        Ok(Self {
            pod: PresentPod {
                executor_id: p.executor_id(),
                app_id: p.app_id().map(str::to_owned),
                resource_version: p.rv(),
                uid: p.uid,
                namespace: p.namespace.into(),
                name: p.name,
            },
            meta,
        })
    }
}

/// `Resource` as `K`'s, with the metadata above.
macro_rules! resource_as {
    ($ty:ty, $as:ty, $metadata_api:expr) => {
        impl Resource for $ty {
            type DynamicType = ();
            type Scope = NamespaceResourceScope;

            fn kind(dt: &()) -> Cow<'_, str> {
                <$as>::kind(dt)
            }
            fn group(dt: &()) -> Cow<'_, str> {
                <$as>::group(dt)
            }
            fn version(dt: &()) -> Cow<'_, str> {
                <$as>::version(dt)
            }
            fn plural(dt: &()) -> Cow<'_, str> {
                <$as>::plural(dt)
            }
            fn metadata_api() -> bool {
                $metadata_api
            }
            fn meta(&self) -> &ObjectMeta {
                &self.meta
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.meta
            }
        }
    };
}

resource_as!(LeanPod, Pod, false);
resource_as!(LeanEvent, Event, false);
resource_as!(PodMeta, Pod, true);

/// Most events read about one pod (a pod has a handful; a crash-looping one, more).
const POD_EVENTS_LIMIT: u32 = 100;

/// Every event about one pod, Normal ones included (the event watch carries only what the
/// diagnoses read): the evidence read for an executor that ended badly or waits too long.
pub async fn pod_events(
    client: &kube::Client,
    namespace: &str,
    pod: &str,
) -> Result<Vec<PodEvent>, String> {
    let api: kube::Api<LeanEvent> = kube::Api::namespaced(client.clone(), namespace);
    let lp = kube::api::ListParams::default()
        .fields(&format!(
            "involvedObject.kind=Pod,involvedObject.name={pod}"
        ))
        .limit(POD_EVENTS_LIMIT);
    api.list(&lp)
        .await
        .map(|l| l.items.into_iter().map(|e| e.event).collect())
        .map_err(|e| super::errors::error_line(&e))
}

/// Most bytes of one log tail read (lines of a megabyte would otherwise be read whole).
const LOG_TAIL_BYTES: i64 = 1 << 20;

/// The last `tail` lines of a container's log (`previous`: the instance before the last
/// restart), at most [`LOG_TAIL_BYTES`]: what the live view shows on `l` and what the
/// live view and the flight recorder keep of an executor that ended badly.
pub async fn log_tail(
    client: &kube::Client,
    namespace: &str,
    pod: &str,
    container: &str,
    previous: bool,
    tail: i64,
) -> Result<String, String> {
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), namespace);
    let lp = kube::api::LogParams {
        container: Some(container.to_owned()),
        previous,
        tail_lines: Some(tail),
        limit_bytes: Some(LOG_TAIL_BYTES),
        ..kube::api::LogParams::default()
    };
    api.logs(pod, &lp).await.map_err(|e| match e {
        kube::Error::Api(s) => crate::redact::one_line(&s.message),
        other => super::errors::error_line(&other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_decodes_into_the_projection_without_its_env_values() {
        let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a-exec-3",
            "namespace":"ns","uid":"u1","resourceVersion":"42",
            "labels":{"spark-role":"executor","spark-exec-id":"3","spark-app-selector":"spark-a"},
            "managedFields":[{"manager":"x","fieldsV1":{"f:spec":{}}}]},
            "spec":{"containers":[{"name":"spark-kubernetes-executor",
              "env":[{"name":"SPARK_EXECUTOR_ID","value":"3"},{"name":"AWS_SECRET","value":"hunter2"}]}]},
            "status":{"phase":"Running"}}"#;
        let p: LeanPod = serde_json::from_slice(json).expect("decodes");
        assert_eq!(p.meta().resource_version.as_deref(), Some("42"));
        assert_eq!(p.pod.executor_id(), Some(3));
        assert!(p.pod.containers[0].runs_executor);
        assert!(!format!("{p:?}").contains("hunter2"));
    }

    #[test]
    fn metadata_only_pods_ask_for_partial_metadata() {
        assert!(PodMeta::metadata_api());
        assert!(!LeanPod::metadata_api());
        let json = br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
            "metadata":{"name":"a-exec-3","namespace":"ns","resourceVersion":"42",
            "labels":{"spark-role":"executor","spark-exec-id":"3","spark-app-selector":"spark-a"}}}"#;
        let m: PodMeta = serde_json::from_slice(json).expect("decodes");
        assert_eq!(m.pod.executor_id, Some(3));
        assert_eq!(m.pod.app_id.as_deref(), Some("spark-a"));
        assert_eq!(m.pod.resource_version, Some(42));
        assert_eq!(m.meta().resource_version.as_deref(), Some("42"));
    }

    #[test]
    fn an_event_keeps_its_resource_version_for_the_watcher() {
        let json = br#"{"metadata":{"name":"e1","namespace":"ns","resourceVersion":"7"},
            "involvedObject":{"kind":"Pod","name":"a-exec-3","namespace":"ns"},
            "type":"Warning","reason":"FailedScheduling","message":"0/3 nodes","count":2}"#;
        let e: LeanEvent = serde_json::from_slice(json).expect("decodes");
        assert_eq!(e.meta().resource_version.as_deref(), Some("7"));
        assert_eq!(e.event.count, 2);
        assert_eq!(e.event.object_name, "a-exec-3");
    }
}
