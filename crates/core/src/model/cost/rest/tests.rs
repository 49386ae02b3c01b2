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
    assert_eq!(cost_of(&[], &[], (&[], false), Time::default()), None);
    assert!(parse_stages("{\"not\": \"a list\"}").is_err());
    assert!(parse_failed_tasks("<html>").is_err());
    assert_eq!(parse_stages("[]"), Ok(Vec::new()));
}
