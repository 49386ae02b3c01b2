//! Executors Spark's driver does not create itself (#31 item 8): the statefulset and
//! deployment allocators' pods, through `status -o json`, `kill` and `hold` (the real
//! binary) against the simulator's `allocators` scenario.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::actions::{act_on, temp_log, writes};
use super::common::{app, client, eventually, phase, start_sim, status_json};

/// The running executors of an app, by id, from its pods' labels.
async fn running(pods: &Api<Pod>, app: &str) -> Vec<(i64, Pod)> {
    let lp = ListParams::default().labels(&format!("spark-role=executor,spark-app-name={app}"));
    let mut v: Vec<(i64, Pod)> = pods
        .list(&lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| phase(p) == "Running" && p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.labels().get("spark-exec-id")?.parse().ok()?, p)))
        .collect();
    v.sort_by_key(|(id, _)| *id);
    v
}

fn sets_api(c: &kube::Client) -> Api<StatefulSet> {
    Api::namespaced(c.clone(), "spark-jobs")
}

/// A StatefulSet by this name with this owner (`null`: none); its uid.
async fn create_set(c: &kube::Client, name: &str, owner: Value) -> String {
    let mut v = json!({"metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "",
                 "template": {"metadata": {"labels": {"app": "db"}}}}});
    if !owner.is_null() {
        v["metadata"]["ownerReferences"] = owner;
    }
    let set: StatefulSet = serde_json::from_value(v).unwrap();
    let set = sets_api(c)
        .create(&PostParams::default(), &set)
        .await
        .unwrap();
    set.uid().unwrap()
}

/// A Deployment with no owner; its uid.
async fn create_deployment(c: &kube::Client, name: &str) -> String {
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}}}}))
    .unwrap();
    let api: Api<Deployment> = Api::namespaced(c.clone(), "spark-jobs");
    api.create(&PostParams::default(), &d)
        .await
        .unwrap()
        .uid()
        .unwrap()
}

