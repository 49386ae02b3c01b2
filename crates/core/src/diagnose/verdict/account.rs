//! Spark's accounting of an executor's end: from the pod Spark acted on, rebuilt from the
//! driver's removal reason, or for a missing pod; adjusted to the app's Spark version.

use super::*;
use crate::diagnose;
use crate::model::DriverExecutor;
use crate::model::driver::ExecutorList;
use crate::version::SparkVersion;

pub(super) fn account(v: SparkView, witness: Witness, reconstructed: bool) -> SparkAccount {
    SparkAccount {
        exit_code: v.exit_code,
        exit_description: v.exit_description,
        caused_by_app: v.caused_by_app,
        counted: v.counts_as_failure,
        message: v.message,
        witness,
        reconstructed,
        spark_version: None,
        note: None,
    }
}

/// Who gives the driver's words: its REST API, or its event log after the run.
pub(super) fn driver_witness_of(ev: &Evidence<'_>) -> Witness {
    match ev.driver.map(|d| d.from) {
        Some(ExecutorList::EventLog) => Witness::EventLog,
        _ => Witness::Driver,
    }
}

/// The exit Spark logged, rebuilt from its `removeReason` into a pod the same rules read.
pub(super) fn from_driver(ev: &Evidence<'_>, d: &DriverExecutor) -> Rebuilt {
    let witness = driver_witness_of(ev);
    let pod = pod_from_reason(
        &ev.pod.namespace,
        ev.pod.app_id().unwrap_or_default(),
        &ev.pod.name,
        d,
    );
    let resolved = ev.options.resolve(&pod);
    let state = classify(&pod, &resolved.config);
    let findings = diagnose::diagnose(&pod, &[], &resolved, state, ev.now)
        .into_iter()
        .filter(|f| is_pod_ending(f.code))
        .map(|mut f| {
            f.witness = witness;
            f.reconstructed = true;
            f
        })
        .collect();
    let account = spark_view(&pod, state, &resolved.config).map(|v| SparkAccount {
        message: d.remove_reason.clone().unwrap_or(v.message.clone()),
        ..account(v, witness, true)
    });
    let exit = exit_of(&pod, &resolved.config.spark_container);
    Rebuilt {
        findings,
        account,
        state,
        exit,
    }
}

/// Spark's removal of an executor whose pod vanished (exit -1, not the app's fault).
pub(super) fn missing_account(ev: &Evidence<'_>) -> SparkAccount {
    SparkAccount {
        exit_code: UNKNOWN_EXIT_CODE,
        exit_description: describe_exit_code(UNKNOWN_EXIT_CODE),
        caused_by_app: false,
        counted: false,
        message: format!(
            "The executor with ID {} was not found in the cluster at the polling time which is after the accepted detect delta time configured by `spark.kubernetes.executor.missingPodDetectDelta`. The executor may have been deleted but the driver missed the deletion event. Marking this executor as failed.",
            ev.id
        ),
        witness: Witness::Inference,
        reconstructed: true,
        spark_version: None,
        note: None,
    }
}

/// Spark before 4.0 has no executor-failure limit on Kubernetes (SPARK-41210 is 4.0).
pub(super) fn apply_version(s: &mut SparkAccount, version: Option<&str>) {
    s.spark_version = version.map(str::to_owned);
    let Some(v) = version.and_then(SparkVersion::parse) else {
        return;
    };
    if s.counted && !v.counts_executor_failures() {
        s.counted = false;
        s.note = Some(format!(
            "Spark {v} has no executor-failure limit on Kubernetes (spark.executor.maxNumFailures counts from 4.0)"
        ));
    }
}
