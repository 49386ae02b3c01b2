//! Label and field selectors, as the API server parses and applies them.
//!
//! Label grammar (apimachinery `labels.Parse`): requirements joined by `,`, each one of
//! `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, with spaces allowed
//! around tokens. Field selectors: `k=v`, `k==v`, `k!=v` joined by `,`, keys checked against
//! each kind's table (unknown keys are a 400 like the real server's).

use std::collections::BTreeSet;

use serde_json::Value;

/// A parse or validation failure; its text becomes the 400 Status message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Eq(String),
    NotEq(String),
    In(BTreeSet<String>),
    NotIn(BTreeSet<String>),
    Exists,
    NotExists,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed label selector. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    reqs: Vec<Requirement>,
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')
}

fn is_value_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn skip_ws(&mut self) {
        while self.s[self.pos..].starts_with(' ') {
            self.pos += 1;
        }
    }
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }
    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.s[self.pos..].starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }
    fn word(&mut self, pred: fn(char) -> bool) -> &'a str {
        self.skip_ws();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if !pred(c) {
                break;
            }
            self.pos += c.len_utf8();
        }
        &self.s[start..self.pos]
    }
    fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos >= self.s.len()
    }
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let err = |m: String| SelectorError(format!("unable to parse requirement: {m}"));
        let mut lx = Lexer { s, pos: 0 };
        let mut reqs = Vec::new();
        if lx.at_end() {
            return Ok(Self { reqs });
        }
        loop {
            let negated = lx.eat("!");
            let key = lx.word(is_key_char).to_owned();
            if key.is_empty() {
                return Err(err(format!(
                    "expected a label key at position {} in {s:?}",
                    lx.pos
                )));
            }
            let op = if negated {
                Op::NotExists
            } else if lx.eat("==") || lx.eat("=") {
                Op::Eq(lx.word(is_value_char).to_owned())
            } else if lx.eat("!=") {
                Op::NotEq(lx.word(is_value_char).to_owned())
            } else if lx.eat("notin") {
                Op::NotIn(Self::set(&mut lx, s)?)
            } else if lx.eat("in") {
                Op::In(Self::set(&mut lx, s)?)
            } else {
                Op::Exists
            };
            reqs.push(Requirement { key, op });
            if lx.at_end() {
                break;
            }
            if !lx.eat(",") {
                return Err(err(format!(
                    "unexpected {:?} at position {} in {s:?}",
                    lx.peek().unwrap_or(' '),
                    lx.pos
                )));
            }
        }
        Ok(Self { reqs })
    }

    fn set(lx: &mut Lexer<'_>, s: &str) -> Result<BTreeSet<String>, SelectorError> {
        if !lx.eat("(") {
            return Err(SelectorError(format!(
                "unable to parse requirement: expected '(' at position {} in {s:?}",
                lx.pos
            )));
        }
        let mut values = BTreeSet::new();
        loop {
            let v = lx.word(is_value_char);
            values.insert(v.to_owned());
            if lx.eat(")") {
                break;
            }
            if !lx.eat(",") {
                return Err(SelectorError(format!(
                    "unable to parse requirement: expected ',' or ')' at position {} in {s:?}",
                    lx.pos
                )));
            }
        }
        Ok(values)
    }

    /// Whether an object with these labels (a JSON object or null) matches.
    pub fn matches(&self, labels: &Value) -> bool {
        self.matches_with(|k| labels.get(k).and_then(Value::as_str))
    }

    /// Whether an object whose label `k` is `label(k)` matches.
    pub fn matches_with<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.reqs.iter().all(|r| {
            let v = label(&r.key);
            match &r.op {
                Op::Eq(x) => v == Some(x.as_str()),
                Op::NotEq(x) => v != Some(x.as_str()),
                Op::In(set) => v.is_some_and(|v| set.contains(v)),
                Op::NotIn(set) => v.is_none_or(|v| !set.contains(v)),
                Op::Exists => v.is_some(),
                Op::NotExists => v.is_none(),
            }
        })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }
}

/// Which field labels a kind supports, and where each one lives in the stored object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Pod,
    /// Events through `/api/v1` (`involvedObject.*`).
    CoreEvent,
    /// Events through `events.k8s.io/v1` (`regarding.*`).
    EventsV1,
    /// Everything else: `metadata.name` and `metadata.namespace`.
    Generic,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldReq {
    /// JSON pointer into the stored (core/v1-shaped) object; `None` never matches.
    pointer: Option<&'static str>,
    /// `source` falls back to `reportingComponent` when `source.component` is empty.
    fallback: Option<&'static str>,
    value: String,
    negate: bool,
}

