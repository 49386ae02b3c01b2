//! Executors Spark's driver does not create itself (#31 item 8): the statefulset and
//! deployment allocators' pods, through `status -o json`, `kill` and `hold` (the real
//! binary) against the simulator's `allocators` scenario.

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Pod};
use kube::{
    Api, ResourceExt,
    api::{ListParams, PostParams},
};
use serde_json::{Value, json};

use super::actions::{temp_log, triage, writes};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_and_deployment_executors_are_judged_killed_and_held_through_their_owner_chain()
{
    let sim = start_sim("allocators", 4.0, &[]).await;
    let log = temp_log("allocators");
    let c = client(&sim).await;
    let jobs: Api<Pod> = Api::namespaced(c.clone(), "spark-jobs");
    // Executor 2 is OOM-killed at 8 s; the StatefulSet's ordinal comes back as executor 4.
    let sts = eventually(
        60,
        "sts-etl back to 3 running, executor 4 among them",
        || async {
            let r = running(&jobs, "sts-etl").await;
            (r.len() == 3 && r.iter().any(|(id, _)| *id == 4)).then_some(r)
        },
    )
    .await;
    let app_id = sts[0].1.labels()["spark-app-selector"].clone();
    let set = format!("spark-s-{app_id}-0");
    for (_, p) in &sts {
        let owner = &p.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("StatefulSet", set.as_str())
        );
    }

    // status: the OOM is judged from the driver (its pod is gone, under a name no record
    // keeps), the others run; the deployment's app runs on a ReplicaSet's pods.
    let kc = sim.kubeconfig.display().to_string();
    let doc = status_json(&kc, &[]).await;
    let a = app(&doc, "sts-etl");
    assert_eq!(a["verdict"]["cause"], "app-running", "{a}");
    let exec = |id: i64| -> &Value {
        a["executors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("executor {id} in {a}"))
    };
    assert_eq!(
        exec(2)["findings"][0],
        "container-oom-killed",
        "{}",
        exec(2)
    );
    assert_eq!(exec(2)["pod"], format!("{set}-?"), "{}", exec(2));
    assert_eq!(
        exec(4)["pod"],
        format!("{set}-1"),
        "ordinal 1 again: {}",
        exec(4)
    );
    assert_eq!(exec(4)["state"], "running");
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
    let r = triage(
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
            "deleted spark-jobs/{}: StatefulSet {set} recreates the pod under the same name (ordinal 0)",
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

    // A StatefulSet named as Spark names the app's, that its driver does not own: the view
    // cannot tell (the name matches), the check before the write can. Nothing is deleted.
    let sets: Api<StatefulSet> = Api::namespaced(c.clone(), "spark-jobs");
    let forged_set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": format!("spark-s-{app_id}-1")},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "",
                 "template": {"metadata": {"labels": {"app": "db"}}}}
    }))
    .unwrap();
    let forged_set = sets
        .create(&PostParams::default(), &forged_set)
        .await
        .unwrap();
    let forged: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("spark-s-{app_id}-1-0"),
            "labels": {"spark-app-selector": app_id, "spark-app-name": "sts-etl",
                       "spark-role": "executor", "spark-exec-id": "99"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                "name": forged_set.name_any(), "uid": forged_set.uid().unwrap(), "controller": true}]},
        "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &forged).await.unwrap();
    let before = writes(&sim).len();
    let r = triage(
        &sim,
        &[
            "kill",
            "--app",
            "sts-etl",
            "99",
            "-n",
            "spark-jobs",
            "--yes",
        ],
        &log,
    )
    .await;
    assert_ne!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        format!("{}{}", r.out, r.err).contains(&format!(
            "StatefulSet spark-s-{app_id}-1 has no owner, so it is not the app's driver's"
        )),
        "{}{}",
        r.out,
        r.err
    );
    assert!(
        writes(&sim)[before..]
            .iter()
            .all(|w| !w.starts_with("DELETE")),
        "{:?}",
        &writes(&sim)[before..]
    );
    assert!(jobs.get_opt(&forged.name_any()).await.unwrap().is_some());

    // hold says what it costs a StatefulSet's app and refuses the forged pod at the write
    // (the app's own pods are held all the same); a ReplicaSet's pods cost nothing.
    let r = triage(
        &sim,
        &["hold", "--app", "sts-etl", "-n", "spark-jobs", "on"],
        &log,
    )
    .await;
    assert_ne!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out.contains(&format!(
            "once it ends, the held pod blocks ordinal 0 of StatefulSet {set}"
        )),
        "{}",
        r.out
    );
    assert!(r.err.contains("has no owner"), "{}", r.err);
    let finalizers = |p: Pod| p.finalizers().to_vec();
    assert!(finalizers(jobs.get(&forged.name_any()).await.unwrap()).is_empty());
    assert_eq!(
        finalizers(jobs.get(&victim.name_any()).await.unwrap()),
        vec!["spark-triage.dev/hold".to_owned()]
    );
    let r = triage(
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
