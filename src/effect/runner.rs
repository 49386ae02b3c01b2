//! The one runner: carries out an [`Effect`] against the cluster (through the write gate,
//! with every write in the actions log) and says what happened as an [`Outcome`]; log
//! captures a few at a time.

use super::*;
use crate::source::clock::Clock;
use crate::source::{LOG_TAIL_LINES, lean};

/// Runs effects against the cluster. Evidence and actions also go into the source stream
/// (`events`, when there is one), so a recording keeps them.
#[derive(Clone)]
pub struct Runner {
    pub client: kube::Client,
    pub user: String,
    /// The kubeconfig context and API server (host:port), for the actions log.
    pub context: String,
    pub server: String,
    pub log: ActionLog,
    /// Into the source stream (through the recorder, if any); the CLI has none.
    pub events: Option<mpsc::Sender<SourceEvent>>,
    /// The driver view's preference, when a driver view runs.
    pub focus: Option<DriverFocus>,
    /// The bound on log tails captured as evidence.
    pub captures: Captures,
    /// The cluster's clock, which what the runner says is stamped with.
    pub clock: Clock,
}

/// Bounds the log tails captured as evidence of ended executors: a few at a time, and when
/// a storm ends hundreds of executors at once, those past a queue of 64 are not read (their
/// records say no log was captured): the API server's kubelet proxy is not flooded.
#[derive(Debug, Clone)]
pub struct Captures {
    permits: std::sync::Arc<tokio::sync::Semaphore>,
    queued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Lines per log tail (the configuration file's `log-tail-lines`).
    pub lines: usize,
}

impl Captures {
    /// Tails of this many lines.
    pub fn of_lines(lines: usize) -> Self {
        Self {
            lines,
            ..Self::default()
        }
    }

    const AT_ONCE: usize = 4;
    const QUEUE: usize = 64;

    /// A turn to capture, or `None` when too many wait already.
    async fn turn(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.queued.fetch_add(1, SeqCst) >= Self::QUEUE {
            self.queued.fetch_sub(1, SeqCst);
            return None;
        }
        let permit = self.permits.clone().acquire_owned().await.ok();
        self.queued.fetch_sub(1, SeqCst);
        permit
    }
}

impl Default for Captures {
    fn default() -> Self {
        Self {
            permits: std::sync::Arc::new(tokio::sync::Semaphore::new(Self::AT_ONCE)),
            queued: std::sync::Arc::default(),
            lines: LOG_TAIL_LINES,
        }
    }
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

fn denied_by(e: &WriteError, namespace: &str, verb: &str) -> Option<(String, String)> {
    matches!(e, WriteError::Forbidden { .. }).then(|| (namespace.to_owned(), verb.to_owned()))
}

/// Collects the per-pod results of one effect.
#[derive(Debug, Default)]
struct Tally {
    lines: Vec<String>,
    changed: usize,
    failed: usize,
    error: Option<WriteError>,
    denied: Option<(String, String)>,
}

impl Tally {
    fn ok(&mut self, changed: bool, line: Option<String>) {
        self.changed += usize::from(changed);
        self.lines.extend(line);
    }

    fn failed(&mut self, e: WriteError, namespace: &str, verb: &str) {
        self.failed += 1;
        self.lines.push(e.to_string());
        self.denied = self
            .denied
            .take()
            .or_else(|| denied_by(&e, namespace, verb));
        self.error.get_or_insert(e);
    }

    fn done(self, text: String, pods: Vec<(String, String)>) -> Outcome {
        Outcome::Done(Done {
            text,
            lines: self.lines,
            changed: self.changed,
            pods,
            error: self.error,
            failed: self.failed,
            denied: self.denied,
        })
    }
}

impl Runner {
    /// Appends to the actions log; a log that cannot be written is a warning line.
    fn log_action(&self, action: &str, target: &str, result: &str, t: &mut Tally) {
        let rec = ActionRecord {
            at: fmt_time(&Utc::now()),
            user: self.user.clone(),
            context: self.context.clone(),
            server: self.server.clone(),
            namespace: target.split_once('/').map_or("", |(ns, _)| ns).to_owned(),
            action: action.to_owned(),
            target: target.to_owned(),
            result: result.to_owned(),
        };
        tracing::info!(
            "{action} {target} ({} via {}): {result}",
            self.context,
            self.server
        );
        if let Err(e) = self.log.append(&rec) {
            t.lines.push(format!("warning: {e}"));
        }
    }

