//! From a pod spec to a process launch: env, volumes, `SPARK_JAVA_OPT_*`, the JVM's
//! arguments, as Spark's image `entrypoint.sh executor` would run them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{POD_IP, ProcessOptions};
use crate::model::quantity;

/// A container the runtime can start.
pub fn executor_container(pod: &Value) -> Option<&Value> {
    pod["spec"]["containers"].as_array()?.iter().find(|c| {
        c["command"].as_array().is_none_or(|a| a.is_empty())
            && c["args"].as_array().and_then(|a| a.first()) == Some(&Value::from("executor"))
    })
}

/// What to run for one container, and the files it needs first.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub dirs: Vec<PathBuf>,
    pub files: Vec<(PathBuf, String)>,
    /// The container's memory limit, bytes.
    pub memory_limit: Option<u64>,
}

/// Host environment variables a container gets besides its own (an image sets these).
const HOST_ENV: [&str; 5] = ["PATH", "HOME", "JAVA_HOME", "LANG", "TMPDIR"];

/// Plans the launch of `container` of `pod`. `config_map(name)` returns a configMap's
/// `data`. Pure but for reading `JAVA_HOME`/`PATH`-like host variables through `host_env`.
pub fn plan(
    pod: &Value,
    container: &Value,
    opts: &ProcessOptions,
    config_map: &dyn Fn(&str) -> Option<Value>,
    host_env: &dyn Fn(&str) -> Option<String>,
) -> Result<Launch, String> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let uid = pod["metadata"]["uid"].as_str().unwrap_or_default();
    let pod_dir = opts
        .work_dir
        .join(ns)
        .join(format!("{name}-{}", uid.get(..8).unwrap_or(uid)));
    let mut dirs = vec![pod_dir.clone()];
    let mut files = Vec::new();

    let mounts = volume_mounts(pod, container, &pod_dir, &mut dirs, &mut files, config_map)?;

    let mut env = container_env(pod, container, config_map)?;
    for (k, v) in env.iter_mut() {
        *v = remap(&mounts, v);
        if k == "SPARK_LOCAL_DIRS" {
            for d in v.split(',') {
                dirs.push(PathBuf::from(d));
            }
        }
    }
    // A container path that no mount maps (the image's own conf dir) does not exist here.
    env.retain(|(k, v)| k != "SPARK_CONF_DIR" || Path::new(v).starts_with(&pod_dir));

    let args = executor_args(&env, opts, name)?;

    let java = match (&opts.java, host_env("JAVA_HOME").filter(|s| !s.is_empty())) {
        (Some(java), _) => java.clone(),
        (None, Some(home)) => PathBuf::from(home).join("bin").join("java"),
        (None, None) => PathBuf::from("java"),
    };
    let mut full_env: Vec<(String, String)> = HOST_ENV
        .iter()
        .filter_map(|k| host_env(k).map(|v| ((*k).to_owned(), v)))
        .collect();
    full_env.push((
        "SPARK_HOME".to_owned(),
        opts.spark_home.display().to_string(),
    ));
    for (k, v) in env {
        full_env.retain(|(n, _)| *n != k);
        full_env.push((k, v));
    }
    let memory_limit = container["resources"]["limits"]["memory"]
        .as_str()
        .and_then(quantity::parse)
        .map(|b| b as u64);
    Ok(Launch {
        program: java,
        args,
        env: full_env,
        cwd: pod_dir,
        dirs,
        files,
        memory_limit,
    })
}

