//! The process kubelet's container runtime: a Spark executor container (Spark's image
//! entrypoint called with `executor`) runs as a local JVM started from the pod spec, the way
//! `entrypoint.sh` would start it inside the image.
//!
//! - **Launch**: env resolved from the pod (`value`, `fieldRef`s, `configMapKeyRef`),
//!   volumes materialised in a per-pod work dir (a configMap's keys become files, an
//!   emptyDir an empty dir) and every env value under a mount path remapped to it;
//!   `SPARK_JAVA_OPT_*` in numeric order; `KubernetesExecutorBackend` with the pod's
//!   arguments. stdout and stderr become the container log (and `<pod dir>/<container>.log`).
//! - **Memory limit, like a cgroup**: the container's processes are the JVM, its
//!   descendants, its process group and every member seen before (PySpark's daemon makes its
//!   own process group, and orphans stay in a cgroup); when their memory together passes the
//!   limit, all of them get SIGKILL and the container ends `OOMKilled` with 137.
//! - **Stop**: SIGTERM to the main process, SIGKILL to every member after the grace period;
//!   when the main process exits the rest is killed (as a runtime kills the cgroup).
//! - **No orphans**: every member is killed when the runtime is dropped, and each JVM also
//!   gets SIGKILL from the kernel when the simulator process dies, even by SIGKILL
//!   (`setpriv --pdeathsig`, when util-linux is there; the main process only: its own
//!   children see their stdin close and exit, as PySpark's daemon does).
//!
//! Host paths: the container's `/opt/spark` is `--spark-home` (a `pyspark` package dir has
//! the same `jars/` layout), Java is `$JAVA_HOME/bin/java` or `java` on `PATH`.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Read, Write},
    os::unix::process::{CommandExt, ExitStatusExt},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::Arc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use serde_json::Value;

use super::{
    logs::Logs,
    proctree::{ProcTable, memory_of},
};
use crate::model::quantity;

/// Where the process kubelet finds Spark and keeps per-pod files.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessOptions {
    /// A Spark distribution or a `pyspark` package dir: `jars/` holds Spark's jars.
    pub spark_home: PathBuf,
    /// Per-pod directories (local dirs, materialised volumes, container logs).
    pub work_dir: PathBuf,
    /// The `java` to run; default `$JAVA_HOME/bin/java`, else `java` on `PATH`.
    pub java: Option<PathBuf>,
}

