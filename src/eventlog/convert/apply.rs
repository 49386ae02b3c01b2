//! Each event of a log taken into the conversion ([`Converter::take`]), and the log's
//! end ([`Converter::finish`]): the last view, the app's end, a tick at its last moment.

use spark_triage_core::model::driver::STOPPED_WITH_APP;
use spark_triage_core::model::driver_state::StreamingQuery;
use spark_triage_core::model::{Time, fmt_time};

use super::*;
use crate::eventlog::events::Event;

impl Converter {
    pub fn take(&mut self, ev: Event) {
        match ev {
            Event::LogStart { spark_version } => self.version = Some(spark_version),
            Event::Environment { properties } => {
                self.properties = Some(properties);
                if let Some(at) = self.begun.as_ref().and(self.start.or(self.first_at)) {
                    self.configure(at);
                }
            }
            Event::AppStart {
                app_id,
                app_name,
                attempt,
                user,
                at,
            } => {
                self.seen(at);
                self.app_id = app_id;
                self.app_name = Some(app_name);
                self.attempt = attempt;
                self.user = user;
                self.start = Some(at);
                self.key(at);
            }
            Event::AppEnd { at, exit_code } => {
                self.seen(at);
                self.key(at);
                self.end = Some((at, exit_code));
            }
            Event::ExecutorAdded {
                id,
                at,
                host,
                cores,
                pod_name,
            } => {
                if let Ok(n) = id.parse() {
                    self.ledger.executor_added(n, cores, at);
                }
                let Some(id) = self.change(&id, "the addition", true, at) else {
                    return;
                };
                let pod_name = pod_name.or_else(|| self.pod_name(id));
                let e = DriverExecutor {
                    host_port: host,
                    add_time: Some(at),
                    ..registered(id, pod_name)
                };
                self.held_bytes += weight(&e);
                let was = self.executors.insert(id, e);
                if let Some(w) = &was {
                    self.held_bytes = self.held_bytes.saturating_sub(weight(w));
                }
                // Added again (a log that reuses an id): no longer removed.
                self.clean.remove(&id);
                self.removed_held -= usize::from(was.is_some_and(|w| w.remove_time.is_some()));
                self.pending = Some(at);
            }
            Event::ExecutorRemoved { id, at, reason } => {
                if let Ok(n) = id.parse() {
                    let idle = self.removed_idle(&reason);
                    self.ledger.executor_removed(n, idle, at);
                }
                let Some(id) = self.change(&id, "the removal", false, at) else {
                    return;
                };
                let pod_name = self.pod_name(id);
                self.clean.remove(&id);
                let e = self
                    .executors
                    .entry(id)
                    .or_insert_with(|| registered(id, pod_name));
                let before = if e.remove_time.is_none() && e.add_time.is_none() {
                    0
                } else {
                    weight(e)
                };
                let reason = Some(capped(reason)).filter(|r| !r.trim().is_empty());
                if e.remove_time.is_some() && e.remove_reason.is_some() {
                    // Removed again: Spark's record is the first removal (its REST API and
                    // History Server keep that one); the later texts are kept beside it, a
                    // few (a heartbeat timeout racing a kill is the second).
                    if e.removed_again.len() < 4 {
                        e.removed_again
                            .extend(reason.map(|r| capped_to(r, MAX_REASON_AGAIN)));
                    }
                } else {
                    let first = e.remove_time.is_none();
                    e.active = false;
                    e.remove_time = Some(at);
                    e.remove_reason = reason;
                    self.removed_held += usize::from(first);
                }
                let after = self.executors.get(&id).map_or(0, weight);
                self.held_bytes = (self.held_bytes + after).saturating_sub(before);
                self.pending = Some(at);
            }
            ev @ Event::TaskEnd { .. } => self.task_ended(ev),
            Event::QueryStarted { query, at } => self.query_started(query, at),
            ev @ (Event::StageSubmitted { .. } | Event::StageCompleted { .. }) => self.staged(ev),
            Event::ExecutorExcluded {
                id,
                at,
                task_failures,
            } => {
                let Some(id) = self.numeric(&id, "the exclusion") else {
                    return;
                };
                self.seen(at);
                // Spark posts `…Blacklisted` beside `…Excluded`: one line for both.
                if !self.excluded.insert((id, at)) {
                    return;
                }
                let (namespace, app_id) = self.key(at);
                self.out.push(SourceEvent::AppNoted {
                    namespace,
                    app_id,
                    app_name: None,
                    text: format!(
                        "executor {id} excluded from scheduling after {task_failures} task failures"
                    ),
                    end: false,
                    unfinished: false,
                    spark_version: None,
                    at,
                });
            }
        }
    }