    /// The cluster's namespace names, within the request timeout; none when refused.
    async fn namespaces(&self) -> Vec<String> {
        let api: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(self.client.clone());
        let params = kube::api::ListParams::default().limit(1000);
        let list = api.list_metadata(&params);
        match tokio::time::timeout(std::time::Duration::from_secs(10), list).await {
            Ok(Ok(l)) => l
                .items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .collect(),
            _ => Vec::new(),
        }
    }

    async fn emit(&self, ev: SourceEvent) {
        if let Some(tx) = &self.events {
            let _ = tx.send(ev).await;
        }
    }

    async fn timeline(&self, namespace: &str, app_id: &str, text: String, killed: Option<i64>) {
        self.emit(SourceEvent::ActionTaken {
            namespace: namespace.to_owned(),
            app_id: app_id.to_owned(),
            text,
            killed,
            at: self.clock.now(),
        })
        .await;
    }

    /// Runs one effect to completion.
    pub async fn run(&self, effect: Effect) -> Outcome {
        // A kill or a hold that could not be logged is not made (a release still is: it
        // gives back what a hold kept).
        let adds = matches!(
            effect,
            Effect::Kill { .. } | Effect::HoldPod { .. } | Effect::SetHold { until: Some(_), .. }
        );
        if adds && let Err(e) = self.log.writable() {
            let mut t = Tally::default();
            let refused = Denied::Unlogged(e);
            let text = refused.to_string();
            t.failed(WriteError::Denied(refused), "", "");
            // Every pod it would have written failed (and is no longer in flight).
            t.failed = effect.pods().max(1);
            return t.done(text, effect.targets());
        }
        match effect {
            Effect::Quit => Outcome::Nothing,
            Effect::Kill { targets, grace } => self.kill(targets, grace).await,
            Effect::SetHold {
                namespace,
                app_id,
                driver,
                pods,
                until,
            } => self.set_hold(namespace, app_id, driver, pods, until).await,
            Effect::HoldPod {
                namespace,
                pod: HoldTarget { pod, uid, via },
                until,
            } => self.hold_new(namespace, pod, uid, via, until).await,
            Effect::ReleasePod {
                namespace,
                pod,
                expired,
            } => self.release(namespace, pod, expired).await,
            Effect::FetchLog {
                namespace,
                pod,
                container,
                previous,
                capture,
            } => {
                self.fetch_log(namespace, pod, container, previous, capture)
                    .await
            }
            Effect::ReadEvents { namespace, pod } => self.read_events(namespace, pod).await,
            Effect::CheckPermissions { namespaces } => {
                Outcome::Permissions(Permissions::check(&self.client, &namespaces).await)
            }
            Effect::FocusDriver(app) => {
                if let Some(f) = &self.focus {
                    f.prefer(app);
                }
                Outcome::Nothing
            }
            Effect::Copy(_) | Effect::Switch(_) => Outcome::Nothing,
            Effect::ListNamespaces => Outcome::Namespaces(self.namespaces().await),
        }
    }

    /// A new executor of a held app, held as it appears.
    async fn hold_new(
        &self,
        namespace: String,
        pod: String,
        uid: Option<String>,
        via: Option<super::Via>,
        until: Time,
    ) -> Outcome {
        let mut t = Tally::default();
        let target = format!("{namespace}/{pod}");
        let held = self.hold(&namespace, &pod, uid.as_deref(), via.as_ref(), until);
        let text = match held.await {
            Ok(changed) => {
                t.ok(changed, None);
                format!("held new executor {pod}")
            }
            Err(e) if e.is_not_found() => {
                t.ok(false, None);
                format!("{pod} is already gone; nothing to hold")
            }
            Err(e) => {
                let text = e.to_string();
                t.failed(e, &namespace, "patch");
                text
            }
        };
        self.log_action("hold", &target, &text, &mut t);
        t.done(text, vec![(namespace, pod)])
    }

