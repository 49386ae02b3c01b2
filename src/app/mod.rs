//! The application state and its one mutator, `update(&mut App, Msg) -> Vec<Effect>`: pure,
//! no I/O, no clock. Keys, mouse clicks and source events all arrive as `Msg`s; anything
//! that must touch the world leaves as an `Effect` for the runner.

pub mod keymap;

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};

use crate::{
    model::{ExecutorState, Time},
    source::SourceEvent,
    store::{App as AppRecord, ExecutorRecord, Store},
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
}

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
    pub view: View,
    pub focus: Focus,
    pub popup: Option<Popup>,
    pub selected_app: usize,
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
}

/// Input to `update`.
#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Source(SourceEvent),
    Resize(u16, u16),
    Tick(Time),
}

/// What the runner must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Quit,
}

impl App {
    pub fn new(ctx: Context) -> Self {
        Self {
            store: Store::new(),
            ctx,
            view: View::Map,
            focus: Focus::Executors,
            popup: None,
            selected_app: 0,
            selected_exec: None,
            filter: String::new(),
            editing_filter: false,
            state_filter: StateFilter::All,
            sort: Sort::Id,
            scroll: 0,
            size: (80, 24),
            should_quit: false,
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
        let apps = self.apps();
        apps.get(self.selected_app.min(apps.len().saturating_sub(1)))
            .copied()
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
                        || e.findings
                            .iter()
                            .any(|f| f.severity != crate::diagnose::Severity::Info)
                }
                StateFilter::Only(s) => e.state == s && !e.is_missing(),
            })
            .filter(|e| {
                needle.is_empty()
                    || e.id.to_string() == needle
                    || e.pod.name.to_lowercase().contains(&needle)
                    || e.findings.iter().any(|f| f.code.as_str().contains(&needle))
                    || e.container_reason()
                        .is_some_and(|r| r.to_lowercase().contains(&needle))
                    || e.state.as_str() == needle
            })
            .collect();
        match self.sort {
            Sort::Id => {}
            Sort::State => v.sort_by_key(|e| (e.is_missing(), e.state, e.id)),
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
        let napps = self.apps().len();
        if self.selected_app >= napps {
            self.selected_app = napps.saturating_sub(1);
        }
        if self.selected_index().is_none() {
            self.select_index(0);
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
        self.selected_app =
            (self.selected_app as isize + delta).clamp(0, len as isize - 1) as usize;
        self.selected_exec = None;
        self.fix_selection();
    }

    /// Executors per map row at the current size.
    pub fn map_columns(&self) -> u16 {
        crate::ui::layout(self.size, self).map_columns
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
        Msg::Source(ev) => {
            app.store.apply(ev);
            app.fix_selection();
        }
        Msg::Tick(at) => app.store.apply(SourceEvent::Tick { at }),
        Msg::Resize(w, h) => app.size = (w, h),
        Msg::Mouse(m) => mouse(app, m),
        Msg::Key(k) => {
            if k.kind == KeyEventKind::Release {
                return Vec::new();
            }
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
            app.should_quit = true;
            return vec![Effect::Quit];
        }
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

/// Clicks select: an app in the apps pane, an executor in the map or table.
fn mouse(app: &mut App, m: MouseEvent) {
    match m.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            let layout = crate::ui::layout(app.size, app);
            if let Some(i) = layout.app_at(m.column, m.row) {
                app.focus = Focus::Apps;
                let len = app.apps().len();
                if i < len {
                    app.selected_app = i;
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
