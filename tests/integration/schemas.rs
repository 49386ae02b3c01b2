//! docs/schemas/: JSON Schemas of the JSON outputs, derived from the types that write them
//! (schemars), kept current (a schema that differs from the types fails;
//! `UPDATE_SCHEMAS=1` rewrites) and checked against real outputs (jsonschema).

use spark_triage::output::fleet::FleetReport;
use spark_triage::output::report::Report;
use spark_triage::output::status::StatusReport;
use spark_triage_core::diagnose::Code;
use spark_triage_core::explain::Explanation;

use super::common::triage;

const SESSION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/mixed-session.ndjson"
);

fn current(name: &str, schema: &schemars::Schema) -> serde_json::Value {
    let path = format!(
        "{}/docs/schemas/{name}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let want = serde_json::to_string_pretty(schema).unwrap() + "\n";
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        if std::env::var("UPDATE_SCHEMAS").as_deref() == Ok("1") {
            std::fs::write(&path, &want).unwrap();
        } else {
            panic!(
                "{path} differs from the types; UPDATE_SCHEMAS=1 cargo test --test integration schemas rewrites it"
            );
        }
    }
    serde_json::from_str(&want).unwrap()
}

/// The schema of what the type writes (a field skipped when empty is not required).
fn output_schema<T: schemars::JsonSchema>() -> schemars::Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

fn output(args: &[&str]) -> serde_json::Value {
    let out = triage(args).output_blocking();
    super::common::succeeded(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn valid(schema: &serde_json::Value, doc: &serde_json::Value, what: &str) {
    let v = jsonschema::validator_for(schema).unwrap();
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

#[test]
fn status_json_matches_its_schema() {
    let schema = current("status", &output_schema::<StatusReport>());
    valid(
        &schema,
        &output(&["status", "--recording", SESSION, "-o", "json"]),
        "status",
    );
    // The schema says something: an executor without its state is not a status document.
    let mut broken = output(&["status", "--recording", SESSION, "-o", "json"]);
    broken["apps"][0]["executors"][0]
        .as_object_mut()
        .unwrap()
        .remove("state");
    let v = jsonschema::validator_for(&schema).unwrap();
    assert!(!v.is_valid(&broken));
}

#[test]
fn explain_json_matches_its_schema() {
    let schema = current("explain", &output_schema::<Explanation>());
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut checked = 0;
    for f in std::fs::read_dir(dir).unwrap() {
        let path = f.unwrap().path();
        let name = path.display().to_string();
        if !(name.ends_with(".yaml") || name.ends_with(".json")) || name.contains("events") {
            continue;
        }
        let out = triage(&["explain", &name, "-o", "json"]).output_blocking();
        if !out.status.success() {
            continue; // not pods (the explain tests cover the refusals)
        }
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        valid(&schema, &doc, &name);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} fixtures explained");
}

#[test]
fn report_json_matches_its_schema() {
    let schema = current("report", &output_schema::<Report>());
    valid(
        &schema,
        &output(&["report", SESSION, "-o", "json"]),
        "report",
    );
    for rec in ["mixed", "oom-storm"] {
        let path = format!("{}/snapshots/{rec}.ndjson.zst", env!("CARGO_MANIFEST_DIR"));
        valid(&schema, &output(&["report", &path, "-o", "json"]), &path);
    }
    // A real Spark's event log, read as a recording.
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/eventlog/real-spark-k8s"
    );
    valid(&schema, &output(&["report", log, "-o", "json"]), log);
}

/// Every place in `doc` where a code (or a severity) stands, as a JSON pointer and whether
/// it is a map's key: found by value, so a field added later is checked too. Text for
/// people that may read like a code (a verdict's `label`: "evicted") is not a place.
fn places(
    doc: &serde_json::Value,
    at: String,
    is: &dyn Fn(&str) -> bool,
    out: &mut Vec<(String, bool)>,
) {
    match doc {
        serde_json::Value::String(s) if is(s) && !at.ends_with("/label") => out.push((at, false)),
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                places(v, format!("{at}/{i}"), is, out);
            }
        }
        serde_json::Value::Object(o) => {
            for (k, v) in o {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                if is(k) {
                    out.push((here.clone(), true));
                }
                places(v, here, is, out);
            }
        }
        _ => {}
    }
}