/// Volumes: each mount path of `container` maps to a host dir under `pod_dir` (added to
/// `dirs`), a configMap's items to `files` in it. The mounts, longest path first.
fn volume_mounts(
    pod: &Value,
    container: &Value,
    pod_dir: &Path,
    dirs: &mut Vec<PathBuf>,
    files: &mut Vec<(PathBuf, String)>,
    config_map: &dyn Fn(&str) -> Option<Value>,
) -> Result<Vec<(String, PathBuf)>, String> {
    let mut mounts: Vec<(String, PathBuf)> = Vec::new();
    let volumes = pod["spec"]["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for m in container["volumeMounts"].as_array().into_iter().flatten() {
        let (Some(vname), Some(path)) = (m["name"].as_str(), m["mountPath"].as_str()) else {
            continue;
        };
        let host = pod_dir.join("volumes").join(vname);
        dirs.push(host.clone());
        if let Some(v) = volumes.iter().find(|v| v["name"] == vname)
            && let Some(cm) = v["configMap"]["name"].as_str()
        {
            let optional = v["configMap"]["optional"].as_bool().unwrap_or(false);
            match config_map(cm) {
                Some(data) => {
                    let items = v["configMap"]["items"].as_array();
                    for (k, val) in data.as_object().into_iter().flatten() {
                        let target = match items {
                            Some(items) => match items.iter().find(|i| i["key"] == *k) {
                                Some(i) => i["path"].as_str().unwrap_or(k).to_owned(),
                                None => continue,
                            },
                            None => k.clone(),
                        };
                        if target.contains("..") || target.starts_with('/') {
                            return Err(format!("configmap {cm}: invalid item path {target:?}"));
                        }
                        files.push((
                            host.join(target),
                            val.as_str().unwrap_or_default().to_owned(),
                        ));
                    }
                }
                None if optional => {}
                None => {
                    return Err(format!(
                        "MountVolume.SetUp failed for volume \"{vname}\" : configmap \"{cm}\" not found"
                    ));
                }
            }
        }
        mounts.push((path.trim_end_matches('/').to_owned(), host));
    }
    // Longest mount path first, so nested mounts win.
    mounts.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    Ok(mounts)
}

