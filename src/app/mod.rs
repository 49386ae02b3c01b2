//! The application state and its one mutator, `update(&mut App, Msg) -> Vec<Effect>`: pure,
//! no I/O, no clock. Keys, mouse clicks and source events all arrive as `Msg`s; anything
//! that must touch the world leaves as an `Effect` for the runner.

pub mod evidence;
pub mod keymap;
pub mod layout;
pub mod replay;

mod command_line;
mod prompts;
mod selection;
mod update;
use std::collections::BTreeSet;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};
use keymap::Action;
pub use prompts::with_cursor;
use spark_triage_core::model::{ExecutorState, Time};

use crate::effect::Permissions;
pub use crate::effect::{Effect, HoldTarget, Target};
pub use crate::evidence::EventsRead;
use crate::source::SourceEvent;
pub use crate::source::switch::SwitchTo;
use crate::store::{AppRecord, ExecutorRecord, Store};

/// Where the data comes from (shown in the status bar).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Live,
    Demo,
    Replay,
}

/// A colour theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    #[default]
    Dark,
    Light,
    Mono,
}

impl Theme {
    /// The theme named (`SPARK_TRIAGE_THEME`, else the configuration file's `theme`:
    /// `dark`, `light`, `mono`), else `mono` when `NO_COLOR` is set (no-color.org), else
    /// `dark`.
    pub fn choose(named: Option<&str>, no_color: bool) -> Self {
        match named.map(str::trim) {
            Some("light") => Self::Light,
            Some("mono") => Self::Mono,
            Some("dark") => Self::Dark,
            _ if no_color => Self::Mono,
            _ => Self::Dark,
        }
    }
}

/// Fixed facts about the session.
#[derive(Debug, Clone)]
pub struct Context {
    pub context: String,
    pub scope: String,
    pub readonly: ReadOnly,
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
    /// The pod as `kubectl describe` shows it, from what the tool kept.
    Describe,
    Timeline,
    Log,
    Confirm,
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
    /// Where it was fetched from (to fetch again: previous container, follow).
    pub namespace: String,
    pub container: String,
    /// The previous container instance's log (`p`).
    pub previous: bool,
    /// Fetched again every tick (`f`), staying at the newest line.
    pub follow: bool,
    /// `/` typed: the search being written.
    pub search: Option<String>,
    /// The search in effect (matching lines are marked; `n` goes to the next older one).
    pub term: Option<String>,
    /// Long lines wrapped (`w` toggles); unwrapped, `←`/`→` scroll sideways by `hscroll`.
    pub wrap: bool,
    pub hscroll: u16,
    /// The pod is gone: nothing more can be fetched (`p`, `f` refuse).
    pub gone: bool,
}

impl Default for LogView {
    fn default() -> Self {
        Self {
            pod: String::new(),
            captured: false,
            lines: Ok(Vec::new()),
            namespace: String::new(),
            container: String::new(),
            previous: false,
            follow: false,
            search: None,
            term: None,
            wrap: true,
            hscroll: 0,
            gone: false,
        }
    }
}

/// How long a hold set from the UI lasts.
/// How long a hold lasts unless configured (`hold-ttl` in the configuration file).
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
/// What the command line and the configuration file say about the terminal views, handed
/// down as a value from where a command starts to the TUI that reads it.
#[derive(Debug, Clone)]
pub struct ViewSettings {
    /// The theme's name (the environment's `SPARK_TRIAGE_THEME` still wins, as a flag would).
    pub theme: Option<String>,
    /// How long `H` holds.
    pub hold_ttl: Option<chrono::Duration>,
    pub keymap: keymap::Keymap,
    /// Lines of a log tail read (as evidence, or by `l`).
    pub log_tail_lines: usize,
    /// `--utc` (or `time_zone = "utc"`): times start in UTC instead of local time.
    pub utc: bool,
    /// `--metrics-addr`: the verdicts served as Prometheus metrics while the view is open.
    pub metrics_addr: Option<std::net::SocketAddr>,
}

impl Default for ViewSettings {
    fn default() -> Self {
        Self {
            theme: None,
            hold_ttl: None,
            keymap: Default::default(),
            log_tail_lines: LOG_TAIL_LINES,
            utc: false,
            metrics_addr: None,
        }
    }
}

