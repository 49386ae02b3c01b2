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

mod launch;
mod runtime;

use std::path::PathBuf;

pub use launch::{Launch, executor_container, plan};
pub use runtime::{Exit, Key, ProcessRuntime};

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
