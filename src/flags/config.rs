//! The configuration file: defaults for the flags, per kubeconfig context
//! (docs/configuration.md; a commented default in assets/config.toml).
//!
//! Precedence, lowest first: built-in defaults < the file's top level < the file's section
//! for the context in use (`[context."prod-eu"]`) < flags given on the command line. A bad
//! file is a usage error (exit 2) with its line and column, never silently ignored.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::LiveArgs;
use crate::app::ViewSettings;
use crate::app::keymap::{Action, Keymap, Keys};
use crate::failure::Failure;
use crate::settings::ReadOnly;
use crate::source::{LOG_TAIL_LINES, MAX_LOG_TAIL_LINES};

/// `SPARK_TRIAGE_CONFIG` names the file when `--config` does not.
const ENV: &str = "SPARK_TRIAGE_CONFIG";

/// One level of settings (the top level, or a context's section). Every key is optional.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Settings {
    pub namespace: Option<String>,
    pub all_namespaces: Option<bool>,
    pub selector: Option<String>,
    #[serde(default, deserialize_with = "opt_duration::interval")]
    pub poll_interval: Option<std::time::Duration>,
    #[serde(default, deserialize_with = "opt_duration::interval")]
    pub driver_poll_interval: Option<std::time::Duration>,
    /// Read the drivers' REST API (`false` = `--no-driver-api`).
    pub driver_api: Option<bool>,
    #[serde(default, deserialize_with = "opt_duration::timeout")]
    pub request_timeout: Option<std::time::Duration>,
    /// Never write to the cluster.
    pub readonly: Option<bool>,
    /// `utc` or `local`.
    pub time_zone: Option<TimeZone>,
    /// `dark`, `light` or `mono` (`SPARK_TRIAGE_THEME` wins over it).
    pub theme: Option<ThemeName>,
    /// How long `H` holds an app's executor pods.
    #[serde(default, deserialize_with = "opt_duration::ttl")]
    pub hold_ttl: Option<std::time::Duration>,
    /// How many lines of an ended executor's log are captured as evidence (and shown by `l`).
    #[serde(default, deserialize_with = "tail_lines")]
    pub log_tail_lines: Option<usize>,
    /// Key overrides by action name (`kill = "X"`, `logs = ["l", "L"]`); each replaces that
    /// action's keys.
    #[serde(default)]
    pub keys: BTreeMap<Action, Keys>,
    /// Sections by kubeconfig context name (top level only). A field here rather than a
    /// wrapper with `flatten`: serde's flatten loses the position of an unknown key.
    #[serde(default)]
    pub context: BTreeMap<String, Settings>,
    /// Where `readonly` was set (the file, or its context section), for the refusal.
    #[serde(skip)]
    pub readonly_from: Option<String>,
}

/// How times are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeZone {
    Utc,
    Local,
}

/// A theme, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThemeName {
    Dark,
    Light,
    Mono,
}

impl ThemeName {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dark => "dark",
            Self::Light => "light",
            Self::Mono => "mono",
        }
    }
}

/// The whole file: the top level, with the context sections in it.
#[derive(Debug, Default)]
pub struct Config {
    pub top: Settings,
    /// The file it was read from (none: no file).
    pub path: Option<PathBuf>,
}

mod opt_duration {
    use serde::{Deserialize, Deserializer};

    use crate::flags;

    pub fn interval<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<std::time::Duration>, D::Error> {
        with(d, flags::parse_interval)
    }

    pub fn timeout<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<std::time::Duration>, D::Error> {
        with(d, flags::parse_timeout)
    }

    pub fn ttl<'de, D: Deserializer<'de>>(d: D) -> Result<Option<std::time::Duration>, D::Error> {
        with(d, flags::parse_ttl)
    }

    fn with<'de, D: Deserializer<'de>>(
        d: D,
        parse: fn(&str) -> Result<std::time::Duration, String>,
    ) -> Result<Option<std::time::Duration>, D::Error> {
        let s = String::deserialize(d)?;
        parse(&s).map(Some).map_err(serde::de::Error::custom)
    }
}

/// `log-tail-lines`: 1 to the store's bound.
fn tail_lines<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let n = u64::deserialize(d)?;
    let max = MAX_LOG_TAIL_LINES;
    match usize::try_from(n) {
        Ok(n @ 1..) if n <= max => Ok(Some(n)),
        _ => Err(serde::de::Error::custom(format!(
            "log-tail-lines is {n}: 1 to {max}"
        ))),
    }
}

