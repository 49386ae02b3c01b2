//! Reading the objects people hand us: `kubectl get … -o json|yaml` output, a single Pod, a
//! PodList, a `List` mixing pods and events, an EventList of either events API, a JSON
//! stream (`kubectl get -w -o json`) or multi-document YAML.
//!
//! Whatever the bytes, this returns a value or an error that names the problem in one line;
//! it never panics. One malformed item of a list does not lose the others: it becomes a
//! `problem` and the rest is read.

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::events::v1 as events;
use serde_json::Value;

use crate::model;
use crate::model::{ExecutorPod, GroupKind, PodEvent, SchedGroup};

mod repair;
mod stream;

/// Why an input could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The input could not be read.
    #[error("cannot read {origin}: {source}")]
    Read {
        /// The file, `-` or the URL it came from.
        origin: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The input is not UTF-8 text.
    #[error("{origin}: not text (invalid UTF-8 at byte {at})")]
    NotText {
        /// Where it came from.
        origin: String,
        /// The offset of the first invalid byte.
        at: usize,
    },
    /// Nothing to read.
    #[error("{origin}: empty input; expected a Pod, a PodList or a List of pods")]
    Empty {
        /// Where it came from.
        origin: String,
    },
    /// The JSON is malformed.
    #[error("{origin}: not valid JSON: {message} at line {line}, column {column}")]
    Json {
        /// Where it came from.
        origin: String,
        /// The parser's message.
        message: String,
        /// The line of the error.
        line: usize,
        /// Its column.
        column: usize,
    },
    /// The YAML is malformed.
    #[error("{origin}: not valid YAML: {message}{at}")]
    Yaml {
        /// Where it came from.
        origin: String,
        /// The parser's message.
        message: String,
        /// Where in the input (may be empty).
        at: String,
    },
    /// Valid, but not pods, events or lists of them.
    #[error("{origin}: {what}")]
    Unexpected {
        /// Where it came from.
        origin: String,
        /// What was found instead.
        what: String,
    },
}

/// The pods and events found in one input, plus what was skipped and why.
#[derive(Debug, Default)]
pub struct Objects {
    /// The pods found.
    pub pods: Vec<ExecutorPod>,
    /// The events found.
    pub events: Vec<PodEvent>,
    /// The batch schedulers' group objects found (Volcano PodGroups, Kueue and native
    /// Workloads): `kubectl get pods,podgroups,workloads -o json` gives them with the pods.
    pub groups: Vec<SchedGroup>,
    /// Items that are not pods or events (a Service in `kubectl get all`): one line each.
    pub skipped: Vec<String>,
    /// Items that claim to be pods or events but are malformed: one line each. Data was lost.
    pub invalid: Vec<String>,
}

/// Reads a file, or stdin for `-`.
pub fn read_source(path: &str) -> Result<Vec<u8>, InputError> {
    use std::io::Read;
    let origin = origin_name(path);
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|source| InputError::Read { origin, source })?;
        Ok(buf)
    } else {
        std::fs::read(path).map_err(|source| InputError::Read { origin, source })
    }
}

/// `stdin` for `-`, else the path.
pub fn origin_name(path: &str) -> String {
    if path == "-" {
        "stdin".to_owned()
    } else {
        path.to_owned()
    }
}

/// Parses bytes into JSON values: one per document.
/// The input as text (without a BOM); an error when it is not text or empty.
fn text_of<'a>(bytes: &'a [u8], origin: &str) -> Result<&'a str, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| InputError::NotText {
        origin: origin.to_owned(),
        at: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().is_empty() {
        return Err(InputError::Empty {
            origin: origin.to_owned(),
        });
    }
    Ok(text)
}

/// The text when the input is JSON (or a JSON stream), `None` when it is YAML.
fn json_text<'a>(bytes: &'a [u8], origin: &str) -> Result<Option<&'a str>, InputError> {
    let text = text_of(bytes, origin)?;
    let trimmed = text.trim_start();
    Ok((trimmed.starts_with('{') || trimmed.starts_with('[')).then_some(text))
}

