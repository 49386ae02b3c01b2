use chrono::TimeDelta;

use super::ledger::{Fetched, Ledger, Outcome, TaskRun};
use super::*;

fn t(s: i64) -> Time {
    chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("time") + TimeDelta::seconds(s)
}

fn task(stage: u32, attempt: u32, executor: i64, from: i64, to: i64, outcome: Outcome) -> TaskRun {
    TaskRun {
        stage,
        attempt,
        executor: Some(executor),
        ms: u64::try_from((to - from) * 1000).expect("ms"),
        finished: Some(t(to)),
        outcome,
    }
}

/// The chain as real Spark 4.3 logged it (tests/fixtures/eventlog/cost/shuffle-loss.json):
/// the lost executor's running task, a fetch failure naming no block manager (its output
/// already unregistered), one naming it, the map stage recomputed and the reduce retried.
#[test]
fn a_lost_executor_is_charged_the_attempts_its_lost_shuffle_output_added() {
    let mut l = Ledger::new();
    l.executor_added(1, Some(1), t(0));
    l.executor_added(2, Some(1), t(0));
    l.stage_submitted(0, 0, &[], t(1));
    for i in 0..4 {
        l.task_end(task(0, 0, 1 + i % 2, 1, 5, Outcome::Done));
    }
    l.stage_completed(0, 0, false, t(5));
    l.stage_submitted(1, 0, &[0], t(5));
    l.task_end(task(1, 0, 2, 5, 6, Outcome::Lost));
    l.executor_removed(2, false, t(6));
    l.executor_added(3, Some(1), t(8));
    l.task_end(task(
        1,
        0,
        1,
        5,
        9,
        Outcome::FetchFailed {
            from: Fetched::Unnamed,
        },
    ));
    l.stage_completed(1, 0, true, t(9));
    l.task_end(task(
        1,
        0,
        1,
        5,
        10,
        Outcome::FetchFailed {
            from: Fetched::Executor(2),
        },
    ));
    l.stage_submitted(0, 1, &[], t(10));
    l.task_end(task(0, 1, 1, 10, 12, Outcome::Done));
    l.task_end(task(0, 1, 3, 10, 13, Outcome::Done));
    l.stage_completed(0, 1, false, t(13));
    l.stage_submitted(1, 1, &[0], t(13));
    for e in [1, 3, 1, 3] {
        l.task_end(task(1, 1, e, 13, 14, Outcome::Done));
    }
    l.stage_completed(1, 1, false, t(14));
    let cost = l.finish(Some(t(0)), Some(t(20)), None, true);
    assert_eq!(cost.losses.len(), 1, "{cost:?}");
    let loss = &cost.losses[0];
    assert_eq!(loss.executor, 2);
    assert_eq!((loss.tasks_lost, loss.task_ms_lost), (1, 1000));
    assert_eq!(loss.fetch_failed, 2);
    assert_eq!(
        loss.reruns
            .iter()
            .map(|r| (r.stage, r.attempt, r.kind, r.tasks))
            .collect::<Vec<_>>(),
        [(0, 1, RerunKind::Recompute, 2), (1, 1, RerunKind::Retry, 4)]
    );
    assert_eq!((loss.rerun_tasks, loss.rerun_task_ms), (6, 9000));
    // 10 s to 14 s: the two attempts, back to back.
    assert_eq!(loss.wall_ms, 4000);
    assert_eq!(cost.unexplained_reruns, 0);
    assert_eq!(
        loss.line(Some("OOMKilled (137)"), cost.run_ms),
        "executor 2, OOMKilled (137), lost the shuffle output of stage 0: 2 tasks of stage 0 \
         rerun, stage 1 retried once, 1 running task lost (1s of work), ≈ 4s of the app's 20s"
    );
    assert_eq!(cost.headline().as_deref(), Some("+4s recompute, 8 % idle"));
}

