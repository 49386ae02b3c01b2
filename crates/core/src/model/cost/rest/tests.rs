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