    /// A task's end: its executor's counts (as Spark's status listener keeps them) and
    /// what it cost.
    fn task_ended(&mut self, ev: Event) {
        let Event::TaskEnd {
            executor,
            failed,
            killed,
            lost,
            at,
            stage,
            stage_attempt,
            ms,
            fetch_failed,
            resubmitted,
        } = ev
        else {
            return;
        };
        if let Some(at) = at {
            self.seen(at);
        }
        // Its work lost with its executor: running (`ExecutorLostFailure`) or done and
        // its output gone (`Resubmitted`).
        let work_lost = lost || resubmitted;
        self.costed(
            &executor,
            (stage, stage_attempt),
            ms,
            at,
            work_lost,
            fetch_failed,
        );
        if let Ok(id) = executor.parse::<i64>()
            && let Some(e) = self.executors.get_mut(&id)
        {
            self.clean.remove(&id);
            e.tasks_lost += u64::from(lost);
            if failed {
                e.failed_tasks += 1;
            } else if !killed {
                e.completed_tasks += 1;
            }
        }
    }

    /// A Structured Streaming query started (at its own time, else the log's latest).
    fn query_started(&mut self, query: StreamingQuery, at: Option<Time>) {
        let Some(at) = at.or(self.last_at).or(self.start) else {
            return;
        };
        self.seen(at);
        let (namespace, app_id) = self.key(at);
        self.out.push(SourceEvent::DriverStreaming {
            namespace,
            app_id,
            query,
            at,
        });
    }

    /// The log is read: the last view, the app's end (or why there is none), and a tick
    /// at the log's last moment so that ages and verdicts stand as of then.
    pub fn finish(mut self, in_progress: bool) -> Converted {
        let Some(last) = self.last_at else {
            self.damage("no event with a time: nothing to read".into());
            return Converted {
                started_at: None,
                namespace: String::new(),
                events: Vec::new(),
                damaged: self.damaged,
            };
        };
        let (namespace, app_id) = self.key(last);
        if let Some((first, last)) = self.skipped_ids {
            let n = self.skipped_n;
            let why = self.skipped_why.clone().unwrap_or_default();
            self.damage(format!(
                "{n} executors skipped (ids from {first} to {last}): {why}"
            ));
        }
        if let Some(p) = self.pending {
            self.view(p);
        } else if self.last_view.is_none() {
            self.view(self.start.unwrap_or(last));
        }
        // The app ended: Spark stopped the executors still registered and logged no removal
        // for them; the last view says they went with it.
        if let Some((at, _)) = self.end {
            let mut stopped = false;
            for e in self.executors.values_mut().filter(|e| e.active) {
                self.removed_held += usize::from(e.remove_time.is_none());
                e.active = false;
                e.remove_time = Some(at);
                e.remove_reason = Some(STOPPED_WITH_APP.to_owned());
                stopped = true;
            }
            if stopped {
                self.view(at.max(last));
            }
        }
        let end_text = match self.end {
            Some((_, Some(code))) => format!("application ended, exit code {code}"),
            Some((_, None)) => {
                "application ended (the log has no exit code: Spark before 4.0 does not write it)"
                    .to_owned()
            }
            None if in_progress => format!(
                "the event log ends at {} without the application's end: it is still being \
                 written, or its driver died (the log is marked in progress)",
                fmt_time(&last)
            ),
            None => format!(
                "the event log ends at {} without the application's end",
                fmt_time(&last)
            ),
        };
        let end_at = self.end.map_or(last, |(at, _)| at.max(last));
        let shuffle_kept_by = self.shuffle_kept_by();
        let idle_timeout = self.idle_timeout_ms();
        self.ledger.idle_timeout(idle_timeout);
        self.ledger.min_executors(self.min_executors());
        let saw_work = self.ledger.saw_work();
        let cost = std::mem::take(&mut self.ledger).finish(
            self.start,
            Some(end_at),
            shuffle_kept_by,
            // Its end logged, or a log Spark finished writing (a driver that died leaves
            // it in progress).
            self.end.is_some() || !in_progress,
        );
        if saw_work && !cost.is_empty() {
            self.out.push(SourceEvent::AppCost {
                namespace: namespace.clone(),
                app_id: app_id.clone(),
                cost: Box::new(cost),
                at: end_at,
            });
        }
        self.out.push(SourceEvent::AppNoted {
            namespace: namespace.clone(),
            app_id,
            app_name: None,
            text: end_text,
            end: true,
            unfinished: self.end.is_none(),
            spark_version: None,
            at: end_at,
        });
        self.out.push(SourceEvent::Tick { at: end_at });
        Converted {
            started_at: self.start.or(self.first_at),
            namespace,
            events: self.out,
            damaged: self.damaged,
        }
    }
}
