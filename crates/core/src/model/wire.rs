//! The wire shapes: a Pod and a core/v1 Event as the API server writes them, reduced to the
//! fields the projection reads, so they deserialize straight from the response bytes.
//!
//! Why not `k8s_openapi`'s `Pod`: it decodes everything (managed fields, every env value,
//! volumes, probes) into owned strings and maps only for the projection to copy a few of
//! them and drop the rest; at 10,000 executors that is most of the first view's time and
//! memory. Here serde skips what is not named without allocating it, and env values (which
//! may be secrets) are never decoded at all.
//!
//! Lenient where the typed client is strict: a missing required field becomes empty, an
//! unreadable time becomes absent (a deletion stays a deletion, at the epoch: Spark only
//! tests its presence), `null` reads as empty. A field of the wrong type is still an error.

use std::collections::BTreeMap;

use chrono::DateTime;
use serde::{Deserialize, Deserializer};

use super::{LABEL_APP_ID, LABEL_EXEC_ID, Labels, Text, Time};
use crate::text;

/// `null` (or absent) as the type's default.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// An RFC 3339 time; unreadable or absent = `None`.
fn time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Time>, D::Error> {
    read_str(d, parse_time)
}

/// A string (or `null`: the default) read for `f` as the reader hands it, never copied:
/// a pod has a dozen times and twenty env names, and at 100,000 pods a `String` apiece
/// was millions of allocations for values only parsed or compared.
fn read_str<'de, D: Deserializer<'de>, T: Default>(
    d: D,
    f: impl FnOnce(&str) -> T,
) -> Result<T, D::Error> {
    struct ReadStr<F>(F);
    impl<'de, T: Default, F: FnOnce(&str) -> T> serde::de::Visitor<'de> for ReadStr<F> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
            Ok((self.0)(v))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            d.deserialize_str(self)
        }
    }
    d.deserialize_option(ReadStr(f))
}

/// Whether a container's `env` names `SPARK_EXECUTOR_ID` (the one name read).
fn sets_executor_id<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    struct Var {
        #[serde(default, deserialize_with = "is_executor_id")]
        name: bool,
    }
    fn is_executor_id<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        read_str(d, |s| s == "SPARK_EXECUTOR_ID")
    }
    let vars: Option<Vec<Var>> = Option::deserialize(d)?;
    Ok(vars.into_iter().flatten().any(|v| v.name))
}

pub(super) fn parse_time(s: &str) -> Option<Time> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.to_utc())
}

/// `s`, cut at a character boundary to at most `max` bytes.
pub(super) fn bounded(s: &str, max: usize) -> &str {
    &s[..text::floor_boundary(s, max)]
}

/// The non-empty string at a JSON pointer of an object read as a `serde_json::Value` (the
/// projections of other objects than pods: group objects, operators' applications), at most
/// `max` bytes of it.
pub(super) fn text_at(v: &serde_json::Value, pointer: &str, max: usize) -> Option<Text> {
    v.pointer(pointer)
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| Text::from(bounded(s, max)))
}

