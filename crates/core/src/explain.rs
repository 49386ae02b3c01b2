//! `spark-triage explain`: classify and diagnose pods handed over as files, offline.
//!
//! [`explain`] is pure (objects + options + `now` in, report out); [`render_text`] and
//! serde give the two outputs. The JSON shape is a stable contract (see `docs/diagnosis.md`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::classify::{ClassifyOptions, ContainerSource, classify};
use crate::diagnose::app::AppFacts;
use crate::diagnose::app_verdict::{
    AppEvidence, DriverEvidence, DriverGone, ExecutorEnd, ExecutorTally, VerdictView, app_verdict,
    attribute_to_driver, driver_end, driver_findings, ended_with, final_condition_at, is_orphan,
    requested_at,
};
use crate::diagnose::{Finding, GroupIndex, Severity, app, diagnose_in, disruption};
use crate::model::{ExecIdLabel, ExecutorPod, ExecutorState, PodEvent, Role, SchedGroup, Time};
use crate::spark::{SparkView, spark_view};
use crate::text;
use crate::text::field as f;
use crate::version::{self, SparkVersion, VersionSource};

/// The `explain --output json` document.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Explanation {
    /// One explanation per pod, in input order.
    pub pods: Vec<PodExplanation>,
    /// One verdict per application the pods belong to, by namespace and app id.
    pub apps: Vec<AppExplanation>,
}

/// One application, explained from the pods given.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct AppExplanation {
    /// The app's namespace.
    pub namespace: String,
    /// The app's id (`spark-app-selector`).
    pub app_id: String,
    /// The application's verdict.
    pub verdict: VerdictView,
}

/// One pod, explained.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PodExplanation {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The app's id (`spark-app-selector`).
    pub app_id: Option<String>,
    /// The Spark role.
    pub role: Option<Role>,
    /// `null` for pods that are not executors of Spark's snapshot (no numeric `spark-exec-id`).
    pub executor_id: Option<i64>,
    /// Spark's state of the pod.
    pub state: ExecutorState,
    /// The Spark container's exit code (its current state, else `lastState`).
    pub exit_code: Option<i32>,
    /// Its terminated reason (`OOMKilled`, `Error`, `Completed`) or waiting reason.
    pub container_reason: Option<String>,
    /// The container judged to be Spark's, and how it was chosen.
    pub spark_container: String,
    /// How the Spark container was chosen.
    pub spark_container_source: ContainerSource,
    /// The Spark version whose semantics were followed.
    pub spark_version: SparkVersion,
    /// Where that version came from (`label`, `configured`, `assumed`).
    pub spark_version_source: VersionSource,
    /// The findings, primary first.
    pub findings: Vec<Finding>,
    /// What Spark's driver logs and concludes; `null` until Spark acts on the pod.
    pub spark_view: Option<SparkView>,
    /// Why the pod is not an executor of Spark's snapshot, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Explains every pod, in input order.
pub fn explain(
    pods: &[ExecutorPod],
    events: &[PodEvent],
    opts: &ClassifyOptions,
    now: Time,
) -> Explanation {
    explain_with(pods, events, &[], opts, now)
}

/// [`explain`], with the batch schedulers' group objects the input held. Kinds with no
/// object in the input are not claimed absent: the file may simply not have them.
pub fn explain_with(
    pods: &[ExecutorPod],
    events: &[PodEvent],
    groups: &[SchedGroup],
    opts: &ClassifyOptions,
    now: Time,
) -> Explanation {
    let mut index = GroupIndex {
        objects: groups.to_vec(),
        events_read: !events.is_empty(),
        ..GroupIndex::default()
    };
    index.count_members(pods);
    let index = &index;
    let mut events = events.to_vec();
    disruption::resolve_preemptors(&mut events, pods);
    let events = &events[..];
    let mut out: Vec<PodExplanation> = pods
        .iter()
        .map(|p| explain_pod(p, events, index, opts, now))
        .collect();
    let apps = explain_apps(pods, events, index, &mut out, now);
    Explanation { pods: out, apps }
}

