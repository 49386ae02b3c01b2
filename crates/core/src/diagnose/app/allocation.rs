//! Dynamic allocation's scale-up, stopped: the driver's target (its metrics servlet's
//! `numberTargetExecutors`) above the executors it has. Why, in the one finding that knows:
//! the namespace's quota refuses the pods (`quota-exhausted`, told the target), the nodes do
//! not take them (`executors-pending`, told it too), or nothing seen says (this one, once it
//! has lasted [`STALL_AFTER`]).
//!
//! Ref: `ExecutorAllocationManager` (the target doubles each
//! `spark.dynamicAllocation.sustainedSchedulerBacklogTimeout` while tasks wait, capped at
//! `maxExecutors`); `ExecutorPodsAllocator` (at most `spark.kubernetes.allocation.batch.size`
//! new pods per `batch.delay`, none while `maxPendingPods` are pending, a refused creation
//! ends the round).

use super::AppFacts;
use crate::diagnose::{Code, Finding, Severity, Witness};
use crate::model::fmt_time;

/// How long the target may stand above what the app has before it is a stall: allocation
/// rounds make pods within seconds, and the nodes' waits are said at once by their own.
pub const STALL_AFTER: chrono::Duration = chrono::Duration::minutes(2);

/// "dynamic allocation asks for 8 executors" and, when its tasks could use more than its
/// cap, how many.
pub(super) fn target_words(f: &AppFacts<'_>) -> Option<(u32, Vec<String>)> {
    let a = f.allocation?;
    let mut evidence = vec![format!(
        "dynamic allocation's target: {} executors ({} registered with the driver)",
        a.target, a.registered
    )];
    if a.needed > a.target {
        evidence.push(format!(
            "its pending and running tasks could use {}: spark.dynamicAllocation.maxExecutors{} \
             caps it at {}",
            a.needed,
            f.max_executors
                .map(|m| format!(" = {m}"))
                .unwrap_or_default(),
            a.target
        ));
    }
    Some((a.target, evidence))
}

