//! A Spark History Server's REST API as a source, for teams whose event logs only the
//! History Server can read (`report --history-server URL`): `/api/v1/applications`, then
//! for each application (each attempt) its `allexecutors` (with `removeReason`) and its
//! `environment`.
//!
//! The History Server replays the same event log through Spark's own listener, so what it
//! answers becomes the events an event log's reader would have made of it ([`Converter`]):
//! the same store, verdicts and witness (`event-log`). Two things it gives less of than the
//! log: the timeline between changes (only each executor's add and remove times), and dead
//! executors past `spark.ui.retainedDeadExecutors` (100 by default), which it drops; the
//! report says so when an app is at that bound.

use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use spark_triage_core::diagnose::memory::SettingsFrom;
use spark_triage_core::model::driver::{parse_executors, parse_spark_time};
use spark_triage_core::model::{Time, driver};

use super::Converted;
use super::convert::Converter;
use super::events::Event;
use crate::failure::Failure;
use crate::{redact, storage};

/// The most of a listing or an environment read (100 000 apps are about 60 MiB).
const MAX_BODY: u64 = 64 << 20;

/// The most of an `allexecutors` read: 10 000 executors of about 3 KiB (the History Server
/// keeps at most `spark.ui.retainedDeadExecutors` dead ones). Parsed whole, it may take
/// some 16 times that.
const MAX_EXECUTORS_BODY: u64 = 32 << 20;

/// The most applications, and attempts of one, taken from a listing (the rest are
/// skipped unread, and said).
const MAX_APPS: usize = 100_000;
const MAX_ATTEMPTS: usize = 50;

/// The apps read when none is named: the newest.
pub(crate) const NEWEST: usize = 20;

/// Spark's default `spark.ui.retainedDeadExecutors`: the History Server keeps no more.
const RETAINED_DEAD: usize = 100;

/// A URL as it may be shown: without a user or password.
pub(crate) fn shown(url: &url::Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

/// A JSON list of which at most `N` items are kept: the rest are skipped unread (no
/// memory for them), and counted.
#[derive(Debug)]
struct Capped<T, const N: usize> {
    items: Vec<T>,
    skipped: usize,
}

impl<T, const N: usize> Default for Capped<T, N> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            skipped: 0,
        }
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Capped<T, N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T, const N: usize>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> serde::de::Visitor<'de> for Visit<T, N> {
            type Value = Capped<T, N>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Capped::<T, N>::default();
                while out.items.len() < N {
                    match seq.next_element()? {
                        Some(x) => out.items.push(x),
                        None => return Ok(out),
                    }
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    out.skipped += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(Visit::<T, N>(std::marker::PhantomData))
    }
}

