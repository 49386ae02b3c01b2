//! The terminal edge: owns raw mode and the alternate screen, restores the terminal on every
//! exit path (return, `?`, panic, Ctrl-C, SIGTERM), and runs the loop: await one message,
//! drain everything queued, update, draw: within 16 ms of a key, at most every 250 ms for
//! what the sources bring.

use std::io;
use std::time::Duration;

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event, EventStream};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

use crate::app::{App, Effect, Msg, Theme, ViewSettings, housekeeping, update};
use crate::effect::{Outcome, Runner};
use crate::source::SourceEvent;
use crate::source::clock::Clock;
use crate::source::switch::{SwitchTo, Switcher};
use crate::ui;
use crate::ui::glyphs;

mod start;

pub(crate) use start::{connect_watched, tui_on};

/// An effect's outcome as a message for the app (`None`: nothing to tell it).
fn message(o: Outcome) -> Option<Msg> {
    match o {
        Outcome::Nothing => None,
        Outcome::Done(d) => Some(Msg::ActionDone {
            text: d.text,
            pods: d.pods,
            denied: d.denied,
        }),
        Outcome::Log { pod, lines } => Some(Msg::LogFetched { pod, lines }),
        Outcome::Permissions(p) => Some(Msg::Permissions(p)),
        Outcome::Namespaces(n) => Some(Msg::Namespaces(n)),
        Outcome::EventsRead {
            namespace,
            pod,
            result,
        } => Some(Msg::EventsRead {
            namespace,
            pod,
            result,
        }),
    }
}

/// Restores the terminal when dropped.
#[derive(Debug)]
pub struct TerminalGuard;

