//! The command surface: each command takes only the flags it uses; a flag it does not use is
//! a usage error (exit 2), never silently ignored.

use std::process::{Command, Stdio};

/// Runs a command without stdin: its exit code, stdout and stderr.
fn run(cmd: &mut Command) -> (i32, String, String) {
    super::common::outcome(&cmd.stdin(Stdio::null()).output().unwrap())
}

use super::common::triage;

/// The long and short flags a command's `--help` lists.
fn flags(cmd: &[&str]) -> Vec<String> {
    let (code, out, err) = triage(&[cmd, &["--help"]].concat()).run_blocking();
    assert_eq!(code, 0, "{cmd:?} --help: {err}");
    out.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            l.starts_with('-').then(|| {
                l.split([' ', ',', '='])
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
        })
        .collect()
}

const CLUSTER: &[&str] = &[
    "--kubeconfig",
    "--context",
    "-n",
    "-A",
    "-l",
    "--request-timeout",
];
const WATCH: &[&str] = &[
    "--poll-interval",
    "--driver-poll-interval",
    "--no-driver-api",
];

#[test]
fn explain_with_a_live_flag_is_a_usage_error() {
    let (code, _, err) = triage(&["explain", "-", "--record", "x.rec"]).run_blocking();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unexpected argument '--record'"), "{err}");
    assert!(!std::path::Path::new("x.rec").exists());
}

#[test]
fn commands_without_a_cluster_reject_cluster_and_watch_flags() {
    for cmd in [
        &["explain", "-"][..],
        &["replay", "x.rec"],
        &["report", "x.rec"],
        &["sim"],
    ] {
        for flag in [
            &["-n", "ns"][..],
            &["-A"],
            &["--poll-interval", "5s"],
            &["--readonly"],
        ] {
            let args = [cmd, flag].concat();
            let (code, _, err) = triage(&args).run_blocking();
            assert_eq!(code, 2, "{args:?} must be a usage error: {err}");
            assert!(err.contains("unexpected argument"), "{args:?}: {err}");
        }
    }
}

#[test]
fn sim_help_lists_only_the_simulator_s_flags() {
    let listed = flags(&["sim"]);
    for f in CLUSTER
        .iter()
        .chain(WATCH)
        .chain(&["--readonly", "--utc", "--record"])
    {
        assert!(
            !listed.iter().any(|l| l == f),
            "sim --help lists {f}: {listed:?}"
        );
    }
    assert!(listed.iter().any(|l| l == "--scenario"), "{listed:?}");
}

#[test]
fn each_command_lists_the_groups_it_uses() {
    let has = |cmd: &[&str], want: &[&str], not: &[&str]| {
        let listed = flags(cmd);
        for f in want {
            assert!(
                listed.iter().any(|l| l == f),
                "{cmd:?} lacks {f}: {listed:?}"
            );
        }
        for f in not {
            assert!(
                !listed.iter().any(|l| l == f),
                "{cmd:?} lists {f}: {listed:?}"
            );
        }
    };
    has(
        &["status"],
        &[CLUSTER, WATCH].concat(),
        &["--readonly", "--record"],
    );
    has(
        &["record"],
        &[CLUSTER, WATCH].concat(),
        &["--readonly", "--utc"],
    );
    has(&["kill"], &[CLUSTER, &["--readonly"]].concat(), WATCH);
    has(&["hold"], &[CLUSTER, &["--readonly"]].concat(), WATCH);
    has(&["release"], &[CLUSTER, &["--readonly"]].concat(), WATCH);
    has(
        &["demo"],
        &[WATCH, &["--readonly", "--utc", "--record"]].concat(),
        CLUSTER,
    );
    has(
        &["replay"],
        &["--utc"],
        &[CLUSTER, WATCH, &["--record"]].concat(),
    );
    has(
        &[],
        &[CLUSTER, WATCH, &["--readonly", "--utc", "--record"]].concat(),
        &[],
    );
}