    /// A hold given back (`expired`: its time was up).
    async fn release(&self, namespace: String, pod: String, expired: bool) -> Outcome {
        let mut t = Tally::default();
        let target = format!("{namespace}/{pod}");
        let result = match release_pod(&self.client, &namespace, &pod).await {
            Ok(changed) => {
                t.ok(changed, None);
                if expired {
                    "released (expired)"
                } else {
                    "released"
                }
                .to_owned()
            }
            Err(e) => {
                let text = e.to_string();
                t.failed(e, &namespace, "patch");
                text
            }
        };
        self.log_action("release", &target, &result, &mut t);
        let text = match (&t.error, expired) {
            (Some(_), _) => result,
            (None, true) => format!("released the expired hold on {pod}"),
            (None, false) => format!("released {pod}"),
        };
        t.done(text, vec![(namespace, pod)])
    }

    /// A log tail: shown (`capture` false), or captured as evidence, one capture at a time.
    async fn fetch_log(
        &self,
        namespace: String,
        pod: String,
        container: String,
        previous: bool,
        capture: bool,
    ) -> Outcome {
        let _turn = match capture {
            true => match self.captures.turn().await {
                Some(turn) => Some(turn),
                None => return Outcome::Nothing,
            },
            false => None,
        };
        let lines = lean::log_tail(
            &self.client,
            &namespace,
            &pod,
            &container,
            previous,
            self.captures.lines as i64,
        )
        .await;
        if !capture {
            return Outcome::Log { pod, lines };
        }
        match &lines {
            Ok(l) => tracing::info!(
                "evidence: log tail of {namespace}/{pod} ({} lines)",
                l.len()
            ),
            Err(e) => tracing::warn!("evidence: log tail of {namespace}/{pod}: {e}"),
        }
        if let Ok(lines) = lines {
            self.emit(SourceEvent::LogCaptured {
                namespace,
                pod,
                lines,
                at: self.clock.now(),
            })
            .await;
        }
        Outcome::Nothing
    }

    /// A gone pod's events read again (what the event watch may have missed), as evidence.
    async fn read_events(&self, namespace: String, pod: String) -> Outcome {
        let Some(_turn) = self.captures.turn().await else {
            return Outcome::Nothing;
        };
        // A failed read leaves what the event watch gave; nothing to show for it.
        let read = lean::pod_events(&self.client, &namespace, &pod).await;
        match &read {
            Ok(e) => tracing::info!("evidence: {} events of {namespace}/{pod}", e.len()),
            Err(e) => tracing::warn!("evidence: events of {namespace}/{pod}: {e}"),
        }
        let result = match read {
            Ok(events) => {
                let n = events.len();
                for event in events {
                    self.emit(SourceEvent::EventSeen {
                        event: Box::new(event),
                        at: self.clock.now(),
                    })
                    .await;
                }
                Ok(n)
            }
            Err(e) => Err(e),
        };
        Outcome::EventsRead {
            namespace,
            pod,
            result,
        }
    }

