//! A scenario read: a built-in by name or a file, parsed and checked (what the format
//! alone cannot say: Spark's limits, a scheduler's required fields, a preemptor's app).

use super::*;

/// Loads a scenario by built-in name or file path.
pub fn load(name_or_path: &str) -> Result<Scenario, String> {
    if let Some((_, text)) = BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
        return parse(text).map_err(|e| format!("built-in scenario {name_or_path}: {e}"));
    }
    let text = std::fs::read_to_string(name_or_path).map_err(|e| {
        format!(
            "no built-in scenario {name_or_path:?} (built-ins: {}), and cannot read it as a file: {e}",
            BUILT_IN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )
    })?;
    parse(&text).map_err(|e| format!("{name_or_path}: {e}"))
}

pub fn parse(text: &str) -> Result<Scenario, String> {
    let s: Scenario = serde_saphyr::from_str(text)
        .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_owned())?;
    for app in &s.apps {
        if app.max_failures.is_some_and(|m| m > SPARK_MAX_INT) {
            return Err(format!(
                "app {}: maxFailures is over {SPARK_MAX_INT}, which Spark refuses (an int)",
                app.name
            ));
        }
        if let Some(sc) = &app.scheduling {
            let missing = match sc.by {
                SchedulerKind::Named if sc.scheduler_name.is_none() => Some("schedulerName"),
                SchedulerKind::Gang if sc.min_member.is_none() => Some("minMember"),
                _ => None,
            };
            if let Some(m) = missing {
                return Err(format!("app {}: scheduling needs `{m}`", app.name));
            }
        }
    }
    // A schedule's later runs are not played: only the policies that start none while the
    // first exists (kubeflow's).
    for app in &s.apps {
        let Some(op) = &app.operator else { continue };
        let Some(sc) = &op.scheduled else { continue };
        if op.kind != OperatorKind::Kubeflow {
            return Err(format!(
                "app {}: `scheduled` is kubeflow's ScheduledSparkApplication",
                app.name
            ));
        }
        if sc
            .concurrency_policy
            .as_deref()
            .is_some_and(|p| p != "Forbid")
        {
            return Err(format!(
                "app {}: the simulator plays one run of a schedule: concurrencyPolicy Forbid \
                 or none (under Allow or Replace the operator would start the next run)",
                app.name
            ));
        }
    }
    // A StatefulSet's or Deployment's executors run with `restartPolicy: Always`: without
    // their driver they would crash-loop, which the simulated kubelet does not play.
    for app in s.apps.iter().filter(|a| a.allocator != Allocator::Direct) {
        if app.driver_fate.is_some() {
            return Err(format!(
                "app {}: a driver fate is not simulated with allocator {} (its executors' \
                 containers would restart without a driver, in a crash loop)",
                app.name,
                app.allocator.as_str()
            ));
        }
    }
    // A preemptor that names no app (a typo) would silently become an anonymous pod.
    for app in &s.apps {
        let driver = app.driver_fate.as_ref().map(|d| (&d.by, d.action));
        let fates = app.fates.iter().map(|f| (&f.by, f.action));
        for (by, action) in fates.chain(driver) {
            let Some(by) = by else { continue };
            if action != Some(FateAction::Preempt) {
                return Err(format!(
                    "app {}: `by: {by}` needs `action: preempt`",
                    app.name
                ));
            }
            if !s.apps.iter().any(|a| &a.name == by) {
                return Err(format!(
                    "app {}: `by: {by}` names no app of the scenario",
                    app.name
                ));
            }
        }
    }
    Ok(s)
}