/// `doc` with the code (or severity) at `place` replaced by `bogus`.
fn tampered(doc: &serde_json::Value, place: &(String, bool), bogus: &str) -> serde_json::Value {
    let mut doc = doc.clone();
    let (at, key) = place;
    if *key {
        let (parent, k) = at.rsplit_once('/').unwrap();
        let obj = doc.pointer_mut(parent).unwrap().as_object_mut().unwrap();
        let v = obj
            .remove(&k.replace("~1", "/").replace("~0", "~"))
            .unwrap();
        obj.insert(bogus.to_owned(), v);
    } else {
        *doc.pointer_mut(at).unwrap() = serde_json::json!(bogus);
    }
    doc
}

/// The schemas say which codes and severities exist: each of the three documents, with any
/// one code or severity in it replaced by one that does not exist, is refused; and
/// hand-written documents of the wrong shape are refused.
#[test]
fn schemas_refuse_unknown_codes_severities_and_wrong_shapes() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/oomkilled-executor.json"
    );
    let docs = [
        (
            "status",
            output_schema::<StatusReport>(),
            output(&["status", "--recording", SESSION, "-o", "json"]),
        ),
        (
            "report",
            output_schema::<Report>(),
            output(&["report", SESSION, "-o", "json"]),
        ),
        (
            "explain",
            output_schema::<Explanation>(),
            output(&["explain", fixture, "-o", "json"]),
        ),
    ];
    let is_code = |s: &str| Code::parse(s).is_some();
    let is_severity = |s: &str| matches!(s, "error" | "warn" | "info");
    for (name, schema, doc) in &docs {
        let v = jsonschema::validator_for(&serde_json::to_value(schema).unwrap()).unwrap();
        assert!(v.is_valid(doc), "{name}: the real document is valid");
        for (what, is, bogus) in [
            ("code", &is_code as &dyn Fn(&str) -> bool, "no-such-code"),
            ("severity", &is_severity, "fatal"),
        ] {
            let mut found = Vec::new();
            places(doc, String::new(), is, &mut found);
            assert!(!found.is_empty(), "{name}: no {what} in the document");
            let accepted: Vec<&String> = found
                .iter()
                .filter(|p| v.is_valid(&tampered(doc, p, bogus)))
                .map(|p| &p.0)
                .collect();
            assert!(
                accepted.is_empty(),
                "{name}: a {what} the schema does not enumerate at {accepted:?}"
            );
        }
        for wrong in [
            serde_json::json!({}),
            serde_json::json!([]),
            serde_json::json!({"apps": "none"}),
            serde_json::json!({"pods": [{"findings": [{"code": 7}]}]}),
        ] {
            assert!(!v.is_valid(&wrong), "{name} accepts {wrong}");
        }
    }
}

#[test]
fn fleet_report_json_matches_its_schema() {
    let schema = current("fleet-report", &output_schema::<FleetReport>());
    let dir = std::env::temp_dir().join(format!("st-fleet-schema-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tables = dir.display().to_string();
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/eventlog/real-spark-k8s"
    );
    for (source, cluster) in [(SESSION, "recorded"), (log, "event-log")] {
        let out = triage(&[
            "export",
            source,
            "--tables",
            &tables,
            "--cluster-name",
            cluster,
        ])
        .output_blocking();
        super::common::succeeded(&out);
    }
    let doc = output(&[
        "report", "--tables", &tables, "--since", "3650d", "-o", "json",
    ]);
    assert_eq!(
        doc["clusters"],
        serde_json::json!(["event-log", "recorded"])
    );
    valid(&schema, &doc, "report --tables");
    let _ = std::fs::remove_dir_all(&dir);
}
