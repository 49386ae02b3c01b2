//! The application verdict through the real binary: the driver-failures and scale-down
//! scenarios on the simulator, `status -o json`, and the same verdicts from a recording's
//! `report` and `status --recording` (one verdict, read by every output).

use serde_json::Value;

use super::common::{app, start_sim, triage};

/// app name → verdict cause, for every app of a status or report document.
fn causes(doc: &Value) -> std::collections::BTreeMap<String, String> {
    doc["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["app_name"].as_str().unwrap_or("?").to_owned(),
                a["verdict"]["cause"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn executor_codes(app: &Value) -> Vec<(i64, Vec<String>, bool)> {
    app["executors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_i64().unwrap(),
                e["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap().to_owned())
                    .collect(),
                e["spark"]["counted"] == true,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drivers_that_oom_wait_are_deleted_evicted_or_finish() {
    let sim = start_sim("driver-failures", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let dir = std::env::temp_dir().join(format!("st-appv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("drivers.ndjson");
    let file_s = file.display().to_string();
    let live_args = [
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "14s",
        "--poll-interval",
        "2s",
        "--no-driver-api",
        "--exit-code",
        "-o",
        "json",
    ];
    let rec_args = [
        "record",
        &file_s,
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--duration",
        "14s",
        "--poll-interval",
        "2s",
        "--no-driver-api",
    ];
    let ((code, out, err), (rc, _, rerr)) =
        tokio::join!(triage(&live_args).run(), triage(&rec_args).run());
    assert_eq!(rc, 0, "{rerr}");
    // --exit-code: the apps' verdicts are errors (3: the command itself worked).
    assert_eq!(code, 3, "{err}");
    let doc: Value = serde_json::from_str(&out).expect("JSON");

    let oom = app(&doc, "nightly-report");
    let v = &oom["verdict"];
    assert_eq!(v["cause"], "driver-oom-killed", "{v}");
    assert_eq!(v["severity"], "error");
    assert!(
        v["hint"]
            .as_str()
            .unwrap()
            .contains("spark.driver.memoryOverhead"),
        "{v}"
    );
    assert_eq!(v["driver"]["exit_code"], 137);
    // Its executors lost their driver: ended with it, not counted, not their own failure.
    let ex = executor_codes(oom);
    assert_eq!(ex.len(), 3, "{ex:?}");
    for (id, codes, counted) in &ex {
        assert_eq!(codes[0], "ended-with-driver", "executor {id}: {codes:?}");
        assert!(!counted, "executor {id}");
    }

    let pending = app(&doc, "adhoc-query");
    assert_eq!(pending["verdict"]["cause"], "driver-pending");
    assert!(
        pending["verdict"]["summary"]
            .as_str()
            .unwrap()
            .contains("Insufficient memory"),
        "{pending}"
    );
    assert_eq!(
        pending["verdict"]["label"],
        "driver pending: Insufficient memory"
    );

    let deleted = app(&doc, "ingest");
    assert_eq!(deleted["verdict"]["cause"], "driver-deleted", "{deleted}");
    assert_eq!(executor_codes(deleted).len(), 3, "{deleted}");
    for (id, codes, counted) in executor_codes(deleted) {
        assert_eq!(codes[0], "ended-with-driver", "executor {id}: {codes:?}");
        assert!(!codes.contains(&"missing".to_owned()));
        assert!(!counted);
    }
    let evicted = app(&doc, "billing");
    assert_eq!(evicted["verdict"]["cause"], "driver-evicted");
    let ex = executor_codes(evicted);
    assert_eq!(ex.len(), 2, "{evicted}");
    assert!(
        ex.iter()
            .all(|(_, codes, counted)| codes[0] == "ended-with-driver" && !counted),
        "{ex:?}"
    );
    // No app's executors are orphans: the executors of a failed driver exit, a deleted
    // driver's are deleted.
    assert!(!doc.to_string().contains("orphaned-executors"), "{doc}");
    let done = app(&doc, "daily-agg");
    assert_eq!(done["verdict"]["cause"], "app-succeeded");
    assert_eq!(done["verdict"]["severity"], "info");
    // The driver's own last words (Spark's exit-exception annotation) are its headline.
    let threw = app(&doc, "quarterly-close");
    let v = &threw["verdict"];
    assert_eq!(v["cause"], "driver-failed", "{v}");
    let headline = "org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `finance`.`ledger` cannot be found. SQLSTATE: 42P01";
    assert!(v["summary"].as_str().unwrap().ends_with(headline), "{v}");
    assert!(
        !doc.to_string().contains("still counts the executor"),
        "no Spark is left to count"
    );

    // The same verdicts from the recording, by status and by report.
    let (sc, sout, serr) = triage(&["status", "--recording", &file_s, "-o", "json"])
        .run()
        .await;
    assert_eq!(sc, 0, "{serr}");
    let (pc, pout, perr) = triage(&["report", &file_s, "-o", "json"]).run().await;
    assert_eq!(pc, 0, "{perr}");
    let replayed: Value = serde_json::from_str(&sout).unwrap();
    let report: Value = serde_json::from_str(&pout).unwrap();
    assert_eq!(causes(&replayed), causes(&doc));
    assert_eq!(causes(&report), causes(&doc));
    // The report's first lines are the verdict; no executor that ended with its driver is a
    // failure there.
    let (_, md, _) = triage(&["report", &file_s]).run().await;
    assert!(
        md.contains("**Verdict: driver OOMKilled (137)** (`driver-oom-killed`, error)"),
        "{md}"
    );
    let oom_report = app(&report, "nightly-report");
    assert_eq!(oom_report["failures_counted"], 0, "{oom_report}");
    assert!(
        md.contains("(spark.exit-exception, its innermost Caused by): java.io.FileNotFoundException: No such file or directory: s3a://finance-lake/ledger/_delta_log."),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_allocation_scale_down_is_not_a_failure() {
    let sim = start_sim("scale-down", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let (code, out, err) = triage(&[
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "16s",
        "--poll-interval",
        "2s",
        "--exit-code",
        "-o",
        "json",
    ])
    .run()
    .await;
    assert_eq!(code, 0, "no error anywhere: {err}\n{out}");
    let doc: Value = serde_json::from_str(&out).expect("JSON");
    let a = app(&doc, "elastic-etl");
    assert_eq!(a["verdict"]["cause"], "app-running", "{a}");
    let ex = executor_codes(a);
    let removed: Vec<i64> = a["executors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["driver"]["remove_reason"] == "Executor killed by driver.")
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert_eq!(removed.len(), 4, "scaled from 6 to 2: {ex:?}");
    assert!(ex.iter().all(|(_, _, counted)| !counted), "{ex:?}");
    assert!(
        a["executors"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["severity"] != "error" && e["severity"] != "warn"),
        "{a}"
    );
    // Scaled up again after: 2 kept + 3 new running.
    let running = a["counts"]["running"].as_u64().unwrap();
    assert_eq!(running, 5, "{a}");
}

/// "Executor killed by driver." with dynamic allocation off is not a scale-down (Spark 3.5 to
/// 4.3 write it for some heartbeat timeouts: apache/spark#57494): the same driver's removals
/// as in `scale-down`, its configuration saying dynamic allocation is off, read as kills that
/// need a look, not counted, and the app's headline says so (never healthy churn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_by_the_driver_without_dynamic_allocation_is_not_a_scale_down() {
    let sim = super::common::start_sim_with("scale-down", 4.0, &[], |o| {
        for app in &mut o.scenario.apps {
            app.conf
                .insert("spark.dynamicAllocation.enabled".into(), "false".into());
        }
    })
    .await;
    let kc = sim.kubeconfig.display().to_string();
    let (_, out, err) = triage(&[
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "16s",
        "--poll-interval",
        "2s",
        "-o",
        "json",
    ])
    .run()
    .await;
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let a = app(&doc, "elastic-etl");
    assert_eq!(a["config_read"], true, "{a}");
    let killed: Vec<&Value> = a["executors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["driver"]["remove_reason"] == "Executor killed by driver.")
        .collect();
    assert_eq!(killed.len(), 4, "{a}");
    for e in &killed {
        assert_eq!(e["findings"][0], "killed-by-driver", "{e}");
        assert_eq!(e["severity"], "warn", "{e}");
        assert!(
            e["summary"]
                .as_str()
                .is_some_and(|s| s.contains("not a scale-down: dynamic allocation is off")),
            "{e}"
        );
        assert_ne!(e["spark"]["counted"], true, "{e}");
    }
    assert_eq!(a["failure_budget"]["failures_counted"], 0, "{a}");
    assert_eq!(
        a["verdict"]["cause"], "executors-failed",
        "{}",
        a["verdict"]
    );
    assert!(
        a["verdict"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("4 executors ended badly, not counted by Spark")),
        "{}",
        a["verdict"]
    );
}

/// Above the executors (#31 items 4–6): a node that keeps evicting names itself in both apps
/// it hurts; a preemption names the preemptor's app and both priorities; settings that
/// predict failure follow a running app's verdict without changing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_keeps_evicting_a_preemptor_and_risky_settings_are_named() {
    let sim = start_sim("cluster-pressure", 4.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let (_, out, err) = triage(&[
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "12s",
        "--poll-interval",
        "2s",
        "-o",
        "json",
    ])
    .run()
    .await;
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let supporting = |a: &Value| -> Vec<(String, String)> {
        let v = &a["verdict"];
        std::iter::once((
            v["cause"].as_str().unwrap().to_owned(),
            v["summary"].as_str().unwrap().to_owned(),
        ))
        .chain(v["supporting"].as_array().unwrap().iter().map(|f| {
            (
                f["code"].as_str().unwrap().to_owned(),
                f["summary"].as_str().unwrap().to_owned(),
            )
        }))
        .collect()
    };

    // The node: the cause of flaky-etl's loop, and named in nightly-agg's verdict too.
    let flaky = supporting(app(&doc, "flaky-etl"));
    assert_eq!(flaky[0].0, "node-failures", "{flaky:#?}");
    assert!(
        flaky[0].1.starts_with("Node spark-node: "),
        "{}",
        flaky[0].1
    );
    assert!(
        flaky[0].1.contains("of this app, 1 of nightly-agg"),
        "{}",
        flaky[0].1
    );
    let agg = supporting(app(&doc, "nightly-agg"));
    let node = agg
        .iter()
        .find(|(c, _)| c == "node-failures")
        .expect("named in both apps");
    assert!(node.1.contains("(1 of this app, "), "{}", node.1);

    // The preemptor: urgent-sql's driver, its class and value against the victim's.
    let backfill = app(&doc, "batch-backfill");
    let v = supporting(backfill);
    assert_eq!(
        v[0],
        (
            "executors-preempted".to_owned(),
            "2 executors preempted by urgent-sql (spark-interactive = 1000 > spark-batch = 100)"
                .to_owned()
        ),
        "{v:#?}"
    );
    let victims: Vec<&Value> = backfill["executors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["findings"][0] == "preempted")
        .collect();
    assert_eq!(victims.len(), 2, "{backfill}");
    for e in victims {
        let s = e["summary"].as_str().unwrap();
        assert!(
            s.contains("(app urgent-sql, spark-interactive = 1000)")
                && s.ends_with("this pod had priority spark-batch = 100"),
            "{s}"
        );
    }

    // The configuration: predictions after a verdict that stays app-running.
    let risky = supporting(app(&doc, "risky-conf"));
    assert_eq!(risky[0].0, "app-running", "{risky:#?}");
    let codes: Vec<&str> = risky[1..].iter().map(|(c, _)| c.as_str()).collect();
    for c in [
        "dynamic-allocation-shuffle",
        "heartbeat-settings",
        "allocation-flood",
        "failure-budgets",
    ] {
        assert!(codes.contains(&c), "{c} in {codes:?}");
    }
    // urgent-sql and the others' settings predict nothing.
    let urgent = supporting(app(&doc, "urgent-sql"));
    assert_eq!(urgent.len(), 1, "{urgent:#?}");
}

/// Who decides Pending (#31 item 7): each app is held by something other than the nodes,
/// and its verdict says by what, in that system's own words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gates_gangs_queues_and_a_silent_scheduler_each_name_who_holds_the_app() {
    let sim = start_sim("batch-schedulers", 8.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let (_, out, err) = triage(&[
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "10s",
        "--poll-interval",
        "2s",
        "-o",
        "json",
    ])
    .run()
    .await;
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let verdict = |name: &str| app(&doc, name)["verdict"].clone();

    let kueue = verdict("nightly-kueue");
    assert_eq!(kueue["cause"], "driver-pending", "{kueue:#}");
    assert_eq!(kueue["witness"], "scheduler-object", "{kueue:#}");
    let s = kueue["summary"].as_str().unwrap();
    assert!(
        s.starts_with("The driver waits: Kueue has not admitted the Workload pod-nightly-kueue-")
            && s.contains("(LocalQueue team-a): couldn't assign flavors to pod set main: insufficient unused quota for cpu"),
        "{s}"
    );
    // Admitted at 20 s: the gate went, the default scheduler bound it, it runs.
    assert_eq!(verdict("report-kueue")["cause"], "app-running");

    let volcano = verdict("graph-volcano");
    assert_eq!(
        (volcano["cause"].as_str(), volcano["severity"].as_str()),
        (Some("driver-pending"), Some("error")),
        "{volcano:#}"
    );
    assert!(
        volcano["hint"]
            .as_str()
            .unwrap()
            .contains("Set minMember: 1")
    );

    let rejected = verdict("adhoc-yunikorn");
    assert_eq!(rejected["cause"], "driver-failed");
    assert!(
        rejected["summary"]
            .as_str()
            .unwrap()
            .contains("YuniKorn rejected the application: failed to place application spark-adhoc: application rejected: no placement rule matched"),
        "{rejected:#}"
    );
    let queue = verdict("etl-yunikorn");
    assert!(
        queue["summary"]
            .as_str()
            .unwrap()
            .contains("YuniKorn holds the pod: Request '")
            && queue["summary"]
                .as_str()
                .unwrap()
                .contains("does not fit in queue 'root.etl'"),
        "{queue:#}"
    );

    let gang = verdict("ml-gang");
    assert_eq!(gang["cause"], "executors-waiting", "{gang:#}");
    assert_eq!(
        gang["summary"],
        "3 executors pending: Waiting for its gang: 3 of the 5 pods that pod group executors (Workload ml-gang-gang) needs exist"
    );
    let pending = &app(&doc, "ml-gang")["pending_reasons"];
    assert_eq!(pending[0]["reason"], "gang incomplete", "{pending:#}");

    let silent = verdict("lost-scheduler");
    assert!(
        silent["summary"]
            .as_str()
            .unwrap()
            .contains("No word from the scheduler \"custom-batch\""),
        "{silent:#}"
    );
    // None of them is said to be the nodes' (the default scheduler never saw them).
    assert!(!out.contains("\"unschedulable\""), "{out}");
}

/// The same, with the tool's role denied every group object: each says what it could not
/// read once, the verdicts stay the pods' own words, and the lists are not retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_group_objects_are_said_once_and_unknown_in_the_verdicts() {
    let sim = start_sim("batch-schedulers", 8.0, &["forbid=podgroups,workloads"]).await;
    let kc = sim.kubeconfig.display().to_string();
    let (_, out, err) = triage(&[
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "6s",
        "--poll-interval",
        "1s",
        "-o",
        "json",
    ])
    .run()
    .await;
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = problems[0].as_str().unwrap();
    for r in [
        "podgroups.scheduling.volcano.sh",
        "workloads.kueue.x-k8s.io",
        "workloads.scheduling.k8s.io",
    ] {
        assert!(p.contains(r), "{p}");
    }
    let evidence = |name: &str| app(&doc, name)["verdict"]["evidence"].to_string();
    assert!(
        evidence("graph-volcano").contains("unknown because forbidden"),
        "{}",
        evidence("graph-volcano")
    );
    let kueue = app(&doc, "nightly-kueue")["verdict"]["summary"].clone();
    assert_eq!(
        kueue,
        "The driver waits: Held by Kueue until its Workload is admitted (LocalQueue team-a)"
    );
    // One LIST per kind, never retried over six poll intervals.
    let lists = sim
        .state
        .request_log()
        .iter()
        .filter(|r| r.uri.contains("/podgroups"))
        .count();
    assert_eq!(lists, 1, "podgroups asked {lists} times");
}

/// A driver's ConfigMap the user may not read: said once (a warning naming the missing
/// permission), every app marked `config_read: false` (deleteOnTermination `?` in the
/// table), and the verdicts stand on what the pods say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_driver_configmap_is_said_and_the_verdicts_stand() {
    let sim = start_sim("driver-failures", 8.0, &["forbid=configmaps"]).await;
    let kc = sim.kubeconfig.display().to_string();
    let args = [
        "status",
        "--kubeconfig",
        &kc,
        "-n",
        "spark-jobs",
        "--for",
        "8s",
        "--poll-interval",
        "2s",
        "-o",
        "json",
    ];
    let (code, out, err) = triage(&args).run().await;
    assert_eq!(code, 0, "{err}");
    let said =
        "driver config: forbidden (missing permission: get configmaps in namespace spark-jobs)";
    assert_eq!(err.matches(said).count(), 1, "said once: {err}");
    let doc: Value = serde_json::from_str(&out).expect("JSON");
    for a in doc["apps"].as_array().unwrap() {
        assert_eq!(a["config_read"], false, "{a}");
    }
    assert_eq!(
        app(&doc, "nightly-report")["verdict"]["cause"],
        "driver-oom-killed"
    );
    assert_eq!(app(&doc, "daily-agg")["verdict"]["cause"], "app-succeeded");
}
