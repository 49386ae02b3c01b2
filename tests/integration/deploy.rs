//! deploy/: every manifest parses into its Kubernetes type, the recorder's grants are
//! read-only, it runs as non-root with a volume for its segments, and the image is built
//! in stages onto a non-root base.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use serde_json::Value;

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every manifest under deploy/ (kustomizations aside), as JSON.
fn manifests() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for sub in ["deploy/base", "deploy/cluster", "deploy/namespaced"] {
        for e in std::fs::read_dir(root().join(sub)).expect("deploy/") {
            let path = e.expect("entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".yaml") || name == "kustomization.yaml" {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("reads");
            let v: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            out.push((format!("{sub}/{name}"), v));
        }
    }
    out
}

fn typed<T: serde::de::DeserializeOwned>(name: &str, v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn read_only(name: &str, rules: &[PolicyRule]) {
    assert!(!rules.is_empty(), "{name}: no rules");
    for r in rules {
        for verb in &r.verbs {
            assert!(
                ["get", "list", "watch"].contains(&verb.as_str()),
                "{name}: the verb {verb} writes"
            );
        }
        let resources = r.resources.clone().unwrap_or_default();
        assert!(
            !resources.iter().any(|r| r == "secrets" || r == "*"),
            "{name}: {resources:?}"
        );
    }
}

#[test]
fn manifests_parse_into_their_types_with_read_only_grants_and_a_non_root_recorder() {
    let all = manifests();
    let mut kinds: Vec<&str> = all
        .iter()
        .map(|(_, v)| v["kind"].as_str().unwrap_or("?"))
        .collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "Deployment",
            "Namespace",
            "PersistentVolumeClaim",
            "Role",
            "RoleBinding",
            "ServiceAccount"
        ]
    );
    let mut role_names = Vec::new();
    let mut sa = None;
    for (name, v) in &all {
        match v["kind"].as_str() {
            Some("Namespace") => drop(typed::<Namespace>(name, v)),
            Some("PersistentVolumeClaim") => drop(typed::<PersistentVolumeClaim>(name, v)),
            Some("ServiceAccount") => {
                let s: ServiceAccount = typed(name, v);
                sa = s.metadata.name;
            }
            Some("ClusterRole") => {
                let r: ClusterRole = typed(name, v);
                read_only(name, r.rules.as_deref().unwrap_or_default());
                role_names.push(("ClusterRole", r.metadata.name.unwrap_or_default()));
            }
            Some("Role") => {
                let r: Role = typed(name, v);
                read_only(name, r.rules.as_deref().unwrap_or_default());
                role_names.push(("Role", r.metadata.name.unwrap_or_default()));
            }
            Some("ClusterRoleBinding") => drop(typed::<ClusterRoleBinding>(name, v)),
            Some("RoleBinding") => drop(typed::<RoleBinding>(name, v)),
            Some("Deployment") => {
                let d: Deployment = typed(name, v);
                let pod = d.spec.and_then(|s| s.template.spec).expect("pod spec");
                assert_eq!(
                    pod.service_account_name.as_deref(),
                    Some("spark-triage-recorder")
                );
                let psc = pod.security_context.expect("pod security context");
                assert_eq!(psc.run_as_non_root, Some(true), "{name}");
                assert!(psc.run_as_user.is_some_and(|u| u != 0), "{name}");
                let c = &pod.containers[0];
                let sc = c
                    .security_context
                    .clone()
                    .expect("container security context");
                assert_eq!(sc.run_as_non_root, Some(true));
                assert_eq!(sc.allow_privilege_escalation, Some(false));
                assert_eq!(sc.read_only_root_filesystem, Some(true));
                let args = c.args.clone().unwrap_or_default();
                assert_eq!(args.first().map(String::as_str), Some("record"), "{args:?}");
                for flag in ["--rotate=", "--retain=", "--max-size=", "--metrics-addr="] {
                    assert!(
                        args.iter().any(|a| a.starts_with(flag)),
                        "{flag} in {args:?}"
                    );
                }
                let res = c.resources.clone().expect("resources");
                assert!(res.requests.is_some_and(|r| r.contains_key("memory")));
                assert!(res.limits.is_some_and(|l| l.contains_key("memory")));
                let mount = &c.volume_mounts.clone().unwrap_or_default()[0];
                assert_eq!(
                    args.get(1),
                    Some(&mount.mount_path),
                    "records onto the volume"
                );
                assert!(c.liveness_probe.is_some() && c.readiness_probe.is_some());
            }
            other => panic!("{name}: unexpected kind {other:?}"),
        }
    }
    // The bindings name the roles and the ServiceAccount that exist.
    for (name, v) in &all {
        if let Some(kind @ ("ClusterRoleBinding" | "RoleBinding")) = v["kind"].as_str() {
            let role = (
                v["roleRef"]["kind"].as_str().unwrap_or_default(),
                v["roleRef"]["name"].as_str().unwrap_or_default().to_owned(),
            );
            assert!(role_names.contains(&role), "{name} ({kind}): {role:?}");
            assert_eq!(v["subjects"][0]["name"].as_str(), sa.as_deref(), "{name}");
        }
    }
}

