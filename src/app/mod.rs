//! The application state and its one mutator, `update(&mut App, Msg) -> Vec<Effect>`: pure,
//! no I/O, no clock. Keys, mouse clicks and source events all arrive as `Msg`s; anything
//! that must touch the world leaves as an `Effect` for the runner.

pub mod keymap;
pub mod layout;
pub mod replay;

use std::{collections::BTreeSet, sync::Arc};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};

use crate::{
    effect::Permissions,
    model::{ExecutorState, Time},
    source::SourceEvent,
    store::{AppRecord, ExecutorRecord, Store},
};
use keymap::{Action, action_for};

/// Where the data comes from (shown in the status bar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Live,
    Demo,
    Replay,
}

/// Fixed facts about the session.
#[derive(Debug, Clone)]
pub struct Context {
    pub context: String,
    pub scope: String,
    pub readonly: bool,
    pub mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Map,
    Table,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Apps,
    Executors,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Popup {
    Help,
    Detail,
    Timeline,
    Log,
    Confirm,
}

/// One pod an action targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub namespace: String,
    pub app_id: String,
    pub pod: String,
    pub executor: i64,
}

/// What a confirm popup is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm {
    Kill {
        targets: Vec<Target>,
        force: bool,
    },
    Hold {
        namespace: String,
        app_id: String,
        on: bool,
    },
    /// Quitting while this instance holds apps: release them (default) or leave them.
    QuitWithHolds,
}

/// The log popup's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogView {
    pub pod: String,
    pub captured: bool,
    pub lines: Result<Vec<String>, String>,
}

/// How long a hold set from the UI lasts.
pub const HOLD_TTL_HOURS: i64 = 2;

/// Which executors are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFilter {
    All,
    /// Anything with a warning or error finding, or missing.
    Problems,
    Only(ExecutorState),
}

impl StateFilter {
    fn next(self) -> Self {
        use ExecutorState as S;
        match self {
            Self::All => Self::Problems,
            Self::Problems => Self::Only(S::Running),
            Self::Only(S::Running) => Self::Only(S::Pending),
            Self::Only(S::Pending) => Self::Only(S::Failed),
            Self::Only(S::Failed) => Self::Only(S::Deleted),
            Self::Only(S::Deleted) => Self::Only(S::Succeeded),
            Self::Only(S::Succeeded) => Self::Only(S::Terminating),
            Self::Only(S::Terminating) => Self::Only(S::Unknown),
            Self::Only(S::Unknown) => Self::All,
        }
    }

    pub fn label(self) -> String {
        match self {
            Self::All => "all".to_owned(),
            Self::Problems => "problems".to_owned(),
            Self::Only(s) => s.to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    Id,
    State,
    Age,
}

/// Everything the UI shows and remembers.
#[derive(Debug)]
pub struct App {
    pub store: Store,
    pub ctx: Context,
    /// How often the sources LIST every pod (live and demo): the header calls the view
    /// stale when no LIST succeeded for two of them.
    pub poll_interval: Option<std::time::Duration>,
    pub view: View,
    pub focus: Focus,
    pub popup: Option<Popup>,
    /// The selected application by identity (namespace, app id): a list that changes
    /// under it (an app appears above, another ends) never moves it, so an action never
    /// lands on an app the operator did not choose.
    pub selected_app: Option<crate::store::AppKey>,
    /// Until the operator chooses an app (any key or click pins what they see), the one
    /// in the worst state is shown, so the first screen is the incident.
    pub auto_app: Option<crate::store::AppKey>,
    /// The selected executor id in the selected app.
    pub selected_exec: Option<i64>,
    pub filter: String,
    pub editing_filter: bool,
    pub state_filter: StateFilter,
    pub sort: Sort,
    pub scroll: u16,
    /// Terminal size, for layout-dependent moves (the map's row width).
    pub size: (u16, u16),
    pub should_quit: bool,
    /// Executors marked for a kill: (namespace, app id, id).
    pub marked: BTreeSet<(String, String, i64)>,
    /// What the API allows (SelfSubjectAccessReview, and 403s seen).
    pub perms: Permissions,
    pub confirm: Option<Confirm>,
    pub log_view: Option<LogView>,
    /// A one-line message for the user (an action's result, why a key is disabled).
    pub notice: Option<String>,
    /// Apps this instance turned the hold on for (asked about on quit).
    pub held_here: BTreeSet<(String, String)>,
    /// Pods with a hold/release/capture request under way (not asked for twice).
    pub in_flight: BTreeSet<(String, String)>,
    /// Set when replaying a recording.
    pub replay: Option<replay::Replay>,
}

/// Input to `update`.
#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Source(SourceEvent),
    /// Many source events at once (a drained burst): applied together, then the selection
    /// and the automatic work are settled once, not once per event.
    Sources(Vec<SourceEvent>),
    Resize(u16, u16),
    Tick(Time),
    /// The API's answer about permissions.
    Permissions(Permissions),
    /// An effect finished: a line for the user; a 403 names the verb it denied.
    ActionDone {
        text: String,
        pods: Vec<(String, String)>,
        denied: Option<(String, String)>,
    },
    /// A log fetched for the log popup.
    LogFetched {
        pod: String,
        lines: Result<Vec<String>, String>,
    },
    /// Real time passed while replaying (milliseconds).
    ReplayAdvance(u64),
}

/// What the runner must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Quit,
    Kill {
        targets: Vec<Target>,
        grace: Option<u32>,
    },
    /// Hold on (until) or off (None) for an app: driver mark plus its executor pods.
    SetHold {
        namespace: String,
        app_id: String,
        driver: Option<String>,
        pods: Vec<String>,
        until: Option<Time>,
    },
    HoldPod {
        namespace: String,
        pod: String,
        until: Time,
    },
    ReleasePod {
        namespace: String,
        pod: String,
    },
    /// `capture`: keep it as evidence (a `LogCaptured` source event); else show it.
    FetchLog {
        namespace: String,
        pod: String,
        container: String,
        previous: bool,
        capture: bool,
    },
}