    async fn set_hold(
        &self,
        namespace: String,
        app_id: String,
        driver: Option<String>,
        pods: Vec<HoldTarget>,
        until: Option<Time>,
    ) -> Outcome {
        let mut t = Tally::default();
        if let Some(d) = &driver {
            match mark_app_hold(&self.client, &namespace, d, until).await {
                Ok(()) => {}
                // The app ended while its hold was turned off: no mark left to clear.
                Err(e) if until.is_none() && e.is_not_found() => {
                    t.ok(false, Some(format!("{namespace}/{d}: already gone")));
                }
                Err(e) => t.failed(e, &namespace, "patch"),
            }
        }
        for HoldTarget { pod: p, uid, via } in &pods {
            let target = format!("{namespace}/{p}");
            let (action, r) = match until {
                Some(u) => {
                    let held = self.hold(&namespace, p, uid.as_deref(), via.as_ref(), u);
                    ("hold", held.await)
                }
                None => ("release", release_pod(&self.client, &namespace, p).await),
            };
            match r {
                Ok(changed) => {
                    let result = match until {
                        Some(u) => format!("held until {}", fmt_time(&u)),
                        None => "released".to_owned(),
                    };
                    self.log_action(action, &target, &result, &mut t);
                    // What the hold costs a StatefulSet's app, said once per pod.
                    let cost = until
                        .and(via.as_ref())
                        .and_then(|v| v.controller.hold_cost())
                        .map(|c| format!("{target}: {c}"));
                    t.ok(changed, cost);
                }
                // Gone meanwhile: nothing left to hold or release.
                Err(e) if e.is_not_found() => {
                    self.log_action(action, &target, "already gone", &mut t);
                    t.ok(false, Some(format!("{target}: already gone")));
                }
                Err(e) => {
                    self.log_action(action, &target, &e.to_string(), &mut t);
                    t.failed(e, &namespace, "patch");
                }
            }
        }
        let verb = if until.is_some() {
            "hold on"
        } else {
            "hold off"
        };
        let text = match &t.error {
            None => format!("{verb}: {} pod(s)", t.changed),
            Some(e) => format!(
                "{verb}: {} pod(s), {} failed; first: {e}",
                t.changed, t.failed
            ),
        };
        self.timeline(
            &namespace,
            &app_id,
            format!("action by {}: {text}", self.user),
            None,
        )
        .await;
        let pods = pods
            .into_iter()
            .map(|p| (namespace.clone(), p.pod))
            .collect();
        t.done(text, pods)
    }

    /// The hold finalizer on one pod, after its owner chain is verified when it has one.
    async fn hold(
        &self,
        namespace: &str,
        pod: &str,
        uid: Option<&str>,
        via: Option<&Via>,
        until: Time,
    ) -> Result<bool, WriteError> {
        if let Some(via) = via {
            ownership::verify(&self.client, namespace, pod, via).await?;
        }
        hold_pod(&self.client, namespace, pod, uid, until).await
    }