/// A ReplicaSet controlled by that Deployment; its uid.
async fn create_replicaset(c: &kube::Client, name: &str, dep: &str, dep_uid: &str) -> String {
    let rs: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": name,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": dep,
                                 "uid": dep_uid, "controller": true}]},
        "spec": {"selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}}}}))
    .unwrap();
    let api: Api<ReplicaSet> = Api::namespaced(c.clone(), "spark-jobs");
    api.create(&PostParams::default(), &rs)
        .await
        .unwrap()
        .uid()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_and_deployment_executors_are_judged_killed_and_held_through_their_owner_chain()
{
    let sim = start_sim("allocators", 4.0, &[]).await;
    let log = temp_log("allocators");
    let c = client(&sim).await;
    let jobs: Api<Pod> = Api::namespaced(c.clone(), "spark-jobs");
    // Executor 2 is OOM-killed at 8 s: its container restarts in the same pod (ordinal 1),
    // which the driver labels as executor 4. Executor 3 is evicted at 12 s: Spark deletes
    // its pod and the StatefulSet recreates ordinal 2 as executor 5. `status` watches from
    // the start, so it sees both happen.
    let kc = sim.kubeconfig.display().to_string();
    let (doc, sts) = tokio::join!(
        status_json(&kc, &["--for", "8s", "--poll-interval", "2s"]),
        eventually(60, "sts-etl running 1, 4 and 5", || async {
            let r = running(&jobs, "sts-etl").await;
            let ids: Vec<i64> = r.iter().map(|(id, _)| *id).collect();
            (ids == [1, 4, 5]).then_some(r)
        })
    );
    let app_id = sts[0].1.labels()["spark-app-selector"].clone();
    let set = format!("spark-s-{app_id}-0");
    for (_, p) in &sts {
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(
            spec.restart_policy.as_deref(),
            Some("Always"),
            "Spark's template"
        );
        let owner = &p.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("StatefulSet", set.as_str())
        );
    }

    // status: the OOM kill ends executor 2 in its pod, which goes on as executor 4; the
    // eviction ends executor 3, whose ordinal comes back as executor 5.
    let a = app(&doc, "sts-etl");
    // The eviction is a failure Spark blames on the app (3.5 counts nothing, but fails it):
    // the app's headline, not a plain run.
    assert_eq!(a["verdict"]["cause"], "executors-failed", "{a}");
    let exec = |id: i64| -> &Value {
        a["executors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("executor {id} in {a}"))
    };
    let two = exec(2);
    assert_eq!(two["findings"][0], "container-oom-killed", "{two}");
    assert_eq!(two["ending"], "restarted-as-another", "{two}");
    assert_eq!(two["state"], "failed", "{two}");
    assert_eq!(two["pod"], format!("{set}-1"), "{two}");
    assert_eq!(exec(3)["findings"][0], "evicted", "{}", exec(3));
    assert_eq!(exec(3)["pod"], format!("{set}-2"), "{}", exec(3));
    for (id, ordinal) in [(4, 1), (5, 2)] {
        assert_eq!(exec(id)["pod"], format!("{set}-{ordinal}"), "{}", exec(id));
        assert_eq!(exec(id)["state"], "running", "{}", exec(id));
        assert_ne!(exec(id)["severity"], "error", "{}", exec(id));
    }
    let d = app(&doc, "deploy-etl");
    assert_eq!(d["counts"]["running"], 2, "{d}");
    assert!(
        d["executors"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["pod"].as_str().unwrap().starts_with("spark-d-")),
        "{d}"
    );

    // kill follows the chain (pod → StatefulSet → driver) and says who recreates the pod.
    let (victim_id, victim) = sts[0].clone();
    let r = act_on(
        &sim,
        &[
            "kill",
            "--app",
            "sts-etl",
            &victim_id.to_string(),
            "-n",
            "spark-jobs",
            "--yes",
        ],
        &log,
    )
    .await;
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out.contains(&format!(
            "deleted spark-jobs/{}: StatefulSet {set} recreates the pod under the same name (ordinal 0) once it is gone",
            victim.name_any()
        )),
        "{}",
        r.out
    );
    let old_uid = victim.uid();
    eventually(30, "the ordinal recreated as a new executor", || async {
        let p = jobs.get_opt(&victim.name_any()).await.ok()??;
        let id: i64 = p.labels().get("spark-exec-id")?.parse().ok()?;
        (p.uid() != old_uid && id > 4).then_some(())
    })
    .await;

    // Controllers named as Spark names the app's, whose chain does not end at its driver:
    // the view cannot tell (the names match), the check before the write can. Nothing is
    // deleted, and the plan already says why.
    let other_driver = jobs
        .list(&ListParams::default().labels("spark-role=driver,spark-app-name=deploy-etl"))
        .await
        .unwrap()
        .items
        .remove(0);
    let driver_owner = json!([{"apiVersion": "v1", "kind": "Pod", "name": other_driver.name_any(),
                               "uid": other_driver.uid().unwrap(), "controller": true}]);
    let forged = [
        // (exec id, controller kind, controller name, its owner, the pod's name, the uid the pod names)
        (
            99,
            "StatefulSet",
            format!("spark-s-{app_id}-1"),
            json!(null),
            format!("spark-s-{app_id}-1-0"),
            None,
        ),
        (
            98,
            "StatefulSet",
            format!("spark-s-{app_id}-2"),
            driver_owner,
            format!("spark-s-{app_id}-2-0"),
            None,
        ),
        (
            97,
            "StatefulSet",
            set.clone(),
            json!(null),
            format!("{set}-9"),
            Some("uid-of-a-set-long-gone"),
        ),
        (
            96,
            "ReplicaSet",
            format!("spark-d-{app_id}-1-f00d"),
            json!(null),
            format!("spark-d-{app_id}-1-f00d-x2k9q"),
            None,
        ),
    ];
    let mut names = Vec::new();
    for (id, kind, name, owner, pod_name, uid) in &forged {
        let uid = match (uid, *kind) {
            (Some(u), _) => (*u).to_owned(),
            (None, "StatefulSet") => create_set(&c, name, owner.clone()).await,
            (None, _) => {
                let dep = format!("spark-d-{app_id}-1");
                let dep_uid = create_deployment(&c, &dep).await;
                create_replicaset(&c, name, &dep, &dep_uid).await
            }
        };
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": pod_name,
                "labels": {"spark-app-selector": app_id, "spark-app-name": "sts-etl",
                           "spark-role": "executor", "spark-exec-id": id.to_string()},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": name,
                                     "uid": uid, "controller": true}]},
            "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}
        }))
        .unwrap();
        jobs.create(&PostParams::default(), &p).await.unwrap();
        names.push(pod_name.clone());
    }
    let other = other_driver.name_any();
    for (id, why) in [
        (
            99,
            format!("StatefulSet spark-s-{app_id}-1 has no owner, so it is not the app's driver's"),
        ),
        (
            98,
            format!(
                "StatefulSet spark-s-{app_id}-2 is owned by Pod {other}, not by the app's driver"
            ),
        ),
        (
            97,
            format!(
                "StatefulSet {set} is not the one the pod names (another uid): it was replaced"
            ),
        ),
        (
            96,
            format!("Deployment spark-d-{app_id}-1 has no owner, so it is not the app's driver's"),
        ),
    ] {
        let before = writes(&sim).len();
        let id = id.to_string();
        let args = ["kill", "--app", "sts-etl", &id, "-n", "spark-jobs", "--yes"];
        let r = act_on(&sim, &args, &log).await;
        assert_eq!(r.code, 1, "{}{}", r.out, r.err);
        assert!(r.out.contains(&why), "executor {id}: {}{}", r.out, r.err);
        let after = &writes(&sim)[before..];
        assert!(after.iter().all(|w| !w.starts_with("DELETE")), "{after:?}");
    }
    for n in &names {
        assert!(jobs.get_opt(n).await.unwrap().is_some(), "{n}");
    }

    // hold says what it costs a StatefulSet's app and refuses the forged pod at the write
    // (the app's own pods are held all the same); a ReplicaSet's pods cost nothing.
    let r = act_on(
        &sim,
        &["hold", "--app", "sts-etl", "-n", "spark-jobs", "on"],
        &log,
    )
    .await;
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert!(
        r.out.contains(&format!(
            "once deleted, the held pod blocks ordinal 0 of StatefulSet {set}"
        )),
        "{}",
        r.out
    );
    assert!(r.err.contains("verify owner of spark-jobs/"), "{}", r.err);
    let finalizers = |p: Pod| p.finalizers().to_vec();
    for n in &names {
        assert!(finalizers(jobs.get(n).await.unwrap()).is_empty(), "{n}");
    }
    assert_eq!(
        finalizers(jobs.get(&victim.name_any()).await.unwrap()),
        vec!["spark-triage.dev/hold".to_owned()]
    );
    let r = act_on(
        &sim,
        &["hold", "--app", "deploy-etl", "-n", "spark-jobs", "on"],
        &log,
    )
    .await;
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(r.out.contains("held 2 executor pod(s)"), "{}", r.out);
    assert!(!r.out.contains("blocks"), "{}", r.out);
    let _ = std::fs::remove_file(log);
}

