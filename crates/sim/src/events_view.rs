//! One event store, two views: events are stored in the `core/v1` shape and converted to and
//! from `events.k8s.io/v1` at the edge (kubernetes `pkg/apis/events/v1/conversion.go`).

use serde_json::{Map, Value, json};

const RENAMES: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// A stored (core/v1) event as events.k8s.io/v1 shows it.
pub fn to_v1(core: &Value) -> Value {
    let Some(m) = core.as_object() else {
        return core.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        let key = RENAMES
            .iter()
            .find(|(c, _)| c == k)
            .map_or(k.as_str(), |(_, n)| *n);
        out.insert(key.to_owned(), v.clone());
    }
    out.insert("apiVersion".into(), json!("events.k8s.io/v1"));
    out.insert("kind".into(), json!("Event"));
    if !out.contains_key("eventTime") {
        out.insert("eventTime".into(), Value::Null);
    }
    Value::Object(out)
}

/// An events.k8s.io/v1 event in the stored (core/v1) shape.
pub fn to_core(v1: &Value) -> Value {
    let Some(m) = v1.as_object() else {
        return v1.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        let key = RENAMES
            .iter()
            .find(|(_, n)| n == k)
            .map_or(k.as_str(), |(c, _)| *c);
        out.insert(key.to_owned(), v.clone());
    }
    out.insert("apiVersion".into(), json!("v1"));
    out.insert("kind".into(), json!("Event"));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m", "count": 3,
            "source": {"component": "kubelet"}, "reason": "Killing", "type": "Normal"});
        let v1 = to_v1(&core);
        assert_eq!(v1["regarding"]["name"], "p");
        assert_eq!(v1["note"], "m");
        assert_eq!(v1["deprecatedCount"], 3);
        assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
        let back = to_core(&v1);
        let mut want = core.clone();
        want["eventTime"] = Value::Null;
        assert_eq!(back, want);
    }
}