/// A map stage resubmitted when a child is submitted and its output is missing: no fetch
/// failed, the executor removed since its last good attempt is charged.
#[test]
fn a_map_stage_resubmitted_with_no_fetch_failure_is_charged_to_the_executor_lost_since() {
    let mut l = Ledger::new();
    l.executor_added(1, None, t(0));
    l.executor_added(2, None, t(0));
    l.stage_submitted(0, 0, &[], t(1));
    l.task_end(task(0, 0, 1, 1, 2, Outcome::Done));
    l.stage_completed(0, 0, false, t(2));
    l.executor_removed(1, false, t(3));
    l.stage_submitted(0, 1, &[], t(4));
    l.task_end(task(0, 1, 2, 4, 6, Outcome::Done));
    l.stage_completed(0, 1, false, t(6));
    // A stage retried with no loss to blame: counted, charged to nobody.
    l.stage_submitted(5, 0, &[], t(6));
    l.stage_completed(5, 0, true, t(7));
    l.stage_submitted(5, 1, &[], t(7));
    let cost = l.finish(None, None, None, true);
    assert_eq!(cost.losses.len(), 1);
    assert_eq!(cost.losses[0].executor, 1);
    assert_eq!(cost.losses[0].rerun_tasks, 1);
    assert_eq!(cost.losses[0].wall_ms, 2000);
    assert_eq!(cost.unexplained_reruns, 1);
    // The last event read ends the run when the app's end is not known.
    assert_eq!(cost.run_ms, 7000);
}

/// Dynamic allocation's tail: from each idle executor's last task end (or registration) to
/// its removal; an executor lost with tasks on it is no idle one.
#[test]
fn idle_executors_are_counted_from_their_last_task_to_their_removal() {
    let mut l = Ledger::new();
    l.executor_added(1, Some(2), t(0));
    l.executor_added(2, Some(2), t(0));
    l.executor_added(3, Some(2), t(0));
    l.stage_submitted(0, 0, &[], t(0));
    l.task_end(task(0, 0, 1, 0, 4, Outcome::Done));
    l.task_end(task(0, 0, 1, 4, 6, Outcome::Done));
    l.task_end(task(0, 0, 3, 0, 2, Outcome::Lost));
    l.stage_completed(0, 0, false, t(6));
    l.executor_removed(1, true, t(66));
    l.executor_removed(2, true, t(60));
    l.executor_removed(3, true, t(70));
    l.idle_timeout(Some(60_000));
    let cost = l.finish(Some(t(0)), Some(t(100)), None, true);
    let w = &cost.waste;
    assert_eq!((w.idle_removed, w.idle_tail_ms), (2, 60_000 + 60_000));
    assert_eq!(w.never_used, 1);
    assert_eq!(w.allocated_core_ms, (66 + 60 + 70) * 2 * 1000);
    assert_eq!(w.busy_ms, 8000);
    assert_eq!(w.idle_percent(), Some(98));
    assert_eq!(
        cost.losses[0].line(Some("evicted"), cost.run_ms),
        "executor 3, evicted, cost: 1 running task lost (2s of work)"
    );
    assert_eq!(w.peak, 3);
    // Half the idle timeout: 2 removals 30 s sooner, half their 120 s idle at 2 cores.
    let saving = cost.saving().expect("a saving");
    assert_eq!(
        (saving.setting.as_str(), saving.saved_core_ms),
        (
            "--conf spark.dynamicAllocation.executorIdleTimeout=30s",
            120_000
        )
    );
    // The executor that ran nothing, when it cost more: of the 3 at once, 2 ran tasks.
    assert_eq!((w.peak, w.peak_used), (3, Some(2)));
    let mut other = cost.clone();
    other.waste.never_used_core_ms = 200_000;
    let saving = other.saving().expect("a saving");
    assert_eq!(
        (saving.setting.as_str(), saving.saved_core_ms),
        ("--conf spark.dynamicAllocation.maxExecutors=2", 200_000)
    );
    // Without dynamic allocation, neither; a huge timeout does not overflow.
    other.waste.idle_timeout_ms = None;
    assert_eq!(other.saving(), None);
    other.waste.idle_timeout_ms = Some(u64::MAX);
    assert!(other.saving().is_some());
}