/// A user who may not read StatefulSets: a kill of such a pod is refused with why, and says
/// nothing against deleting pods (a Deployment's pods in the same namespace are killed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_controller_refuses_its_pods_only() {
    let sim = start_sim("allocators", 4.0, &["forbid=statefulsets"]).await;
    let log = temp_log("allocators-403");
    let c = client(&sim).await;
    let jobs: Api<Pod> = Api::namespaced(c, "spark-jobs");
    eventually(60, "both apps running", || async {
        let (s, d) = (
            running(&jobs, "sts-etl").await,
            running(&jobs, "deploy-etl").await,
        );
        (!s.is_empty() && d.len() == 2).then_some(())
    })
    .await;
    let sts_id = running(&jobs, "sts-etl").await[0].0.to_string();
    let args = [
        "kill",
        "--app",
        "sts-etl",
        &sts_id,
        "-n",
        "spark-jobs",
        "--yes",
    ];
    let r = act_on(&sim, &args, &log).await;
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert!(
        r.out
            .contains("to check that the app's driver owns it (forbidden"),
        "{}",
        r.out
    );
    let args = [
        "kill",
        "--app",
        "deploy-etl",
        "1",
        "-n",
        "spark-jobs",
        "--yes",
    ];
    let r = act_on(&sim, &args, &log).await;
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out.contains("creates a replacement pod at once"),
        "{}",
        r.out
    );
    let _ = std::fs::remove_file(log);
}