impl App {
    pub fn new(ctx: Context) -> Self {
        Self {
            store: Store::new(),
            ctx,
            poll_interval: None,
            view: View::Map,
            focus: Focus::Executors,
            popup: None,
            selected_app: None,
            auto_app: None,
            selected_exec: None,
            filter: String::new(),
            editing_filter: false,
            state_filter: StateFilter::All,
            sort: Sort::Id,
            scroll: 0,
            size: (80, 24),
            should_quit: false,
            marked: BTreeSet::new(),
            perms: Permissions::default(),
            confirm: None,
            log_view: None,
            notice: None,
            held_here: BTreeSet::new(),
            in_flight: BTreeSet::new(),
            replay: None,
        }
    }

    /// Applications in display order (namespace, name).
    pub fn apps(&self) -> Vec<&Arc<AppRecord>> {
        let mut v: Vec<&Arc<AppRecord>> = self.store.view().apps.values().collect();
        v.sort_by(|a, b| {
            (&a.namespace, &a.app_name, &a.app_id).cmp(&(&b.namespace, &b.app_name, &b.app_id))
        });
        v
    }

    pub fn current_app(&self) -> Option<&Arc<AppRecord>> {
        let apps = &self.store.view().apps;
        self.selected_app
            .as_ref()
            .or(self.auto_app.as_ref())
            .and_then(|key| apps.get(key))
            .or_else(|| self.apps().first().copied())
    }

    /// From the operator's first key or click on, the app they see stays selected.
    fn pin_selection(&mut self) {
        if self.selected_app.is_none() {
            self.selected_app = self
                .current_app()
                .map(|a| (a.namespace.clone(), a.app_id.clone()));
        }
    }

    /// The position of the selected app in display order.
    pub fn selected_app_index(&self) -> Option<usize> {
        let cur = self.current_app()?;
        self.apps().iter().position(|a| Arc::ptr_eq(a, cur))
    }

    /// Selects the app at this display position.
    pub fn select_app_at(&mut self, i: usize) {
        let key = self
            .apps()
            .get(i)
            .map(|a| (a.namespace.clone(), a.app_id.clone()));
        if key.is_some() && key != self.selected_app {
            self.selected_app = key;
            self.selected_exec = None;
            self.fix_selection();
        }
    }

