//! The terminal edge: owns raw mode and the alternate screen, restores the terminal on every
//! exit path (return, `?`, panic, Ctrl-C, SIGTERM), and runs the loop: await one message,
//! drain everything queued, update, draw at most every 16 ms.

use std::{io, time::Duration};

use crossterm::{
    event::{DisableMouseCapture, EnableMouseCapture, Event, EventStream},
    execute,
    terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode},
};
use futures::StreamExt;
use ratatui::{Terminal, backend::CrosstermBackend};
use tokio::sync::mpsc;

use crate::{
    app::{App, Effect, Msg, Target, update},
    effect::{self, ActionLog, ActionRecord},
    source::SourceEvent,
};

/// Runs effects against the cluster; results come back as messages (and, for evidence and
/// actions, as source events, so a recording keeps them).
#[derive(Clone)]
pub struct Runner {
    pub client: kube::Client,
    pub user: String,
    pub log: ActionLog,
    /// Into the source stream (through the recorder, if any).
    pub events: mpsc::Sender<SourceEvent>,
    /// Which app's driver REST API to read: the one in view.
    pub focus: crate::source::live::DriverFocus,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl Runner {
    fn log_action(&self, action: &str, target: &str, result: &str) {
        let _ = self.log.append(&ActionRecord {
            at: crate::model::fmt_time(&chrono::Utc::now()),
            user: self.user.clone(),
            action: action.to_owned(),
            target: target.to_owned(),
            result: result.to_owned(),
        });
    }

    async fn timeline(&self, namespace: &str, app_id: &str, text: String, killed: Option<i64>) {
        let ev = SourceEvent::ActionTaken {
            namespace: namespace.to_owned(),
            app_id: app_id.to_owned(),
            text,
            killed,
            at: chrono::Utc::now(),
        };
        let _ = self.events.send(ev).await;
    }

    fn denied_by(e: &effect::WriteError, namespace: &str, verb: &str) -> Option<(String, String)> {
        matches!(e, effect::WriteError::Forbidden { .. })
            .then(|| (namespace.to_owned(), verb.to_owned()))
    }

    /// Runs one effect to completion; the message to send back, if any.
    pub async fn run(&self, effect: Effect) -> Option<Msg> {
        match effect {
            Effect::Quit => None,
            Effect::Kill { targets, grace } => Some(self.kill(targets, grace).await),
            Effect::SetHold {
                namespace,
                app_id,
                driver,
                pods,
                until,
            } => Some(self.set_hold(namespace, app_id, driver, pods, until).await),
            Effect::HoldPod {
                namespace,
                pod,
                until,
            } => {
                let (text, denied) =
                    match effect::hold_pod(&self.client, &namespace, &pod, until).await {
                        Ok(_) => (format!("held new executor {pod}"), None),
                        Err(e) => (e.to_string(), Self::denied_by(&e, &namespace, "patch")),
                    };
                self.log_action("hold", &format!("{namespace}/{pod}"), &text);
                Some(Msg::ActionDone {
                    text,
                    pods: vec![(namespace, pod)],
                    denied,
                })
            }
            Effect::ReleasePod { namespace, pod } => {
                let (text, denied) = match effect::release_pod(&self.client, &namespace, &pod).await
                {
                    Ok(_) => (format!("released the expired hold on {pod}"), None),
                    Err(e) => (e.to_string(), Self::denied_by(&e, &namespace, "patch")),
                };
                self.log_action("release", &format!("{namespace}/{pod}"), &text);
                Some(Msg::ActionDone {
                    text,
                    pods: vec![(namespace, pod)],
                    denied,
                })
            }
            Effect::FetchLog {
                namespace,
                pod,
                container,
                previous,
                capture,
            } => {
                let tail = crate::store::LOG_LINES as i64;
                let r =
                    effect::fetch_log(&self.client, &namespace, &pod, &container, previous, tail)
                        .await;
                let lines = r.map(|t| t.lines().map(str::to_owned).collect::<Vec<_>>());
                if !capture {
                    return Some(Msg::LogFetched { pod, lines });
                }
                if let Ok(lines) = lines {
                    let ev = SourceEvent::LogCaptured {
                        namespace,
                        pod,
                        lines,
                        at: chrono::Utc::now(),
                    };
                    let _ = self.events.send(ev).await;
                }
                None
            }
        }
    }

    async fn set_hold(
        &self,
        namespace: String,
        app_id: String,
        driver: Option<String>,
        pods: Vec<String>,
        until: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Msg {
        let mut ok = 0;
        let mut denied = None;
        let mut last_err = None;
        if let Some(d) = &driver
            && let Err(e) = effect::mark_app_hold(&self.client, &namespace, d, until).await
        {
            denied = Self::denied_by(&e, &namespace, "patch");
            last_err = Some(e.to_string());
        }
        for p in &pods {
            let r = match until {
                Some(u) => effect::hold_pod(&self.client, &namespace, p, u).await,
                None => effect::release_pod(&self.client, &namespace, p).await,
            };
            match r {
                Ok(_) => ok += 1,
                Err(e) => {
                    denied = denied.or_else(|| Self::denied_by(&e, &namespace, "patch"));
                    last_err = Some(e.to_string());
                }
            }
        }
        let verb = if until.is_some() {
            "hold on"
        } else {
            "hold off"
        };
        let text = match &last_err {
            None => format!("{verb}: {ok} pod(s)"),
            Some(e) => format!("{verb}: {ok} pod(s); failed: {e}"),
        };
        self.log_action(verb, &format!("{namespace}/{app_id}"), &text);
        self.timeline(
            &namespace,
            &app_id,
            format!("action by {}: {text}", self.user),
            None,
        )
        .await;
        let pods = pods.into_iter().map(|p| (namespace.clone(), p)).collect();
        Msg::ActionDone { text, pods, denied }
    }

    async fn kill(&self, targets: Vec<Target>, grace: Option<u32>) -> Msg {
        let mut ok = 0;
        let mut failures = Vec::new();
        let mut denied = None;
        for t in &targets {
            let target = format!("{}/{}", t.namespace, t.pod);
            match effect::kill(&self.client, &t.namespace, &t.pod, grace).await {
                Ok(()) => {
                    ok += 1;
                    self.log_action("kill", &target, "deleted");
                    let text = format!(
                        "action by {}: killed executor {} ({})",
                        self.user, t.executor, t.pod
                    );
                    self.timeline(&t.namespace, &t.app_id, text, Some(t.executor))
                        .await;
                }
                Err(e) => {
                    denied = denied.or_else(|| Self::denied_by(&e, &t.namespace, "delete"));
                    self.log_action("kill", &target, &e.to_string());
                    failures.push(e.to_string());
                }
            }
        }
        let text = match failures.first() {
            None => format!("killed {ok} executor(s); Spark replaces them if below target"),
            Some(first) => format!("killed {ok}, failed {}: {first}", failures.len()),
        };
        Msg::ActionDone {
            text,
            pods: Vec::new(),
            denied,
        }
    }
}

/// Restores the terminal when dropped.
#[derive(Debug)]
pub struct TerminalGuard;

/// Puts the terminal back as it was: cooked mode, main screen, no mouse capture, cursor.
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        io::stdout(),
        LeaveAlternateScreen,
        DisableMouseCapture,
        crossterm::cursor::Show
    );
}