#[test]
#[cfg_attr(
    not(have_kubectl),
    ignore = "needs kubectl (its kustomize builds the manifests; .ci/run installs it)"
)]
fn the_kustomizations_build_with_kubectl() {
    for (dir, scope) in [
        ("deploy", "--all-namespaces"),
        ("deploy/namespaced", "--namespace=spark-jobs"),
    ] {
        let out = std::process::Command::new("kubectl")
            .args(["kustomize"])
            .arg(root().join(dir))
            .output()
            .expect("kubectl runs");
        super::common::succeeded(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("- {scope}")), "{dir}: {text}");
        assert!(text.contains("kind: Deployment"), "{dir}");
        // The namespaced patch replaced the scope, and only it.
        for arg in [
            "- record",
            "- /data",
            "- --rotate=1h",
            "- --metrics-addr=0.0.0.0:9090",
        ] {
            assert!(text.contains(arg), "{dir}: {arg}");
        }
        assert_eq!(
            text.matches("--all-namespaces").count() + text.matches("--namespace=").count(),
            1,
            "{dir}"
        );
    }
}

#[test]
fn the_image_is_built_in_stages_and_runs_as_non_root() {
    let text = std::fs::read_to_string(root().join("Dockerfile")).expect("Dockerfile");
    let froms: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    assert!(
        froms[1].contains("distroless") && froms[1].contains("nonroot"),
        "{froms:?}"
    );
    let user = text
        .lines()
        .rfind(|l| l.starts_with("USER "))
        .expect("a USER");
    assert!(!user.contains(" 0") && !user.contains("root"), "{user}");
}

/// scripts/image.sh (the image assembled without a daemon, as CI and the real node build it)
/// and the Dockerfile give the image the same entrypoint and default command.
#[test]
fn the_assembled_image_and_the_dockerfile_agree_on_the_command() {
    let docker = std::fs::read_to_string(root().join("Dockerfile")).expect("Dockerfile");
    let json_of = |line: &str| -> Value {
        serde_json::from_str(line.split_once(' ').expect("an instruction").1).expect("JSON form")
    };
    let cmd = json_of(docker.lines().find(|l| l.starts_with("CMD ")).expect("CMD"));
    let entry = json_of(
        docker
            .lines()
            .find(|l| l.starts_with("ENTRYPOINT "))
            .expect("ENTRYPOINT"),
    );
    let script = std::fs::read_to_string(root().join("scripts/image.sh")).expect("image.sh");
    let assembled: Value = serde_json::from_str(
        script
            .split("--cmd-json '")
            .nth(1)
            .and_then(|s| s.split('\'').next())
            .expect("--cmd-json in image.sh"),
    )
    .expect("JSON");
    assert_eq!(assembled, cmd);
    assert!(
        script.contains(&format!("--entrypoint {}", entry[0].as_str().unwrap())),
        "{entry}"
    );
    assert!(script.contains("--user 65532:65532"));
}