/// Shuffle tracking's hold: an idle executor that wrote map output is removed late, or not
/// at all; past the idle timeout its time is counted, past `minExecutors` at the end, and
/// not when an external shuffle service keeps the output.
#[test]
fn executors_shuffle_tracking_held_past_the_idle_timeout_are_counted() {
    let run = |kept: Option<String>, min: u32| {
        let mut l = Ledger::new();
        for x in 1..=4 {
            l.executor_added(x, Some(2), t(0));
        }
        l.stage_submitted(0, 0, &[], t(0));
        // 1 and 2 write map output; 3 only runs the result stage; 4 nothing.
        l.task_end(task(0, 0, 1, 0, 10, Outcome::Done));
        l.task_end(task(0, 0, 2, 0, 10, Outcome::Done));
        l.stage_completed(0, 0, false, t(10));
        l.stage_submitted(1, 0, &[0], t(10));
        l.task_end(task(1, 0, 3, 10, 20, Outcome::Done));
        l.stage_completed(1, 0, false, t(20));
        // 1 held until 300 s (last task 10 s, timeout 60 s: 230 s past), 3 removed on
        // time, 4 never ran; 2 is still there at the end (100 s past, at 170 s).
        l.executor_removed(1, true, t(300));
        l.executor_removed(3, true, t(80));
        l.executor_removed(4, true, t(60));
        l.idle_timeout(Some(60_000));
        l.min_executors(min);
        l.finish(Some(t(0)), Some(t(170)), kept, true).waste
    };
    let w = run(None, 0);
    assert_eq!(
        (
            w.held_by_shuffle,
            w.held_by_shuffle_ms,
            w.held_by_shuffle_core_ms
        ),
        (2, 230_000 + 100_000, (230_000 + 100_000) * 2)
    );
    // Said as every output (report, status, MCP, the timeline popup) says it.
    assert!(
        w.lines()[1]
            .starts_with("shuffle tracking held 2 idle executors 5m30s past the idle timeout"),
        "{:?}",
        w.lines()
    );
    // minExecutors=1 keeps one at the end anyway.
    let w = run(None, 1);
    assert_eq!((w.held_by_shuffle, w.held_by_shuffle_ms), (1, 230_000));
    assert!(w.lines()[1].starts_with("shuffle tracking held 1 idle executor 3m50s past"));
    // An external shuffle service keeps the output: nothing held.
    let w = run(Some("the external shuffle service".into()), 0);
    assert_eq!((w.held_by_shuffle, w.held_by_shuffle_ms), (0, 0));
    assert_eq!(w.lines().len(), 1, "{:?}", w.lines());
}

/// What the review found: a straggler's fetch failure from a superseded attempt does not
/// leave blame behind for a later resubmission, and an unnamed fetch failure is charged to
/// an executor removed since the parents' output was whole, not to an old one.
#[test]
fn stale_blame_and_old_removals_are_not_charged() {
    let mut l = Ledger::new();
    for x in 1..=4 {
        l.executor_added(x, None, t(0));
    }
    // Executor 1 is lost long before the shuffle.
    l.executor_removed(1, false, t(1));
    l.stage_submitted(0, 0, &[], t(2));
    l.task_end(task(0, 0, 2, 2, 3, Outcome::Done));
    l.stage_completed(0, 0, false, t(3));
    l.stage_submitted(1, 0, &[0], t(3));
    l.executor_removed(2, false, t(4));
    l.task_end(task(
        1,
        0,
        3,
        3,
        5,
        Outcome::FetchFailed {
            from: Fetched::Unnamed,
        },
    ));
    l.stage_completed(1, 0, true, t(5));
    l.stage_submitted(0, 1, &[], t(6));
    l.stage_completed(0, 1, false, t(7));
    l.stage_submitted(1, 1, &[0], t(7));
    // A straggler of attempt 0 after attempt 1 began.
    l.task_end(task(
        1,
        0,
        3,
        3,
        8,
        Outcome::FetchFailed {
            from: Fetched::Executor(4),
        },
    ));
    l.stage_completed(1, 1, false, t(9));
    // Later, stage 0 is resubmitted again with executor 3 gone: charged to 3, not to 2 or 4.
    l.executor_removed(3, false, t(10));
    l.stage_submitted(0, 2, &[], t(11));
    l.stage_completed(0, 2, false, t(12));
    let cost = l.finish(Some(t(0)), Some(t(12)), None, true);
    let charged: Vec<(i64, u32)> = cost
        .losses
        .iter()
        .map(|l| (l.executor, l.attempts_added))
        .collect();
    assert!(charged.contains(&(2, 2)), "{charged:?}");
    assert!(charged.contains(&(3, 1)), "{charged:?}");
    assert!(
        !charged.iter().any(|(x, _)| *x == 1 || *x == 4),
        "{charged:?}"
    );
    // 6..7, 7..9 and 11..12: 4 s, once each.
    assert_eq!(cost.wall_ms(), 4000);
}