impl TerminalGuard {
    pub fn enter() -> io::Result<Self> {
        // A panic anywhere restores the terminal before the message is printed.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        enable_raw_mode()?;
        execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
        Ok(Self)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Messages drained per wake-up before drawing (a burst of 5,000 watch events is one frame).
const DRAIN_MAX: usize = 50_000;
const FRAME: Duration = Duration::from_millis(16);

/// Runs the UI until the user quits, the sources end, or a signal arrives.
pub async fn run(
    mut app: App,
    mut sources: mpsc::Receiver<SourceEvent>,
    runner: Option<Runner>,
    live_clock: bool,
) -> io::Result<App> {
    let (msg_tx, mut msgs) = mpsc::channel::<Msg>(1024);
    let mut asked: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let _guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let size = terminal.size()?;
    update(&mut app, Msg::Resize(size.width, size.height));
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut replay_tick = tokio::time::interval(Duration::from_millis(100));
    replay_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut sigterm = signal_stream();
    let mut sources_open = true;
    let mut last_draw = tokio::time::Instant::now() - FRAME;
    let mut dirty = true;
    loop {
        if dirty && last_draw.elapsed() >= FRAME {
            terminal.draw(|f| crate::ui::render(&app, f))?;
            last_draw = tokio::time::Instant::now();
            dirty = false;
        }
        let wait = if dirty {
            FRAME.saturating_sub(last_draw.elapsed())
        } else {
            Duration::from_secs(3600)
        };
        let msg = tokio::select! {
            ev = keys.next() => match ev {
                Some(Ok(Event::Key(k))) => Some(Msg::Key(k)),
                Some(Ok(Event::Mouse(m))) => Some(Msg::Mouse(m)),
                Some(Ok(Event::Resize(w, h))) => Some(Msg::Resize(w, h)),
                Some(Ok(_)) => None,
                Some(Err(e)) => return Err(e),
                None => break,
            },
            ev = sources.recv(), if sources_open => match ev {
                Some(ev) => Some(Msg::Source(ev)),
                None => { sources_open = false; None }
            },
            _ = tick.tick() => live_clock.then(|| Msg::Tick(chrono::Utc::now())),
            _ = replay_tick.tick(), if app.replay.as_ref().is_some_and(|r| r.playing) => Some(Msg::ReplayAdvance(100)),
            m = msgs.recv() => m,
            () = sigterm.recv() => break,
            () = tokio::time::sleep(wait) => None,
        };
        if let Some(msg) = msg {
            dirty = true;
            let mut effects = update(&mut app, msg);
            effects.extend(drain(&mut app, &mut sources, DRAIN_MAX));
            if let Some(r) = &runner {
                r.focus.prefer(
                    app.current_app()
                        .map(|a| (a.namespace.clone(), a.app_id.clone())),
                );
                // Ask the API what we may do in every namespace we see, once.
                let namespaces: std::collections::BTreeSet<String> =
                    app.apps().iter().map(|a| a.namespace.clone()).collect();
                for ns in namespaces {
                    if asked.insert(ns.clone()) {
                        let (client, tx) = (r.client.clone(), msg_tx.clone());
                        tokio::spawn(async move {
                            let p = effect::Permissions::check(&client, &[ns]).await;
                            let _ = tx.send(Msg::Permissions(p)).await;
                        });
                    }
                }
            }
            if effects.contains(&Effect::Quit) {
                // Finish what quitting asked for (releasing holds) before leaving.
                if let Some(r) = &runner {
                    let pending = effects.into_iter().filter(|e| *e != Effect::Quit).map(|e| {
                        let r = r.clone();
                        async move { r.run(e).await }
                    });
                    let _ = tokio::time::timeout(
                        Duration::from_secs(15),
                        futures::future::join_all(pending),
                    )
                    .await;
                }
                break;
            }
            if let Some(r) = &runner {
                for e in effects {
                    let (r, tx) = (r.clone(), msg_tx.clone());
                    tokio::spawn(async move {
                        if let Some(m) = r.run(e).await {
                            let _ = tx.send(m).await;
                        }
                    });
                }
            }
        }
    }
    Ok(app)
}

/// Applies everything already queued (up to `max`) so a burst costs one frame; returns
/// the effects the updates asked for.
pub fn drain(app: &mut App, sources: &mut mpsc::Receiver<SourceEvent>, max: usize) -> Vec<Effect> {
    let mut batch = Vec::new();
    while batch.len() < max {
        match sources.try_recv() {
            Ok(ev) => batch.push(ev),
            Err(_) => break,
        }
    }
    if batch.is_empty() {
        return Vec::new();
    }
    update(app, Msg::Sources(batch))
}

/// SIGTERM, SIGINT and SIGHUP (sent from outside, or a closed SSH session or tmux pane;
/// Ctrl-C typed in raw mode is a key): each ends the program the same clean way.
#[derive(Debug)]
pub struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Waits for the next of them.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        {
            let term = async {
                match self.term.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let int = async {
                match self.int.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let hup = async {
                match self.hup.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = term => {}
                () = int => {}
                () = hup => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Starts listening for SIGTERM, SIGINT and SIGHUP (from now on they no longer kill the
/// process outright).
pub fn signal_stream() -> Signals {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            term: signal(SignalKind::terminate()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
        }
    }
    #[cfg(not(unix))]
    {
        Signals {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{Context, Mode};

    #[tokio::test]
    async fn a_burst_of_watch_events_is_drained_before_one_draw() {
        let (tx, mut rx) = mpsc::channel(10_000);
        for id in 1..=5000i64 {
            let mut pod = crate::model::ExecutorPod {
                namespace: "ns".into(),
                name: format!("e-{id}"),
                ..Default::default()
            };
            pod.labels
                .insert("spark-app-selector".into(), "spark-1".into());
            pod.labels.insert("spark-role".into(), "executor".into());
            pod.labels.insert("spark-exec-id".into(), id.to_string());
            tx.send(SourceEvent::PodUpserted {
                pod: Box::new(pod),
                at: chrono::DateTime::UNIX_EPOCH,
            })
            .await
            .unwrap();
        }
        let mut app = App::new(Context {
            context: "c".into(),
            scope: "s".into(),
            readonly: false,
            mode: Mode::Live,
        });
        let _ = drain(&mut app, &mut rx, DRAIN_MAX);
        assert_eq!(app.store.view().applied, 5000);
        assert_eq!(app.current_app().map(|a| a.executors.len()), Some(5000));
        let _ = drain(&mut app, &mut rx, DRAIN_MAX);
        assert_eq!(app.store.view().applied, 5000, "nothing left");
    }
}
