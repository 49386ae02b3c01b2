//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch
//! and server-side apply (approximated as a strategic merge that may create).
//!
//! Strategic merge here knows the merge keys of the Pod and Event fields clients patch
//! (`containers` by `name`, `conditions` by `type`, `finalizers` as a set, …) and the
//! `$patch: delete|replace`, `$setElementOrder/…`, `$retainKeys` and
//! `$deleteFromPrimitiveList/…` directives; other lists are replaced, as for unknown types.

use serde_json::{Map, Value};

use super::error::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let base = ct.split(';').next().unwrap_or_default().trim();
        match base {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/json-patch+json" => Some(Self::Json),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Applies `body` to `target`.
pub fn apply(target: &Value, kind: PatchType, body: &[u8]) -> Result<Value, ApiError> {
    let parse_err =
        |e: &dyn std::fmt::Display| ApiError::bad_request(format!("error decoding patch: {e}"));
    match kind {
        PatchType::Json => {
            let p: json_patch::Patch = serde_json::from_slice(body).map_err(|e| parse_err(&e))?;
            let mut out = target.clone();
            json_patch::patch(&mut out, &p).map_err(|e| {
                // A failed `test` op is how clients express a precondition: 422 like the server.
                ApiError {
                    code: 422,
                    reason: "Invalid",
                    message: format!(
                        "the server rejected our request due to an error in our request: {e}"
                    ),
                    details: None,
                }
            })?;
            Ok(out)
        }
        PatchType::Merge => {
            let p: Value = serde_json::from_slice(body).map_err(|e| parse_err(&e))?;
            let mut out = target.clone();
            json_patch::merge(&mut out, &p);
            Ok(out)
        }
        PatchType::Strategic => {
            let p: Value = serde_json::from_slice(body).map_err(|e| parse_err(&e))?;
            Ok(strategic(target, &p, ""))
        }
        PatchType::Apply => {
            let p: Value = match serde_json::from_slice(body) {
                Ok(v) => v,
                Err(_) => {
                    let text = std::str::from_utf8(body).map_err(|e| parse_err(&e))?;
                    serde_saphyr::from_str(text).map_err(|e| parse_err(&e))?
                }
            };
            Ok(strategic(target, &p, ""))
        }
    }
}

/// The merge key of a list field, by the field's name.
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "containerStatuses"
        | "initContainerStatuses" => Some("name"),
        "volumeMounts" | "volumeDevices" => Some("mountPath"),
        "ports" => Some("containerPort"),
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        "hostAliases" => Some("ip"),
        _ => None,
    }
}

/// Primitive lists merged as sets.
fn is_set_list(field: &str) -> bool {
    field == "finalizers"
}

fn strategic(target: &Value, patch: &Value, field: &str) -> Value {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            if p.get("$patch").and_then(Value::as_str) == Some("replace") {
                let mut out = p.clone();
                out.remove("$patch");
                return Value::Object(out);
            }
            let mut out = t.clone();
            for (k, pv) in p {
                if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
                    continue;
                }
                if let Some(list) = k.strip_prefix("$deleteFromPrimitiveList/") {
                    if let (Some(Value::Array(cur)), Value::Array(del)) = (out.get_mut(list), pv) {
                        cur.retain(|x| !del.contains(x));
                    }
                    continue;
                }
                if pv.is_null() {
                    out.remove(k);
                    continue;
                }
                let merged = match out.get(k) {
                    Some(tv) => strategic(tv, pv, k),
                    None => strip_directives(pv),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(t), Value::Array(p)) => {
            if let Some(key) = merge_key(field) {
                merge_list_by_key(t, p, key)
            } else if is_set_list(field) {
                let mut out = t.clone();
                for x in p {
                    if !out.contains(x) {
                        out.push(x.clone());
                    }
                }
                Value::Array(out)
            } else {
                Value::Array(p.iter().map(strip_directives).collect())
            }
        }
        (_, p) => strip_directives(p),
    }
}

fn merge_list_by_key(target: &[Value], patch: &[Value], key: &str) -> Value {
    let mut out: Vec<Value> = target.to_vec();
    for item in patch {
        let Some(k) = item.get(key) else {
            out.push(strip_directives(item));
            continue;
        };
        let pos = out.iter().position(|x| x.get(key) == Some(k));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                out.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => out[i] = strategic(&out[i], item, ""),
            (None, false) => out.push(strip_directives(item)),
        }
    }
    Value::Array(out)
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_and_json_patch() {
        let t = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let out = apply(
            &t,
            PatchType::Merge,
            br#"{"metadata":{"labels":{"a":null,"c":"3"}}}"#,
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {"b": "2", "c": "3"}}}));
        let t = json!({"metadata": {"finalizers": ["x", "spark-triage.dev/hold"]}});
        let out = apply(
            &t,
            PatchType::Json,
            br#"[{"op":"test","path":"/metadata/finalizers/1","value":"spark-triage.dev/hold"},{"op":"remove","path":"/metadata/finalizers/1"}]"#,
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["x"]}}));
        let e = apply(
            &t,
            PatchType::Json,
            br#"[{"op":"test","path":"/metadata/finalizers/0","value":"nope"}]"#,
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(apply(&t, PatchType::Merge, b"{").unwrap_err().code, 400);
    }

    #[test]
    fn strategic_merges_by_key_and_directives() {
        let t = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]},
                       "metadata": {"finalizers": ["a"]},
                       "spec": {"containers": [{"name": "c", "image": "old"}], "tolerations": [{"key": "x"}]}});
        let p = br#"{"$setElementOrder/conditions":[{"type":"Ready"}],
                     "status":{"conditions":[{"type":"Ready","status":"True"},{"type":"DisruptionTarget","status":"True"}]},
                     "metadata":{"finalizers":["b"]},
                     "spec":{"containers":[{"name":"c","image":"new"}],"tolerations":[{"key":"y"}]}}"#;
        let out = apply(&t, PatchType::Strategic, p).unwrap();
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}, {"type": "DisruptionTarget", "status": "True"}])
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "c", "image": "new"}])
        );
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "y"}]));
        let out = apply(&out, PatchType::Strategic, br#"{"status":{"conditions":[{"type":"Ready","$patch":"delete"}]},"$deleteFromPrimitiveList/metadata":[]}"#).unwrap();
        assert_eq!(out["status"]["conditions"].as_array().unwrap().len(), 2);
        let out = apply(
            &t,
            PatchType::Strategic,
            br#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}"#,
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!([]));
    }

    #[test]
    fn apply_accepts_yaml() {
        let out = apply(
            &json!({}),
            PatchType::Apply,
            b"metadata:\n  labels:\n    a: b\n",
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {"a": "b"}}}));
    }
}