/// An unnamed fetch failure with no removal since the parents' output was whole charges
/// nobody (an old removal is not guessed); a named culprit is not replaced by a guess in
/// the same round; a fallback's failure leaves its resubmission unexplained; overlapping
/// losses' attempts count once; task time counts `spark.task.cpus`; idle removals are no
/// culprit; a log still being written does not call its running executors unused.
#[test]
fn guesses_are_never_charged_and_time_counts_once() {
    let mut l = Ledger::new();
    l.task_cpus(2);
    for x in 1..=6 {
        l.executor_added(x, Some(4), t(0));
    }
    l.executor_removed(1, false, t(1));
    l.executor_removed(6, true, t(4));
    // Stage 0 (map) then stage 1 reading it: its unnamed failure has no removal since.
    l.stage_submitted(0, 0, &[], t(2));
    l.task_end(task(0, 0, 2, 2, 3, Outcome::Done));
    l.stage_completed(0, 0, false, t(3));
    l.stage_submitted(1, 0, &[0], t(5));
    l.task_end(task(
        1,
        0,
        3,
        5,
        6,
        Outcome::FetchFailed {
            from: Fetched::Unnamed,
        },
    ));
    l.stage_completed(1, 0, true, t(6));
    l.stage_submitted(0, 1, &[], t(7));
    l.stage_completed(0, 1, false, t(8));
    // Stage 2 reads stage 0 again: executor 2 named, then an unnamed failure in the same
    // round guessing no one else.
    l.stage_submitted(2, 0, &[0], t(9));
    l.executor_removed(4, false, t(10));
    l.task_end(task(
        2,
        0,
        3,
        9,
        10,
        Outcome::FetchFailed {
            from: Fetched::Executor(2),
        },
    ));
    l.task_end(task(
        2,
        0,
        3,
        9,
        11,
        Outcome::FetchFailed {
            from: Fetched::Unnamed,
        },
    ));
    l.stage_completed(2, 0, true, t(11));
    l.stage_submitted(0, 2, &[], t(12));
    // Executor 5's loss overlaps: its own resubmission of stage 3 at the same time.
    l.stage_submitted(3, 0, &[], t(9));
    l.stage_completed(3, 0, false, t(10));
    l.executor_removed(5, false, t(11));
    l.stage_submitted(3, 1, &[], t(12));
    l.stage_completed(3, 1, false, t(14));
    l.stage_completed(0, 2, false, t(14));
    l.stage_submitted(2, 1, &[0], t(14));
    l.stage_completed(2, 1, false, t(15));
    // A fetch from the fallback storage: its stage's retry is unexplained.
    l.stage_submitted(7, 0, &[], t(15));
    l.task_end(task(
        7,
        0,
        3,
        15,
        16,
        Outcome::FetchFailed {
            from: Fetched::Elsewhere,
        },
    ));
    l.stage_completed(7, 0, true, t(16));
    l.stage_submitted(7, 1, &[], t(16));
    l.stage_completed(7, 1, false, t(17));
    let cost = l.finish(Some(t(0)), Some(t(17)), None, false);
    let by: Vec<(i64, u32, u32)> = cost
        .losses
        .iter()
        .map(|l| (l.executor, l.attempts_added, l.fetch_failed))
        .collect();
    assert!(by.contains(&(2, 2, 2)), "{by:?}");
    assert!(by.contains(&(5, 1, 0)), "{by:?}");
    assert!(!by.iter().any(|(x, ..)| [1, 4, 6].contains(x)), "{by:?}");
    // Stage 0 attempt 1 (nobody's) and stage 7's retry are unexplained.
    assert_eq!(cost.unexplained_reruns, 2);
    // 12..14 (stages 0 and 3 at once), 14..15: 3 s, not 5.
    assert_eq!(cost.wall_ms(), 3000);
    // 1 + 1 + 1 + 2 + 1 s of tasks at 2 cores each.
    assert_eq!(cost.waste.busy_ms, 12_000);
    // Executors 2 and 3 still run at the end of a log being written: not unused.
    assert!(cost.in_progress);
    assert_eq!(
        cost.waste.never_used, 4,
        "1, 4, 5 and 6 ran nothing and were removed"
    );
}