#[derive(Debug, Deserialize)]
struct Application {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    attempts: Capped<Attempt, MAX_ATTEMPTS>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Attempt {
    #[serde(default)]
    attempt_id: Option<String>,
    #[serde(default)]
    start_time: Option<String>,
    #[serde(default)]
    end_time: Option<String>,
    #[serde(default)]
    last_updated: Option<String>,
    #[serde(default)]
    spark_user: Option<String>,
    #[serde(default)]
    completed: bool,
    #[serde(default)]
    app_spark_version: Option<String>,
    #[serde(default)]
    exit_code: Option<i32>,
}

/// A History Server to read from.
pub(crate) struct HistoryServer {
    api: url::Url,
    shown: String,
    client: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

impl HistoryServer {
    /// `base` is the server's address (`http://shs:18080`, with a path prefix behind a
    /// proxy, or already ending in `/api/v1`); every request may take `timeout`.
    pub fn new(base: &str, timeout: Duration) -> Result<Self, Failure> {
        let mut url = url::Url::parse(base.trim()).map_err(|e| {
            Failure::Usage(format!(
                "--history-server: not a URL ({e}): give one like http://history:18080"
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Failure::Usage(format!(
                "--history-server: {}: not http or https",
                shown(&url)
            )));
        }
        let shown = shown(&url).trim_end_matches('/').to_owned();
        let path = url.path().trim_end_matches('/').to_owned();
        let path = if path.ends_with("/api/v1") {
            format!("{path}/")
        } else {
            format!("{path}/api/v1/")
        };
        url.set_path(&path);
        url.set_query(None);
        url.set_fragment(None);
        storage::tls_provider();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .map_err(|e| Failure::Runtime(format!("cannot make an HTTP client: {e}")))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::Runtime(format!("cannot start the I/O runtime: {e}")))?;
        Ok(Self {
            api: url,
            shown,
            client,
            rt,
        })
    }

    /// What the server is called in what is said (no credentials).
    pub fn name(&self) -> &str {
        &self.shown
    }

    /// GETs the path `segments` under `/api/v1/`, its body bounded by `max` bytes;
    /// `Ok(None)` for a 404.
    fn get(&self, segments: &[&str], max: u64) -> Result<Option<String>, Failure> {
        let mut url = self.api.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        let rel = segments.join("/");
        let what = format!("the History Server at {}", self.shown);
        let fail = |e: reqwest::Error| {
            // reqwest's errors name the URL: ours, without credentials, is said instead.
            let e = e.without_url();
            // The innermost cause says the most ("Connection refused (os error 111)").
            let mut inner: &dyn std::error::Error = &e;
            while let Some(next) = inner.source() {
                inner = next;
            }
            let why = redact::one_line(&inner.to_string());
            if e.is_timeout() {
                Failure::Runtime(format!(
                    "{what}: no answer to /api/v1/{rel} in time ({why})"
                ))
            } else if e.is_connect() {
                Failure::Runtime(format!("cannot reach {what}: {why}"))
            } else {
                Failure::Runtime(format!("{what}: /api/v1/{rel}: {why}"))
            }
        };
        self.rt.block_on(async {
            let resp = self.client.get(url).send().await.map_err(fail)?;
            let status = resp.status();
            if status == reqwest::StatusCode::NOT_FOUND {
                return Ok(None);
            }
            if !status.is_success() {
                let hint = match status.as_u16() {
                    401 | 403 => {
                        " (it wants credentials: give them in the URL, https://user:password@host)"
                    }
                    _ => "",
                };
                return Err(Failure::Runtime(format!(
                    "{what}: /api/v1/{rel}: {status}{hint}"
                )));
            }
            let mut body = Vec::new();
            let mut stream = resp.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(fail)?;
                if (body.len() + chunk.len()) as u64 > max {
                    return Err(Failure::Runtime(format!(
                        "{what}: /api/v1/{rel}: the answer is over {} MiB; not read",
                        max >> 20
                    )));
                }
                body.extend_from_slice(&chunk);
            }
            String::from_utf8(body).map(Some).map_err(|_| {
                Failure::Runtime(format!("{what}: /api/v1/{rel}: the answer is not UTF-8"))
            })
        })
    }

    fn applications(&self) -> Result<Capped<Application, MAX_APPS>, Failure> {
        let body = self.get(&["applications"], MAX_BODY)?.ok_or_else(|| {
            Failure::Runtime(format!(
                "{} has no /api/v1/applications: is it a Spark History Server?",
                self.shown
            ))
        })?;
        serde_json::from_str(&body).map_err(|e| {
            Failure::Runtime(format!(
                "{}: /api/v1/applications is not Spark's application list ({e}): is it a Spark \
                 History Server?",
                self.shown
            ))
        })
    }