impl Config {
    /// Parses a file's text; the error is one line with the line and column.
    pub(crate) fn parse(text: &str, path: &str) -> Result<Self, Failure> {
        let mut top: Settings = toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map_or((1, 1), |s| line_col(text, s.start));
            let what = e.message().lines().next().unwrap_or("invalid").trim();
            Failure::Usage(format!(
                "{path}:{line}:{col}: {what} (docs/configuration.md)"
            ))
        })?;
        if let Some((name, _)) = top.context.iter().find(|(_, c)| !c.context.is_empty()) {
            return Err(Failure::Usage(format!(
                "{path}: [context.{name:?}] has context sections of its own; they go at the top level"
            )));
        }
        if top.readonly.is_some() {
            top.readonly_from = Some(path.to_owned());
        }
        for (name, c) in &mut top.context {
            if c.readonly.is_some() {
                c.readonly_from = Some(format!("[context.{name:?}] of {path}"));
            }
        }
        let config = Self { top, path: None };
        // Every keymap the file can produce is checked now, not when the TUI starts.
        for context in std::iter::once(None).chain(config.top.context.keys().map(Some)) {
            let s = config.for_context(context.map(String::as_str));
            Keymap::with(&s.keys).map_err(|e| {
                let in_section = context.map_or(String::new(), |c| format!(" (context {c:?})"));
                Failure::Usage(format!("{path}: {e}{in_section}"))
            })?;
        }
        Ok(config)
    }

    /// The file in force: `--config`, else `$SPARK_TRIAGE_CONFIG`, else
    /// `$XDG_CONFIG_HOME/spark-triage/config.toml` when it exists. A named file that cannot
    /// be read is an error; the default one may be absent.
    pub(crate) fn load(flag: Option<&std::path::Path>) -> Result<Self, Failure> {
        let named = flag
            .map(PathBuf::from)
            .or_else(|| std::env::var_os(ENV).map(PathBuf::from));
        let path = match named {
            Some(p) => p,
            None => match default_path() {
                Some(p) if p.exists() => p,
                _ => return Ok(Self::default()),
            },
        };
        let shown = path.display().to_string();
        let meta = std::fs::metadata(&path)
            .map_err(|e| Failure::Usage(format!("cannot read the config file {shown}: {e}")))?;
        if meta.len() > 1024 * 1024 {
            return Err(Failure::Usage(format!(
                "the config file {shown} is over 1 MiB: not a configuration"
            )));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Failure::Usage(format!("cannot read the config file {shown}: {e}")))?;
        let mut config = Self::parse(&text, &shown)?;
        config.path = Some(path);
        Ok(config)
    }

    /// The settings for this context: its section over the top level.
    pub fn for_context(&self, context: Option<&str>) -> Settings {
        let mut s = self.top.clone();
        if let Some(c) = context.and_then(|c| self.top.context.get(c)) {
            let c = c.clone();
            s.namespace = c.namespace.or(s.namespace);
            s.all_namespaces = c.all_namespaces.or(s.all_namespaces);
            s.selector = c.selector.or(s.selector);
            s.poll_interval = c.poll_interval.or(s.poll_interval);
            s.driver_poll_interval = c.driver_poll_interval.or(s.driver_poll_interval);
            s.driver_api = c.driver_api.or(s.driver_api);
            s.request_timeout = c.request_timeout.or(s.request_timeout);
            if c.readonly.is_some() {
                s.readonly = c.readonly;
                s.readonly_from = c.readonly_from;
            }
            s.time_zone = c.time_zone.or(s.time_zone);
            s.theme = c.theme.or(s.theme);
            s.hold_ttl = c.hold_ttl.or(s.hold_ttl);
            s.log_tail_lines = c.log_tail_lines.or(s.log_tail_lines);
            s.keys.extend(c.keys);
        }
        s
    }
}

/// `$XDG_CONFIG_HOME/spark-triage/config.toml` (or `~/.config/…`).
pub fn default_path() -> Option<PathBuf> {
    use etcetera::BaseStrategy;
    etcetera::base_strategy::Xdg::new()
        .ok()
        .map(|x| x.config_dir().join("spark-triage").join("config.toml"))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Applies settings to what the command line gave: a flag in `given` (by its id, as clap
/// names it) wins; otherwise the setting, if any; otherwise the built-in default stays.
pub fn apply(live: &mut LiveArgs, s: &Settings, given: &dyn Fn(&str) -> bool) {
    let scope_given = given("namespace") || given("all_namespaces");
    if !scope_given {
        if let Some(ns) = &s.namespace {
            live.namespace = Some(ns.clone());
            live.all_namespaces = false;
        } else if let Some(all) = s.all_namespaces {
            live.all_namespaces = all;
        }
    }
    if !given("selector") && s.selector.is_some() {
        live.selector = s.selector.clone();
    }
    if let (false, Some(d)) = (given("poll_interval"), s.poll_interval) {
        live.poll_interval = d;
    }
    if let (false, Some(d)) = (given("driver_poll_interval"), s.driver_poll_interval) {
        live.driver_poll_interval = d;
    }
    if let (false, Some(on)) = (given("no_driver_api"), s.driver_api) {
        live.no_driver_api = !on;
    }
    if let (false, Some(d)) = (given("request_timeout"), s.request_timeout) {
        live.request_timeout = d;
    }
    // `--readonly` only turns it on (no flag turns it off): a context the file makes
    // read-only stays read-only.
    if !given("readonly") {
        match s.readonly {
            Some(true) => live.readonly = ReadOnly::On(why_readonly(s)),
            Some(false) => live.readonly = ReadOnly::Off,
            None => {}
        }
    }
    if let (false, Some(tz)) = (given("utc"), s.time_zone) {
        live.view.utc = tz == TimeZone::Utc;
    }
}

/// What made these settings read-only, as a refusal says it.
fn why_readonly(s: &Settings) -> String {
    match &s.readonly_from {
        Some(from) => format!("readonly = true in {from}"),
        None => "readonly = true in the configuration file".to_owned(),
    }
}

/// The settings the terminal views read at start: the file's, over `flags` (`utc` as
/// decided, `--metrics-addr`).
pub fn view_settings(s: &Settings, flags: ViewSettings) -> ViewSettings {
    ViewSettings {
        theme: s.theme.map(|t| t.as_str().to_owned()),
        hold_ttl: s.hold_ttl.and_then(|d| chrono::Duration::from_std(d).ok()),
        // Checked when the file was read.
        keymap: Keymap::with(&s.keys).unwrap_or_default(),
        log_tail_lines: s.log_tail_lines.unwrap_or(LOG_TAIL_LINES),
        ..flags
    }
}

#[cfg(test)]
mod tests;