/// A Pod.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WirePod {
    #[serde(deserialize_with = "nullable")]
    pub metadata: WireMeta,
    pub spec: Option<WireSpec>,
    /// `None` when the object has no `status` (Spark distinguishes it from an empty one).
    pub status: Option<WireStatus>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireMeta {
    pub name: Option<String>,
    pub namespace: Option<Text>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub labels: Labels,
    #[serde(deserialize_with = "nullable")]
    pub annotations: BTreeMap<String, String>,
    #[serde(deserialize_with = "nullable")]
    pub owner_references: Vec<WireOwner>,
    #[serde(deserialize_with = "time")]
    pub creation_timestamp: Option<Time>,
    /// Kept as written: present-but-unreadable still means "deletion requested".
    pub deletion_timestamp: Option<String>,
    pub deletion_grace_period_seconds: Option<i64>,
    #[serde(deserialize_with = "nullable")]
    pub finalizers: Vec<Text>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireOwner {
    #[serde(deserialize_with = "nullable")]
    pub kind: Text,
    #[serde(deserialize_with = "nullable")]
    pub name: Text,
    #[serde(deserialize_with = "nullable")]
    pub uid: Text,
    pub controller: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireSpec {
    pub node_name: Option<Text>,
    pub restart_policy: Option<Text>,
    pub termination_grace_period_seconds: Option<i64>,
    pub priority: Option<i32>,
    pub priority_class_name: Option<Text>,
    pub scheduler_name: Option<Text>,
    #[serde(deserialize_with = "nullable")]
    pub scheduling_gates: Vec<WireName>,
    /// The native gang's Workload (1.35, alpha).
    pub workload_ref: Option<WireWorkloadRef>,
    #[serde(deserialize_with = "nullable")]
    pub containers: Vec<WireContainer>,
    #[serde(deserialize_with = "nullable")]
    pub init_containers: Vec<WireContainer>,
    #[serde(deserialize_with = "nullable")]
    pub volumes: Vec<WireVolume>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireWorkloadRef {
    #[serde(deserialize_with = "nullable")]
    pub name: Text,
    pub pod_group: Option<Text>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireContainer {
    #[serde(deserialize_with = "nullable")]
    pub name: Text,
    pub image: Option<Text>,
    #[serde(deserialize_with = "nullable")]
    pub resources: WireResources,
    /// Whether `env` names `SPARK_EXECUTOR_ID`: values (secrets among them) are skipped
    /// unread, and no name is kept.
    #[serde(rename = "env", deserialize_with = "sets_executor_id")]
    pub runs_executor: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireResources {
    #[serde(deserialize_with = "nullable")]
    pub requests: WireQuantities,
    #[serde(deserialize_with = "nullable")]
    pub limits: WireQuantities,
}

/// CPU and memory of a resource list (other resources are not read).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireQuantities {
    pub cpu: Option<Text>,
    pub memory: Option<Text>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireName {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireVolume {
    #[serde(deserialize_with = "nullable")]
    pub name: Text,
    pub config_map: Option<WireName>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireStatus {
    pub phase: Option<Text>,
    pub reason: Option<Text>,
    pub message: Option<Text>,
    #[serde(deserialize_with = "nullable")]
    pub conditions: Vec<WireCondition>,
    #[serde(deserialize_with = "nullable")]
    pub container_statuses: Vec<WireContainerStatus>,
    #[serde(deserialize_with = "nullable")]
    pub init_container_statuses: Vec<WireContainerStatus>,
    #[serde(deserialize_with = "time")]
    pub start_time: Option<Time>,
    pub nominated_node_name: Option<Text>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireCondition {
    #[serde(rename = "type", deserialize_with = "nullable")]
    pub type_: Text,
    #[serde(deserialize_with = "nullable")]
    pub status: Text,
    pub reason: Option<Text>,
    pub message: Option<Text>,
    #[serde(deserialize_with = "time")]
    pub last_transition_time: Option<Time>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireContainerStatus {
    #[serde(deserialize_with = "nullable")]
    pub name: Text,
    pub image: Option<Text>,
    #[serde(deserialize_with = "nullable")]
    pub ready: bool,
    #[serde(deserialize_with = "nullable")]
    pub restart_count: i32,
    pub state: Option<WireState>,
    pub last_state: Option<WireState>,
    /// What the runtime enacted (in-place resize, 1.27+): the limits the container has.
    pub resources: Option<WireResources>,
    /// What the node allocated (requests; Spark's memory request equals its limit).
    pub allocated_resources: Option<WireQuantities>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireState {
    pub waiting: Option<WireWaiting>,
    pub running: Option<WireRunning>,
    pub terminated: Option<WireTerminated>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireWaiting {
    pub reason: Option<Text>,
    pub message: Option<Text>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireRunning {
    #[serde(deserialize_with = "time")]
    pub started_at: Option<Time>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireTerminated {
    #[serde(deserialize_with = "nullable")]
    pub exit_code: i32,
    pub signal: Option<i32>,
    pub reason: Option<Text>,
    pub message: Option<Text>,
    #[serde(deserialize_with = "time")]
    pub started_at: Option<Time>,
    #[serde(deserialize_with = "time")]
    pub finished_at: Option<Time>,
}

/// A core/v1 Event.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireEvent {
    #[serde(deserialize_with = "nullable")]
    pub metadata: WireEventMeta,
    #[serde(deserialize_with = "nullable")]
    pub involved_object: WireObjectRef,
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub action: Option<String>,
    pub count: Option<i32>,
    #[serde(deserialize_with = "time")]
    pub first_timestamp: Option<Time>,
    #[serde(deserialize_with = "time")]
    pub last_timestamp: Option<Time>,
    #[serde(deserialize_with = "time")]
    pub event_time: Option<Time>,
    pub series: Option<WireSeries>,
    pub source: Option<WireSource>,
    pub reporting_component: Option<String>,
    pub reporting_instance: Option<String>,
    /// The secondary object (a `Preempted` event's preemptor).
    pub related: Option<WireObjectRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireEventMeta {
    pub namespace: Option<String>,
    pub resource_version: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireObjectRef {
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireSeries {
    pub count: Option<i32>,
    #[serde(deserialize_with = "time")]
    pub last_observed_time: Option<Time>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireSource {
    pub component: Option<String>,
    pub host: Option<String>,
}

/// A metadata-only LIST's item (`PartialObjectMetadata`) as the periodic relist reads it:
/// the pod's identity and the two labels Spark's snapshot reads, every other label,
/// annotation and field skipped unread. At 100,000 pods every 30 s, perf put decoding the
/// items through the whole pod projection (every label kept and interned, every
/// annotation) at about a tenth of the live view's CPU.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireIdentity {
    /// `metadata`.
    #[serde(deserialize_with = "nullable")]
    pub metadata: WireIdentityMeta,
}

/// What [`WireIdentity`] keeps of the metadata.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WireIdentityMeta {
    /// `metadata.name`.
    pub name: Option<String>,
    /// `metadata.namespace`.
    pub namespace: Option<String>,
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`, verbatim.
    pub resource_version: Option<String>,
    /// Spark's two labels of `metadata.labels`.
    #[serde(deserialize_with = "nullable")]
    pub labels: SparkLabels,
}

/// Of a pod's labels, only `spark-app-selector` and `spark-exec-id`, as written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SparkLabels {
    /// `spark-app-selector`.
    pub app_id: Option<String>,
    /// `spark-exec-id`, verbatim (`EXECID` until the driver names the executor).
    pub exec_id: Option<String>,
}

impl<'de> Deserialize<'de> for SparkLabels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(SparkLabelsVisitor)
    }
}

struct SparkLabelsVisitor;

/// A label's key: one of the two kept, or another (matched without being copied).
enum LabelKey {
    AppId,
    ExecId,
    Other,
}

impl<'de> Deserialize<'de> for LabelKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = LabelKey;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a label key")
            }
            fn visit_str<E: serde::de::Error>(self, k: &str) -> Result<LabelKey, E> {
                Ok(match k {
                    LABEL_APP_ID => LabelKey::AppId,
                    LABEL_EXEC_ID => LabelKey::ExecId,
                    _ => LabelKey::Other,
                })
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// Another label's value: read as a string (anything else is an error, as in [`WireMeta`])
/// and not kept.
struct LabelValue;

impl<'de> Deserialize<'de> for LabelValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ValueVisitor;
        impl serde::de::Visitor<'_> for ValueVisitor {
            type Value = LabelValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a label value")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<LabelValue, E> {
                Ok(LabelValue)
            }
        }
        d.deserialize_str(ValueVisitor)
    }
}

impl<'de> serde::de::Visitor<'de> for SparkLabelsVisitor {
    type Value = SparkLabels;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map of labels")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<SparkLabels, A::Error> {
        let mut out = SparkLabels::default();
        while let Some(key) = map.next_key::<LabelKey>()? {
            match key {
                LabelKey::AppId => out.app_id = Some(map.next_value()?),
                LabelKey::ExecId => out.exec_id = Some(map.next_value()?),
                LabelKey::Other => {
                    map.next_value::<LabelValue>()?;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(env: serde_json::Value) -> serde_json::Result<WireContainer> {
        serde_json::from_value(serde_json::json!({"name": "c", "env": env}))
    }

    #[test]
    fn env_is_read_for_the_executor_id_name_alone() {
        let runs = |env| container(env).expect("reads").runs_executor;
        assert!(runs(serde_json::json!([
            {"name": "SPARK_USER", "value": "x"},
            {"name": "SPARK_EXECUTOR_ID", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
        ])));
        let escaped: WireContainer =
            serde_json::from_str(r#"{"env": [{"name": "SPARK_EXECUTOR\u005fID"}]}"#)
                .expect("reads");
        assert!(escaped.runs_executor);
        assert!(!runs(serde_json::json!(null)));
        let bare: WireContainer = serde_json::from_str(r#"{"name": "c"}"#).expect("reads");
        assert!(!bare.runs_executor);
        assert!(!runs(
            serde_json::json!([{"name": null}, {"value": "SPARK_EXECUTOR_ID"}])
        ));
        assert!(!runs(serde_json::json!([{"name": "SPARK_EXECUTOR_IDS"}])));
        let err = container(serde_json::json!([{"name": 3}])).expect_err("a number is no name");
        assert!(err.to_string().contains("expected a string"), "{err}");
    }

    #[test]
    fn a_time_reads_from_the_text_or_is_absent() {
        let at = |v: serde_json::Value| {
            serde_json::from_value::<WireCondition>(serde_json::json!({"lastTransitionTime": v}))
                .expect("reads")
                .last_transition_time
        };
        assert_eq!(
            at(serde_json::json!("2026-12-07T23:00:00Z")),
            parse_time("2026-12-07T23:00:00Z")
        );
        assert!(at(serde_json::json!("2026-12-07T23:00:00Z")).is_some());
        assert_eq!(at(serde_json::json!(null)), None);
        let absent: WireCondition = serde_json::from_str(r#"{"type": "Ready"}"#).expect("reads");
        assert_eq!(absent.last_transition_time, None);
        assert_eq!(at(serde_json::json!("yesterday")), None);
        assert!(
            serde_json::from_value::<WireCondition>(serde_json::json!({"lastTransitionTime": 3}))
                .is_err()
        );
    }
}