/// kubectl's habit (#33): cluster flags before the command are the command's
/// (`spark-triage -n NS status`, `kubectl spark-triage --kubeconfig F status`); one the
/// command does not take says which commands do.
#[test]
fn cluster_flags_before_the_command_are_the_command_s() {
    let (code, _, err) = triage(&["-n", "spark-jobs", "report", "x.rec"]).run_blocking();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--namespace is not a flag of `report`; it applies to the live view (no command) and to: "),
        "{err}"
    );
    for plugin in [false, true] {
        let dir = std::env::temp_dir().join(format!("st-hoist-{}-{plugin}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kc = dir.join("kc");
        std::fs::write(
            &kc,
            "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\n\
             contexts: [{name: prod, context: {cluster: c, user: u}}]\n",
        )
        .unwrap();
        let args = [
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--context",
            "nosuch",
            "-n",
            "x",
            "status",
        ];
        let bin = if plugin {
            env!("CARGO_BIN_EXE_kubectl-spark_triage")
        } else {
            env!("CARGO_BIN_EXE_spark-triage")
        };
        let (code, _, err) = run(Command::new(bin).args(args));
        // The flags reached status: it read that kubeconfig and looked for that context.
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("no context \"nosuch\" in the kubeconfig; it has: prod"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Runs a bash script with the built binaries first on PATH.
fn bash(script: &str) -> (i32, String, String) {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_spark-triage"));
    let dir = bin.parent().unwrap();
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/kubectl");
    let path = format!(
        "{}:{}:{}",
        dir.display(),
        assets.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(Command::new("bash")
        .args(["--norc", "--noprofile", "-c", script])
        .env("PATH", path))
}

#[test]
fn bash_completion_completes_commands_and_flags_for_both_names() {
    for name in ["spark-triage", "kubectl-spark_triage"] {
        let script = format!(
            r#"set -e
            source <({name} completions bash)
            complete -p {name}
            fn=$(complete -p {name} | sed -E 's/.*-F ([^ ]+).*/\1/')
            COMP_WORDS=({name} sta); COMP_CWORD=1; COMP_LINE="{name} sta"; COMP_POINT=${{#COMP_LINE}}
            "$fn" {name} sta {name}
            echo "commands: ${{COMPREPLY[*]}}"
            COMP_WORDS=({name} status --kube); COMP_CWORD=2; COMP_LINE="{name} status --kube"; COMP_POINT=${{#COMP_LINE}}
            "$fn" {name} --kube status
            echo "flags: ${{COMPREPLY[*]}}"
            echo "compgen: $(compgen -W "$({name} --help | grep -oE '^  [a-z]+' | tr -d ' ' | tr '\n' ' ')" -- rep | tr '\n' ' ')""#
        );
        let (code, out, err) = bash(&script);
        assert_eq!(code, 0, "{name}: {out}{err}");
        assert!(out.contains("complete -") && out.contains(name), "{out}");
        assert!(out.contains("commands: status"), "{name}: {out}");
        assert!(out.contains("flags: --kubeconfig"), "{name}: {out}");
        assert!(out.contains("compgen: replay report "), "{name}: {out}");
    }
}

/// Tab after `--context`, `-n`, `--app` and `--scenario` offers the kubeconfig's contexts,
/// the cluster's namespaces and Spark apps, and the built-in scenarios: through bash's
/// registered function and through kubectl's plugin completion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_completes_contexts_namespaces_apps_and_scenarios_from_the_cluster() {
    let sim = super::common::start_sim("mixed", 1.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let script = format!(
        r#"set -e
        source <(spark-triage completions bash)
        fn=$(complete -p spark-triage | sed -E 's/.*-F ([^ ]+).*/\1/')
        ask() {{ COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_TYPE=9; "$fn" spark-triage "${{@: -1}}" "${{@: -2:1}}"; echo "${{COMPREPLY[*]}}"; }}
        echo "contexts: $(ask spark-triage status --kubeconfig {kc} --context '')"
        echo "namespaces: $(ask spark-triage status --kubeconfig {kc} -n '')"
        echo "apps: $(ask spark-triage -n spark-jobs status --kubeconfig {kc} --app etl)"
        echo "scenarios: $(ask spark-triage demo --scenario oom)"
        echo "plugin: $(kubectl_complete-spark_triage kill --kubeconfig {kc} -n spark-jobs --app adh | head -1)""#
    );
    let (code, out, err) = tokio::task::spawn_blocking(move || bash(&script))
        .await
        .unwrap();
    assert_eq!(code, 0, "{out}{err}");
    let line = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}: ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(line("contexts").trim(), "spark-triage-sim", "{out}");
    let namespaces = line("namespaces");
    for ns in ["default", "kube-system", "spark-jobs"] {
        assert!(namespaces.split_whitespace().any(|n| n == ns), "{out}");
    }
    assert_eq!(line("apps").trim(), "etl-nightly", "{out}");
    assert_eq!(line("scenarios").trim(), "oom-storm", "{out}");
    assert!(
        line("plugin").starts_with("adhoc-analysis\tspark-"),
        "kubectl's completion gets the app with its id: {out}"
    );
}

/// The registration scripts zsh and fish source name the binary and the variable it is
/// asked with; each shell, where installed, reads its script without error.
#[test]
#[cfg_attr(
    not(all(have_zsh, have_fish)),
    ignore = "needs zsh and fish (each reads its completion script; .ci/run installs them)"
)]
fn zsh_and_fish_register_dynamic_completion() {
    for (shell, check) in [("zsh", "zsh -n"), ("fish", "fish --no-execute")] {
        let (code, out, err) = triage(&["completions", shell]).run_blocking();
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("COMPLETE=") || out.contains("COMPLETE=\"") || out.contains("COMPLETE"),
            "{out}"
        );
        assert!(out.contains("spark-triage"), "{out}");
        let file = std::env::temp_dir().join(format!("st-complete-{}.{shell}", std::process::id()));
        std::fs::write(&file, &out).unwrap();
        let mut parts = check.split(' ');
        let (code, o, e) = run(Command::new(parts.next().unwrap()).args(parts).arg(&file));
        assert_eq!(code, 0, "{shell} reads its script: {o}{e}");
        let _ = std::fs::remove_file(file);
        if shell == "fish" {
            // fish can be asked what it would offer, without a terminal.
            let (_, o, e) = bash(
                r#"fish -c 'spark-triage completions fish | source; complete --do-complete "spark-triage demo --scenario oom"'"#,
            );
            assert_eq!(o.trim(), "oom-storm\tbuilt-in scenario", "{e}");
        }
    }
}

#[test]
fn kubectl_plugin_completion_answers_in_cobra_s_format() {
    let (code, out, err) = bash("kubectl_complete-spark_triage status -o ''");
    assert_eq!(code, 0, "{err}");
    let values: Vec<&str> = out.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(
        values,
        ["table", "wide", "json", "yaml", "name", ":4"],
        "{out}"
    );
    let (_, out, _) = bash("kubectl_complete-spark_triage ki");
    let mut lines = out.lines();
    assert!(
        lines.next().is_some_and(|l| l.starts_with("kill\t")),
        "{out}"
    );
    assert_eq!(out.lines().last(), Some(":4"), "{out}");
}

#[test]
#[cfg_attr(
    not(have_man),
    ignore = "needs man (man-db renders the pages; .ci/run installs it)"
)]
fn man_writes_one_page_per_command_that_man_renders() {
    let dir = std::env::temp_dir().join(format!("spark-triage-man-{}", std::process::id()));
    let (code, out, err) = triage(&["man", "--out", dir.to_str().unwrap()]).run_blocking();
    assert_eq!(code, 0, "{err}");
    let pages: Vec<&str> = out.lines().collect();
    for cmd in [
        "status",
        "explain",
        "sim",
        "record",
        "replay",
        "report",
        "kill",
        "completions",
    ] {
        assert!(
            pages
                .iter()
                .any(|p| p.ends_with(&format!("spark-triage-{cmd}.1"))),
            "{cmd}: {pages:?}"
        );
    }
    for page in &pages {
        let r = Command::new("man")
            .args(["-l", page])
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&r.stdout);
        assert!(
            r.status.success() && text.contains("SYNOPSIS"),
            "{page}: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

const SESSION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/mixed-session.ndjson"
);

#[test]
fn status_yaml_is_the_json_document_and_name_lists_the_pods_that_exist() {
    let (code, json, err) =
        triage(&["status", "--recording", SESSION, "-o", "json"]).run_blocking();
    assert_eq!(code, 0, "{err}");
    let (code, yaml, err) =
        triage(&["status", "--recording", SESSION, "-o", "yaml"]).run_blocking();
    assert_eq!(code, 0, "{err}");
    let from_json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let from_yaml: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(from_yaml, from_json);
    let (code, names, _) = triage(&["status", "--recording", SESSION, "-o", "name"]).run_blocking();
    assert_eq!(code, 0);
    let present: Vec<String> = from_json["apps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["executors"].as_array().unwrap())
        .filter(|e| e["gone"] == false)
        .map(|e| format!("pod/{}", e["pod"].as_str().unwrap()))
        .collect();
    assert!(!present.is_empty());
    assert_eq!(names.lines().collect::<Vec<_>>(), present);
}

#[test]
fn status_exit_code_is_3_when_an_executor_s_verdict_is_an_error() {
    let (code, out, _) = triage(&["status", "--recording", SESSION, "--exit-code"]).run_blocking();
    assert_eq!(code, 3, "etl-nightly has OOM-killed executors: {out}");
    assert!(out.contains("etl-nightly"), "the table is printed as usual");
    let (code, _, err) = triage(&[
        "status",
        "--recording",
        SESSION,
        "--exit-code",
        "--app",
        "adhoc-analysis",
    ])
    .run_blocking();
    assert_eq!(code, 0, "adhoc-analysis has warnings only: {err}");
    let (code, _, _) = triage(&["status", "--recording", SESSION]).run_blocking();
    assert_eq!(code, 0, "without --exit-code, findings are not a failure");
}

/// `--context` naming a context the kubeconfig does not have: the error lists those it has
/// (before any connection is tried).
#[test]
fn an_unknown_context_lists_the_contexts_there_are() {
    let dir = std::env::temp_dir().join(format!("st-ctx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kc = dir.join("kc");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\ncurrent-context: prod\n\
         clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n\
         users: [{name: u, user: {token: not-a-secret}}]\n\
         contexts: [{name: prod, context: {cluster: c, user: u}}, {name: dev, context: {cluster: c, user: u}}]\n",
    )
    .unwrap();
    let (code, _, err) = triage(&[
        "status",
        "--kubeconfig",
        kc.to_str().unwrap(),
        "--context",
        "nosuch",
    ])
    .run_blocking();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("no context \"nosuch\" in the kubeconfig; it has: dev, prod"),
        "{err}"
    );
    assert!(!err.contains("not-a-secret"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `-o` names mean one thing across commands (kubectl's `table`, `json`, `yaml`, with `wide`
/// and `name` where there are pods, `md` where there is a document): each command takes
/// those that make sense for it and refuses the rest with its list (exit 2).
#[test]
fn output_names_are_one_set_across_commands() {
    let rec = concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/mixed.ndjson.zst");
    let pod = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/oomkilled-executor.json"
    );
    for (args, list) in [
        (vec!["report", rec, "-o", "table"], "md, json, yaml"),
        (vec!["explain", pod, "-o", "md"], "table, json, yaml"),
        (
            vec!["status", "--recording", rec, "-o", "md"],
            "table, wide, json, yaml, name",
        ),
    ] {
        let (code, _, err) = triage(&args).run_blocking();
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(&format!("[possible values: {list}]")),
            "{args:?}: {err}"
        );
    }
    // yaml wherever there is json, the same document.
    for args in [
        vec!["report", rec],
        vec!["explain", pod],
        vec!["status", "--recording", rec],
    ] {
        let (code, yaml, err) = triage(&[args.clone(), vec!["-o", "yaml"]].concat()).run_blocking();
        assert_eq!(code, 0, "{args:?} -o yaml: {err}");
        let (code, json, err) = triage(&[args.clone(), vec!["-o", "json"]].concat()).run_blocking();
        assert_eq!(code, 0, "{args:?} -o json: {err}");
        let json: serde_json::Value = serde_json::from_str(&json).expect("json");
        let first_key = json
            .as_object()
            .and_then(|o| o.keys().next())
            .expect("a document")
            .clone();
        assert!(
            yaml.lines()
                .any(|l| l.starts_with(&format!("{first_key}:"))),
            "{args:?}: yaml has {first_key}:\n{yaml}"
        );
    }
    // explain's older name for its table is still taken.
    let (code, out, err) = triage(&["explain", pod, "-o", "text"]).run_blocking();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("executor"), "{out}");
}
