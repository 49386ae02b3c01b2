//! The real kubelet's words for one truth-table case (tests/fixtures/real-kubelet/<case>.json),
//! normalized so a later run, and the simulator's run of the same case, compare with them:
//! the pod's last status (phase, reason, message, conditions, container states) and its events,
//! without names of instances (uids, container ids, addresses, times).

use serde_json::{Value, json};

/// Replaces what differs between runs of the same case: uids, 64-hex ids, IPv4 addresses.
pub fn scrub(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let hex_run = b[i..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        // a uid: 8-4-4-4-12 hex digits
        if hex_run == 8 && is_uid(&s[i..]) {
            out.push_str("<uid>");
            i += 36;
            continue;
        }
        if hex_run >= 64 {
            out.push_str("<id>");
            i += hex_run;
            continue;
        }
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let ip_len = ipv4_len(&s[i..]);
            if ip_len > 0 {
                out.push_str("<ip>");
                i += ip_len;
                continue;
            }
        }
        let ch = s[i..].chars().next().expect("a char");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn is_uid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 36
        && [8, 13, 18, 23].iter().all(|&k| b[k] == b'-')
        && (0..36)
            .filter(|k| ![8, 13, 18, 23].contains(k))
            .all(|k| b[k].is_ascii_hexdigit())
}

fn ipv4_len(s: &str) -> usize {
    let mut len = 0;
    for part in 0..4 {
        let digits = s[len..].bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 3 {
            return 0;
        }
        len += digits;
        if part < 3 {
            if s.as_bytes().get(len) != Some(&b'.') {
                return 0;
            }
            len += 1;
        }
    }
    len
}

fn state(s: &Value) -> Value {
    let Some((kind, v)) = s.as_object().and_then(|o| o.iter().next()) else {
        return Value::Null;
    };
    json!({
        "kind": kind,
        "reason": v.get("reason"),
        "exitCode": v.get("exitCode"),
        "message": v.get("message").and_then(Value::as_str).map(scrub),
    })
}

/// The normalized pod: its status as the kubelet (and the control plane) left it.
pub fn pod(p: &Value) -> Value {
    let st = &p["status"];
    let mut conditions: Vec<Value> = st["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            json!({
                "type": c["type"],
                "status": c["status"],
                "reason": c.get("reason"),
                "message": c.get("message").and_then(Value::as_str).map(scrub),
            })
        })
        .collect();
    conditions.sort_by_key(|c| c["type"].as_str().unwrap_or_default().to_owned());
    let containers: Vec<Value> = st["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            json!({
                "name": c["name"],
                "state": state(&c["state"]),
                "lastState": state(&c["lastState"]),
                "restartCount": c["restartCount"],
                "ready": c["ready"],
            })
        })
        .collect();
    json!({
        "phase": st["phase"],
        "reason": st.get("reason"),
        "message": st.get("message").and_then(Value::as_str).map(scrub),
        "deleted": p["metadata"]["deletionTimestamp"].is_string(),
        "conditions": conditions,
        "containers": containers,
    })
}

