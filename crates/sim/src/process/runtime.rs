//! Running containers as local process trees: start, memory limit like a cgroup, stop with
//! a grace period, reap, and never leave an orphan.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::launch::Launch;
use super::{DRAIN_SECS, ProcessOptions};
use crate::logs::Logs;
use crate::proctree::{ProcTable, memory_of};

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
    use super::*;
    use crate::process::launch::tests::opts;
    use crate::proctree::is_running as alive;

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
