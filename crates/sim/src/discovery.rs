//! Discovery documents (legacy JSON format: enough for kubectl 1.20–1.33 and kube-rs
//! `Discovery::run`). Only what is served is listed: a listed group-version that does not
//! answer makes kubectl complain.

use serde_json::{Value, json};

use crate::resource::Resource;

pub fn version() -> Value {
    json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-spark-triage-sim",
           "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
           "buildDate": "2026-11-01T00:00:00Z", "goVersion": "go1.24.0", "compiler": "gc",
           "platform": "linux/amd64"})
}

pub fn api_versions(server: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}]})
}

fn group(name: &str, version: &str) -> Value {
    let gv = format!("{name}/{version}");
    json!({"name": name, "versions": [{"groupVersion": gv, "version": version}],
           "preferredVersion": {"groupVersion": gv, "version": version}})
}

/// The API groups served, with their one version each: `apps` (what Spark's statefulset and
/// deployment allocators create), the batch schedulers' CRDs
/// (Volcano's, Kueue's) and the native gang's Workload beside the built-in groups.
pub const GROUPS: [(&str, &str); 6] = [
    ("apps", "v1"),
    ("events.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"),
    ("scheduling.volcano.sh", "v1beta1"),
    ("kueue.x-k8s.io", "v1beta1"),
    ("scheduling.k8s.io", "v1alpha1"),
];

/// The groups served: the built-in ones and those of the installed CRDs.
fn served(installed: &[Resource]) -> Vec<(&'static str, &'static str)> {
    let mut groups = GROUPS.to_vec();
    for r in installed {
        if let Some((g, v)) = r.group_version().split_once('/')
            && !groups.contains(&(g, v))
        {
            groups.push((g, v));
        }
    }
    groups
}

pub fn api_groups(installed: &[Resource]) -> Value {
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": served(installed).iter().map(|(g, v)| group(g, v)).collect::<Vec<_>>()})
}

pub fn api_group(name: &str, installed: &[Resource]) -> Option<Value> {
    served(installed)
        .into_iter()
        .find(|(g, _)| *g == name)
        .map(|(g, v)| {
            let mut g = group(g, v);
            g["kind"] = json!("APIGroup");
            g["apiVersion"] = json!("v1");
            g
        })
}

const RW: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn res(
    name: &str,
    singular: &str,
    namespaced: bool,
    kind: &str,
    verbs: &[&str],
    short: &[&str],
) -> Value {
    let mut r = json!({"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind, "verbs": verbs});
    if !short.is_empty() {
        r["shortNames"] = json!(short);
    }
    r
}

pub fn core_v1() -> Value {
    let mut pods = res("pods", "pod", true, "Pod", &RW, &["po"]);
    pods["categories"] = json!(["all"]);
    let mut services = res("services", "service", true, "Service", &RW, &["svc"]);
    services["categories"] = json!(["all"]);
    let mut eviction = res("pods/eviction", "", true, "Eviction", &["create"], &[]);
    eviction["group"] = json!("policy");
    eviction["version"] = json!("v1");
    json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        pods,
        res("pods/log", "", true, "Pod", &["get"], &[]),
        res("pods/status", "", true, "Pod", &["get", "patch", "update"], &[]),
        eviction,
        res("events", "event", true, "Event", &RW, &["ev"]),
        services,
        res("services/proxy", "", true, "ServiceProxyOptions", &["create", "delete", "get", "patch", "update"], &[]),
        res("configmaps", "configmap", true, "ConfigMap", &RW, &["cm"]),
        res("persistentvolumeclaims", "persistentvolumeclaim", true, "PersistentVolumeClaim", &RW, &["pvc"]),
        res("namespaces", "namespace", false, "Namespace", &["create", "delete", "get", "list", "patch", "update", "watch"], &["ns"]),
        res("nodes", "node", false, "Node", &RW, &["no"]),
        res("resourcequotas", "resourcequota", true, "ResourceQuota", &RW, &["quota"]),
        res("resourcequotas/status", "", true, "ResourceQuota", &["get", "patch", "update"], &[]),
    ]})
}

pub fn group_resources(group: &str, version: &str, installed: &[Resource]) -> Option<Value> {
    let pair = |kind: &str, plural: &str, singular: &str, short: &[&str]| {
        let mut status = res(
            &format!("{plural}/status"),
            "",
            true,
            kind,
            &["get", "patch", "update"],
            &[],
        );
        status["singularName"] = json!("");
        [res(plural, singular, true, kind, &RW, short), status]
    };
    let list = |resources: Vec<Value>| {
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"),
               "resources": resources})
    };
    let gv = format!("{group}/{version}");
    let crds: Vec<Value> = installed
        .iter()
        .filter(|r| r.group_version() == gv)
        .flat_map(|r| {
            let short: &[&str] = match r {
                Resource::KubeflowScheduledApps => &["scheduledsparkapp"],
                _ => &["sparkapp"],
            };
            let singular = r.plural().trim_end_matches('s');
            pair(r.kind(), r.plural(), singular, short)
        })
        .collect();
    match (group, version) {
        ("scheduling.volcano.sh", "v1beta1") => Some(list(
            pair(
                "PodGroup",
                "podgroups",
                "podgroup",
                &["pg", "podgroup-v1beta1"],
            )
            .to_vec(),
        )),
        ("kueue.x-k8s.io", "v1beta1") => Some(list(
            pair("Workload", "workloads", "workload", &["wl"]).to_vec(),
        )),
        ("scheduling.k8s.io", "v1alpha1") => Some(list(
            pair("Workload", "workloads", "workload", &[]).to_vec(),
        )),
        _ if !crds.is_empty() => Some(list(crds)),
        (_, "v1") => v1_group_resources(group),
        _ => None,
    }
}

fn v1_group_resources(group: &str) -> Option<Value> {
    match group {
        "apps" => {
            let mut statefulsets = res(
                "statefulsets",
                "statefulset",
                true,
                "StatefulSet",
                &RW,
                &["sts"],
            );
            let mut deployments = res(
                "deployments",
                "deployment",
                true,
                "Deployment",
                &RW,
                &["deploy"],
            );
            let mut replicasets = res(
                "replicasets",
                "replicaset",
                true,
                "ReplicaSet",
                &RW,
                &["rs"],
            );
            for r in [&mut statefulsets, &mut deployments, &mut replicasets] {
                r["categories"] = json!(["all"]);
            }
            Some(
                json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
                "resources": [statefulsets, deployments, replicasets]}),
            )
        }
        "events.k8s.io" => Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "events.k8s.io/v1",
            "resources": [res("events", "event", true, "Event", &RW, &["ev"])]}),
        ),
        "authorization.k8s.io" => Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "authorization.k8s.io/v1",
            "resources": [res("selfsubjectaccessreviews", "", false, "SelfSubjectAccessReview", &["create"], &[])]}),
        ),
        _ => None,
    }
}