/// The normalized events of one object: `Type Reason (component): message`, sorted, once each.
pub fn events(all: &Value, name: &str) -> Vec<String> {
    let mut out: Vec<String> = all["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["involvedObject"]["name"] == name)
        .map(|e| {
            let component = e["source"]["component"]
                .as_str()
                .filter(|c| !c.is_empty())
                .or_else(|| e["reportingComponent"].as_str())
                .unwrap_or_default();
            format!(
                "{} {} ({component}): {}",
                e["type"].as_str().unwrap_or_default(),
                e["reason"].as_str().unwrap_or_default(),
                scrub(e["message"].as_str().unwrap_or_default())
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What a verdict rests on, of a normalized case: the part that must agree between runs
/// (messages may not: they are compared and shown, not required). Three things a real node
/// does either way from run to run are read as one (a cgroup OOM kill's lost reason, below): a failing pull is `ErrImagePull` at each
/// try and `ImagePullBackOff` between tries, and an evicted pod's container ends `Error` 137
/// or, when the pod's cleanup removed it before its status was read, `ContainerStatusUnknown`
/// 137 with a restart counted (its last state then says the same).
pub fn essentials(case: &Value) -> Value {
    let p = &case["pod"];
    let evicted = p["reason"] == "Evicted";
    // containerd 1.6 reports a cgroup OOM kill as `Error` 137 when it handles the container's
    // exit before the OOM event (one run in three, even when the container's PID 1 exits
    // two seconds after the kill): the same kill either way, as the kubelet reports it.
    let oom = case["case"] == "cgroup-oom";
    let strip = |s: &Value| {
        let reason = match s["reason"].as_str() {
            Some("ErrImagePull" | "ImagePullBackOff") => json!("ErrImagePull|ImagePullBackOff"),
            Some("Error" | "ContainerStatusUnknown") if evicted => {
                json!("Error|ContainerStatusUnknown")
            }
            Some("OOMKilled" | "Error") if oom => json!("OOMKilled|Error"),
            _ => s["reason"].clone(),
        };
        json!({"kind": s["kind"], "reason": reason, "exitCode": s["exitCode"]})
    };
    let disruption = p["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "DisruptionTarget")
        .map(|c| c["reason"].clone());
    // The warnings (a Normal BackOff or Pulling comes and goes with the retry's timing).
    let mut reasons: Vec<String> = case["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str())
        .filter(|e| e.starts_with("Warning "))
        .map(|e| e.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    reasons.dedup();
    json!({
        "phase": p["phase"],
        "reason": p["reason"],
        "deleted": p["deleted"],
        "containers": p["containers"].as_array().into_iter().flatten()
            .map(|c| {
                // An evicted pod's lost container is counted as a restart, with a last state.
                let last = if evicted { Value::Null } else { strip(&c["lastState"]) };
                json!({"state": strip(&c["state"]), "lastState": last})
            })
            .collect::<Vec<_>>(),
        "disruption": disruption,
        "events": reasons,
    })
}

/// The words of a normalized case a reader sees (and a verdict's evidence quotes): the pod's
/// message, each container's state and last state messages, and each warning event whole.
/// Compared between the simulator and a real kubelet (an invented preemption message would
/// show here); not between real runs, whose retries' timing changes the events' counts.
// The simulator's comparison (tests/integration) reads it; the real node's run-to-run one does not.
#[allow(dead_code)]
pub fn messages(case: &Value) -> Value {
    let p = &case["pod"];
    let words = |v: &Value| v.as_str().map(unquoted);
    let mut warnings: Vec<String> = case["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|e| e.starts_with("Warning "))
        .map(unquoted)
        .collect();
    warnings.sort();
    warnings.dedup();
    // A failing pull's container says the try (`ErrImagePull`'s error) or the wait between
    // tries (`Back-off pulling image`) as the retry's timing has it: its events say both.
    let state = |s: &Value| match s["reason"].as_str() {
        Some("ErrImagePull" | "ImagePullBackOff") => Value::Null,
        _ => json!(words(&s["message"])),
    };
    json!({
        "pod": words(&p["message"]),
        "containers": p["containers"].as_array().into_iter().flatten()
            .map(|c| json!([state(&c["state"]), state(&c["lastState"])]))
            .collect::<Vec<_>>(),
        "warnings": warnings,
    })
}

/// The words without what the case names (images, URLs, volumes, quantities quoted):
/// `"…"` for each quoted part.
#[allow(dead_code)]
fn unquoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut quoted = false;
    for c in s.chars() {
        if c == '"' {
            if !quoted {
                out.push_str("\"…\"");
            }
            quoted = !quoted;
        } else if !quoted {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::scrub;

    #[test]
    fn scrubs_uids_ids_and_addresses() {
        assert_eq!(
            scrub("Preempted by pod b5b3ce3a-9bc7-459d-9249-5f923b073ee0 on node n"),
            "Preempted by pod <uid> on node n"
        );
        assert_eq!(
            scrub(&format!("containerd://{}", "ab".repeat(32))),
            "containerd://<id>"
        );
        assert_eq!(
            scrub("dial tcp 127.0.0.1:80: refused; v1.37.2"),
            "dial tcp <ip>:80: refused; v1.37.2"
        );
    }
}