/// The IP every executor process is reachable at.
pub const POD_IP: &str = "127.0.0.1";
/// How long a process whose main process exited may keep its log pipes open.
const DRAIN_SECS: f64 = 1.0;

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

    // Volumes: each mount path maps to a host dir.
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
    let remap = |value: &str| -> String {
        value
            .split(',')
            .map(|part| {
                for (mp, host) in &mounts {
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
    };

    // The container's env, resolved.
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
    for (k, v) in env.iter_mut() {
        *v = remap(v);
        if k == "SPARK_LOCAL_DIRS" {
            for d in v.split(',') {
                dirs.push(PathBuf::from(d));
            }
        }
    }
    // A container path that no mount maps (the image's own conf dir) does not exist here.
    env.retain(|(k, v)| k != "SPARK_CONF_DIR" || Path::new(v).starts_with(&pod_dir));
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

/// How a container ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Exit {
    pub code: i32,
    /// `Completed`, `Error` or `OOMKilled`, as the kubelet reports them.
    pub reason: &'static str,
    /// Peak memory of the container's processes, bytes.
    pub peak_memory: u64,
}

/// Key of a container: namespace, pod, container.
pub type Key = (String, String, String);

#[derive(Debug)]
struct Proc {
    child: Child,
    pid: i32,
    limit: Option<u64>,
    members: HashMap<i32, u64>,
    oom: bool,
    kill_at: Option<Instant>,
    exited: Option<(ExitStatus, Instant)>,
    readers: Vec<JoinHandle<()>>,
    peak: u64,
    /// The pod is gone (deleted with no kubelet in the loop): reap silently.
    orphaned: bool,
}

fn send(pid: i32, sig: Signal) {
    // A stale pid gets ESRCH, which is what "already gone" means here.
    let _ = kill(Pid::from_raw(pid), sig);
}

impl Proc {
    fn signal_members(&self, sig: Signal) {
        send(-self.pid, sig);
        for pid in self.members.keys() {
            send(*pid, sig);
        }
    }

    fn kill_now(&mut self) {
        self.signal_members(Signal::SIGKILL);
        send(self.pid, Signal::SIGKILL);
    }
}

/// Every process container the kubelet started.
#[derive(Debug)]
pub struct ProcessRuntime {
    pub opts: ProcessOptions,
    procs: HashMap<Key, Proc>,
}

impl ProcessRuntime {
    pub fn new(opts: ProcessOptions) -> Self {
        Self {
            opts,
            procs: HashMap::new(),
        }
    }

    pub fn is_running(&self, key: &Key) -> bool {
        self.procs.get(key).is_some_and(|p| !p.orphaned)
    }

    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }

    /// Starts a planned container; its log lines go to `logs`.
    pub fn start(&mut self, key: Key, launch: &Launch, logs: Arc<Logs>) -> Result<i32, String> {
        for d in &launch.dirs {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        for (path, text) in &launch.files {
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            std::fs::write(path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        // As containerd says it when the entrypoint is not there (setpriv would exec it and
        // only then fail, with 127).
        let path = launch
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        if find_program(&launch.program, &path).is_none() {
            return Err(format!(
                "failed to create containerd task: exec: {:?}: executable file not found in $PATH",
                launch.program.display().to_string()
            ));
        }
        // `setpriv --pdeathsig KILL` (util-linux) makes the kernel kill the process when the
        // simulator dies, so not even a SIGKILLed simulator leaves it behind (tested in
        // tests/integration/process_kubelet.rs). Not when just the starting thread ends:
        // the kernel reparents within the process then, without the signal.
        let mut cmd = match setpriv() {
            Some(wrapper) => {
                let mut c = Command::new(wrapper);
                c.args(["--pdeathsig", "KILL", "--"]).arg(&launch.program);
                c
            }
            None => Command::new(&launch.program),
        };
        cmd.args(&launch.args)
            .env_clear()
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&launch.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "failed to create containerd task: exec: {:?}: {e}",
                launch.program.display().to_string()
            )
        })?;
        let pid = child.id() as i32;
        let file = launch.cwd.join(format!("{}.log", key.2));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(pipe_to_log(out, key.clone(), logs.clone(), file.clone()));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(pipe_to_log(err, key.clone(), logs, file));
        }
        self.procs.insert(
            key,
            Proc {
                child,
                pid,
                limit: launch.memory_limit,
                members: HashMap::new(),
                oom: false,
                kill_at: None,
                exited: None,
                readers,
                peak: 0,
                orphaned: false,
            },
        );
        Ok(pid)
    }

    /// Asks the container to stop: SIGTERM to its main process now, SIGKILL to all of it
    /// after `grace`. Repeated calls keep the earliest deadline.
    pub fn stop(&mut self, key: &Key, grace: Duration) {
        let Some(p) = self.procs.get_mut(key) else {
            return;
        };
        if p.exited.is_some() {
            return;
        }
        let deadline = Instant::now() + grace;
        if p.kill_at.is_none() {
            send(p.pid, Signal::SIGTERM);
        }
        if p.kill_at.is_none_or(|k| deadline < k) {
            p.kill_at = Some(deadline);
        }
    }

    /// Containers with live processes.
    pub fn keys(&self) -> Vec<Key> {
        self.procs
            .iter()
            .filter(|(_, p)| !p.orphaned)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The pod is gone (force-deleted, or removed with no event): stop its processes like
    /// [`stop`](Self::stop) and reap them quietly, there is no pod left to report to.
    pub fn stop_orphan(&mut self, key: &Key, grace: Duration) {
        self.stop(key, grace);
        if let Some(p) = self.procs.get_mut(key) {
            p.orphaned = true;
        }
    }

    /// Reaps exits, enforces memory limits and stop deadlines. Returns the containers that
    /// ended (orphaned ones are dropped silently).
    pub fn poll(&mut self) -> Vec<(Key, Exit)> {
        if self.procs.is_empty() {
            return Vec::new();
        }
        let table = ProcTable::read();
        let now = Instant::now();
        let mut done = Vec::new();
        for (key, p) in self.procs.iter_mut() {
            if p.exited.is_none() {
                p.members = table.members(p.pid, &p.members);
                if let Some(limit) = p.limit {
                    let used = memory_of(&p.members, &table);
                    p.peak = p.peak.max(used);
                    if used > limit && !p.oom {
                        tracing::info!(
                            "process kubelet: {}/{} uses {} MiB over its {} MiB limit: OOM kill",
                            key.0,
                            key.1,
                            used >> 20,
                            limit >> 20
                        );
                        p.oom = true;
                        p.kill_now();
                    }
                }
                if p.kill_at.is_some_and(|k| now >= k) {
                    p.kill_now();
                }
                if let Ok(Some(status)) = p.child.try_wait() {
                    p.exited = Some((status, now));
                    // The main process is gone: the runtime kills what is left of the cgroup.
                    p.signal_members(Signal::SIGKILL);
                }
            }
            if let Some((status, at)) = p.exited {
                let drained = p.readers.iter().all(JoinHandle::is_finished);
                if drained || now.duration_since(at).as_secs_f64() >= DRAIN_SECS {
                    done.push((key.clone(), status));
                }
            }
        }
        let mut out = Vec::new();
        for (key, status) in done {
            let Some(p) = self.procs.remove(&key) else {
                continue;
            };
            if p.orphaned {
                tracing::info!(
                    "process kubelet: {}/{} (pod gone) exited {:?}",
                    key.0,
                    key.1,
                    status
                );
                continue;
            }
            let code = status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
            let reason = if p.oom {
                "OOMKilled"
            } else if code == 0 {
                "Completed"
            } else {
                "Error"
            };
            out.push((
                key,
                Exit {
                    code: if p.oom { 137 } else { code },
                    reason,
                    peak_memory: p.peak,
                },
            ));
        }
        out
    }

    /// Kills every process now and reaps them.
    pub fn kill_all(&mut self) {
        for p in self.procs.values_mut() {
            if p.exited.is_none() {
                p.kill_now();
            }
        }
        for (_, mut p) in self.procs.drain() {
            if p.exited.is_none() {
                let _ = p.child.wait();
            }
        }
    }
}

impl Drop for ProcessRuntime {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The program as `execvp` would find it: a path with a `/` as is, else the first `PATH` hit.
fn find_program(program: &Path, path: &str) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

fn setpriv() -> Option<&'static Path> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            ["/usr/bin/setpriv", "/bin/setpriv"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        })
        .as_deref()
}

fn pipe_to_log(
    pipe: impl Read + Send + 'static,
    key: Key,
    logs: Arc<Logs>,
    file: PathBuf,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .ok();
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if let Some(f) = out.as_mut() {
                        let _ = f.write_all(&buf);
                    }
                    let line = String::from_utf8_lossy(&buf);
                    logs.append(&key.0, &key.1, &key.2, line.trim_end_matches(['\n', '\r']));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::proctree::is_running as alive;

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

    fn opts() -> ProcessOptions {
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

    fn sh_launch(dir: &Path, script: &str, limit: Option<u64>) -> Launch {
        Launch {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), script.into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: dir.to_path_buf(),
            dirs: vec![dir.to_path_buf()],
            files: Vec::new(),
            memory_limit: limit,
        }
    }

    fn key(n: &str) -> Key {
        ("ns".into(), n.into(), "c".into())
    }

    fn wait_exit(rt: &mut ProcessRuntime) -> Vec<(Key, Exit)> {
        for _ in 0..300 {
            let out = rt.poll();
            if !out.is_empty() {
                return out;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no exit within 15 s");
    }

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("spark-triage-proc-{}-{name}", std::process::id()))
    }

    #[test]
    fn exit_codes_and_logs() {
        let dir = temp("exit");
        let logs = Arc::new(Logs::default());
        let mut rt = ProcessRuntime::new(opts());
        rt.start(
            key("p"),
            &sh_launch(&dir, "echo hello; echo oops >&2; exit 3", None),
            logs.clone(),
        )
        .unwrap();
        let out = wait_exit(&mut rt);
        assert_eq!(out[0].1.code, 3);
        assert_eq!(out[0].1.reason, "Error");
        let lines = logs.read("ns", "p", "c", false, None).unwrap().lines;
        assert!(
            lines.contains(&"hello".to_owned()) && lines.contains(&"oops".to_owned()),
            "{lines:?}"
        );
        assert!(
            std::fs::read_to_string(dir.join("c.log"))
                .unwrap()
                .contains("hello")
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_missing_java_is_a_clear_start_error() {
        let dir = temp("nojava");
        let mut rt = ProcessRuntime::new(opts());
        let mut l = sh_launch(&dir, "", None);
        l.program = PathBuf::from("/nonexistent/bin/java");
        let err = rt
            .start(key("j"), &l, Arc::new(Logs::default()))
            .unwrap_err();
        assert!(err.contains("/nonexistent/bin/java"), "{err}");
        assert!(rt.is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn stop_is_sigterm_then_sigkill_after_grace() {
        let dir = temp("stop");
        let logs = Arc::new(Logs::default());
        let mut rt = ProcessRuntime::new(opts());
        rt.start(key("t"), &sh_launch(&dir, "sleep 30", None), logs.clone())
            .unwrap();
        rt.stop(&key("t"), Duration::from_secs(10));
        let out = wait_exit(&mut rt);
        assert_eq!((out[0].1.code, out[0].1.reason), (143, "Error"));

        // A process that ignores SIGTERM is killed after the grace period.
        rt.start(
            key("k"),
            &sh_launch(&dir, "trap '' TERM; sleep 30 & wait; sleep 30", None),
            logs,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        rt.stop(&key("k"), Duration::from_millis(300));
        let out = wait_exit(&mut rt);
        assert_eq!(out[0].1.code, 137);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_whole_tree_is_oom_killed_past_the_limit() {
        let dir = temp("oom");
        let logs = Arc::new(Logs::default());
        let mut rt = ProcessRuntime::new(opts());
        // A grandchild in its own session (as PySpark's daemon makes its own process group)
        // grows to 400 MiB (`tail` keeps a line with no end); the limit is 64 MiB.
        let script =
            "setsid sh -c 'echo $$ > child.pid; head -c 400M /dev/zero | tail; sleep 60' & wait";
        rt.start(key("o"), &sh_launch(&dir, script, Some(64 << 20)), logs)
            .unwrap();
        let out = wait_exit(&mut rt);
        assert_eq!((out[0].1.code, out[0].1.reason), (137, "OOMKilled"));
        assert!(out[0].1.peak_memory > 64 << 20);
        let child: i32 = std::fs::read_to_string(dir.join("child.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(child), "the setsid child survived the OOM kill");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn dropping_the_runtime_leaves_no_process() {
        let dir = temp("drop");
        let logs = Arc::new(Logs::default());
        let mut rt = ProcessRuntime::new(opts());
        let pid = rt
            .start(
                key("d"),
                &sh_launch(&dir, "sleep 60 & echo $! > child.pid; wait", None),
                logs,
            )
            .unwrap();
        for _ in 0..100 {
            if dir.join("child.pid").exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        rt.poll(); // learns the members
        let child: i32 = std::fs::read_to_string(dir.join("child.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        drop(rt);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(pid) && !alive(child));
        let _ = std::fs::remove_dir_all(dir);
    }
}