/// The verdict of each app: its driver's findings said as the driver's, its executors'
/// ends after the driver's said as the driver's.
fn explain_apps(
    pods: &[ExecutorPod],
    events: &[PodEvent],
    groups: &GroupIndex,
    out: &mut [PodExplanation],
    now: Time,
) -> Vec<AppExplanation> {
    let mut keys: Vec<(String, String)> = pods
        .iter()
        .filter_map(|p| Some((p.namespace.to_string(), p.app_id()?.to_owned())))
        .collect();
    keys.sort();
    keys.dedup();
    let mut apps = Vec::new();
    for (ns, app) in keys {
        let of_app =
            |p: &ExecutorPod| p.namespace.as_str() == ns && p.app_id() == Some(app.as_str());
        let driver_events: Vec<PodEvent>;
        let driver = match pods
            .iter()
            .position(|p| of_app(p) && p.role() == Some(Role::Driver))
        {
            Some(i) => {
                let mut evs: Vec<PodEvent> = events
                    .iter()
                    .filter(|e| e.is_about(&pods[i]))
                    .cloned()
                    .collect();
                evs.sort_by(PodEvent::chronological);
                driver_events = evs;
                Some((i, &pods[i]))
            }
            None => {
                driver_events = Vec::new();
                None
            }
        };
        let evidence = driver.map(|(_, p)| DriverEvidence {
            pod: p,
            ended: None,
            ended_seen: None,
            events: &driver_events,
            gone: DriverGone::No,
            gone_at: None,
            log_tail: None,
            groups,
        });
        let end = evidence.as_ref().and_then(|d| driver_end(d, now));
        if let (Some((i, _)), Some(d)) = (driver, &evidence) {
            out[i].findings = driver_findings(d, now);
        }
        let (mut running, mut pending, mut with_driver, mut orphans) = (0, 0, 0, Vec::new());
        let mut errors = 0;
        for (p, e) in pods.iter().zip(out.iter_mut()) {
            if !of_app(p) || p.role() != Some(Role::Executor) {
                continue;
            }
            match e.state {
                ExecutorState::Running => running += 1,
                ExecutorState::Pending => pending += 1,
                _ => {}
            }
            let Some(end) = &end else {
                errors += usize::from(
                    e.findings
                        .first()
                        .is_some_and(|f| f.severity == Severity::Error),
                );
                continue;
            };
            let container = &e.spark_container;
            let exit = p
                .container_status(container)
                .and_then(|c| c.terminated())
                .map(|t| {
                    (
                        t.exit_code,
                        t.reason.as_deref() == Some("OOMKilled"),
                        t.finished_at,
                    )
                });
            let ex = ExecutorEnd {
                exit,
                final_at: final_condition_at(p),
                own_failure: false,
                owner_uid: p.owner.as_ref().map(|o| o.uid.as_str()),
                deletion_requested: p.deletion.as_ref().map(requested_at),
                gone_at: None,
            };
            if ended_with(end, &ex) {
                attribute_to_driver(&mut e.findings, end);
                if let Some(v) = &mut e.spark_view {
                    v.caused_by_app = false;
                    v.counts_as_failure = false;
                }
                with_driver += 1;
            } else if is_orphan(end, e.state, p.deletion.is_some(), false, now) {
                orphans.push(p.name.clone());
            }
        }
        // Executors held by a gate, a gang or a queue: the app's finding, as the live view's.
        let held: Vec<Finding> = pods
            .iter()
            .zip(out.iter())
            .filter(|(p, e)| {
                of_app(p) && p.role() == Some(Role::Executor) && e.state == ExecutorState::Pending
            })
            .filter_map(|(_, e)| e.findings.first())
            .filter(|f| app::is_held(f))
            .cloned()
            .collect();
        let app_findings = app::app_findings(&AppFacts {
            held: &held,
            ..Default::default()
        });
        let v = app_verdict(&AppEvidence {
            driver: evidence,
            driver_phase: None,
            logged_end: None,
            unfinished: false,
            app_findings: &app_findings,
            executors: ExecutorTally {
                running,
                pending,
                errors,
                ended_with_driver: with_driver,
                orphans: &orphans,
                known: pods
                    .iter()
                    .filter(|p| of_app(p) && p.role() == Some(Role::Executor))
                    .count(),
            },
            now,
            operator: None,
        });
        apps.push(AppExplanation {
            namespace: ns,
            app_id: app,
            verdict: VerdictView::from(&v),
        });
    }
    apps
}