    /// The executors shown, after filters and sort.
    pub fn visible(&self) -> Vec<&Arc<ExecutorRecord>> {
        let Some(app) = self.current_app() else {
            return Vec::new();
        };
        let needle = self.filter.to_lowercase();
        let mut v: Vec<&Arc<ExecutorRecord>> = app
            .executors
            .values()
            .filter(|e| match self.state_filter {
                StateFilter::All => true,
                StateFilter::Problems => {
                    e.is_missing()
                        || e.findings()
                            .iter()
                            .any(|f| f.severity != crate::diagnose::Severity::Info)
                }
                StateFilter::Only(s) => e.state() == s && !e.is_missing(),
            })
            .filter(|e| {
                needle.is_empty()
                    || e.id.to_string() == needle
                    || e.pod.name.to_lowercase().contains(&needle)
                    || e.findings()
                        .iter()
                        .any(|f| f.code.as_str().contains(&needle))
                    || e.container_reason()
                        .is_some_and(|r| r.to_lowercase().contains(&needle))
                    || e.state().as_str() == needle
            })
            .collect();
        match self.sort {
            Sort::Id => {}
            Sort::State => v.sort_by_key(|e| (e.is_missing(), e.state(), e.id)),
            Sort::Age => v.sort_by_key(|e| (e.first_seen, e.id)),
        }
        v
    }

    pub fn selected(&self) -> Option<&Arc<ExecutorRecord>> {
        let visible = self.visible();
        let id = self.selected_exec?;
        visible.into_iter().find(|e| e.id == id)
    }

    fn select_index(&mut self, i: usize) {
        let visible = self.visible();
        self.selected_exec = visible
            .get(i.min(visible.len().saturating_sub(1)))
            .map(|e| e.id);
    }

    fn selected_index(&self) -> Option<usize> {
        let id = self.selected_exec?;
        self.visible().iter().position(|e| e.id == id)
    }

    /// Keeps the selection on something that exists.
    fn fix_selection(&mut self) {
        if self
            .selected_app
            .as_ref()
            .is_some_and(|k| !self.store.view().apps.contains_key(k))
        {
            self.selected_app = None;
        }
        if self.selected_app.is_none() {
            // The worst app: most executors with an error verdict (missing included),
            // then display order.
            self.auto_app = self
                .apps()
                .into_iter()
                .enumerate()
                .max_by_key(|(i, a)| (a.alerts(), std::cmp::Reverse(*i)))
                .map(|(_, a)| (a.namespace.clone(), a.app_id.clone()));
        }
        // Nothing chosen yet (or the operator has not touched anything): the executor
        // with the worst verdict, dead ones before live ones, so the strip under the map
        // explains the incident.
        if self.selected_app.is_none() || self.selected_index().is_none() {
            let worst = self
                .visible()
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.verdict.severity().map(|s| (s, !e.state().is_final(), i)))
                .min()
                .map_or(0, |(_, _, i)| i);
            self.select_index(worst);
        }
    }

    fn move_exec(&mut self, delta: isize) {
        let len = self.visible().len();
        if len == 0 {
            return;
        }
        let cur = self.selected_index().unwrap_or(0) as isize;
        let next = (cur + delta).clamp(0, len as isize - 1) as usize;
        self.select_index(next);
        self.scroll = 0;
    }

    fn move_app(&mut self, delta: isize) {
        let len = self.apps().len();
        if len == 0 {
            return;
        }
        let cur = self.selected_app_index().unwrap_or(0) as isize;
        self.select_app_at((cur + delta).clamp(0, len as isize - 1) as usize);
        self.selected_exec = None;
        self.fix_selection();
    }

    /// Executors per map row at the current size.
    pub fn map_columns(&self) -> u16 {
        layout::layout(self.size, self).map_columns
    }

    fn page(&self) -> isize {
        match self.view {
            View::Map => (self.map_columns().max(1) as isize) * 5,
            View::Table => self.size.1.saturating_sub(10).max(1) as isize,
        }
    }
}

