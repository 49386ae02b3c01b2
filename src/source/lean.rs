//! The kube client's resource types for the live sources, decoded straight into the lean
//! projections (`ExecutorPod`, `PodEvent`, `PresentPod`) instead of `k8s_openapi`'s full
//! objects: kube still makes the requests (watcher, pages, backoff), but a response is
//! never held as a whole `Pod`.
//!
//! kube asks a resource for its `ObjectMeta`; the watcher reads only `resourceVersion` from
//! it, so that is all these types keep there.

use std::borrow::Cow;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Deserializer};
use spark_triage_core::model::{ExecutorPod, PodEvent, WireIdentity};

use super::PresentPod;
use crate::redact;

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
        // Only the identity and Spark's two labels are read (`PresentPod::of` of the whole
        // projection says the same: `identity_reads_as_the_whole_projection_does`).
        let m = WireIdentity::deserialize(d)?.metadata;
        let meta = meta_with(m.resource_version.clone());
        Ok(Self {
            pod: PresentPod::from_identity(m),
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

/// Most bytes of a log tail kept: the newest lines, the oldest dropped first.
const LOG_TAIL_BYTES: usize = 1 << 20;
/// Longest line kept whole; past it a line is cut and marked (a JVM's one-line dump).
const LOG_LINE_BYTES: usize = 16 << 10;

/// The last `tail` lines of a container's log (`previous`: the instance before the last
/// restart): what the live view shows on `l` and what the live view and the flight
/// recorder keep of an executor that ended badly. Read as a stream and kept to the newest
/// [`LOG_TAIL_BYTES`], each line to [`LOG_LINE_BYTES`], so the stack trace at the end is
/// what stays (the kubelet's `limitBytes` keeps the oldest end of the tail instead, and
/// may cut a character in two). The client's request bounds (size, time) hold; a read they
/// cut keeps what came, marked.
pub async fn log_tail(
    client: &kube::Client,
    namespace: &str,
    pod: &str,
    container: &str,
    previous: bool,
    tail: i64,
) -> Result<Vec<String>, String> {
    use futures::AsyncReadExt;
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), namespace);
    let lp = kube::api::LogParams {
        container: Some(container.to_owned()),
        previous,
        tail_lines: Some(tail),
        ..kube::api::LogParams::default()
    };
    let stream = api.log_stream(pod, &lp).await.map_err(|e| match e {
        kube::Error::Api(s) => redact::one_line(&s.message),
        other => super::errors::error_line(&other),
    })?;
    let mut stream = std::pin::pin!(stream);
    let mut tail = Tail::default();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => tail.feed(&chunk[..n]),
            // Cut (the request's size or time bound): what came is kept, said as cut.
            Err(e) if !tail.lines.is_empty() => {
                let mut lines = tail.finish();
                lines.push(format!(
                    "… (the read was cut: {e}; the newest lines may be missing)"
                ));
                return Ok(lines);
            }
            Err(e) => return Err(format!("reading the log: {e}")),
        }
    }
    Ok(tail.finish())
}

/// The newest lines of a stream of bytes, bounded (see [`log_tail`]).
#[derive(Default)]
struct Tail {
    lines: std::collections::VecDeque<String>,
    bytes: usize,
    line: Vec<u8>,
    cut: bool,
}

