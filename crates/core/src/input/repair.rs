//! Repairs for unreadable times: a pod whose timestamp does not parse is still read (Spark
//! never parses `deletionTimestamp`, only tests that it is set).

use serde_json::Value;

/// Unreadable times repaired per pod before it is given up.
pub(super) const MAX_REPAIRS: usize = 32;

/// Repairs the string at `path` if it is a timestamp that does not parse; the note to give.
pub(super) fn repair_time(value: &mut Value, path: &str) -> Option<String> {
    let field = path.rsplit('.').next().unwrap_or_default();
    let is_time = field.ends_with("Timestamp")
        || field.ends_with("Time")
        || matches!(field, "startedAt" | "finishedAt" | "time");
    if !is_time {
        return None;
    }
    let (parent_path, _) = path.rsplit_once('.')?;
    let parent = walk(value, parent_path)?.as_object_mut()?;
    let bad = parent.get(field)?.as_str()?.to_owned();
    if chrono::DateTime::parse_from_rfc3339(&bad).is_ok() {
        return None; // not a time problem
    }
    let shown: String = bad.chars().take(40).collect();
    if field == "deletionTimestamp" {
        parent.insert(field.to_owned(), Value::from("1970-01-01T00:00:00Z"));
        Some(format!(
            "{path} {shown:?} is not a time: kept as a requested deletion at an unknown time \
             (Spark only tests that it is set)"
        ))
    } else {
        parent.remove(field);
        Some(format!("{path} {shown:?} is not a time: ignored"))
    }
}

/// The value at a serde path (`status.containerStatuses[0].state`).
fn walk<'a>(mut v: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    for seg in path.split('.') {
        let (key, indices) = match seg.find('[') {
            Some(i) => (&seg[..i], &seg[i..]),
            None => (seg, ""),
        };
        if !key.is_empty() {
            v = v.get_mut(key)?;
        }
        for idx in indices.split(['[', ']']).filter(|s| !s.is_empty()) {
            v = v.get_mut(idx.parse::<usize>().ok()?)?;
        }
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::super::read_pods;

    fn pods(text: &str) -> super::super::Objects {
        read_pods(text.as_bytes(), "test").unwrap()
    }

    #[test]
    fn a_malformed_time_does_not_cost_the_pod() {
        let text = r#"{"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "e-1", "namespace": "spark-jobs", "deletionTimestamp": "yesterday",
                         "creationTimestamp": "2026-11-29T10:00:00Z",
                         "labels": {"spark-role": "executor", "spark-exec-id": "1"}},
            "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
            "status": {"phase": "Failed", "startTime": "not a time", "containerStatuses": [
                {"name": "spark-kubernetes-executor", "image": "spark", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-13-45T99:00:00Z"}}}]}}"#;
        let o = pods(text);
        assert!(o.invalid.is_empty(), "{:?}", o.invalid);
        assert_eq!(o.pods.len(), 1);
        let p = &o.pods[0];
        assert!(p.deletion.is_some(), "still a requested deletion");
        assert_eq!(
            p.container_statuses()[0].terminated().unwrap().exit_code,
            137
        );
        assert_eq!(o.skipped.len(), 3, "{:?}", o.skipped);
        assert!(o.skipped[0].contains("metadata.deletionTimestamp \"yesterday\" is not a time"));
        // A pod that is broken elsewhere is still reported.
        let broken = text.replace("\"exitCode\": 137", "\"exitCode\": \"lots\"");
        assert_eq!(pods(&broken).invalid.len(), 1);
    }
}