/// The only mutator.
pub fn update(app: &mut App, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Source(ev) => return update(app, Msg::Sources(vec![ev])),
        Msg::Sources(events) => {
            for ev in events {
                app.store.apply(ev);
            }
            app.fix_selection();
            return automatic(app, false);
        }
        Msg::Tick(at) => {
            app.store.apply(SourceEvent::Tick { at });
            return automatic(app, true);
        }
        Msg::Resize(w, h) => app.size = (w, h),
        Msg::Mouse(m) => {
            app.pin_selection();
            mouse(app, m);
        }
        Msg::Permissions(p) => app.perms.merge(p),
        Msg::ActionDone { text, pods, denied } => {
            for p in pods {
                app.in_flight.remove(&p);
            }
            if let Some((ns, verb)) = denied {
                app.perms.deny(&ns, &verb);
            }
            app.notice = Some(text);
        }
        Msg::ReplayAdvance(ms) => {
            if let Some(mut r) = app.replay.take() {
                if r.playing {
                    let step = ms.saturating_mul(u64::from(r.speed)).min(i64::MAX as u64) as i64;
                    let to = r.position + chrono::Duration::milliseconds(step);
                    r.seek(&mut app.store, to);
                    app.store.take_finished();
                }
                app.replay = Some(r);
                app.fix_selection();
            }
        }
        Msg::LogFetched { pod, lines } => {
            if app.log_view.as_ref().is_some_and(|l| l.pod == pod) {
                app.log_view = Some(LogView {
                    pod,
                    captured: false,
                    lines,
                });
            }
        }
        Msg::Key(k) => {
            if k.kind == KeyEventKind::Release {
                return Vec::new();
            }
            if app.popup == Some(Popup::Confirm) {
                return confirm_key(app, k.code);
            }
            if app.replay.is_some()
                && app.popup.is_none()
                && !app.editing_filter
                && replay_key(app, k.code)
            {
                return Vec::new();
            }
            // Replay controls move the clock, not the choice of app; anything else pins it.
            app.pin_selection();
            if app.editing_filter {
                match k.code {
                    KeyCode::Enter => app.editing_filter = false,
                    KeyCode::Esc => {
                        app.editing_filter = false;
                        app.filter.clear();
                    }
                    KeyCode::Backspace => {
                        app.filter.pop();
                    }
                    KeyCode::Char(c) => app.filter.push(c),
                    _ => {}
                }
                app.fix_selection();
                return Vec::new();
            }
            if let Some(action) = action_for(k) {
                return act(app, action);
            }
        }
    }
    Vec::new()
}

fn act(app: &mut App, action: Action) -> Vec<Effect> {
    let vertical_step = |app: &App| match app.view {
        View::Map => app.map_columns().max(1) as isize,
        View::Table => 1,
    };
    match action {
        Action::Quit => {
            if !app.held_here.is_empty() && app.ctx.mode != Mode::Replay {
                app.confirm = Some(Confirm::QuitWithHolds);
                app.popup = Some(Popup::Confirm);
                return Vec::new();
            }
            app.should_quit = true;
            return vec![Effect::Quit];
        }
        Action::Mark => {
            if let (Some(a), Some(id)) = (app.current_app(), app.selected_exec) {
                let key = (a.namespace.clone(), a.app_id.clone(), id);
                if !app.marked.remove(&key) {
                    app.marked.insert(key);
                }
            }
        }
        Action::Kill => kill_prompt(app),
        Action::Hold => hold_prompt(app),
        Action::Logs => return logs(app),
        Action::Help => {
            app.popup = if app.popup == Some(Popup::Help) {
                None
            } else {
                Some(Popup::Help)
            }
        }
        Action::Close => {
            if app.popup.is_some() {
                app.popup = None;
                app.log_view = None;
            } else {
                app.filter.clear();
                app.state_filter = StateFilter::All;
                app.fix_selection();
            }
        }
        Action::NextPane => {
            app.focus = match app.focus {
                Focus::Apps => Focus::Executors,
                Focus::Executors => Focus::Apps,
            };
        }
        Action::Up | Action::Down if app.popup.is_some() => {
            app.scroll = if action == Action::Up {
                app.scroll.saturating_sub(1)
            } else {
                app.scroll.saturating_add(1)
            };
        }
        Action::Up if app.focus == Focus::Apps => app.move_app(-1),
        Action::Down if app.focus == Focus::Apps => app.move_app(1),
        Action::Up => {
            let s = vertical_step(app);
            app.move_exec(-s);
        }
        Action::Down => {
            let s = vertical_step(app);
            app.move_exec(s);
        }
        Action::Left => app.move_exec(-1),
        Action::Right => app.move_exec(1),
        Action::PageUp => {
            if app.popup.is_some() {
                app.scroll = app.scroll.saturating_sub(10);
            } else {
                let p = app.page();
                app.move_exec(-p);
            }
        }
        Action::PageDown => {
            if app.popup.is_some() {
                app.scroll = app.scroll.saturating_add(10);
            } else {
                let p = app.page();
                app.move_exec(p);
            }
        }
        Action::Top => app.select_index(0),
        Action::Bottom => app.select_index(usize::MAX),
        Action::ToggleView => {
            app.view = match app.view {
                View::Map => View::Table,
                View::Table => View::Map,
            };
        }
        Action::Detail => {
            if app.focus == Focus::Apps {
                app.focus = Focus::Executors;
            } else if app.selected().is_some() {
                app.popup = Some(Popup::Detail);
                app.scroll = 0;
            }
        }
        Action::Timeline => {
            app.popup = Some(Popup::Timeline);
            app.scroll = 0;
        }
        Action::Filter => app.editing_filter = true,
        Action::StateFilter => {
            app.state_filter = app.state_filter.next();
            app.fix_selection();
        }
        Action::Sort => {
            app.sort = match app.sort {
                Sort::Id => Sort::State,
                Sort::State => Sort::Age,
                Sort::Age => Sort::Id,
            };
        }
    }
    Vec::new()
}