fn json_error(origin: &str, e: &serde_json::Error) -> InputError {
    InputError::Json {
        origin: origin.to_owned(),
        message: json_message(e),
        line: e.line(),
        column: e.column(),
    }
}

/// Splits an input into its documents (a JSON value, a JSON stream or YAML documents).
pub fn parse_documents(bytes: &[u8], origin: &str) -> Result<Vec<Value>, InputError> {
    let text = text_of(bytes, origin)?;
    let docs: Vec<Value> = if json_text(bytes, origin)?.is_some() {
        serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .map_err(|e| json_error(origin, &e))?
    } else {
        serde_saphyr::from_multiple_with_options::<Value>(text, yaml_options(text.len())).map_err(
            |e| {
                let message = first_line(&yaml_message(&e));
                // The parser's own text often names the place already; say it once.
                let at = e
                    .location()
                    .filter(|_| !message.contains(" at line "))
                    .map(|l| format!(" at line {}, column {}", l.line(), l.column()))
                    .unwrap_or_default();
                InputError::Yaml {
                    origin: origin.to_owned(),
                    message,
                    at,
                }
            },
        )?
    };
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    if docs.is_empty() {
        return Err(InputError::Empty {
            origin: origin.to_owned(),
        });
    }
    Ok(docs)
}

/// The parser's budget, scaled to the input: `kubectl get pods -o yaml` of 20,000 pods
/// (≈ 250 nodes and 8 KB per pod) must pass, so counts that cannot exceed the input's size
/// (every node, event and document takes at least a byte or two of text) are bounded by it
/// instead of by fixed numbers. Alias expansion, the one way YAML makes more than it
/// reads (billion laughs), keeps the parser's own limits.
fn yaml_options(len: usize) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_events = budget.max_events.max(len);
    budget.max_nodes = budget.max_nodes.max(len / 2);
    budget.max_documents = budget.max_documents.max(len / 8);
    budget.max_total_scalar_bytes = budget.max_total_scalar_bytes.max(len);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// serde_json appends ` at line L column C`; we print those ourselves.
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