#[derive(Debug)]
pub struct App {
    pub(crate) store: Store,
    /// `--metrics-addr`: what the view publishes each second (the verdicts).
    pub(crate) metrics: Option<std::sync::Arc<Metrics>>,
    pub(crate) ctx: Context,
    /// How long the view may go without a complete LIST before the header calls it stale
    /// (live and demo: the connection's `stale_after`, on the cluster's clock).
    pub(crate) stale_after: Option<std::time::Duration>,
    /// Executors gone this long are forgotten (`--forget-after`; live and demo).
    pub(crate) forget_after: Option<std::time::Duration>,
    /// The kubeconfig given with `--kubeconfig`: in the kubectl commands `Y` copies.
    pub(crate) kubeconfig: Option<String>,
    /// How far the open scrolling popup can scroll (its last page), as last drawn.
    pub(crate) popup_max_scroll: std::cell::Cell<u16>,
    /// The first application shown in the apps pane and how many fit, as last drawn (the
    /// pane scrolls with its selection).
    pub(crate) apps_window: std::cell::Cell<(usize, usize)>,
    /// The rows the incident strip's lines wrap to at the current width, as the last
    /// frame measured them (the layout gives it that many, up to a third of the body).
    pub(crate) incident_rows: std::cell::Cell<u16>,
    /// Rows the Selected strip's lines wrap to, and rows the executors pane has content
    /// for (map and endings, or table), as the last frame measured them: the layout gives
    /// the strip what the pane does not need.
    pub(crate) strip_rows: std::cell::Cell<u16>,
    pub(crate) main_rows: std::cell::Cell<u16>,
    pub(crate) view: View,
    pub(crate) focus: Focus,
    pub(crate) popup: Option<Popup>,
    /// The selected application by identity (namespace, app id): a list that changes
    /// under it (an app appears above, another ends) never moves it, so an action never
    /// lands on an app the operator did not choose.
    pub(crate) selected_app: Option<AppKey>,
    /// Until the operator chooses an app (any key or click pins what they see), the one
    /// in the worst state is shown, so the first screen is the incident.
    pub(crate) auto_app: Option<AppKey>,
    /// The selected executor id in the selected app.
    pub(crate) selected_exec: Option<i64>,
    pub(crate) filter: String,
    pub(crate) editing_filter: bool,
    pub(crate) state_filter: StateFilter,
    pub(crate) sort: Sort,
    pub(crate) scroll: u16,
    /// Terminal size, for layout-dependent moves (the map's row width).
    pub(crate) size: (u16, u16),
    pub(crate) should_quit: bool,
    /// Executors marked for a kill: (namespace, app id, id).
    pub(crate) marked: BTreeSet<(String, String, i64)>,
    /// What the API allows (SelfSubjectAccessReview, and 403s seen).
    pub(crate) perms: Permissions,
    pub(crate) confirm: Option<Confirm>,
    pub(crate) log_view: Option<LogView>,
    /// A one-line message for the user (an action's result, why a key is disabled).
    pub(crate) notice: Option<String>,
    /// Apps this instance turned the hold on for (asked about on quit).
    pub(crate) held_here: BTreeSet<(String, String)>,
    /// Pods with a hold/release/capture request under way (not asked for twice).
    pub(crate) in_flight: BTreeSet<(String, String)>,
    /// Which executors' evidence (log tail, events) is read, and why others were not.
    pub(crate) evidence: EvidenceReads,
    /// Set when replaying a recording.
    pub(crate) replay: Option<replay::Replay>,
    /// The app the driver view was last pointed at (`None` before the first time).
    pub(crate) driver_focus: Option<Option<(String, String)>>,
    /// Namespaces whose permissions were asked for.
    pub(crate) permissions_asked: BTreeSet<String>,
    /// The colour theme the screen is drawn with.
    pub(crate) theme: Theme,
    /// The local time zone's offset (times are shown in it unless `show_utc`); `None`:
    /// UTC only (tests, recordings rendered headless).
    pub(crate) local_offset: Option<chrono::FixedOffset>,
    pub(crate) show_utc: bool,
    /// How long `H` holds an app's executor pods.
    pub(crate) hold_ttl: chrono::Duration,
    /// The keys (the configuration file may rebind them).
    pub(crate) keymap: keymap::Keymap,
    /// `:` typed: the command being written.
    pub(crate) command: Option<String>,
    /// The `:` prompt's history (oldest first) and where Up/Down is in it.
    pub(crate) history: Vec<String>,
    pub(crate) history_pos: Option<usize>,
    /// Names the `:` prompt completes: the kubeconfig's contexts (set at start) and the
    /// cluster's namespaces (asked for once per scope, when `:` is first typed).
    pub(crate) contexts: Vec<String>,
    /// Where the cursor is in the open prompt (`/`, `:`, replay's `:`), in characters;
    /// `None` at the line's end.
    pub(crate) prompt_cursor: Option<usize>,
    pub(crate) namespaces: Namespaces,
}

