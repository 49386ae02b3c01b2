use super::super::{Loss, RerunKind};
use super::*;

#[test]
fn a_failed_tasks_message_says_how_it_ended() {
    assert_eq!(
        outcome("FetchFailed(BlockManagerId(0, 192.0.2.2, 39429, None), shuffleId=0, mapIndex=0"),
        Outcome::FetchFailed {
            from: Fetched::Executor(0)
        }
    );
    assert_eq!(
        outcome("FetchFailed(null, shuffleId=0, mapIndex=-1, mapId=-1, reduceId=0, message="),
        Outcome::FetchFailed {
            from: Fetched::Unnamed
        }
    );
    assert_eq!(
        outcome("FetchFailed(BlockManagerId(fallback, remote, 7337, None), shuffleId=0"),
        Outcome::FetchFailed {
            from: Fetched::Elsewhere
        }
    );
    assert_eq!(
        outcome("ExecutorLostFailure (executor 0 exited caused by one of the running tasks)"),
        Outcome::Lost
    );
    assert_eq!(
        outcome("Resubmitted (resubmitted due to lost executor)"),
        Outcome::Lost
    );
    assert_eq!(
        outcome("java.lang.ArithmeticException: / by zero"),
        Outcome::Done
    );
}

#[test]
fn no_stage_is_no_cost_and_garbage_is_an_error() {
    assert_eq!(cost_of(&[], &[], &[], None, Time::default()), None);
    // A malformed duration or time is skipped, never a panic.
    let stage = StageAttempt {
        stage_id: 1,
        attempt_id: 0,
        status: "FAILED".into(),
        num_complete_tasks: u32::MAX,
        num_failed_tasks: 1,
        num_killed_tasks: u32::MAX,
        executor_run_time: u64::MAX,
        submission_time: Some("2026-12-07T03:16:45.767GMT".into()),
        completion_time: Some("not a time".into()),
    };
    let task = FailedTask {
        executor_id: Some("x".into()),
        launch_time: Some("2026-12-07T03:16:45.810GMT".into()),
        duration: Some(u64::MAX),
        error_message: Some("ExecutorLostFailure (executor 0 exited)".into()),
    };
    let cost = cost_of(&[stage], &[(1, 0, vec![task])], &[], None, Time::default());
    assert!(cost.is_some_and(|c| !c.partial));
    assert!(parse_stages("{\"not\": \"a list\"}").is_err());
    assert!(parse_failed_tasks("<html>").is_err());
    assert_eq!(parse_stages("[]"), Ok(Vec::new()));
}

#[test]
fn a_failed_tasks_message_is_kept_to_its_head() {
    let long = format!(
        "FetchFailed(BlockManagerId(3, h, 1, None), {}",
        "é".repeat(500)
    );
    let body = serde_json::json!([{"executorId": "2", "errorMessage": long}]).to_string();
    let t = parse_failed_tasks(&body).expect("tasks");
    let m = t[0].error_message.as_deref().expect("message");
    assert!(m.len() <= MESSAGE_HEAD, "{}", m.len());
    assert_eq!(
        outcome(m),
        Outcome::FetchFailed {
            from: Fetched::Executor(3)
        }
    );
}

fn at(s: u32) -> Option<String> {
    Some(format!("2026-12-07T03:00:{s:02}.000GMT"))
}

fn attempt(stage: u32, attempt: u32, failed: u32, (from, to): (u32, u32)) -> StageAttempt {
    StageAttempt {
        stage_id: stage,
        attempt_id: attempt,
        status: if failed > 0 { "FAILED" } else { "COMPLETE" }.into(),
        num_complete_tasks: if failed > 0 { 0 } else { 4 },
        num_failed_tasks: failed,
        num_killed_tasks: 0,
        executor_run_time: 4000,
        submission_time: at(from),
        completion_time: at(to),
    }
}

/// A loss's added attempts: (stage, attempt, kind).
fn reruns(loss: &Loss) -> Vec<(u32, u32, RerunKind)> {
    loss.reruns
        .iter()
        .map(|r| (r.stage, r.attempt, r.kind))
        .collect()
}

/// An executor added at 0 s and removed, OOM-killed, at `removed` s.
fn removed_at(id: i64, removed: u32) -> DriverExecutor {
    DriverExecutor {
        id,
        active: false,
        host_port: None,
        pod_name: None,
        add_time: at(0).as_deref().and_then(parse_spark_time),
        remove_time: at(removed).as_deref().and_then(parse_spark_time),
        remove_reason: Some("Command exited with code 137".into()),
        removed_again: Vec::new(),
        active_tasks: 0,
        failed_tasks: 0,
        completed_tasks: 4,
        tasks_lost: 0,
        max_memory: None,
        peak: Default::default(),
    }
}