/// A parsed field selector.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    reqs: Vec<FieldReq>,
}

fn field_pointer(
    kind: FieldKind,
    key: &str,
) -> Result<(Option<&'static str>, Option<&'static str>), ()> {
    let common = match key {
        "metadata.name" => Some("/metadata/name"),
        "metadata.namespace" => Some("/metadata/namespace"),
        _ => None,
    };
    if let Some(p) = common {
        return Ok((Some(p), None));
    }
    let involved = |rest: &str| -> Result<(Option<&'static str>, Option<&'static str>), ()> {
        let p = match rest {
            "kind" => "/involvedObject/kind",
            "namespace" => "/involvedObject/namespace",
            "name" => "/involvedObject/name",
            "uid" => "/involvedObject/uid",
            "apiVersion" => "/involvedObject/apiVersion",
            "resourceVersion" => "/involvedObject/resourceVersion",
            "fieldPath" => "/involvedObject/fieldPath",
            _ => return Err(()),
        };
        Ok((Some(p), None))
    };
    match kind {
        FieldKind::Pod => match key {
            "spec.nodeName" | "spec.host" => Ok((Some("/spec/nodeName"), None)),
            "spec.restartPolicy" => Ok((Some("/spec/restartPolicy"), None)),
            "spec.schedulerName" => Ok((Some("/spec/schedulerName"), None)),
            "spec.serviceAccountName" => Ok((Some("/spec/serviceAccountName"), None)),
            "spec.hostNetwork" => Ok((Some("/spec/hostNetwork"), None)),
            "status.phase" => Ok((Some("/status/phase"), None)),
            "status.podIP" => Ok((Some("/status/podIP"), None)),
            "status.nominatedNodeName" => Ok((Some("/status/nominatedNodeName"), None)),
            "status.podIPs" => Ok((None, None)),
            _ => Err(()),
        },
        FieldKind::CoreEvent => match key {
            "reason" => Ok((Some("/reason"), None)),
            "type" => Ok((Some("/type"), None)),
            "reportingComponent" => Ok((Some("/reportingComponent"), None)),
            "source" => Ok((Some("/source/component"), Some("/reportingComponent"))),
            _ => key
                .strip_prefix("involvedObject.")
                .ok_or(())
                .and_then(involved),
        },
        FieldKind::EventsV1 => match key {
            "reason" => Ok((Some("/reason"), None)),
            "type" => Ok((Some("/type"), None)),
            "reportingController" => Ok((Some("/reportingComponent"), None)),
            _ => key.strip_prefix("regarding.").ok_or(()).and_then(involved),
        },
        FieldKind::Generic => Err(()),
    }
}