/// The cluster's namespaces, for the `:` prompt's completion.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Namespaces {
    /// Not asked in this scope yet.
    #[default]
    NotAsked,
    /// Asked, no answer yet; `tab_waiting`, the line Tab was pressed on meanwhile: it is
    /// completed when the answer comes if the prompt still holds it (on a slow cluster a
    /// quick Tab found nothing).
    Asked { tab_waiting: Option<String> },
    /// The answer (empty when not allowed or the cluster did not answer).
    Told(Vec<String>),
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
    /// A `:ns`/`:ctx` switch was made; after a context switch, that context's read-only
    /// setting.
    Switched {
        context: String,
        scope: String,
        readonly: Option<ReadOnly>,
        /// The new connection's staleness limit (its context may poll at another pace).
        stale_after: std::time::Duration,
    },
    /// A switch was refused (the old scope runs on): why.
    SwitchFailed(String),
    /// The cluster's namespaces (for the `:` prompt's completion); empty when not allowed.
    Namespaces(Vec<String>),
    /// A pod's events were read from the cluster (the events themselves went to the store).
    EventsRead {
        namespace: String,
        pod: String,
        result: Result<usize, String>,
    },
}

/// What a session on a cluster (the live view, the demo) gives its view at the start.
#[derive(Debug)]
pub(crate) struct Session {
    /// `--metrics-addr`'s server, bound already.
    pub metrics: Option<std::sync::Arc<Metrics>>,
    /// The connection's staleness, on the cluster's clock.
    pub stale_after: std::time::Duration,
    pub forget_after: std::time::Duration,
    /// `--kubeconfig`, absolute.
    pub kubeconfig: Option<String>,
    /// The kubeconfig's context names.
    pub contexts: Vec<String>,
}

impl App {
    pub fn new(ctx: Context) -> Self {
        Self {
            store: Store::new(),
            metrics: None,
            ctx,
            stale_after: None,
            forget_after: None,
            kubeconfig: None,
            popup_max_scroll: std::cell::Cell::new(u16::MAX),
            apps_window: std::cell::Cell::new((0, usize::MAX)),
            incident_rows: std::cell::Cell::new(4),
            strip_rows: std::cell::Cell::new(0),
            main_rows: std::cell::Cell::new(u16::MAX),
            view: View::Map,
            focus: Focus::Apps,
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
            evidence: EvidenceReads::default(),
            replay: None,
            driver_focus: None,
            permissions_asked: BTreeSet::new(),
            theme: Theme::Dark,
            local_offset: None,
            show_utc: false,
            hold_ttl: chrono::Duration::hours(HOLD_TTL_HOURS),
            keymap: keymap::Keymap::default(),
            command: None,
            history: Vec::new(),
            history_pos: None,
            contexts: Vec::new(),
            prompt_cursor: None,
            namespaces: Namespaces::NotAsked,
        }
    }

    /// A view on a cluster, with what its session gives it (each said once, here).
    pub(crate) fn on_cluster(ctx: Context, session: Session) -> Self {
        let Session {
            metrics,
            stale_after,
            forget_after,
            kubeconfig,
            contexts,
        } = session;
        Self {
            metrics,
            stale_after: Some(stale_after),
            forget_after: Some(forget_after),
            kubeconfig,
            contexts,
            ..Self::new(ctx)
        }
    }