/// Puts the terminal back as it was: cooked mode, main screen, no mouse capture, cursor.
/// The OSC 52 sequence that sets the clipboard to `text` (tmux needs `set-clipboard on`
/// to pass it on, as most terminals accept it).
pub fn osc52(text: &str) -> String {
    use base64::Engine;
    format!(
        "\x1b]52;c;{}\x07",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}

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
/// What the sources bring is applied and drawn in batches, as often as every 100 ms while
/// that is cheap, down to once a second when a frame of a big cluster costs milliseconds:
/// the pace is 40 times what a batch and its frame cost, so it takes about 2.5 % of a core.
#[derive(Debug, Default)]
struct Pace {
    /// What applying a batch costs, smoothed.
    apply: Duration,
    /// What drawing a frame costs, smoothed.
    draw: Duration,
}

impl Pace {
    const MIN: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(1);

    fn smooth(avg: &mut Duration, d: Duration) {
        *avg = (*avg * 3 + d) / 4;
    }

    fn data_frame(&self) -> Duration {
        ((self.apply + self.draw) * 40).clamp(Self::MIN, Self::MAX)
    }
}

/// Runs the UI until the user quits, the sources end, or a signal arrives.
pub async fn run(
    mut app: App,
    mut sources: mpsc::Receiver<SourceEvent>,
    runner: Option<Runner>,
    switcher: Option<Switcher>,
    live_clock: Option<Clock>,
    view: ViewSettings,
) -> io::Result<App> {
    let (msg_tx, mut msgs) = mpsc::channel::<Msg>(1024);
    // A switch (`:ns`, `:ctx`) replaces the runner's cluster while effects may be under way:
    // each effect runs on the runner it was given.
    let runner = runner.map(|r| std::sync::Arc::new(std::sync::RwLock::new(r)));
    let switcher = switcher.map(|s| std::sync::Arc::new(tokio::sync::Mutex::new(s)));
    let theme = theme_of(&view);
    let ascii = glyphs::ascii_wanted(|k| std::env::var(k).ok());
    app.on_terminal(theme, view, *chrono::Local::now().offset());
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
    let mut pace = Pace::default();
    let mut last_draw = tokio::time::Instant::now() - Pace::MAX;
    // When the next frame is due: soon after a key, at the pace for what the sources bring
    // (a cluster's churn must not redraw 10,000 cells per watch event).
    let mut due = Some(last_draw);
    let mut next_apply = last_draw;
    loop {
        if due.is_some_and(|d| d <= tokio::time::Instant::now()) {
            let started = std::time::Instant::now();
            terminal.draw(|f| {
                ui::render(&app, f);
                if ascii {
                    glyphs::to_ascii(f.buffer_mut());
                }
            })?;
            Pace::smooth(&mut pace.draw, started.elapsed());
            last_draw = tokio::time::Instant::now();
            due = None;
        }
        let now = tokio::time::Instant::now();
        // What the sources bring is applied in batches, at the pace: under
        // churn, a watch event each few milliseconds costs one store update and one
        // reselection per batch, not per event (they wait in the channel meanwhile).
        let pacing = next_apply > now;
        let wait = due
            .into_iter()
            .chain(pacing.then_some(next_apply))
            .min()
            .map_or(Duration::from_secs(3600), |d| {
                d.saturating_duration_since(now)
            });
        let msg = tokio::select! {
            ev = keys.next() => match ev {
                Some(Ok(Event::Key(k))) => Some(Msg::Key(k)),
                Some(Ok(Event::Mouse(m))) => Some(Msg::Mouse(m)),
                Some(Ok(Event::Resize(w, h))) => Some(Msg::Resize(w, h)),
                Some(Ok(_)) => None,
                Some(Err(e)) => return Err(e),
                None => break,
            },
            ev = sources.recv(), if sources_open && !pacing => match ev {
                Some(ev) => Some(Msg::Source(ev)),
                None => { sources_open = false; None }
            },
            _ = tick.tick() => live_clock.as_ref().map(|c| Msg::Tick(c.now())),
            _ = replay_tick.tick(), if app.replay.as_ref().is_some_and(|r| r.playing) => Some(Msg::ReplayAdvance(100)),
            m = msgs.recv() => m,
            () = sigterm.recv() => break,
            () = tokio::time::sleep(wait) => None,
        };
        if let Some(msg) = msg {
            let data = matches!(msg, Msg::Source(_) | Msg::Tick(_));
            let frame = if data { pace.data_frame() } else { FRAME };
            if matches!(msg, Msg::Source(_)) {
                next_apply = tokio::time::Instant::now() + frame;
            }
            let next = last_draw + frame;
            due = Some(due.map_or(next, |d| d.min(next)));
            let started = std::time::Instant::now();
            let tick = match &msg {
                Msg::Tick(at) => Some(*at),
                _ => None,
            };
            let mut effects = update(&mut app, msg);
            if let (Some(now), Some(m)) = (tick, &app.metrics) {
                m.publish_view(
                    &app.store,
                    app.stale_after.unwrap_or(Duration::from_secs(90)),
                    now,
                );
            }
            effects.extend(drain(&mut app, &mut sources, DRAIN_MAX));
            if data {
                Pace::smooth(&mut pace.apply, started.elapsed());
            }
            if runner.is_some() && !effects.contains(&Effect::Quit) {
                effects.extend(housekeeping(&mut app));
            }
            if effects.contains(&Effect::Quit) {
                // Finish what quitting asked for (releasing holds) before leaving.
                finish(effects, runner.as_ref()).await;
                break;
            }
            dispatch(effects, runner.as_ref(), switcher.as_ref(), &msg_tx);
        }
    }
    Ok(app)
}

/// The theme: the environment's (`SPARK_TRIAGE_THEME`, `NO_COLOR`, a dumb terminal) wins
/// over the file's, as a flag would.
fn theme_of(view: &ViewSettings) -> Theme {
    Theme::choose(
        std::env::var("SPARK_TRIAGE_THEME")
            .ok()
            .as_deref()
            .or(view.theme.as_deref()),
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
            || glyphs::dumb_terminal(|k| std::env::var(k).ok()),
    )
}

/// The runner now (a switch replaces it while effects may be under way: each effect runs
/// on the runner it was given).
fn current(r: &Shared<Runner>) -> Runner {
    r.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

type Shared<T> = std::sync::Arc<std::sync::RwLock<T>>;

/// What quitting asked for besides quitting (releasing holds), given 15 s.
async fn finish(effects: Vec<Effect>, runner: Option<&Shared<Runner>>) {
    if let Some(r) = runner {
        let r = current(r);
        let pending = effects.into_iter().filter(|e| *e != Effect::Quit).map(|e| {
            let r = r.clone();
            async move { r.run(e).await }
        });
        let _ =
            tokio::time::timeout(Duration::from_secs(15), futures::future::join_all(pending)).await;
    }
}

/// The effects of a message: copies through the terminal, switches of scope in the
/// background, the rest on the runner, each answering with a message.
fn dispatch(
    effects: Vec<Effect>,
    runner: Option<&Shared<Runner>>,
    switcher: Option<&std::sync::Arc<tokio::sync::Mutex<Switcher>>>,
    msg_tx: &mpsc::Sender<Msg>,
) {
    // The clipboard goes through the terminal, whatever the mode (replay too).
    let (copies, effects): (Vec<Effect>, Vec<Effect>) = effects
        .into_iter()
        .partition(|e| matches!(e, Effect::Copy(_)));
    for c in copies {
        if let Effect::Copy(text) = c {
            use std::io::Write;
            let mut out = io::stdout();
            let _ = out.write_all(osc52(&text).as_bytes());
            let _ = out.flush();
        }
    }
    let (switches, effects): (Vec<Effect>, Vec<Effect>) = effects
        .into_iter()
        .partition(|e| matches!(e, Effect::Switch(_)));
    for s in switches {
        if let Effect::Switch(to) = s {
            switch(to, switcher.cloned(), runner.cloned(), msg_tx.clone());
        }
    }
    if let Some(r) = runner {
        let r = current(r);
        for e in effects {
            let (r, tx) = (r.clone(), msg_tx.clone());
            tokio::spawn(async move {
                if let Some(m) = message(r.run(e).await) {
                    let _ = tx.send(m).await;
                }
            });
        }
    }
}

/// Runs a switch of scope in the background (connecting to another context may take up to
/// the request timeout; the view goes on meanwhile), then points the runner at the new
/// scope's cluster and tells the app.
fn switch(
    to: SwitchTo,
    switcher: Option<std::sync::Arc<tokio::sync::Mutex<Switcher>>>,
    runner: Option<std::sync::Arc<std::sync::RwLock<Runner>>>,
    tx: mpsc::Sender<Msg>,
) {
    tokio::spawn(async move {
        let Some(switcher) = switcher else {
            let _ = tx
                .send(Msg::SwitchFailed(
                    "this view cannot switch scope".to_owned(),
                ))
                .await;
            return;
        };
        // One switch at a time, in the order asked.
        let mut s = switcher.lock().await;
        let msg = match s.switch(to).await {
            Ok(done) => {
                if let Some(r) = &runner {
                    let mut r = r.write().unwrap_or_else(std::sync::PoisonError::into_inner);
                    r.client = done.conn.client.clone();
                    r.context = done.conn.context.clone();
                    r.server = done.conn.server.clone();
                    r.user = done.conn.user.clone();
                    r.focus = Some(done.conn.focus.clone());
                }
                Msg::Switched {
                    context: done.conn.context.clone(),
                    scope: done.conn.describe_scope(),
                    readonly: done.readonly,
                    stale_after: done.conn.stale_after().mul_f64(done.conn.clock.rate()),
                }
            }
            Err(why) => Msg::SwitchFailed(why),
        };
        let _ = tx.send(msg).await;
    });
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
    use spark_triage_core::model::ExecutorPod;

    use super::*;
    use crate::app::{Context, Mode};
    use crate::settings::ReadOnly;

    #[test]
    fn the_pace_follows_what_a_batch_costs_within_its_bounds() {
        let mut p = Pace::default();
        assert_eq!(p.data_frame(), Pace::MIN, "cheap: ten times a second");
        for _ in 0..20 {
            Pace::smooth(&mut p.apply, Duration::from_millis(3));
            Pace::smooth(&mut p.draw, Duration::from_millis(2));
        }
        let f = p.data_frame();
        assert!(
            f > Duration::from_millis(190) && f <= Duration::from_millis(200),
            "{f:?}"
        );
        Pace::smooth(&mut p.draw, Duration::from_millis(500));
        assert_eq!(p.data_frame(), Pace::MAX, "never slower than once a second");
    }

    #[tokio::test]
    async fn a_burst_of_watch_events_is_drained_before_one_draw() {
        let (tx, mut rx) = mpsc::channel(10_000);
        for id in 1..=5000i64 {
            let mut pod = ExecutorPod {
                namespace: "ns".into(),
                name: format!("e-{id}"),
                ..Default::default()
            };
            pod.labels
                .insert("spark-app-selector".into(), "spark-1".into());
            pod.labels.insert("spark-role".into(), "executor".into());
            pod.labels
                .insert("spark-exec-id".into(), id.to_string().into());
            tx.send(SourceEvent::PodUpserted {
                pod: std::sync::Arc::new(pod),
                at: chrono::DateTime::UNIX_EPOCH,
            })
            .await
            .unwrap();
        }
        let mut app = App::new(Context {
            context: "c".into(),
            scope: "s".into(),
            readonly: ReadOnly::Off,
            mode: Mode::Live,
        });
        let _ = drain(&mut app, &mut rx, DRAIN_MAX);
        assert_eq!(app.store.view().applied, 5000);
        assert_eq!(app.current_app().map(|a| a.executors.len()), Some(5000));
        let _ = drain(&mut app, &mut rx, DRAIN_MAX);
        assert_eq!(app.store.view().applied, 5000, "nothing left");
    }
}