    /// The applications named `app` (an id or a name: every attempt of each), or without
    /// one the [`NEWEST`], read into converted logs; the warnings to say go in `warnings`.
    pub fn read(
        &self,
        app: Option<&str>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Converted>, Failure> {
        let listing = self.applications()?;
        if listing.skipped > 0 {
            warnings.push(format!(
                "the History Server at {} lists {} more applications than the {MAX_APPS} read",
                self.shown, listing.skipped
            ));
        }
        let mut apps = listing.items;
        let listed = apps.len();
        if let Some(want) = app {
            apps.retain(|a| a.id == want || a.name.as_deref() == Some(want));
            if apps.is_empty() {
                return Err(Failure::Runtime(format!(
                    "the History Server at {} lists no application named {want:?} ({listed} listed)",
                    self.shown
                )));
            }
        }
        let newest = |a: &Application| {
            a.attempts
                .items
                .iter()
                .filter_map(|t| t.start_time.as_deref().and_then(parse_spark_time))
                .max()
        };
        apps.sort_by_key(|a| std::cmp::Reverse(newest(a)));
        if apps.len() > NEWEST {
            warnings.push(format!(
                "the History Server at {} has {} applications{}: the newest {NEWEST} are read{}",
                self.shown,
                apps.len(),
                app.map(|w| format!(" named {w:?}")).unwrap_or_default(),
                if app.is_some() {
                    " (name one by its id)"
                } else {
                    " (name one with --app)"
                },
            ));
            apps.truncate(NEWEST);
        }
        let mut out = Vec::new();
        let mut first_error = None;
        for a in &apps {
            if a.attempts.skipped > 0 {
                warnings.push(format!(
                    "{}: {} has {} more attempts than the {MAX_ATTEMPTS} read",
                    self.shown, a.id, a.attempts.skipped
                ));
            }
            let attempts: Vec<Option<&Attempt>> = if a.attempts.items.is_empty() {
                vec![None]
            } else {
                a.attempts.items.iter().map(Some).collect()
            };
            // One app the server cannot give (still loading, a log it failed to parse) does
            // not hide the others.
            for t in attempts {
                match self.attempt(a, t) {
                    Ok(c) => out.push(c),
                    Err(e) => {
                        warnings.push(format!("{e}; the other applications are read"));
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        match (out.is_empty(), first_error) {
            (true, Some(e)) => Err(e),
            _ => Ok(out),
        }
    }

    /// One attempt of an app, as its event log's reader would have made it.
    fn attempt(&self, app: &Application, attempt: Option<&Attempt>) -> Result<Converted, Failure> {
        let id = &app.id;
        let mut base = vec!["applications", id.as_str()];
        base.extend(attempt.and_then(|t| t.attempt_id.as_deref()));
        let under = |last: &'static str| {
            let mut p = base.clone();
            p.push(last);
            p
        };
        let shown_app = match attempt.and_then(|t| t.attempt_id.as_deref()) {
            Some(n) => format!("{id} attempt {n}"),
            None => id.clone(),
        };
        let mut conv = Converter::new(&format!("{} ({shown_app})", self.shown));
        conv.settings_from = SettingsFrom::HistoryServer;
        let body = self
            .get(&under("allexecutors"), MAX_EXECUTORS_BODY)?
            .ok_or_else(|| {
                Failure::Runtime(format!(
                    "the History Server at {} has no executors for {shown_app}",
                    self.shown
                ))
            })?;
        let executors = parse_executors(&body)
            .map_err(|e| Failure::Runtime(format!("{}: {shown_app}: {e}", self.shown)))?;
        let properties = match self.get(&under("environment"), MAX_BODY) {
            Ok(Some(body)) => match driver::parse_environment(&body) {
                Ok(properties) => Some(properties),
                Err(e) => {
                    conv.damage(format!("{e}; read without it"));
                    None
                }
            },
            Ok(None) => None,
            Err(e) => {
                conv.damage(format!(
                    "its environment could not be read ({e}); read without it"
                ));
                None
            }
        };
        let t = |s: &Option<String>| s.as_deref().and_then(parse_spark_time);
        let start = attempt.and_then(|a| t(&a.start_time));
        if let Some(v) = attempt.and_then(|a| a.app_spark_version.clone()) {
            conv.take(Event::LogStart { spark_version: v });
        }
        if let Some(properties) = properties {
            conv.take(Event::Environment { properties });
        }
        if let Some(at) = start.or_else(|| executors.iter().filter_map(|e| e.add_time).min()) {
            conv.take(Event::AppStart {
                app_id: Some(id.clone()),
                app_name: app.name.clone().unwrap_or_else(|| id.clone()),
                attempt: attempt.and_then(|a| a.attempt_id.clone()),
                user: attempt.and_then(|a| a.spark_user.clone()),
                at,
            });
        }
        // Each executor's addition and removal, in the order they happened.
        let mut changes: Vec<(Time, bool, Event)> = Vec::new();
        for e in &executors {
            if let Some(at) = e.add_time {
                changes.push((
                    at,
                    false,
                    Event::ExecutorAdded {
                        id: e.id.to_string(),
                        at,
                        host: e.host_port.clone(),
                        cores: None,
                        pod_name: e.pod_name.clone(),
                    },
                ));
            }
            if let Some(at) = e.remove_time.filter(|_| !e.active) {
                changes.push((
                    at,
                    true,
                    Event::ExecutorRemoved {
                        id: e.id.to_string(),
                        at,
                        reason: e.remove_reason.clone().unwrap_or_default(),
                    },
                ));
            }
        }
        changes.sort_by_key(|(at, removal, _)| (*at, *removal));
        let tasks: std::collections::HashMap<i64, (u64, u64)> = executors
            .iter()
            .map(|e| (e.id, (e.completed_tasks, e.failed_tasks)))
            .collect();
        for (_, _, ev) in changes {
            // An executor's task counts before its removal: a removed executor leaves the
            // conversion's hold a minute later, and its counts with it.
            if let Event::ExecutorRemoved { id, .. } = &ev
                && let Ok(n) = id.parse::<i64>()
                && let Some((completed, failed)) = tasks.get(&n)
            {
                conv.tasks(n, *completed, *failed);
            }
            conv.take(ev);
        }
        for e in &executors {
            conv.tasks(e.id, e.completed_tasks, e.failed_tasks);
        }
        let dead = executors.iter().filter(|e| !e.active).count();
        if dead >= RETAINED_DEAD {
            conv.damage(format!(
                "{dead} dead executors: the History Server keeps at most \
                 spark.ui.retainedDeadExecutors of them ({RETAINED_DEAD} unless set), so older \
                 ones may be missing; read the event log itself for all"
            ));
        }
        let completed = attempt.is_some_and(|a| a.completed);
        if completed && let Some(at) = attempt.and_then(|a| t(&a.end_time)) {
            conv.take(Event::AppEnd {
                at,
                exit_code: attempt.and_then(|a| a.exit_code),
            });
        } else if let Some(at) = attempt.and_then(|a| t(&a.last_updated)) {
            conv.seen_at(at);
        }
        Ok(conv.finish(!completed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_keeps_at_most_its_cap_and_skips_the_rest_unread() {
        let c: Capped<Attempt, 2> =
            serde_json::from_str(r#"[{}, {"attemptId": "2"}, {}, {"x": [1, 2, 3]}, {}]"#)
                .expect("a list");
        assert_eq!((c.items.len(), c.skipped), (2, 3));
        assert_eq!(c.items[1].attempt_id.as_deref(), Some("2"));
        let none: Capped<Attempt, 2> = serde_json::from_str("[]").expect("a list");
        assert_eq!((none.items.len(), none.skipped), (0, 0));
        assert!(serde_json::from_str::<Capped<Attempt, 2>>("{}").is_err());
    }

    #[test]
    fn a_url_is_shown_without_its_credentials() {
        let u = url::Url::parse("https://alice:s3cret@shs.example:18080/x").expect("url");
        assert_eq!(shown(&u), "https://shs.example:18080/x");
    }

    #[test]
    fn the_api_path_is_found_under_a_prefix_or_given() {
        for (given, api) in [
            ("http://h:18080", "http://h:18080/api/v1/"),
            ("http://h:18080/", "http://h:18080/api/v1/"),
            ("http://h/shs/", "http://h/shs/api/v1/"),
            ("http://h/shs/api/v1", "http://h/shs/api/v1/"),
        ] {
            let s = HistoryServer::new(given, Duration::from_secs(1)).expect(given);
            assert_eq!(s.api.as_str(), api);
        }
        assert!(matches!(
            HistoryServer::new("ftp://h", Duration::from_secs(1)),
            Err(Failure::Usage(_))
        ));
        assert!(matches!(
            HistoryServer::new("not a url", Duration::from_secs(1)),
            Err(Failure::Usage(_))
        ));
    }
}