/// A value's comma-separated container paths, each on the host dir of the mount it is
/// under (`mounts` longest first).
fn remap(mounts: &[(String, PathBuf)], value: &str) -> String {
    value
        .split(',')
        .map(|part| {
            for (mp, host) in mounts {
                if part == mp {
                    return host.display().to_string();
                }
                if let Some(rest) = part.strip_prefix(mp.as_str())
                    && rest.starts_with('/')
                {
                    return format!("{}{rest}", host.display());
                }
            }
            part.to_owned()
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The container's env, resolved (a later entry of a name replaces an earlier one).
fn container_env(
    pod: &Value,
    container: &Value,
    config_map: &dyn Fn(&str) -> Option<Value>,
) -> Result<Vec<(String, String)>, String> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let uid = pod["metadata"]["uid"].as_str().unwrap_or_default();
    let mut env: Vec<(String, String)> = Vec::new();
    for e in container["env"].as_array().into_iter().flatten() {
        let Some(k) = e["name"].as_str() else {
            continue;
        };
        let v = if let Some(v) = e["value"].as_str() {
            v.to_owned()
        } else if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            match path {
                "status.podIP" | "status.hostIP" => POD_IP.to_owned(),
                "metadata.name" => name.to_owned(),
                "metadata.namespace" => ns.to_owned(),
                "metadata.uid" => uid.to_owned(),
                "spec.nodeName" => pod["spec"]["nodeName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                "spec.serviceAccountName" => pod["spec"]["serviceAccountName"]
                    .as_str()
                    .unwrap_or("default")
                    .to_owned(),
                other => return Err(format!("unsupported fieldRef {other:?} in env {k}")),
            }
        } else if let Some(r) = e["valueFrom"]["configMapKeyRef"].as_object() {
            let cm = r.get("name").and_then(Value::as_str).unwrap_or_default();
            let key = r.get("key").and_then(Value::as_str).unwrap_or_default();
            match config_map(cm).and_then(|d| d[key].as_str().map(str::to_owned)) {
                Some(v) => v,
                None if r.get("optional") == Some(&Value::Bool(true)) => continue,
                None => return Err(format!("couldn't find key {key} in ConfigMap {ns}/{cm}")),
            }
        } else if e["valueFrom"].is_object() {
            return Err(format!("unsupported valueFrom in env {k}"));
        } else {
            String::new()
        };
        env.retain(|(n, _)| n != k);
        env.push((k.to_owned(), v));
    }
    Ok(env)
}

/// The JVM's arguments from the container's (remapped) env, as entrypoint.sh `executor)`
/// builds them; `name` is the pod's.
fn executor_args(
    env: &[(String, String)],
    opts: &ProcessOptions,
    name: &str,
) -> Result<Vec<String>, String> {
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());

    // entrypoint.sh `executor)`.
    let mut opts_env: Vec<(u64, String)> = env
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("SPARK_JAVA_OPT_")?.parse::<u64>().ok()?;
            Some((n, v.clone()))
        })
        .collect();
    opts_env.sort_by_key(|(n, _)| *n);
    let need = |k: &str| get(k).ok_or_else(|| format!("the executor needs env {k}"));
    let memory = need("SPARK_EXECUTOR_MEMORY")?;
    let mut classpath = Vec::new();
    if let Some(conf) = get("SPARK_CONF_DIR") {
        classpath.push(conf);
    }
    classpath.push(format!("{}/jars/*", opts.spark_home.display()));
    for extra in ["SPARK_EXTRA_CLASSPATH", "SPARK_DIST_CLASSPATH"] {
        if let Some(cp) = get(extra).filter(|s| !s.is_empty()) {
            classpath.push(cp);
        }
    }
    let mut args: Vec<String> = opts_env.into_iter().map(|(_, v)| v).collect();
    args.push(format!("-Xms{memory}"));
    args.push(format!("-Xmx{memory}"));
    args.extend(["-cp".to_owned(), classpath.join(":")]);
    args.push("org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend".to_owned());
    for (flag, var) in [
        ("--driver-url", "SPARK_DRIVER_URL"),
        ("--executor-id", "SPARK_EXECUTOR_ID"),
        ("--cores", "SPARK_EXECUTOR_CORES"),
        ("--app-id", "SPARK_APPLICATION_ID"),
    ] {
        args.extend([flag.to_owned(), need(var)?]);
    }
    args.extend(["--hostname".to_owned(), POD_IP.to_owned()]);
    args.extend([
        "--resourceProfileId".to_owned(),
        get("SPARK_RESOURCE_PROFILE_ID").unwrap_or_else(|| "0".to_owned()),
    ]);
    args.extend([
        "--podName".to_owned(),
        get("SPARK_EXECUTOR_POD_NAME").unwrap_or_else(|| name.to_owned()),
    ]);
    Ok(args)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    fn spark_pod() -> Value {
        json!({
            "metadata": {"name": "probe-0d1145a22972a780-exec-1", "namespace": "spark-jobs", "uid": "0123456789abcdef"},
            "spec": {
                "nodeName": "sim-node-1",
                "volumes": [
                    {"name": "spark-local-dir-1", "emptyDir": {}},
                    {"name": "spark-conf-volume-exec", "configMap": {"name": "spark-exec-abc-conf-map",
                        "items": [{"key": "spark.properties", "path": "spark.properties"}]}}
                ],
                "containers": [{
                    "name": "spark-kubernetes-executor", "image": "fake:1", "args": ["executor"],
                    "resources": {"requests": {"cpu": "1", "memory": "896Mi"}, "limits": {"memory": "896Mi"}},
                    "volumeMounts": [
                        {"name": "spark-local-dir-1", "mountPath": "/var/data/spark-1e2f"},
                        {"name": "spark-conf-volume-exec", "mountPath": "/opt/spark/conf"}
                    ],
                    "env": [
                        {"name": "SPARK_USER", "value": "root"},
                        {"name": "SPARK_DRIVER_URL", "value": "spark://CoarseGrainedScheduler@127.0.0.1:40001"},
                        {"name": "SPARK_EXECUTOR_CORES", "value": "1"},
                        {"name": "SPARK_EXECUTOR_MEMORY", "value": "512m"},
                        {"name": "SPARK_APPLICATION_ID", "value": "spark-abc"},
                        {"name": "SPARK_CONF_DIR", "value": "/opt/spark/conf"},
                        {"name": "SPARK_EXECUTOR_ID", "value": "1"},
                        {"name": "SPARK_RESOURCE_PROFILE_ID", "value": "0"},
                        {"name": "SPARK_JAVA_OPT_10", "value": "-Dten"},
                        {"name": "SPARK_JAVA_OPT_1", "value": "-XX:+IgnoreUnrecognizedVMOptions"},
                        {"name": "SPARK_JAVA_OPT_2", "value": "--sun-misc-unsafe-memory-access=allow"},
                        {"name": "SPARK_JAVA_OPT_0", "value": "-Dzero"},
                        {"name": "SPARK_EXECUTOR_POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                        {"name": "SPARK_EXECUTOR_POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                        {"name": "SPARK_LOCAL_DIRS", "value": "/var/data/spark-1e2f"}
                    ]
                }]
            }
        })
    }

    pub(crate) fn opts() -> ProcessOptions {
        ProcessOptions {
            spark_home: PathBuf::from("/sh"),
            work_dir: PathBuf::from("/w"),
            java: None,
        }
    }

    fn host(k: &str) -> Option<String> {
        match k {
            "PATH" => Some("/usr/bin".into()),
            "JAVA_HOME" => Some("/jdk".into()),
            _ => None,
        }
    }

    fn cm(name: &str) -> Option<Value> {
        (name == "spark-exec-abc-conf-map")
            .then(|| json!({"spark.properties": "spark.app.id=spark-abc\n", "other": "x"}))
    }

    #[test]
    fn the_launch_is_entrypoint_executor() {
        let pod = spark_pod();
        let c = executor_container(&pod).unwrap();
        let l = plan(&pod, c, &opts(), &cm, &host).unwrap();
        let dir = "/w/spark-jobs/probe-0d1145a22972a780-exec-1-01234567";
        assert_eq!(l.program, PathBuf::from("/jdk/bin/java"));
        assert_eq!(l.cwd, PathBuf::from(dir));
        assert_eq!(
            l.args.join(" "),
            format!(
                "-Dzero -XX:+IgnoreUnrecognizedVMOptions --sun-misc-unsafe-memory-access=allow -Dten \
                 -Xms512m -Xmx512m -cp {dir}/volumes/spark-conf-volume-exec:/sh/jars/* \
                 org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
                 --driver-url spark://CoarseGrainedScheduler@127.0.0.1:40001 --executor-id 1 --cores 1 \
                 --app-id spark-abc --hostname 127.0.0.1 --resourceProfileId 0 \
                 --podName probe-0d1145a22972a780-exec-1"
            )
        );
        let env: HashMap<_, _> = l.env.iter().cloned().collect();
        assert_eq!(env["SPARK_EXECUTOR_POD_IP"], "127.0.0.1");
        assert_eq!(
            env["SPARK_LOCAL_DIRS"],
            format!("{dir}/volumes/spark-local-dir-1")
        );
        assert_eq!(
            env["SPARK_CONF_DIR"],
            format!("{dir}/volumes/spark-conf-volume-exec")
        );
        assert_eq!(env["SPARK_HOME"], "/sh");
        assert_eq!(env["PATH"], "/usr/bin");
        assert!(!env.contains_key("HOME"));
        // Only the listed item is materialised.
        assert_eq!(
            l.files,
            vec![(
                PathBuf::from(format!(
                    "{dir}/volumes/spark-conf-volume-exec/spark.properties"
                )),
                "spark.app.id=spark-abc\n".to_owned()
            )]
        );
        assert_eq!(l.memory_limit, Some(896 * 1024 * 1024));
    }

    #[test]
    fn an_unmounted_conf_dir_is_dropped_and_missing_config_maps_fail() {
        let mut pod = spark_pod();
        pod["spec"]["containers"][0]["volumeMounts"]
            .as_array_mut()
            .unwrap()
            .pop();
        let c = executor_container(&pod).unwrap().clone();
        let l = plan(&pod, &c, &opts(), &cm, &host).unwrap();
        assert!(!l.env.iter().any(|(k, _)| k == "SPARK_CONF_DIR"));
        assert!(l.args.iter().any(|a| a == "/sh/jars/*"));

        let pod = spark_pod();
        let c = executor_container(&pod).unwrap();
        let err = plan(&pod, c, &opts(), &|_| None, &host).unwrap_err();
        assert!(
            err.contains("configmap \"spark-exec-abc-conf-map\" not found"),
            "{err}"
        );
    }

    #[test]
    fn unsupported_env_sources_are_clear_errors() {
        let mut pod = spark_pod();
        pod["spec"]["containers"][0]["env"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}));
        let c = executor_container(&pod).unwrap().clone();
        assert_eq!(
            plan(&pod, &c, &opts(), &cm, &host).unwrap_err(),
            "unsupported valueFrom in env X"
        );
        let mut pod = spark_pod();
        pod["spec"]["containers"][0]["env"]
            .as_array_mut()
            .unwrap()
            .retain(|e| e["name"] != "SPARK_EXECUTOR_MEMORY");
        let c = executor_container(&pod).unwrap().clone();
        assert_eq!(
            plan(&pod, &c, &opts(), &cm, &host).unwrap_err(),
            "the executor needs env SPARK_EXECUTOR_MEMORY"
        );
    }

    #[test]
    fn only_the_spark_entrypoint_is_started() {
        let mut pod = spark_pod();
        assert!(executor_container(&pod).is_some());
        pod["spec"]["containers"][0]["command"] = json!(["/bin/sh"]);
        assert!(executor_container(&pod).is_none());
        assert!(executor_container(&json!({"spec": {}})).is_none());
    }
}
