//! The krew manifest (assets/krew/) and scripts/package.sh: the manifest has the structure
//! krew reads, and an archive the script builds is what the manifest says it is.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn manifest(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `from` globs of one `*` (krew allows globs; this manifest uses one per path).
fn glob_match(pattern: &str, path: &str) -> bool {
    match pattern.split_once('*') {
        Some((pre, post)) => {
            path.len() >= pre.len() + post.len() && path.starts_with(pre) && path.ends_with(post)
        }
        None => pattern == path,
    }
}

/// The platforms, checked for what krew needs; returns (os, arch, platform).
fn platforms(m: &Value) -> Vec<(String, String, Value)> {
    assert_eq!(
        m["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(m["kind"], "Plugin");
    assert_eq!(m["metadata"]["name"], "spark-triage");
    let spec = &m["spec"];
    assert!(
        spec["version"].as_str().is_some_and(|v| v.starts_with('v')),
        "{spec}"
    );
    for k in ["homepage", "shortDescription", "description"] {
        assert!(spec[k].as_str().is_some_and(|v| !v.is_empty()), "spec.{k}");
    }
    let list = spec["platforms"].as_array().expect("platforms");
    list.iter()
        .map(|p| {
            let labels = &p["selector"]["matchLabels"];
            let (os, arch) = (
                labels["os"].as_str().unwrap(),
                labels["arch"].as_str().unwrap(),
            );
            let uri = p["uri"].as_str().expect("uri");
            assert!(
                uri.starts_with("https://") && uri.ends_with(".tar.gz"),
                "{uri}"
            );
            let sha = p["sha256"].as_str().expect("sha256");
            assert!(
                sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
                "{sha}"
            );
            assert_eq!(p["bin"], "kubectl-spark_triage");
            let files = p["files"].as_array().expect("files");
            assert!(!files.is_empty());
            for f in files {
                assert!(
                    f["from"].as_str().is_some() && f["to"].as_str().is_some(),
                    "{f}"
                );
            }
            // The archive named in the uri is the platform's target.
            let triple = match (os, arch) {
                ("linux", "amd64") => "x86_64-unknown-linux-gnu",
                ("linux", "arm64") => "aarch64-unknown-linux-gnu",
                ("darwin", "amd64") => "x86_64-apple-darwin",
                ("darwin", "arm64") => "aarch64-apple-darwin",
                other => panic!("unexpected platform {other:?}"),
            };
            assert!(
                uri.ends_with(&format!("-{triple}.tar.gz")),
                "{uri} for {os}/{arch}"
            );
            (os.to_owned(), arch.to_owned(), p.clone())
        })
        .collect()
}

/// scripts/package.sh with this build's binaries: its archive in `dir`, its manifest
/// written to `manifest` (a copy of assets/krew/'s).
fn package(dir: &Path, manifest: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(repo().join("assets/krew/spark-triage.yaml"), manifest).unwrap();
    let bins = Path::new(env!("CARGO_BIN_EXE_spark-triage"))
        .parent()
        .unwrap();
    let out = Command::new(repo().join("scripts/package.sh"))
        .arg("--bin-dir")
        .arg(bins)
        .arg("--out")
        .arg(dir)
        .arg("--manifest")
        .arg(manifest)
        .output()
        .unwrap();
    super::common::succeeded(&out);
}

#[test]
fn the_manifest_covers_linux_and_darwin_on_amd64_and_arm64() {
    let m = manifest(&repo().join("assets/krew/spark-triage.yaml"));
    let mut got: Vec<(String, String)> =
        platforms(&m).into_iter().map(|(o, a, _)| (o, a)).collect();
    got.sort();
    let want = [
        ("darwin", "amd64"),
        ("darwin", "arm64"),
        ("linux", "amd64"),
        ("linux", "arm64"),
    ];
    assert_eq!(got, want.map(|(o, a)| (o.to_owned(), a.to_owned())));
}

#[test]
#[cfg_attr(
    not(have_python3),
    ignore = "needs python3 (scripts/package.sh writes the krew manifest with it)"
)]
fn package_sh_builds_an_archive_the_manifest_describes() {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return; // the manifest test above still runs; this one needs a linux/amd64 host
    }
    let dir = std::env::temp_dir().join(format!("spark-triage-package-{}", std::process::id()));
    let copy = dir.join("manifest.yaml");
    package(&dir, &copy);
    let m = manifest(&copy);
    let (_, _, p) = platforms(&m)
        .into_iter()
        .find(|(o, a, _)| o == "linux" && a == "amd64")
        .unwrap();
    let uri = p["uri"].as_str().unwrap();
    let archive = dir.join(uri.rsplit('/').next().unwrap());
    let sum = Command::new("sha256sum").arg(&archive).output().unwrap();
    let sum = String::from_utf8_lossy(&sum.stdout);
    assert_eq!(
        p["sha256"].as_str(),
        sum.split_whitespace().next(),
        "sha256 written"
    );
    let listing = Command::new("tar")
        .arg("-tvzf")
        .arg(&archive)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let entries: Vec<(&str, &str)> = listing
        .lines()
        .filter_map(|l| Some((l.split_whitespace().next()?, l.split_whitespace().last()?)))
        .collect();
    // Every `from` matches an entry; `bin` is one of them, executable.
    let mut installed = Vec::new();
    for f in p["files"].as_array().unwrap() {
        let from = f["from"].as_str().unwrap();
        let hit = entries.iter().find(|(_, path)| glob_match(from, path));
        let (mode, path) = hit.unwrap_or_else(|| panic!("{from} not in {listing}"));
        installed.push((path.rsplit('/').next().unwrap().to_owned(), mode.to_owned()));
    }
    let (_, mode) = installed
        .iter()
        .find(|(name, _)| name == p["bin"].as_str().unwrap())
        .unwrap_or_else(|| panic!("bin not among the installed files {installed:?}"));
    assert!(mode.starts_with("-rwx"), "{mode}");
    for want in ["spark-triage", "LICENSE", "README.md"] {
        assert!(
            entries
                .iter()
                .any(|(_, p)| p.ends_with(&format!("/{want}"))),
            "{want}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The install a user runs, with a real krew (sigs.k8s.io/krew built from Go modules by
/// scripts/krew.sh): scripts/package.sh's archive and manifest, `kubectl krew install
/// --manifest --archive` into a fresh KREW_ROOT, then `kubectl spark-triage --help`.
#[test]
#[cfg_attr(
    not(all(have_go, have_kubectl, have_python3, have_git)),
    ignore = "needs go (krew is built from Go modules), kubectl, python3 (scripts/package.sh) and git (krew's index)"
)]
fn a_real_krew_installs_the_plugin_from_the_local_manifest_and_archive() {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return; // the archive is this host's; the manifest names linux/amd64's
    }
    let out = Command::new(repo().join("scripts/krew.sh"))
        .output()
        .expect("krew.sh runs");
    super::common::succeeded(&out);
    let krew = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let dir = std::env::temp_dir().join(format!("spark-triage-krew-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let copy = dir.join("spark-triage.yaml");
    package(&dir, &copy);
    let archive = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .expect("the archive");
    // kubectl finds krew as `kubectl-krew` on PATH, and krew puts the plugin in
    // KREW_ROOT/bin.
    let root = dir.join("krew-root");
    let path = format!(
        "{}:{}:{}",
        root.join("bin").display(),
        krew.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // krew wants its plugin index cloned (a user's `kubectl krew update` did it, from
    // GitHub, which this machine cannot reach); an install from a manifest never reads it,
    // so an empty local repository stands for it.
    let index = root.join("index/default");
    std::fs::create_dir_all(&index).unwrap();
    let out = Command::new("git")
        .args(["init", "-q"])
        .arg(&index)
        .output()
        .expect("git runs");
    super::common::succeeded(&out);
    let run = |args: &[&str]| {
        Command::new("kubectl")
            .args(args)
            .env("PATH", &path)
            .env("KREW_ROOT", &root)
            .env("KREW_NO_UPGRADE_CHECK", "1")
            .env("HOME", &home)
            .env("KUBECONFIG", dir.join("no-kubeconfig"))
            .output()
            .expect("kubectl runs")
    };
    let out = run(&[
        "krew",
        "install",
        &format!("--manifest={}", copy.display()),
        &format!("--archive={}", archive.display()),
    ]);
    super::common::succeeded(&out);
    let installed = root.join("bin/kubectl-spark_triage");
    assert!(installed.exists(), "krew linked {}", installed.display());
    let out = run(&["spark-triage", "--help"]);
    super::common::succeeded(&out);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("kubectl spark-triage") && help.contains("status"),
        "{help}"
    );
    let out = run(&["krew", "list"]);
    super::common::succeeded(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("spark-triage"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