/// Replay controls; `true` when the key was one of them.
fn replay_key(app: &mut App, code: KeyCode) -> bool {
    let Some(mut r) = app.replay.take() else {
        return false;
    };
    let mut used = true;
    if let Some(buf) = r.seeking.as_mut() {
        match code {
            KeyCode::Enter => {
                let typed = std::mem::take(buf);
                r.seeking = None;
                match r.parse_moment(&typed) {
                    Some(t) => r.seek(&mut app.store, t),
                    None => {
                        app.notice = Some(format!(
                            "cannot read {typed:?} as a time (1m30s, 10:43:00, or RFC 3339)"
                        ))
                    }
                }
            }
            KeyCode::Esc => r.seeking = None,
            KeyCode::Backspace => {
                buf.pop();
            }
            KeyCode::Char(c) => buf.push(c),
            _ => {}
        }
    } else {
        match code {
            KeyCode::Char(' ') => r.playing = !r.playing,
            KeyCode::Char('+' | '=') => r.faster(),
            KeyCode::Char('-') => r.slower(),
            KeyCode::Char('n') => {
                if let Some(t) = r.next_change() {
                    r.seek(&mut app.store, t);
                }
            }
            KeyCode::Char('N') => {
                if let Some(t) = r.previous_change() {
                    r.seek(&mut app.store, t);
                }
            }
            KeyCode::Char('f') => match r.next_failure() {
                Some(t) => r.seek(&mut app.store, t),
                None => app.notice = Some("no failure after this moment".to_owned()),
            },
            KeyCode::Char(':') => r.seeking = Some(String::new()),
            _ => used = false,
        }
    }
    app.store.take_finished();
    app.replay = Some(r);
    app.fix_selection();
    used
}

/// Why writes are off here, if they are.
fn write_gate(app: &App, namespace: &str, verb: &str) -> Result<(), String> {
    if app.ctx.mode == Mode::Replay {
        return Err("a replay cannot act".to_owned());
    }
    app.perms
        .gate(app.ctx.readonly, namespace, verb)
        .map_err(|e| e.to_string())
}

/// The app's driver pod, for what a kill or hold may touch (`actions::not_owned`).
fn drivers_of(a: &AppRecord) -> Vec<crate::actions::DriverId> {
    a.driver
        .iter()
        .filter(|d| d.phase.as_deref() != Some("Deleted"))
        .map(|d| crate::actions::DriverId {
            namespace: a.namespace.clone(),
            name: d.pod.clone(),
            uid: d.uid.clone(),
        })
        .collect()
}

fn kill_prompt(app: &mut App) {
    let Some(a) = app.current_app().cloned() else {
        return;
    };
    if let Err(why) = write_gate(app, &a.namespace, "delete") {
        app.notice = Some(format!("kill disabled: {why}"));
        return;
    }
    let marked: Vec<i64> = app
        .marked
        .iter()
        .filter(|(ns, id, _)| *ns == a.namespace && *id == a.app_id)
        .map(|(_, _, e)| *e)
        .collect();
    let ids = if marked.is_empty() {
        app.selected_exec.into_iter().collect()
    } else {
        marked
    };
    let drivers = drivers_of(&a);
    let mut skipped = Vec::new();
    let targets: Vec<Target> = ids
        .into_iter()
        .filter_map(|id| a.executors.get(&id))
        .filter(|e| e.gone.is_none())
        .filter(|e| match crate::actions::not_owned(&e.pod, &drivers) {
            None => true,
            Some(why) => {
                skipped.push(format!("executor {} ({why})", e.id));
                false
            }
        })
        .map(|e| Target {
            namespace: a.namespace.clone(),
            app_id: a.app_id.clone(),
            pod: e.pod.name.clone(),
            executor: e.id,
        })
        .collect();
    if !skipped.is_empty() {
        app.notice = Some(format!(
            "not killing what the app's driver does not own: {} (the CLI's kill --force-unowned can)",
            skipped.join("; ")
        ));
        if targets.is_empty() {
            return;
        }
    }
    if targets.is_empty() {
        app.notice = Some("nothing to kill: the executor's pod is gone".to_owned());
        return;
    }
    app.confirm = Some(Confirm::Kill {
        targets,
        force: false,
    });
    app.popup = Some(Popup::Confirm);
}

