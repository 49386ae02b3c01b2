//! deploy/components/: the events component adds only its grant; the alert rules pass their unit tests under promtool, the dashboard's
//! queries are PromQL and the dashboard follows Grafana's own schema (Grafana's Foundation
//! SDK decodes it strictly), and every metric they name is one the tool serves.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(root().join(path)).expect("reads");
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn dashboard() -> Value {
    let path = root().join("deploy/components/dashboard/spark-triage.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reads")).expect("JSON")
}

/// Every query of the dashboard, its variables and Grafana's interval put in.
fn dashboard_queries() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in dashboard()["panels"].as_array().expect("panels") {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().expect("expr");
            let expr = expr
                .replace("$__rate_interval", "5m")
                .replace("$namespace", ".*")
                .replace("$app", ".*");
            out.push((format!("{} {}", p["title"], t["refId"]), expr));
        }
    }
    out
}

/// A scratch directory for promtool's files.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("st-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

fn promtool(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("promtool runs (Debian's prometheus package)");
    assert!(
        out.status.success(),
        "promtool {args:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[cfg_attr(
    not(have_promtool),
    ignore = "needs promtool (Debian's prometheus package)"
)]
fn the_alert_rules_pass_their_unit_tests_under_promtool() {
    let rule = yaml("deploy/components/alerts/prometheusrule.yaml");
    assert_eq!(rule["kind"], "PrometheusRule");
    let dir = scratch("rules");
    // The PrometheusRule's spec is a Prometheus rule file (JSON is YAML).
    std::fs::write(dir.join("rules.yaml"), rule["spec"].to_string()).expect("writes");
    std::fs::copy(
        root().join("deploy/components/alerts/tests.yaml"),
        dir.join("tests.yaml"),
    )
    .expect("copies");
    promtool(&dir, &["check", "rules", "rules.yaml"]);
    promtool(&dir, &["test", "rules", "tests.yaml"]);
    // Every alert has a test.
    let tests = std::fs::read_to_string(dir.join("tests.yaml")).expect("reads");
    for g in rule["spec"]["groups"].as_array().expect("groups") {
        for r in g["rules"].as_array().expect("rules") {
            let name = r["alert"].as_str().expect("alerts only");
            assert!(
                tests.contains(&format!("alertname: {name}\n")),
                "{name} has no test"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
#[cfg_attr(
    not(have_promtool),
    ignore = "needs promtool (Debian's prometheus package)"
)]
fn the_dashboards_queries_are_promql() {
    let dir = scratch("dashboard-queries");
    let rules: Vec<Value> = dashboard_queries()
        .into_iter()
        .enumerate()
        .map(|(i, (_, expr))| serde_json::json!({"record": format!("dashboard:query{i}"), "expr": expr}))
        .collect();
    assert!(rules.len() >= 10, "{rules:?}");
    let file = serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]});
    std::fs::write(dir.join("queries.yaml"), file.to_string()).expect("writes");
    promtool(&dir, &["check", "rules", "queries.yaml"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
#[cfg_attr(
    not(have_go),
    ignore = "needs go (Grafana's Foundation SDK checks the dashboard; .ci/run installs it)"
)]
fn the_dashboard_follows_grafanas_schema() {
    let out = Command::new("go")
        .args(["run", "."])
        .arg(root().join("deploy/components/dashboard/spark-triage.json"))
        .current_dir(root().join("scripts/dashboard-check"))
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("a valid dashboard (12 panels)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The `spark_triage_*` metric names the rules and the dashboard use.
pub(super) fn names_used() -> BTreeSet<String> {
    let rules =
        std::fs::read_to_string(root().join("deploy/components/alerts/prometheusrule.yaml"))
            .expect("reads");
    let queries: Vec<String> = dashboard_queries().into_iter().map(|(_, e)| e).collect();
    let re = regex::Regex::new(r"spark_triage_[a-z_]+").expect("regex");
    std::iter::once(rules)
        .chain(queries)
        .flat_map(|t| {
            re.find_iter(&t)
                .map(|m| m.as_str().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (its kustomize builds the manifests; .ci/run installs it)"
)]
fn the_monitoring_overlay_builds_with_its_components() {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(root().join("deploy/with-monitoring"))
        .output()
        .expect("kubectl runs");
    super::common::succeeded(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for kind in [
        "kind: PrometheusRule",
        "kind: PodMonitor",
        "kind: ConfigMap",
        "kind: Deployment",
    ] {
        assert!(text.contains(kind), "{kind} in:\n{text}");
    }
    assert!(text.contains("grafana_dashboard: \"1\""), "{text}");
    assert!(text.contains("name: spark-triage-dashboard\n"), "{text}");
}

/// The cluster variant with one component, as a user's overlay writes it, built by
/// kubectl's kustomize: its text and its documents.
fn cluster_with(component: &str) -> (String, Vec<Value>) {
    let dir = root().join(format!("target/kustomize-{component}"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources:\n  - ../../deploy/cluster\ncomponents:\n  - ../../deploy/components/{component}\n"
        ),
    )
    .expect("writes");
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(&dir)
        .output()
        .expect("kubectl runs");
    super::common::succeeded(&out);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let docs = text
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).expect("YAML"))
        .collect();
    (text, docs)
}

#[test]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (its kustomize builds the manifests; .ci/run installs it)"
)]
fn the_events_component_adds_the_flag_and_only_the_events_grant() {
    let (text, docs) = cluster_with("events");
    assert!(text.contains("- --emit-events"), "{text}");
    let role = docs
        .iter()
        .find(|d| {
            d["metadata"]["name"] == "spark-triage-recorder-events" && d["kind"] == "ClusterRole"
        })
        .expect("the events ClusterRole");
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["events"], "verbs": ["create", "get", "update"]}])
    );
    // Every other grant is still read-only.
    for d in docs
        .iter()
        .filter(|d| d["kind"] == "ClusterRole" && *d != role)
    {
        for r in d["rules"].as_array().expect("rules") {
            for v in r["verbs"].as_array().expect("verbs") {
                assert!(
                    ["get", "list", "watch"].contains(&v.as_str().unwrap_or("")),
                    "{d}"
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (its kustomize builds the manifests; .ci/run installs it)"
)]
fn the_network_policy_component_admits_only_the_monitoring_namespace_to_the_port() {
    let (_, docs) = cluster_with("network-policy");
    let policy = docs
        .iter()
        .find(|d| d["kind"] == "NetworkPolicy")
        .expect("the NetworkPolicy");
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("the Deployment");
    // It selects the recorder's pods, in the recorder's namespace.
    assert_eq!(
        policy["metadata"]["namespace"],
        deployment["metadata"]["namespace"]
    );
    for (k, v) in policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .expect("labels")
    {
        assert_eq!(
            &deployment["spec"]["template"]["metadata"]["labels"][k], v,
            "the pods carry {k}"
        );
    }
    assert_eq!(
        policy["spec"]["ingress"],
        serde_json::json!([{
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            "ports": [{"protocol": "TCP", "port": 9090}]
        }])
    );
    // The port it admits is the one the recorder serves.
    assert!(
        deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .is_some_and(|a| a
                .iter()
                .any(|x| x.as_str().is_some_and(|s| s.ends_with(":9090")))),
        "{deployment}"
    );
}