    /// The terminal's settings, read once at the start: the theme chosen, the keys, how
    /// long `H` holds, and times in UTC or at `offset` (the screen never changes zone
    /// mid-session; `z` toggles).
    pub fn on_terminal(&mut self, theme: Theme, view: ViewSettings, offset: chrono::FixedOffset) {
        let ViewSettings {
            hold_ttl,
            keymap,
            utc,
            ..
        } = view;
        self.theme = theme;
        self.keymap = keymap;
        if let Some(ttl) = hold_ttl {
            self.hold_ttl = ttl;
        }
        self.local_offset = Some(offset);
        self.show_utc = utc;
    }

    /// Applications in display order: the most trouble first (errors, then warnings), then
    /// namespace and name.
    /// The scope was switched: nothing chosen, marked or asked for in the old one remains
    /// (the store dropped its records already).
    pub fn forget_scope(&mut self) {
        self.selected_app = None;
        self.auto_app = None;
        self.selected_exec = None;
        self.marked.clear();
        self.in_flight.clear();
        self.evidence = Default::default();
        self.perms = Default::default();
        self.permissions_asked.clear();
        self.driver_focus = None;
        self.confirm = None;
        self.log_view = None;
        self.popup = None;
        self.namespaces = Namespaces::NotAsked;
        self.scroll = 0;
        self.fix_selection();
    }

    /// The kubeconfig context the view shows (the one switched to, else the first).
    pub fn context_name(&self) -> &str {
        self.store
            .view()
            .scope
            .as_ref()
            .map_or(&self.ctx.context, |s| &s.context)
    }

    /// Whether a source is failing (retrying or forbidden): the header gives its error a
    /// line of its own.
    pub fn source_trouble(&self) -> bool {
        self.store
            .view()
            .health
            .values()
            .any(|h| matches!(h, Health::Retrying { .. } | Health::Forbidden { .. }))
    }

    /// The scope the view shows (`namespace spark-jobs`, `all namespaces`).
    pub fn scope_text(&self) -> &str {
        self.store
            .view()
            .scope
            .as_ref()
            .map_or(&self.ctx.scope, |s| &s.scope)
    }

    /// What the view holds (read-only: only messages change it).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Selects executor `id` of the selected app, and shows `view` (a bench's set-up).
    pub fn show_executor(&mut self, id: i64, view: View) {
        self.selected_exec = Some(id);
        self.view = view;
    }

    /// The offset times are shown in (`None`: UTC).
    pub fn display_offset(&self) -> Option<chrono::FixedOffset> {
        if self.show_utc {
            None
        } else {
            self.local_offset
        }
    }
}

pub use update::{housekeeping, update};

use crate::effect::DriverId;
use crate::evidence::EvidenceReads;
use crate::publish::metrics::Metrics;
use crate::settings::ReadOnly;
use crate::source::{Health, LOG_TAIL_LINES};
use crate::store::AppKey;

impl App {
    /// `q` or `:q`: quits, unless this view holds pods (then asks first).
    pub(super) fn quit(&mut self) -> Vec<Effect> {
        if !self.held_here.is_empty() && self.ctx.mode != Mode::Replay {
            self.confirm = Some(Confirm::QuitWithHolds);
            self.popup = Some(Popup::Confirm);
            return Vec::new();
        }
        self.should_quit = true;
        vec![Effect::Quit]
    }
}

/// Why writes are off here, if they are.
pub(super) fn write_gate(app: &App, namespace: &str, verb: &str) -> Result<(), String> {
    if app.ctx.mode == Mode::Replay {
        return Err("a replay cannot act".to_owned());
    }
    app.perms
        .gate(&app.ctx.readonly, namespace, verb)
        .map_err(|e| e.to_string())
}

/// The app's driver pod, for what a kill or hold may touch (`effect::owner_of`).
pub(super) fn drivers_of(a: &AppRecord) -> Vec<DriverId> {
    a.driver
        .iter()
        .filter(|d| d.phase.as_deref() != Some("Deleted"))
        .map(|d| DriverId {
            namespace: a.namespace.clone(),
            name: d.pod.clone(),
            uid: d.uid.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