fn hold_prompt(app: &mut App) {
    let Some(a) = app.current_app().cloned() else {
        return;
    };
    if let Err(why) = write_gate(app, &a.namespace, "patch") {
        app.notice = Some(format!("hold disabled: {why}"));
        return;
    }
    let on = a.driver.as_ref().and_then(|d| d.hold_until).is_none()
        && !a.executors.values().any(|e| e.pod.is_held());
    app.confirm = Some(Confirm::Hold {
        namespace: a.namespace.clone(),
        app_id: a.app_id.clone(),
        on,
    });
    app.popup = Some(Popup::Confirm);
}

fn logs(app: &mut App) -> Vec<Effect> {
    let Some(e) = app.selected().cloned() else {
        return Vec::new();
    };
    if let Some(tail) = &e.log_tail {
        app.log_view = Some(LogView {
            pod: e.pod.name.clone(),
            captured: true,
            lines: Ok(tail.to_vec()),
        });
        app.popup = Some(Popup::Log);
        app.scroll = 0;
        return Vec::new();
    }
    if app.ctx.mode == Mode::Replay {
        app.log_view = Some(LogView {
            pod: e.pod.name.clone(),
            captured: false,
            lines: Err("no log was captured for this executor in the recording".to_owned()),
        });
        app.popup = Some(Popup::Log);
        return Vec::new();
    }
    let previous = e
        .pod
        .container_status(&e.spark_container)
        .is_some_and(|c| c.restart_count > 0);
    app.log_view = Some(LogView {
        pod: e.pod.name.clone(),
        captured: false,
        lines: Err("fetching…".to_owned()),
    });
    app.popup = Some(Popup::Log);
    app.scroll = 0;
    vec![Effect::FetchLog {
        namespace: e.pod.namespace.clone(),
        pod: e.pod.name.clone(),
        container: e.spark_container.clone(),
        previous,
        capture: false,
    }]
}

fn confirm_key(app: &mut App, code: KeyCode) -> Vec<Effect> {
    let Some(c) = app.confirm.clone() else {
        app.popup = None;
        return Vec::new();
    };
    match (code, &c) {
        (KeyCode::Char('f'), Confirm::Kill { targets, force }) => {
            app.confirm = Some(Confirm::Kill {
                targets: targets.clone(),
                force: !force,
            });
            Vec::new()
        }
        (KeyCode::Char('y') | KeyCode::Enter, _) => {
            app.popup = None;
            app.confirm = None;
            confirmed(app, c)
        }
        (KeyCode::Char('n'), Confirm::QuitWithHolds) => {
            app.should_quit = true;
            vec![Effect::Quit]
        }
        (KeyCode::Char('n') | KeyCode::Esc, _) => {
            app.popup = None;
            app.confirm = None;
            Vec::new()
        }
        _ => Vec::new(),
    }
}