fn yaml_message(e: &serde_saphyr::Error) -> String {
    match e {
        serde_saphyr::Error::WithSnippet { error, .. } => error.to_string(),
        other => other.to_string(),
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_owned()
}

/// Reads pods (and any events mixed in) from bytes. Fails only when nothing in the input is
/// a pod, a list or an event.
pub fn read_pods(bytes: &[u8], origin: &str) -> Result<Objects, InputError> {
    let mut out = Objects::default();
    let mut foreign = Vec::new();
    let mut saw_list = false;
    let mut take = |i: usize, doc: Value, deferred: Vec<(usize, Value)>, out: &mut Objects| {
        let label = format!("document {}", i + 1);
        match kind_of(&doc) {
            Kind::List {
                pod_list,
                event_api,
            } => {
                saw_list = true;
                read_list(doc, pod_list, event_api, &label, out);
                for (n, item) in deferred {
                    read_item(item, pod_list, event_api, &format!("{label} item {n}"), out);
                }
            }
            Kind::Pod => push_pod(doc, &label, out),
            Kind::Event(api) => push_event(doc, api, &label, out),
            Kind::Group(kind) => out.groups.push(SchedGroup::from_value(kind, &doc)),
            Kind::Other(what) => foreign.push(format!("{label} is {what}")),
        }
    };
    match json_text(bytes, origin)? {
        // JSON: a List's items are read one at a time, never all held as values.
        Some(text) => {
            let mut de = serde_json::Deserializer::from_str(text);
            for i in 0.. {
                // Skip whitespace between documents; stop at the end.
                if de.end().is_ok() {
                    break;
                }
                let mut deferred = Vec::new();
                let label = format!("document {}", i + 1);
                let seed = stream::DocSeed {
                    out: &mut out,
                    deferred: &mut deferred,
                    label: &label,
                };
                let doc = serde::de::DeserializeSeed::deserialize(seed, &mut de)
                    .map_err(|e| json_error(origin, &e))?;
                if !doc.is_null() {
                    take(i, doc, deferred, &mut out);
                }
            }
        }
        None => {
            for (i, doc) in parse_documents(bytes, origin)?.into_iter().enumerate() {
                take(i, doc, Vec::new(), &mut out);
            }
        }
    }
    if out.pods.is_empty()
        && out.events.is_empty()
        && out.groups.is_empty()
        && !saw_list
        && out.invalid.is_empty()
    {
        return Err(InputError::Unexpected {
            origin: origin.to_owned(),
            what: format!(
                "{}, not a Pod or a List of pods",
                foreign.first().map_or("nothing usable", String::as_str)
            ),
        });
    }
    out.skipped
        .extend(foreign.into_iter().map(|f| format!("skipped {f}")));
    Ok(out)
}

/// Reads events only (`--events FILE`); pods in it are ignored with a problem line.
pub fn read_events(bytes: &[u8], origin: &str) -> Result<Objects, InputError> {
    let mut objects = read_pods(bytes, origin)?;
    if !objects.pods.is_empty() {
        objects.skipped.push(format!(
            "{origin}: ignored {} pod(s) in the events input",
            objects.pods.len()
        ));
        objects.pods.clear();
    }
    Ok(objects)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventApi {
    Core,
    EventsV1,
}

enum Kind {
    Pod,
    Event(EventApi),
    Group(model::GroupKind),
    List {
        /// Items without a `kind` are pods (a raw API PodList) rather than unknown.
        pod_list: bool,
        /// The API of an EventList's items.
        event_api: Option<EventApi>,
    },
    Other(String),
}

fn event_api(doc: &Value) -> EventApi {
    match doc.get("apiVersion").and_then(Value::as_str) {
        Some(v) if v.starts_with("events.k8s.io/") => EventApi::EventsV1,
        _ => EventApi::Core,
    }
}

fn kind_of(doc: &Value) -> Kind {
    let Some(obj) = doc.as_object() else {
        return Kind::Other(match doc {
            Value::Array(_) => "an array".to_owned(),
            Value::String(_) => "a string".to_owned(),
            Value::Number(_) => "a number".to_owned(),
            Value::Bool(_) => "a boolean".to_owned(),
            _ => "empty".to_owned(),
        });
    };
    match obj.get("kind").and_then(Value::as_str) {
        Some("Pod") => Kind::Pod,
        Some("Event") => Kind::Event(event_api(doc)),
        Some(k @ ("PodGroup" | "Workload"))
            if let Some(g) = group_kind(k, obj.get("apiVersion").and_then(Value::as_str)) =>
        {
            Kind::Group(g)
        }
        Some("PodList") => Kind::List {
            pod_list: true,
            event_api: None,
        },
        Some("EventList") => Kind::List {
            pod_list: false,
            event_api: Some(event_api(doc)),
        },
        Some("List") => Kind::List {
            pod_list: false,
            event_api: None,
        },
        Some(other) => Kind::Other(match obj.get("apiVersion").and_then(Value::as_str) {
            Some(api) => format!("a {other} ({api})"),
            None => format!("a {other}"),
        }),
        None if obj.get("items").is_some_and(Value::is_array) => Kind::List {
            pod_list: true,
            event_api: None,
        },
        None if obj.contains_key("spec") || obj.contains_key("status") => Kind::Pod,
        None => Kind::Other("an object without a kind".to_owned()),
    }
}

/// A batch scheduler's group object, by kind and API group.
fn group_kind(kind: &str, api: Option<&str>) -> Option<model::GroupKind> {
    let group = api?.split('/').next()?;
    GroupKind::ALL
        .into_iter()
        .find(|g| g.kind() == kind && g.group() == group)
}

fn read_list(
    doc: Value,
    pod_list: bool,
    event_api: Option<EventApi>,
    label: &str,
    out: &mut Objects,
) {
    let Value::Object(mut obj) = doc else {
        return;
    };
    let items = match obj.remove("items") {
        Some(Value::Array(items)) => items,
        Some(Value::Null) | None => Vec::new(),
        Some(_) => {
            out.invalid
                .push(format!("{label}: `items` is not a list; skipped"));
            return;
        }
    };
    for (i, item) in items.into_iter().enumerate() {
        read_item(
            item,
            pod_list,
            event_api,
            &format!("{label} item {}", i + 1),
            out,
        );
    }
}

/// One item of a list, read by its own kind (or the list's, for items without one).
fn read_item(
    item: Value,
    pod_list: bool,
    event_api: Option<EventApi>,
    item_label: &str,
    out: &mut Objects,
) {
    if let Some(api) = event_api {
        push_event(item, api, item_label, out);
        return;
    }
    match kind_of(&item) {
        Kind::Pod => push_pod(item, item_label, out),
        Kind::Event(api) => push_event(item, api, item_label, out),
        Kind::Group(kind) => out.groups.push(SchedGroup::from_value(kind, &item)),
        Kind::Other(_) if pod_list && item.is_object() && item.get("kind").is_none() => {
            push_pod(item, item_label, out);
        }
        Kind::List { .. } => out
            .skipped
            .push(format!("skipped {item_label}: a list inside a list")),
        Kind::Other(what) => out.skipped.push(format!("skipped {item_label}: {what}")),
    }
}

/// `item 3 (ns/name)` when the object names itself.
fn describe_item(label: &str, value: &Value) -> String {
    let meta = value.get("metadata");
    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str);
    let ns = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str);
    match (ns, name) {
        (Some(ns), Some(name)) => format!("{label} ({ns}/{name})"),
        (None, Some(name)) => format!("{label} ({name})"),
        _ => label.to_owned(),
    }
}

