//! Executor pods that are never created: the namespace's ResourceQuota refuses them, so no
//! pod, no event and no executor record exists; only the quota's status and the app's
//! shortfall show it (kubeflow/spark-operator#810).
//!
//! Ref: `ExecutorPodsAllocator.requestNewExecutors` (Spark 3.5–4.3): the executor id is taken
//! before the POST, so every rejected creation skips an id; the exception ends the allocation
//! round and the next snapshot (`spark.kubernetes.allocation.batch.delay`, 1 s) tries again.
//! From 4.3 `registerPodCreationFailure` also counts each one toward
//! `spark.executor.maxNumFailures` ("Failed to create executor pod N. Total failures: M").

use super::allocation::target_words;
use super::{AppFacts, failure_budget};
use crate::diagnose::budget::FailureBudget;
use crate::diagnose::{Code, Finding, Severity, Witness};
use crate::model::Refusal;

pub(super) fn quota_exhausted(f: &AppFacts<'_>) -> Option<Finding> {
    if !f.driver_running || f.quota_refusals.is_empty() {
        return None;
    }
    let (quota, first) = &f.quota_refusals[0];
    let every_pod = f
        .quota_refusals
        .iter()
        .any(|(_, r)| matches!(r, Refusal::MustSpecify { .. }));
    // What the app asks for: dynamic allocation's target (the driver's metrics), else
    // spark.executor.instances; unknown under dynamic allocation without its metrics.
    let target = target_words(f);
    let asked = match &target {
        Some((t, _)) => Some(*t),
        None => {
            (!f.dynamic_allocation && f.config_known).then(|| f.executor_instances.unwrap_or(2))
        }
    };
    let short = asked.filter(|t| f.live_executors < *t);
    let of_what = if target.is_some() {
        " executors dynamic allocation asks for"
    } else {
        " executors"
    };
    let (severity, summary) = if every_pod {
        (
            Severity::Error,
            format!(
                "quota {quota} rejects every new executor pod: {}",
                first.describe()
            ),
        )
    } else if let Some(t) = short {
        (
            Severity::Error,
            format!(
                "{} of {t}{of_what}: quota {quota} rejects the rest ({})",
                f.live_executors,
                first.describe()
            ),
        )
    } else {
        (
            Severity::Warn,
            format!(
                "quota {quota} is full ({}): the next executor pod will be rejected",
                first.describe()
            ),
        )
    };
    let version = f
        .spark_version
        .map_or_else(|| "Spark".to_owned(), |v| format!("Spark {v}"));
    let counting = match f.spark_version {
        Some(v) if v.counts_creation_failures() => match failure_budget(f) {
            FailureBudget::Limit(limit) => {
                let left = limit
                    .saturating_add(1)
                    .saturating_sub(f.counted.len() as u32);
                format!(
                    "{version} counts each rejected creation toward spark.executor.maxNumFailures \
                     ({} of {limit} used by failed executors): about {left} more rejections, \
                     one per allocation round (1 s by default), and it aborts the app with exit 11",
                    f.counted.len()
                )
            }
            _ => format!(
                "{version} counts each rejected creation toward spark.executor.maxNumFailures"
            ),
        },
        Some(_) => format!(
            "{version} does not count rejected creations as failures: it retries every \
             allocation round and runs with fewer executors until the quota frees"
        ),
        None => "Spark retries every allocation round; from 4.3 each rejection also counts \
                 toward spark.executor.maxNumFailures"
            .to_owned(),
    };
    let fix = if every_pod {
        "Executor pods must set every value the quota constrains: for limits.cpu set \
         spark.kubernetes.executor.limit.cores (or give the namespace a LimitRange with \
         defaults); for limits.memory Spark already sets the memory limit."
    } else {
        "Raise the quota, free room in the namespace (other apps' pods count too), or ask for \
         less: spark.executor.instances, spark.executor.cores, spark.executor.memory (+ \
         overhead)."
    };
    Some(
        Finding::new(Code::QuotaExhausted, severity, summary)
            .witness(Witness::Inference)
            .evidence_all(
                f.quota_refusals
                    .iter()
                    .map(|(q, r)| format!("ResourceQuota {q}: {}", r.describe())),
            )
            .evidence_all(target.into_iter().flat_map(|(_, e)| e))
            .evidence(counting)
            .hint(format!(
                "The API server refuses the creation (403 exceeded quota / must specify), so no \
                 pod or event exists for these executors. The driver logs \"Exception when \
                 notifying snapshot subscriber.\" with the API server's message (4.3 first logs \
                 \"Failed to create executor pod N. Total failures: M\"), and every attempt uses \
                 up an executor id (the ids skip). {fix} See `kubectl describe resourcequota -n NAMESPACE`."
            ))
            .reference("https://github.com/kubeflow/spark-operator/issues/810"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::SparkVersion;

    fn full() -> Vec<(String, Refusal)> {
        vec![(
            "spark-quota".to_owned(),
            Refusal::Exceeded {
                resource: "requests.cpu".into(),
                requested: "1".into(),
                used: "8".into(),
                hard: "8".into(),
            },
        )]
    }

    fn facts<'a>(refusals: &'a [(String, Refusal)], version: &str, live: u32) -> AppFacts<'a> {
        AppFacts {
            spark_version: SparkVersion::parse(version),
            executor_instances: Some(10),
            config_known: true,
            driver_running: true,
            live_executors: live,
            quota_refusals: refusals,
            ..AppFacts::default()
        }
    }

    #[test]
    fn a_short_app_behind_a_full_quota_is_an_error_with_the_versions_consequence() {
        let r = full();
        let x = quota_exhausted(&facts(&r, "4.3.0", 8)).expect("finding");
        assert_eq!(x.code, Code::QuotaExhausted);
        assert_eq!(x.severity, Severity::Error);
        assert_eq!(
            x.summary,
            "8 of 10 executors: quota spark-quota rejects the rest (requests.cpu: used 8 of 8, an executor asks 1)"
        );
        assert!(
            x.evidence[1].contains("about 21 more rejections"),
            "{}",
            x.evidence[1]
        );
        let old = quota_exhausted(&facts(&r, "4.0.1", 8)).expect("finding");
        assert!(
            old.evidence[1].contains("does not count rejected creations"),
            "{}",
            old.evidence[1]
        );
    }

    #[test]
    fn at_its_target_the_app_is_warned_and_a_finished_app_is_not() {
        let r = full();
        let x = quota_exhausted(&facts(&r, "4.0.1", 10)).expect("finding");
        assert_eq!(x.severity, Severity::Warn);
        assert!(
            x.summary
                .ends_with("the next executor pod will be rejected")
        );
        let mut done = facts(&r, "4.0.1", 2);
        done.driver_running = false;
        assert!(quota_exhausted(&done).is_none());
        assert!(quota_exhausted(&facts(&[], "4.0.1", 2)).is_none());
    }

    #[test]
    fn a_quota_requiring_a_cpu_limit_rejects_every_pod() {
        let r = vec![(
            "limits".to_owned(),
            Refusal::MustSpecify {
                resource: "limits.cpu".into(),
            },
        )];
        let x = quota_exhausted(&facts(&r, "4.0.1", 10)).expect("finding");
        assert_eq!(x.severity, Severity::Error);
        assert!(x.hint.contains("spark.kubernetes.executor.limit.cores"));
    }
}