    async fn kill(&self, targets: Vec<Target>, grace: Option<u32>) -> Outcome {
        let mut t = Tally::default();
        for k in &targets {
            let target = format!("{}/{}", k.namespace, k.pod);
            let verified = match &k.via {
                Some(via) => ownership::verify(&self.client, &k.namespace, &k.pod, via).await,
                None => Ok(()),
            };
            let deleted = match verified {
                Ok(()) => {
                    // Said on the pod first (every other view then names the kill as the
                    // tool's); a pod that cannot be marked is still killed as asked.
                    let marked = match mark_killed(
                        &self.client,
                        &k.namespace,
                        &k.pod,
                        k.uid.as_deref(),
                        &self.user,
                        self.clock.now(),
                    )
                    .await
                    {
                        Ok(()) => true,
                        Err(e) => {
                            tracing::warn!("kill: marking {target} as the tool's: {e}");
                            false
                        }
                    };
                    let deleted =
                        kill(&self.client, &k.namespace, &k.pod, k.uid.as_deref(), grace).await;
                    // Refused: the mark must not outlive a kill that did not happen.
                    if marked
                        && deleted.as_ref().is_err_and(|e| !e.is_not_found())
                        && let Err(e) = unmark_killed(&self.client, &k.namespace, &k.pod).await
                    {
                        tracing::warn!("kill: unmarking {target}: {e}");
                    }
                    deleted
                }
                Err(e) => Err(e),
            };
            match deleted {
                Ok(()) => {
                    let line = match &k.via {
                        Some(via) => format!("deleted {target}: {}", via.controller.after_kill()),
                        None => format!("deleted {target}"),
                    };
                    t.ok(true, Some(line));
                    self.log_action("kill", &target, super::log::KILLED, &mut t);
                    let text = format!(
                        "action by {}: killed executor {} ({})",
                        self.user, k.executor, k.pod
                    );
                    self.timeline(&k.namespace, &k.app_id, text, Some(k.executor))
                        .await;
                }
                // Deleted meanwhile (by Spark, or another hand): what was asked holds.
                Err(e) if e.is_not_found() => {
                    self.log_action("kill", &target, "already gone", &mut t);
                    t.ok(false, Some(format!("{target}: already gone")));
                }
                Err(e) => {
                    self.log_action("kill", &target, &e.to_string(), &mut t);
                    t.failed(e, &k.namespace, "delete");
                }
            }
        }
        // Who replaces them: the controllers of Spark's allocator, else Spark itself.
        let replaces = match (
            targets.iter().any(|k| k.via.is_some()),
            targets.iter().any(|k| k.via.is_none()),
        ) {
            (true, false) => "their StatefulSet or ReplicaSet replaces them",
            (true, true) => "Spark, or their StatefulSet or ReplicaSet, replaces them",
            _ => "Spark replaces them if below target",
        };
        let gone = targets.len().saturating_sub(t.changed + t.failed);
        let gone = if gone > 0 {
            format!(" ({gone} already gone)")
        } else {
            String::new()
        };
        let text = match &t.error {
            None => format!("killed {} executor(s){gone}; {replaces}", t.changed),
            Some(first) => format!("killed {}{gone}, failed {}: {first}", t.changed, t.failed),
        };
        t.done(text, Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn captures_run_a_few_at_once_and_refuse_past_the_queue() {
        let c = Captures::default();
        let mut running = Vec::new();
        for _ in 0..Captures::AT_ONCE {
            running.push(c.turn().await.expect("a free turn"));
        }
        // These wait for a turn; the queue is then full.
        let waiting: Vec<_> = (0..Captures::QUEUE)
            .map(|_| {
                let c = c.clone();
                tokio::spawn(async move { c.turn().await.is_some() })
            })
            .collect();
        while c.queued.load(std::sync::atomic::Ordering::SeqCst) < Captures::QUEUE {
            tokio::task::yield_now().await;
        }
        assert!(c.turn().await.is_none(), "past the queue: not read");
        drop(running);
        for w in waiting {
            assert!(w.await.expect("task"), "the queued ones get their turn");
        }
    }

    fn forbidden(pod: &str) -> WriteError {
        WriteError::Forbidden {
            verb: "delete".into(),
            namespace: "spark-jobs".into(),
            pod: pod.into(),
            message: "pods is forbidden".into(),
        }
    }

    #[test]
    fn a_tally_keeps_every_line_the_first_error_and_the_403() {
        let mut t = Tally::default();
        t.ok(true, Some("deleted spark-jobs/e-1".into()));
        t.failed(forbidden("e-2"), "spark-jobs", "delete");
        t.ok(false, None);
        t.failed(
            WriteError::Api {
                verb: "delete".into(),
                namespace: "spark-jobs".into(),
                pod: "e-3".into(),
                message: "timeout".into(),
            },
            "spark-jobs",
            "delete",
        );
        assert_eq!(
            (t.changed, t.failed),
            (1, 2),
            "a write that changed nothing is no change"
        );
        let Outcome::Done(d) = t.done("killed 1, failed 2".into(), Vec::new()) else {
            panic!("a tally ends in Done");
        };
        assert_eq!(
            d.lines,
            vec![
                "deleted spark-jobs/e-1",
                "delete spark-jobs/e-2: forbidden (pods is forbidden)",
                "delete spark-jobs/e-3: timeout",
            ],
            "the CLI prints every target's result, not only up to the first failure"
        );
        assert_eq!(
            d.error,
            Some(forbidden("e-2")),
            "the first error is the exit status"
        );
        assert_eq!(d.denied, Some(("spark-jobs".into(), "delete".into())));
    }
}
