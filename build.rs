//! Which outside tools this machine has, for the tests that need them: each found tool sets
//! `have_<tool>`, and a test that needs a missing one is marked
//! `#[cfg_attr(not(have_tmux), ignore = "needs tmux …")]`, so cargo's own summary lists it as
//! ignored with its reason (a test that returned early showed as `ok`). Under `CI=true` every
//! cfg is set whatever is found: those tests are mandatory there and fail when a tool is
//! missing. `have_pypi` is not a tool: python3 able to make a venv and the Python package
//! index reachable (the tests that install pyspark, duckdb, moto or the MCP SDK need both), nor is `have_node_host` (a host a
//! real kubelet can run on: cgroups, overlayfs, CNI, busybox, no swap). The product itself reads none of
//! these. PATH is part of the fingerprint: a build
//! under another PATH (an editor's, `.ci/run`'s) compiles the package again.

use std::path::Path;

/// The tools, by the cfg they set.
const TOOLS: [(&str, &str); 15] = [
    ("have_openssl", "openssl"),
    ("have_kubectl", "kubectl"),
    ("have_tmux", "tmux"),
    ("have_zsh", "zsh"),
    ("have_fish", "fish"),
    ("have_man", "man"),
    ("have_zstd", "zstd"),
    ("have_go", "go"),
    ("have_java", "java"),
    ("have_python3", "python3"),
    ("have_containerd", "containerd"),
    ("have_runc", "runc"),
    ("have_promtool", "promtool"),
    ("have_git", "git"),
    ("have_debootstrap", "debootstrap"),
];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=CI");
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<_> = std::env::split_paths(&path).collect();
    // Looked for again when PATH or CI change, or a found tool does; a tool installed into
    // a directory already on PATH is found after `touch build.rs` (watching whole PATH
    // directories would scan them at every build).
    for (cfg, tool) in TOOLS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let found = dirs.iter().map(|d| d.join(tool)).find(|p| executable(p));
        if let Some(p) = &found {
            println!("cargo::rerun-if-changed={}", p.display());
        }
        if ci || found.is_some() {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    // Not a tool: the Python package index, which the tests that install from it need
    // (pyspark, duckdb, moto, the MCP SDK). Probed again when the index or proxy settings
    // change, or after `touch build.rs`.
    for var in [
        "PIP_INDEX_URL",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rustc-check-cfg=cfg(have_pypi)");
    // Only where tests may be built: a release build (`cargo install`, the image) makes no
    // connection.
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    if ci || (!release && python_venv() && pypi_reachable()) {
        println!("cargo::rustc-cfg=have_pypi");
    }
    // Not a tool: the real node (cgroups, mounts, network devices) needs root.
    println!("cargo::rustc-check-cfg=cfg(have_root)");
    if ci || is_root() {
        println!("cargo::rustc-cfg=have_root");
    }
    // Nor this: a host a real kubelet can run pods on (scripts/control-plane/node/node.sh
    // checks the same before it starts anything).
    println!("cargo::rustc-check-cfg=cfg(have_node_host)");
    if ci || node_host().is_ok() {
        println!("cargo::rustc-cfg=have_node_host");
    }
}

/// Whether the build runs as root (the effective uid in /proc/self/status).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether python3 can make a venv to install into (Debian splits `venv` and `ensurepip`
/// into python3-venv): without it no test can install from the index.
fn python_venv() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether the Python package index answers: a TCP connection within 3 s to its host
/// (`PIP_INDEX_URL`'s, else pypi.org), or to the proxy's when one is set for its scheme;
/// each address the name has is tried, and the lookup itself is given 3 s. A wheel
/// directory alone (`PIP_FIND_LINKS`) is not counted: the tests install from the index.
fn pypi_reachable() -> bool {
    use std::net::{TcpStream, ToSocketAddrs};
    use std::time::Duration;
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let index = var("PIP_INDEX_URL").unwrap_or_else(|| "https://pypi.org/simple".to_owned());
    let proxy = if index.starts_with("http://") {
        var("HTTP_PROXY").or_else(|| var("http_proxy"))
    } else {
        var("HTTPS_PROXY").or_else(|| var("https_proxy"))
    };
    let url = proxy.unwrap_or(index);
    let Some(addr) = host_port(&url) else {
        return false;
    };
    // The lookup has no timeout of its own: a thread, waited for 3 s.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(addr.to_socket_addrs().map(Vec::from_iter));
    });
    let Ok(Ok(addrs)) = rx.recv_timeout(Duration::from_secs(3)) else {
        return false;
    };
    addrs
        .iter()
        .any(|a| TcpStream::connect_timeout(a, Duration::from_secs(3)).is_ok())
}

/// `host:port` of a URL (`https://user:pw@host:8443/simple` → `host:8443`; a bracketed IPv6
/// address kept whole; the scheme's port when none is given, http's when there is no scheme).
fn host_port(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    if host_port.is_empty() {
        return None;
    }
    let has_port = match host_port.rfind(']') {
        Some(end) => host_port[end..].contains(':'),
        None => host_port.contains(':'),
    };
    Some(if has_port {
        host_port.to_owned()
    } else if scheme == "https" {
        format!("{host_port}:443")
    } else {
        format!("{host_port}:80")
    })
}

/// What a real kubelet needs of this host beside its tools: a memory cgroup controller,
/// overlayfs, the CNI plugins, a static busybox, and no swap (the OOM cases would swap).
fn node_host() -> Result<(), &'static str> {
    let has = |p: &str| Path::new(p).exists();
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    if !(has("/sys/fs/cgroup/memory")
        || read("/sys/fs/cgroup/cgroup.controllers").contains("memory"))
    {
        return Err("no memory cgroup controller");
    }
    let release = read("/proc/sys/kernel/osrelease");
    let module = format!("/lib/modules/{}/kernel/fs/overlayfs", release.trim());
    if !read("/proc/filesystems")
        .split_whitespace()
        .any(|f| f == "overlay")
        && !has(&module)
    {
        return Err("no overlayfs");
    }
    if !has("/usr/lib/cni/bridge") {
        return Err("no CNI plugins");
    }
    if !has("/bin/busybox") {
        return Err("no busybox");
    }
    if read("/proc/swaps").lines().count() > 1 {
        return Err("swap is on");
    }
    Ok(())
}
