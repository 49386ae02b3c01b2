//! The reference verdicts of the `mixed` scenario (tests/fixtures/mixed-verdicts.json) and the
//! comparison of a `status -o json` document with them: shared by the simulator's tests
//! (tests/integration/verdicts.rs) and the real control plane's (tests/control_plane/).

use serde_json::Value;

pub const REFERENCE: &str = include_str!("../fixtures/mixed-verdicts.json");

/// Differences between a status document and the reference, one line each.
pub fn compare(doc: &Value, reference: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    for (name, want) in reference["apps"].as_object().expect("apps") {
        let Some(app) = doc["apps"]
            .as_array()
            .expect("apps")
            .iter()
            .find(|a| a["app_name"] == name.as_str())
        else {
            diffs.push(format!("{name}: missing from the output"));
            continue;
        };
        // The application's verdict, when the reference gives it.
        if let Some(cause) = want.get("verdict")
            && app["verdict"]["cause"] != *cause
        {
            diffs.push(format!(
                "{name}: app verdict {}, want {cause}",
                app["verdict"]["cause"]
            ));
        }
        let execs = app["executors"].as_array().expect("executors");
        let by_id = |id: i64| execs.iter().find(|e| e["id"] == id);
        let running: Vec<i64> = execs
            .iter()
            .filter(|e| e["state"] == "running")
            .map(|e| e["id"].as_i64().expect("id"))
            .collect();
        let want_running: Vec<i64> = want["running"]
            .as_array()
            .expect("running")
            .iter()
            .map(|v| v.as_i64().expect("id"))
            .collect();
        if running != want_running {
            diffs.push(format!(
                "{name}: running {running:?}, want {want_running:?}"
            ));
        }
        let reasons: Vec<(String, i64)> = app["pending_reasons"]
            .as_array()
            .expect("reasons")
            .iter()
            .map(|r| {
                (
                    r["reason"].as_str().unwrap_or_default().to_owned(),
                    r["count"].as_i64().unwrap_or_default(),
                )
            })
            .collect();
        let want_reasons = want["pending_reasons"].as_array().expect("reasons");
        let same = reasons.len() == want_reasons.len()
            && reasons.iter().zip(want_reasons).all(|((r, n), w)| {
                w[0].as_str()
                    .is_some_and(|alts| alts.split('|').any(|a| a == r))
                    && w[1].as_i64() == Some(*n)
            });
        if !same {
            diffs.push(format!(
                "{name}: pending reasons {reasons:?}, want {}",
                want["pending_reasons"]
            ));
        }
        for (id, w) in want["executors"].as_object().expect("executors") {
            let id: i64 = id.parse().expect("numeric id");
            let Some(e) = by_id(id) else {
                diffs.push(format!("{name} {id}: not in the output"));
                continue;
            };
            let got_counted = e["spark"].get("counted").cloned().unwrap_or(Value::Null);
            let checks = [
                ("cause", e["findings"][0].clone()),
                ("state", e["state"].clone()),
                ("exit_code", e["exit_code"].clone()),
                ("counted", got_counted),
                ("missing", e["missing"].clone()),
            ];
            for (field, got) in checks {
                if let Some(want) = w.get(field)
                    && got != *want
                {
                    diffs.push(format!(
                        "{name} {id}: {field} {got}, want {want} (findings {})",
                        e["findings"]
                    ));
                }
            }
        }
    }
    diffs
}