fn explain_pod(
    pod: &ExecutorPod,
    events: &[PodEvent],
    groups: &GroupIndex,
    opts: &ClassifyOptions,
    now: Time,
) -> PodExplanation {
    let resolved = opts.resolve(pod);
    let state = classify(pod, &resolved.config);
    let findings = diagnose_in(pod, events, &resolved, state, now, groups);
    let spark_status = pod.container_status(&resolved.config.spark_container);
    let terminated =
        spark_status.and_then(|c| c.terminated().or_else(|| c.last_state.terminated()));
    let container_reason = terminated
        .and_then(|t| t.reason.as_deref())
        .or_else(|| spark_status.and_then(|c| c.waiting_reason()))
        .map(str::to_owned);
    // Spark's watch and polls select `spark-exec-inactive!=true`: it does not see this pod.
    let mut view = (!pod.is_inactive())
        .then(|| spark_view(pod, state, &resolved.config))
        .flatten();
    if let Some(v) = &mut view
        && !resolved.spark_version.counts_executor_failures()
    {
        v.counts_as_failure = false;
    }
    PodExplanation {
        namespace: pod.namespace.to_string(),
        pod: pod.name.clone(),
        app_id: pod.app_id().map(str::to_owned),
        role: pod.role(),
        executor_id: pod.executor_id(),
        state,
        exit_code: terminated.map(|t| t.exit_code),
        container_reason,
        spark_view: view,
        spark_container: resolved.config.spark_container,
        spark_container_source: resolved.source,
        spark_version: resolved.spark_version,
        spark_version_source: resolved.version_source,
        findings,
        note: note(pod),
    }
}

fn note(pod: &ExecutorPod) -> Option<String> {
    if pod.is_inactive() {
        return Some(
            "labelled spark-exec-inactive=true: Spark's watch and polls skip it (Spark marks a \
             finished executor so instead of deleting it when deleteOnTermination=false); Spark \
             already removed this executor, so no Spark view is computed"
                .into(),
        );
    }
    let role = pod.role();
    if role == Some(Role::Driver) {
        return None;
    }
    match pod.exec_id_label() {
        ExecIdLabel::Id(_) if role.is_none() => {
            Some("has spark-exec-id but no spark-role=executor label: Spark's watch would not see it".into())
        }
        ExecIdLabel::Id(_) => None,
        ExecIdLabel::Placeholder => Some(
            "spark-exec-id is EXECID (statefulset/deployment allocator before the driver assigned an id): not in Spark's snapshot".into(),
        ),
        ExecIdLabel::Missing if role == Some(Role::Executor) => {
            Some("no spark-exec-id label: not in Spark's snapshot".into())
        }
        ExecIdLabel::Missing => Some("not a Spark pod (no spark-role label)".into()),
        ExecIdLabel::Invalid(v) => Some(format!(
            "spark-exec-id {v:?} is not a number: Spark fails to parse it; not in Spark's snapshot"
        )),
    }
}