/// The API's duration of a failed task runs on to when its listener heard of it, past the
/// retry's submission here: taken at its attempt's failure, the fetch failure is the
/// retry's cause (else it would be a straggler, and the retry unexplained).
#[test]
fn a_failed_tasks_end_is_its_attempts_failure() {
    let stages = [
        attempt(1, 1, 0, (21, 25)),
        attempt(1, 0, 1, (10, 15)),
        attempt(0, 1, 0, (16, 20)),
        attempt(0, 0, 0, (0, 10)),
    ];
    let fetch = FailedTask {
        executor_id: Some("8".into()),
        launch_time: at(11),
        duration: Some(20_000),
        error_message: Some("FetchFailed(BlockManagerId(7, h, 1, None), shuffleId=0".into()),
    };
    let lost = removed_at(7, 12);
    let other = DriverExecutor {
        id: 8,
        remove_time: None,
        remove_reason: None,
        active: true,
        ..lost.clone()
    };
    let now = at(30).as_deref().and_then(parse_spark_time).expect("time");
    let cost = cost_of(&stages, &[(1, 0, vec![fetch])], &[lost, other], None, now).expect("a cost");
    assert_eq!(cost.unexplained_reruns, 0, "{cost:#?}");
    assert_eq!(cost.losses.len(), 1);
    assert_eq!(
        reruns(&cost.losses[0]),
        [(0, 1, RerunKind::Recompute), (1, 1, RerunKind::Retry)]
    );
}

/// The driver heard of the executor's removal after the fetch failure had resubmitted the
/// map stage (a loaded node's kubelet): the stage resubmitted while the failed one awaits
/// its retry is still its parent, charged to the executor the fetch named.
#[test]
fn a_map_stage_resubmitted_before_the_removal_is_heard_is_charged() {
    let stages = [
        attempt(1, 1, 0, (21, 25)),
        attempt(1, 0, 1, (10, 15)),
        attempt(0, 1, 0, (16, 20)),
        attempt(0, 0, 0, (0, 10)),
    ];
    let fetch = FailedTask {
        executor_id: Some("8".into()),
        launch_time: at(11),
        duration: Some(1_000),
        error_message: Some("FetchFailed(BlockManagerId(7, h, 1, None), shuffleId=0".into()),
    };
    let time = |s| at(s).as_deref().and_then(parse_spark_time);
    let lost = removed_at(7, 18);
    let now = time(30).expect("time");
    let cost = cost_of(&stages, &[(1, 0, vec![fetch])], &[lost], None, now).expect("a cost");
    assert_eq!(cost.unexplained_reruns, 0, "{cost:#?}");
    assert_eq!(
        reruns(&cost.losses[0]),
        [(0, 1, RerunKind::Recompute), (1, 1, RerunKind::Retry)]
    );
}

/// Two jobs' reduce stages await their retries, each after its own executor's loss: the
/// map stage resubmitted meanwhile is charged to neither (it could be either's parent);
/// and a failure whose retry never came claims no resubmission a minute later.
#[test]
fn a_resubmission_two_failures_could_claim_is_charged_to_neither() {
    let time = |s| at(s).as_deref().and_then(parse_spark_time);
    let fetch = |stage_exec: &str, from: i64| FailedTask {
        executor_id: Some(stage_exec.into()),
        launch_time: at(11),
        duration: Some(1_000),
        error_message: Some(format!(
            "FetchFailed(BlockManagerId({from}, h, 1, None), shuffleId=0"
        )),
    };
    let lost = |id| removed_at(id, 18);
    let stages = [
        attempt(0, 0, 0, (0, 10)),
        attempt(1, 0, 1, (10, 15)),
        attempt(2, 0, 1, (10, 15)),
        attempt(0, 1, 0, (16, 20)),
    ];
    let failed = [(1, 0, vec![fetch("8", 6)]), (2, 0, vec![fetch("8", 7)])];
    let now = time(30).expect("time");
    let cost = cost_of(&stages, &failed, &[lost(6), lost(7)], None, now).expect("a cost");
    assert_eq!(cost.unexplained_reruns, 1, "{cost:#?}");
    assert!(cost.losses.iter().all(|l| l.reruns.is_empty()), "{cost:#?}");
}