/// How the stored value compares as a string (booleans print as `true`/`false`).
fn field_value(obj: &Value, pointer: &str) -> String {
    match obj.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

impl FieldSelector {
    pub fn parse(s: &str, kind: FieldKind) -> Result<Self, SelectorError> {
        let mut reqs = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (key, value, negate) = if let Some((k, v)) = part.split_once("!=") {
                (k, v, true)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, v, false)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, v, false)
            } else {
                return Err(SelectorError(format!(
                    "invalid selector: '{part}'; can't understand '{part}'"
                )));
            };
            let key = key.trim();
            let (pointer, fallback) = field_pointer(kind, key)
                .map_err(|()| SelectorError(format!("field label not supported: {key}")))?;
            reqs.push(FieldReq {
                pointer,
                fallback,
                value: value.trim().to_owned(),
                negate,
            });
        }
        Ok(Self { reqs })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let values: Vec<(&str, String)> = self
            .reqs
            .iter()
            .flat_map(|r| r.pointer.into_iter().chain(r.fallback))
            .map(|p| (p, field_value(obj, p)))
            .collect();
        self.matches_with(|p| {
            values
                .iter()
                .find(|(k, _)| *k == p)
                .map_or("", |(_, v)| v.as_str())
        })
    }

    /// Whether an object whose field at JSON pointer `p` reads `field(p)` ("" when
    /// absent, booleans and numbers as text) matches.
    pub fn matches_with<'a>(&self, field: impl Fn(&str) -> &'a str) -> bool {
        self.reqs.iter().all(|r| {
            let Some(p) = r.pointer else {
                return r.negate;
            };
            let mut actual = field(p);
            if actual.is_empty()
                && let Some(fb) = r.fallback
            {
                actual = field(fb);
            }
            (actual == r.value) != r.negate
        })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// The name this selector pins (`metadata.name=X`), if any.
    pub fn pinned_name(&self) -> Option<&str> {
        self.reqs
            .iter()
            .find(|r| r.pointer == Some("/metadata/name") && !r.negate)
            .map(|r| r.value.as_str())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Every field a selector can name is in the store's index (a missing one would
    /// silently never match).
    #[test]
    fn every_selectable_field_is_indexed() {
        let keys = [
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.host",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
            "reason",
            "type",
            "reportingComponent",
            "source",
            "reportingController",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
        ];
        let mut seen = 0;
        for kind in [FieldKind::Pod, FieldKind::CoreEvent, FieldKind::EventsV1] {
            for key in keys {
                if let Ok((p, fb)) = super::field_pointer(kind, key) {
                    for p in p.into_iter().chain(fb) {
                        seen += 1;
                        assert!(INDEXED.contains(&p), "{key} -> {p} not indexed");
                    }
                }
            }
        }
        assert!(seen > 20, "{seen}");
    }

    use super::*;
    use crate::store::INDEXED;

    fn m(sel: &str, labels: Value) -> bool {
        LabelSelector::parse(sel).unwrap().matches(&labels)
    }

    #[test]
    fn label_grammar() {
        let l = json!({"spark-role": "executor", "spark-app-selector": "spark-1", "spark-exec-id": "2"});
        assert!(m("", l.clone()));
        assert!(m("spark-role=executor", l.clone()));
        assert!(m("spark-role==executor", l.clone()));
        assert!(!m("spark-role!=executor", l.clone()));
        assert!(m("spark-exec-inactive!=true", l.clone()));
        assert!(m("spark-role in (driver,executor)", l.clone()));
        assert!(m("spark-role in ( driver , executor )", l.clone()));
        assert!(!m("spark-role notin (executor)", l.clone()));
        assert!(m("spark-exec-inactive notin (true)", l.clone()));
        assert!(m("spark-exec-id", l.clone()));
        assert!(!m("!spark-exec-id", l.clone()));
        assert!(m("!spark-exec-inactive", l.clone()));
        assert!(m(
            "spark-app-selector=spark-1,spark-role=executor,spark-exec-inactive!=true,spark-exec-id in (1,2)",
            l.clone()
        ));
        assert!(!m("spark-exec-id in (1,3)", l.clone()));
        assert!(m(
            "example.com/team in (a,)",
            json!({"example.com/team": ""})
        ));
        assert!(!m("a=b", Value::Null));
    }

    #[test]
    fn label_errors() {
        for bad in ["a in b", "=x", "a b", "a in (x", "a,,b", "a=b c"] {
            let e = LabelSelector::parse(bad).unwrap_err();
            assert!(e.0.starts_with("unable to parse requirement"), "{bad}: {e}");
        }
    }

    #[test]
    fn field_selectors() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "hostNetwork": false},
                         "status": {"phase": "Running"}});
        let f = |s: &str| {
            FieldSelector::parse(s, FieldKind::Pod)
                .unwrap()
                .matches(&pod)
        };
        assert!(f("status.phase=Running"));
        assert!(f("metadata.name=p,spec.nodeName==n1"));
        assert!(!f("status.phase!=Running"));
        assert!(f("spec.host=n1"));
        assert!(f("spec.hostNetwork=false"));
        assert!(!f("status.podIPs=10.0.0.1"));
        assert!(f("status.nominatedNodeName="));
        let e = FieldSelector::parse("spec.foo=x", FieldKind::Pod).unwrap_err();
        assert_eq!(e.0, "field label not supported: spec.foo");
        assert_eq!(
            FieldSelector::parse("metadata.name=p", FieldKind::Pod)
                .unwrap()
                .pinned_name(),
            Some("p")
        );
    }

    #[test]
    fn event_field_selectors_per_api() {
        let ev = json!({"metadata": {"name": "e"}, "involvedObject": {"name": "p", "uid": "u", "kind": "Pod"},
                        "reason": "Killing", "source": {"component": ""}, "reportingComponent": "kubelet"});
        let core = FieldSelector::parse(
            "involvedObject.name=p,involvedObject.uid=u,source=kubelet",
            FieldKind::CoreEvent,
        )
        .unwrap();
        assert!(core.matches(&ev));
        let v1 = FieldSelector::parse(
            "regarding.name=p,reportingController=kubelet",
            FieldKind::EventsV1,
        )
        .unwrap();
        assert!(v1.matches(&ev));
        assert!(FieldSelector::parse("involvedObject.name=p", FieldKind::EventsV1).is_err());
        assert!(FieldSelector::parse("regarding.name=p", FieldKind::CoreEvent).is_err());
        assert!(FieldSelector::parse("spec.x=p", FieldKind::Generic).is_err());
    }
}