/// The text output: one block per pod. Every value from the cluster goes through
/// [`crate::text::field`].
pub fn render_text(report: &Explanation) -> String {
    let mut out = String::new();
    for p in &report.pods {
        let _ = writeln!(out, "{}/{}", f(&p.namespace), f(&p.pod));
        let mut head = Vec::new();
        match (p.role, p.executor_id) {
            (_, Some(id)) => head.push(format!("executor {id}")),
            (Some(Role::Driver), _) => head.push("driver".to_owned()),
            _ => {}
        }
        if let Some(app) = &p.app_id {
            head.push(format!("app {}", f(app)));
        }
        head.push(format!("state {}", p.state));
        if let Some(code) = p.exit_code {
            head.push(format!("exit {code}"));
        }
        if let Some(r) = &p.container_reason {
            head.push(f(r).into_owned());
        }
        let how = match p.spark_container_source {
            ContainerSource::Configured => "configured",
            ContainerSource::DefaultName => "Spark's default name",
            ContainerSource::OnlyContainer => "the only container",
            ContainerSource::ExecutorEnv => "runs the executor",
            ContainerSource::Assumed => "assumed, not found",
        };
        head.push(format!("container {} ({how})", f(&p.spark_container)));
        let _ = writeln!(out, "  {}", head.join(" | "));
        let _ = writeln!(
            out,
            "  follows {}",
            version::followed(p.spark_version, p.spark_version_source)
        );
        if let Some(n) = &p.note {
            let _ = writeln!(out, "  note: {}", f(n));
        }
        if p.findings.is_empty() {
            let _ = writeln!(out, "  no findings");
        }
        for x in &p.findings {
            let _ = writeln!(
                out,
                "{}",
                text::finding_line(x.severity.as_str(), x.code, &x.summary)
            );
            for e in &x.evidence {
                let _ = writeln!(out, "      evidence: {}", f(e));
            }
            if !x.hint.is_empty() {
                let _ = writeln!(out, "      hint: {}", f(&x.hint));
            }
        }
        if let Some(v) = &p.spark_view {
            let blame = if v.caused_by_app {
                "counted against the application"
            } else {
                "not counted against the application"
            };
            let failure = if v.counts_as_failure {
                "; counts toward spark.executor.maxNumFailures"
            } else if v.caused_by_app && !p.spark_version.counts_executor_failures() {
                "; Spark before 4.0 has no executor-failure limit on Kubernetes"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  Spark's view: exit code {}; {blame}{failure}",
                v.exit_description
            );
        }
        out.push('\n');
    }
    // An app block only where its driver was given: a lone executor's app says nothing new.
    for a in report.apps.iter().filter(|a| a.verdict.driver.is_some()) {
        let v = &a.verdict;
        let _ = writeln!(out, "app {}/{}", f(&a.namespace), f(&a.app_id));
        let _ = writeln!(
            out,
            "  verdict [{}] {}: {}",
            v.severity.as_str(),
            v.cause,
            f(&v.summary)
        );
        for e in &v.evidence {
            let _ = writeln!(out, "      evidence: {}", f(e));
        }
        if !v.hint.is_empty() {
            let _ = writeln!(out, "      hint: {}", f(&v.hint));
        }
        for x in &v.supporting {
            let _ = writeln!(
                out,
                "{}",
                text::finding_line(x.severity.as_str(), x.code, &x.summary)
            );
        }
        out.push('\n');
    }
    let total = report.pods.len();
    let mut by_state: Vec<String> = ExecutorState::ALL
        .iter()
        .filter_map(|s| {
            let n = report.pods.iter().filter(|p| p.state == *s).count();
            (n > 0).then(|| format!("{n} {s}"))
        })
        .collect();
    if by_state.is_empty() {
        by_state.push("none".to_owned());
    }
    let _ = writeln!(
        out,
        "{total} pod{}: {}",
        if total == 1 { "" } else { "s" },
        by_state.join(", ")
    );
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::testing::pod;

    /// An executor whose Spark container runs while its sidecar failed, labelled `version`.
    fn sidecar_failed(version: Option<&str>) -> ExecutorPod {
        let mut labels = json!({"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": "3"});
        if let Some(v) = version {
            labels["spark-version"] = json!(v);
        }
        pod(json!({
            "metadata": {"name": "e-3", "labels": labels},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "spark-kubernetes-executor"}, {"name": "istio-proxy"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "spark-kubernetes-executor", "ready": true, "restartCount": 0, "image": "spark", "imageID": "", "state": {"running": {}}},
                {"name": "istio-proxy", "ready": false, "restartCount": 0, "image": "istio", "imageID": "", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
            ]}
        }))
    }

    fn one(p: ExecutorPod, opts: &ClassifyOptions) -> PodExplanation {
        explain(&[p], &[], opts, chrono::DateTime::UNIX_EPOCH)
            .pods
            .remove(0)
    }

    #[test]
    fn the_apps_spark_version_picks_the_check_all_containers_default() {
        let opts = ClassifyOptions::default();
        let v35 = one(sidecar_failed(Some("3.5.7")), &opts);
        assert_eq!(
            v35.state,
            ExecutorState::Running,
            "Spark 3.5: only the Spark container counts"
        );
        assert_eq!(v35.spark_version_source, VersionSource::Label);
        let v40 = one(sidecar_failed(Some("4.0.1")), &opts);
        assert_eq!(
            v40.state,
            ExecutorState::Failed,
            "Spark 4.0: any container failing fails it"
        );
        let unknown = one(sidecar_failed(None), &opts);
        assert_eq!(unknown.state, ExecutorState::Failed);
        assert_eq!(unknown.spark_version_source, VersionSource::Assumed);
        let text = render_text(&Explanation {
            pods: vec![unknown],
            apps: Vec::new(),
        });
        assert!(
            text.contains(
                "Spark version unknown (no spark-version label): Spark 4.3.0 semantics assumed"
            ),
            "{text}"
        );
        // The flag overrides the label.
        let forced = ClassifyOptions {
            spark_version: SparkVersion::parse("4.0"),
            ..ClassifyOptions::default()
        };
        let v = one(sidecar_failed(Some("3.5.7")), &forced);
        assert_eq!(v.state, ExecutorState::Failed);
        assert_eq!(v.spark_version_source, VersionSource::Configured);
    }

    #[test]
    fn an_inactive_pod_has_no_spark_view_and_says_why() {
        let mut p = sidecar_failed(Some("4.0.1"));
        p.labels.insert("spark-exec-inactive".into(), "true".into());
        let e = one(p, &ClassifyOptions::default());
        assert!(e.spark_view.is_none());
        assert!(
            e.note
                .as_deref()
                .is_some_and(|n| n.contains("spark-exec-inactive=true"))
        );
    }

    #[test]
    fn failures_count_toward_the_limit_only_from_spark_4() {
        let failed = |v: &str| {
            pod(json!({
                "metadata": {"name": "e-4", "labels": {"spark-app-selector": "spark-1", "spark-role": "executor", "spark-exec-id": "4", "spark-version": v}},
                "spec": {"containers": [{"name": "spark-kubernetes-executor"}]},
                "status": {"phase": "Failed", "containerStatuses": [
                    {"name": "spark-kubernetes-executor", "ready": false, "restartCount": 0, "image": "spark", "imageID": "", "state": {"terminated": {"exitCode": 52, "reason": "Error"}}}
                ]}
            }))
        };
        let opts = ClassifyOptions::default();
        let v40 = one(failed("4.0.0"), &opts);
        assert!(v40.spark_view.as_ref().unwrap().counts_as_failure);
        let v35 = one(failed("3.5.7"), &opts);
        assert!(!v35.spark_view.as_ref().unwrap().counts_as_failure);
        let text = render_text(&Explanation {
            pods: vec![v35],
            apps: Vec::new(),
        });
        assert!(
            text.contains("Spark before 4.0 has no executor-failure limit on Kubernetes"),
            "{text}"
        );
    }
}