fn confirmed(app: &mut App, c: Confirm) -> Vec<Effect> {
    let now = app.store.view().now.unwrap_or_default();
    match c {
        Confirm::Kill { targets, force } => {
            for t in &targets {
                app.marked
                    .remove(&(t.namespace.clone(), t.app_id.clone(), t.executor));
            }
            app.notice = Some(format!("killing {} executor(s)…", targets.len()));
            vec![Effect::Kill {
                targets,
                grace: force.then_some(0),
            }]
        }
        Confirm::Hold {
            namespace,
            app_id,
            on,
        } => {
            let key = (namespace.clone(), app_id.clone());
            let Some(a) = app.store.view().apps.get(&key).cloned() else {
                return Vec::new();
            };
            let drivers = drivers_of(&a);
            let pods: Vec<String> = a
                .executors
                .values()
                .filter(|e| e.gone.is_none())
                .filter(|e| {
                    if on {
                        // A finalizer only on what the app's driver owns.
                        !e.pod.is_held()
                            && e.pod.deletion.is_none()
                            && crate::actions::not_owned(&e.pod, &drivers).is_none()
                    } else {
                        e.pod.is_held()
                    }
                })
                .map(|e| e.pod.name.clone())
                .collect();
            for p in &pods {
                app.in_flight.insert((namespace.clone(), p.clone()));
            }
            let until = on.then(|| now + chrono::Duration::hours(HOLD_TTL_HOURS));
            if on {
                app.held_here.insert(key);
            } else {
                app.held_here.remove(&key);
            }
            app.notice = Some(format!(
                "hold {} for {}…",
                if on { "on" } else { "off" },
                a.app_name.clone().unwrap_or(app_id.clone())
            ));
            vec![Effect::SetHold {
                namespace,
                app_id,
                driver: a.driver.as_ref().map(|d| d.pod.clone()),
                pods,
                until,
            }]
        }
        Confirm::QuitWithHolds => {
            let mut effects = Vec::new();
            for (ns, app_id) in std::mem::take(&mut app.held_here) {
                if let Some(a) = app.store.view().apps.get(&(ns.clone(), app_id.clone())) {
                    let pods = a
                        .executors
                        .values()
                        .filter(|e| e.pod.is_held())
                        .map(|e| e.pod.name.clone())
                        .collect();
                    effects.push(Effect::SetHold {
                        namespace: ns,
                        app_id,
                        driver: a.driver.as_ref().map(|d| d.pod.clone()),
                        pods,
                        until: None,
                    });
                }
            }
            app.should_quit = true;
            effects.push(Effect::Quit);
            effects
        }
    }
}

/// What the tool does by itself after new data: capture the log of executors that ended,
/// hold new executors of held apps, release expired holds (on ticks).
fn automatic(app: &mut App, tick: bool) -> Vec<Effect> {
    let finished = app.store.take_finished();
    if app.ctx.mode == Mode::Replay {
        return Vec::new();
    }
    let mut effects = Vec::new();
    for f in finished {
        effects.push(Effect::FetchLog {
            namespace: f.namespace,
            pod: f.pod,
            container: f.container,
            previous: f.previous,
            capture: true,
        });
    }
    let now = app.store.view().now.unwrap_or_default();
    let apps: Vec<Arc<AppRecord>> = app.store.view().apps.values().cloned().collect();
    for a in apps {
        if write_gate(app, &a.namespace, "patch").is_err() {
            continue;
        }
        let hold_until = a
            .driver
            .as_ref()
            .and_then(|d| d.hold_until)
            .filter(|u| *u > now);
        let drivers = drivers_of(&a);
        for e in a.executors.values().filter(|e| e.gone.is_none()) {
            let key = (e.pod.namespace.clone(), e.pod.name.clone());
            if app.in_flight.contains(&key) {
                continue;
            }
            if let Some(until) = hold_until
                && !e.pod.is_held()
                && e.pod.deletion.is_none()
                && crate::actions::not_owned(&e.pod, &drivers).is_none()
            {
                app.in_flight.insert(key);
                effects.push(Effect::HoldPod {
                    namespace: e.pod.namespace.clone(),
                    pod: e.pod.name.clone(),
                    until,
                });
            } else if tick && e.pod.is_held() && e.pod.hold_expires().is_some_and(|x| x <= now) {
                app.in_flight.insert(key);
                effects.push(Effect::ReleasePod {
                    namespace: e.pod.namespace.clone(),
                    pod: e.pod.name.clone(),
                });
            }
        }
    }
    effects
}

/// Clicks select: an app in the apps pane, an executor in the map or table.
fn mouse(app: &mut App, m: MouseEvent) {
    match m.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            let layout = layout::layout(app.size, app);
            if let Some(i) = layout.app_at(m.column, m.row) {
                app.focus = Focus::Apps;
                let len = app.apps().len();
                if i < len {
                    app.select_app_at(i);
                    app.selected_exec = None;
                    app.fix_selection();
                }
            } else if let Some(i) = layout.executor_at(m.column, m.row, app) {
                app.focus = Focus::Executors;
                app.select_index(i);
            }
        }
        MouseEventKind::ScrollDown => app.move_exec(1),
        MouseEventKind::ScrollUp => app.move_exec(-1),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