impl Tail {
    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let (piece, rest, end) = match data.iter().position(|&b| b == b'\n') {
                Some(i) => (&data[..i], &data[i + 1..], true),
                None => (data, &data[data.len()..], false),
            };
            let room = LOG_LINE_BYTES.saturating_sub(self.line.len());
            self.line.extend_from_slice(&piece[..piece.len().min(room)]);
            self.cut |= piece.len() > room;
            if end {
                self.end_line();
            }
            data = rest;
        }
    }

    fn end_line(&mut self) {
        if self.line.last() == Some(&b'\r') {
            self.line.pop(); // a CRLF line, as `str::lines` reads it
        }
        let mut text = String::from_utf8_lossy(&self.line).into_owned();
        if std::mem::take(&mut self.cut) {
            text.push_str(" … (line cut)");
        }
        self.line.clear();
        self.bytes += text.len();
        self.lines.push_back(text);
        while self.bytes > LOG_TAIL_BYTES && self.lines.len() > 1 {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len();
            }
        }
    }

    fn finish(mut self) -> Vec<String> {
        if !self.line.is_empty() {
            self.end_line();
        }
        self.lines.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The relist's lean read of a metadata-only item says what the whole projection's
    /// `PresentPod::of` says: labels null, absent, escaped or unrelated; `EXECID`, a bad id;
    /// a missing metadata or resourceVersion; labels of the wrong type an error in both.
    #[test]
    fn identity_reads_as_the_whole_projection_does() {
        let items = [
            r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a-exec-3","namespace":"ns","uid":"u1","resourceVersion":"42","labels":{"spark-app-selector":"spark-1","spark-exec-id":"3","spark-role":"executor"},"annotations":{"x":"y"},"ownerReferences":[{"kind":"Pod","name":"d","uid":"u0","controller":true}]}}"#,
            r#"{"metadata":{"name":"b","namespace":"ns","labels":{"spark-exec-id":"EXECID","spark\u002dapp-selector":"esc"}}}"#,
            r#"{"metadata":{"name":"c","labels":{"spark-exec-id":"x9","other":""},"resourceVersion":"not-a-number"}}"#,
            r#"{"metadata":{"name":"d","labels":null,"uid":null}}"#,
            r#"{"metadata":{"name":"e","labels":{"spark-exec-id":"-7","spark-exec-id":"8"}}}"#,
            r#"{"metadata":null}"#,
            r#"{}"#,
        ];
        for item in items {
            let lean: PodMeta = serde_json::from_str(item).unwrap();
            let whole = PresentPod::of(&ExecutorPod::from_json(item.as_bytes()).unwrap());
            assert_eq!(lean.pod, whole, "{item}");
            assert_eq!(lean.meta.resource_version, whole_rv(item), "{item}");
        }
        let first: PodMeta = serde_json::from_str(items[0]).unwrap();
        assert_eq!(first.pod.executor_id, Some(3));
        assert_eq!(first.pod.app_id.as_deref(), Some("spark-1"));
        // Labels of the wrong type are an error, as they are for the whole projection.
        // What the lean read does not look at, it does not check: an annotation of the wrong
        // type fails the whole projection (and so its page), not the relist's read.
        let odd = r#"{"metadata":{"name":"f","annotations":{"a":1}}}"#;
        assert_eq!(serde_json::from_str::<PodMeta>(odd).unwrap().pod.name, "f");
        assert!(ExecutorPod::from_json(odd.as_bytes()).is_err());
        for bad in [
            r#"{"metadata":{"labels":["spark-exec-id"]}}"#,
            r#"{"metadata":{"labels":{"other":{"nested":[1]}}}}"#,
            r#"{"metadata":{"labels":{"spark-exec-id":null}}}"#,
            r#"{"metadata":{"labels":{"spark-app-selector":7}}}"#,
        ] {
            assert!(serde_json::from_str::<PodMeta>(bad).is_err(), "{bad}");
            assert!(ExecutorPod::from_json(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    fn whole_rv(item: &str) -> Option<String> {
        ExecutorPod::from_json(item.as_bytes())
            .unwrap()
            .resource_version
    }

    /// The newest lines stay when a tail is over the bound; a long line is cut and marked;
    /// bytes that are not UTF-8 (or a character split across reads) never lose the tail.
    #[test]
    fn a_tail_keeps_its_newest_lines_within_its_bounds() {
        let mut t = Tail::default();
        let line = "x".repeat(1000);
        for i in 0..3000 {
            t.feed(format!("{i} {line}\n").as_bytes());
        }
        t.feed("é".as_bytes().split_at(1).0);
        t.feed("é".as_bytes().split_at(1).1);
        t.feed(b"\nOutOfMemoryError\r\n");
        t.feed(&vec![b'y'; LOG_LINE_BYTES * 3]);
        let lines = t.finish();
        assert!(lines.iter().map(String::len).sum::<usize>() <= LOG_TAIL_BYTES + LOG_LINE_BYTES);
        assert!(
            lines[0].starts_with(|c: char| c.is_ascii_digit()),
            "{}",
            &lines[0][..10]
        );
        assert!(lines.len() < 3000, "the oldest dropped");
        let n = lines.len();
        assert_eq!(lines[n - 3], "é", "a character split across reads");
        assert_eq!(lines[n - 2], "OutOfMemoryError");
        assert!(lines[n - 1].ends_with("(line cut)"));
        assert!(lines[n - 1].len() < LOG_LINE_BYTES + 20);
    }

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