pub(super) fn scale_up_stalled(f: &AppFacts<'_>) -> Option<Finding> {
    let since = f.scale_up_short_since.filter(|_| f.driver_running)?;
    let (target, evidence) = target_words(f)?;
    // Said by the finding that knows why: the quota, the nodes, a gate, a refusal, a
    // snapshot Spark cannot update (its allocation stops with it); or not short at all (the
    // pods, or the driver's own count, have what it asks).
    if f.live_executors >= target
        || f.allocation.is_some_and(|a| a.registered >= a.target)
        || !f.quota_refusals.is_empty()
        || !f.waiting.is_empty()
        || !f.held.is_empty()
        || f.driver_refusal.is_some()
        || !f.invalid_ids.is_empty()
        || !f.no_phase.is_empty()
    {
        return None;
    }
    Some(
        Finding::new(
            Code::ScaleUpStalled,
            Severity::Warn,
            format!(
                "{} of {target} executors dynamic allocation asks for, since {}: no pending pod, \
                 quota refusal or refused creation seen",
                f.live_executors,
                fmt_time(&since)
            ),
        )
        .witness(Witness::Driver)
        .evidence_all(evidence)
        .hint(
            "The driver makes its executor pods itself: at most \
             spark.kubernetes.allocation.batch.size (10) per spark.kubernetes.allocation.batch.delay \
             (1 s), none while spark.kubernetes.allocation.maxPendingPods are pending, and a \
             creation the API server refuses ends the round. Its log says what it asked for \
             (`kubectl logs DRIVER | grep ExecutorPodsAllocator`: \"Going to request N executors\") \
             and any refusal (\"Exception when notifying snapshot subscriber\").",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::app::app_findings;
    use crate::model::Refusal;
    use crate::model::Time;
    use crate::model::driver_state::Allocation;

    fn at(s: &str) -> Time {
        chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    fn facts(live: u32) -> AppFacts<'static> {
        AppFacts {
            dynamic_allocation: true,
            config_known: true,
            driver_running: true,
            live_executors: live,
            max_executors: Some(8),
            running_executors: live,
            allocation: Some(Allocation {
                target: 8,
                needed: 40,
                registered: live.min(7),
            }),
            ..AppFacts::default()
        }
    }

    #[test]
    fn a_scale_up_a_quota_stops_says_the_target_it_stops() {
        let refusals = vec![(
            "bi-quota".to_owned(),
            Refusal::Exceeded {
                resource: "requests.cpu".into(),
                requested: "1".into(),
                used: "3".into(),
                hard: "3".into(),
            },
        )];
        let f = AppFacts {
            quota_refusals: &refusals,
            ..facts(2)
        };
        let all = app_findings(&f);
        let x = &all[0];
        assert_eq!(
            (x.code, x.severity),
            (Code::QuotaExhausted, Severity::Error)
        );
        assert_eq!(
            x.summary,
            "2 of 8 executors dynamic allocation asks for: quota bi-quota rejects the rest \
             (requests.cpu: used 3 of 3, an executor asks 1)"
        );
        assert!(
            x.evidence.iter().any(|e| e
                .contains("could use 40: spark.dynamicAllocation.maxExecutors = 8 caps it at 8")),
            "{:?}",
            x.evidence
        );
        // The quota says why: no second finding for the same shortfall.
        assert!(all.iter().all(|x| x.code != Code::ScaleUpStalled));
        // Without the driver's metrics, dynamic allocation's target is not guessed.
        let f = AppFacts {
            quota_refusals: &refusals,
            allocation: None,
            ..facts(2)
        };
        let x = &app_findings(&f)[0];
        assert_eq!((x.code, x.severity), (Code::QuotaExhausted, Severity::Warn));
    }

    #[test]
    fn a_scale_up_the_nodes_hold_leads_with_the_target() {
        let waiting = vec![("Insufficient cpu".to_owned(), 5)];
        let f = AppFacts {
            waiting: &waiting,
            running_executors: 3,
            ..facts(8)
        };
        let all = app_findings(&f);
        let x = all
            .iter()
            .find(|x| x.code == Code::ExecutorsPending)
            .expect("pending");
        assert_eq!(
            x.summary,
            "3 of 8 executors dynamic allocation asks for running; 5 executors pending: \
             Insufficient cpu ×5"
        );
        assert!(all.iter().all(|x| x.code != Code::ScaleUpStalled));
    }

    #[test]
    fn a_scale_up_nothing_explains_is_said_once_it_lasts() {
        // Short, but not yet for STALL_AFTER (the store gives no time then): nothing.
        assert!(
            app_findings(&facts(3))
                .iter()
                .all(|x| x.code != Code::ScaleUpStalled)
        );
        let since = at("2026-12-06T10:00:00Z");
        let f = AppFacts {
            scale_up_short_since: Some(since),
            ..facts(3)
        };
        let all = app_findings(&f);
        let x = all
            .iter()
            .find(|x| x.code == Code::ScaleUpStalled)
            .expect("stalled");
        assert_eq!(x.severity, Severity::Warn);
        assert_eq!(x.witness, Witness::Driver);
        assert!(
            x.summary
                .starts_with("3 of 8 executors dynamic allocation asks for, since "),
            "{}",
            x.summary
        );
        assert!(x.hint.contains("maxPendingPods"), "{}", x.hint);
        // Reached, or the driver gone: nothing.
        for f in [
            AppFacts {
                scale_up_short_since: Some(since),
                ..facts(8)
            },
            AppFacts {
                scale_up_short_since: Some(since),
                driver_running: false,
                ..facts(3)
            },
        ] {
            assert!(
                app_findings(&f)
                    .iter()
                    .all(|x| x.code != Code::ScaleUpStalled)
            );
        }
    }
}