fn push_pod(mut value: Value, label: &str, out: &mut Objects) {
    let who = describe_item(label, &value);
    // A malformed timestamp must not cost the pod: Spark never parses `deletionTimestamp`
    // (it only tests its presence) and reads no other time. Each unreadable time is repaired
    // (a deletion stays a deletion, at an unknown time; any other time is dropped) and said.
    for _ in 0..repair::MAX_REPAIRS {
        let e = match serde_path_to_error::deserialize::<_, core::Pod>(&value) {
            Ok(pod) => {
                let mut p = ExecutorPod::from_pod(&pod);
                // Fields newer than the typed client's API level (1.33): the native gang's
                // `spec.workloadRef` (1.35) is read from the object itself.
                if value.pointer("/spec/workloadRef").is_some()
                    && let Ok(w) = ExecutorPod::from_value(&value)
                {
                    p.groups = w.groups;
                }
                out.pods.push(p);
                return;
            }
            Err(e) => e,
        };
        let path = e.path().to_string();
        match repair::repair_time(&mut value, &path) {
            Some(note) => out.skipped.push(format!("{who}: {note}")),
            None => {
                out.invalid.push(format!(
                    "skipped {who}: not a valid Pod: {}",
                    path_error(&e)
                ));
                return;
            }
        }
    }
    out.invalid.push(format!(
        "skipped {who}: not a valid Pod: more than {} unreadable times",
        repair::MAX_REPAIRS
    ));
}

fn push_event(value: Value, api: EventApi, label: &str, out: &mut Objects) {
    let who = describe_item(label, &value);
    let event = match api {
        EventApi::Core => serde_path_to_error::deserialize::<_, core::Event>(value)
            .map(|e| PodEvent::from_core(&e)),
        EventApi::EventsV1 => serde_path_to_error::deserialize::<_, events::Event>(value)
            .map(|e| PodEvent::from_events_v1(&e)),
    };
    match event {
        Ok(e) => out.events.push(e),
        Err(e) => out.invalid.push(format!(
            "skipped {who}: not a valid Event: {}",
            path_error(&e)
        )),
    }
}

fn path_error(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    if path.is_empty() || path == "." {
        e.inner().to_string()
    } else {
        format!("{path}: {}", e.inner())
    }
}

#[cfg(test)]
mod tests;
