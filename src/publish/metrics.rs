//! The flight recorder's `/healthz`, `/readyz` and `/metrics` (Prometheus text) on
//! `--metrics-addr` (docs/flight-recorder.md), with the limits that keep idle and slow
//! clients from stopping the recorder.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use spark_triage_core::model::Time;

use crate::failure::Failure;
use crate::source::Health;
use crate::source::credentials::Credentials;
use crate::store::{Freshness, Store};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabel {
    version: String,
}

/// The prefix of the recorder's families (the live view's is `spark_triage_view`).
pub(crate) const RECORDER_PREFIX: &str = "spark_triage_recorder";

families!(HEALTH, register_health_families for Metrics {
    source_up => "source_up":
        "1 when the source is connected, 0 when it retries or is forbidden",
    last_list_age => "last_full_list_age_seconds":
        "Seconds since the last complete LIST of the pods (+Inf before the first)",
});

families!(RECORDER, register_recorder_families for Metrics {
    segments => "segments": "Segments in the directory (1 for a single-file recording)",
    directory_bytes => "directory_bytes":
        "Bytes of the directory's segments (a single-file recording's size)",
    events => "events": "Source events recorded",
    written_bytes => "written_bytes": "Bytes written (before compression)",
    segments_opened => "segments_opened": "Segments opened by this run",
    tables_rows => "tables_rows_written": "Rows written to the fleet tables (--tables)",
    tables_failures => "tables_write_failures":
        "Rounds of the fleet tables that failed (their rows stay queued)",
    tables_queued => "tables_rows_queued": "Rows waiting to be written to the fleet tables",
    apps => "apps": "Spark applications known",
    executors => "executors": "Executors known (ended ones included)",
    auth_refused => "auth_refused_in_a_row":
        "Requests refused by the API server (HTTP 401) since the last one it accepted",
    credential_fetches => "credential_fetches":
        "Times the credentials were fetched again (exec plugin run, token file read)",
});

/// What `/metrics` shows; the recorder loop updates it every second.
#[derive(Default)]
pub(crate) struct Metrics {
    registry: Registry,
    segments: Gauge,
    directory_bytes: Gauge,
    events: Counter,
    written_bytes: Counter,
    segments_opened: Counter,
    apps: Gauge,
    executors: Gauge,
    source_up: Family<SourceLabel, Gauge>,
    last_list_age: Gauge<f64, std::sync::atomic::AtomicU64>,
    build: Family<BuildLabel, Gauge>,
    /// Unix milliseconds of the loop's last second (for `/healthz`).
    beat: AtomicI64,
    /// Why the recorder is not ready (`/readyz`), or none.
    not_ready: Mutex<Option<String>>,
    /// The connection's credentials: `/healthz` fails when the API server keeps refusing them.
    credentials: std::sync::OnceLock<Credentials>,
    auth_refused: Gauge,
    credential_fetches: Counter,
    tables_rows: Counter,
    tables_failures: Counter,
    tables_queued: Gauge,
    /// The verdicts (docs/metrics.md).
    pub verdicts: super::verdicts::Verdicts,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// `/healthz` fails after this many requests in a row were refused (HTTP 401) although the
/// credentials were fetched again: a restart (a new ServiceAccount token mounted, the
/// plugin's login run again) is what is left.
pub(crate) const UNHEALTHY_AFTER_REFUSALS: u32 = 10;

impl Metrics {
    /// The recorder's: its own figures and the verdicts.
    pub fn new() -> Arc<Self> {
        let mut m = Self::default();
        m.register_build();
        m.registry
            .register_collector(Box::new(super::process::Process));
        m.register_recorder();
        m.register_health(RECORDER_PREFIX);
        m.verdicts.register(&mut m.registry);
        Arc::new(m)
    }

    /// The live view's (`--metrics-addr`): the verdicts, and its sources' health and
    /// freshness (a view left running for weeks says when it last saw the pods whole).
    pub fn for_view() -> Arc<Self> {
        let mut m = Self::default();
        m.register_build();
        m.registry
            .register_collector(Box::new(super::process::Process));
        m.register_health("spark_triage_view");
        m.verdicts.register(&mut m.registry);
        Arc::new(m)
    }

    /// `spark_triage_build_info{version}` 1: which build answers.
    fn register_build(&mut self) {
        self.build
            .get_or_create(&BuildLabel {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            })
            .set(1);
        self.registry.register(
            "spark_triage_build_info",
            "The build of spark-triage serving these metrics (always 1)",
            self.build.clone(),
        );
    }

    /// The sources' health and the last complete LIST's age, under `prefix`.
    fn register_health(&mut self, p: &str) {
        let mut r = std::mem::take(&mut self.registry);
        self.register_health_families(&mut r, p);
        self.registry = r;
        self.last_list_age.set(f64::INFINITY);
    }

    /// The recorder's own figures, under `spark_triage_recorder`.
    fn register_recorder(&mut self) {
        let mut r = std::mem::take(&mut self.registry);
        self.register_recorder_families(&mut r, RECORDER_PREFIX);
        self.registry = r;
    }

    /// The credentials whose refusals `/healthz` reports.
    pub fn watch_credentials(&self, c: Credentials) {
        let _ = self.credentials.set(c);
    }

    /// Why `/healthz` fails because of authentication, if it does.
    fn auth_unhealthy(&self) -> Option<String> {
        let n = self.credentials.get()?.refused_in_a_row();
        (n >= UNHEALTHY_AFTER_REFUSALS).then(|| {
            format!(
                "the API server refused the last {n} requests (HTTP 401) although the credentials were fetched again"
            )
        })
    }

    /// Every second: the recorder's figures and its health, as of `now` on the cluster's
    /// clock.
    pub fn publish(
        &self,
        store: &Store,
        events: u64,
        written: u64,
        stale_after: Duration,
        now: Time,
    ) {
        let view = store.view();
        self.verdicts.publish(view, std::time::Instant::now(), now);
        self.publish_health(store, stale_after, now);
        let gauge = |g: &Gauge, v: usize| g.set(i64::try_from(v).unwrap_or(i64::MAX));
        gauge(&self.apps, view.apps.len());
        gauge(
            &self.executors,
            view.apps.values().map(|a| a.executors.len()).sum(),
        );
        self.events.inc_by(events.saturating_sub(self.events.get()));
        self.written_bytes
            .inc_by(written.saturating_sub(self.written_bytes.get()));
        if let Some(c) = self.credentials.get() {
            self.auth_refused.set(i64::from(c.refused_in_a_row()));
            self.credential_fetches
                .inc_by(c.refetches().saturating_sub(self.credential_fetches.get()));
        }
    }

    /// Every second in the live view: the verdicts and the view's health.
    pub fn publish_view(&self, store: &Store, stale_after: Duration, now: Time) {
        self.verdicts
            .publish(store.view(), std::time::Instant::now(), now);
        self.publish_health(store, stale_after, now);
    }

    /// The sources' health, the last LIST's age and the heartbeat (`/healthz`, `/readyz`).
    fn publish_health(&self, store: &Store, stale_after: Duration, now: Time) {
        let view = store.view();
        for (kind, health) in &view.health {
            let up = matches!(health, Health::Connected);
            self.source_up
                .get_or_create(&SourceLabel {
                    source: kind.as_str().to_owned(),
                })
                .set(i64::from(up));
        }
        // The LIST's time is on the cluster's clock, like every source event.
        let seconds = |d: chrono::Duration| d.num_milliseconds() as f64 / 1000.0;
        let (age, not_ready) = match view.freshness(now, stale_after) {
            Freshness::Waiting => (
                f64::INFINITY,
                Some("no complete LIST of the pods yet".to_owned()),
            ),
            Freshness::Stale(a) => (
                seconds(a),
                Some(format!(
                    "the last complete LIST of the pods is {:.0}s old",
                    seconds(a)
                )),
            ),
            Freshness::Fresh(a) => (seconds(a), None),
        };
        self.last_list_age.set(age);
        *self.not_ready.lock().unwrap_or_else(|e| e.into_inner()) = not_ready;
        // The heartbeat is this machine's: `/healthz` reads it against this machine's clock.
        self.beat
            .store(chrono::Utc::now().timestamp_millis(), Ordering::Relaxed);
    }

    /// The recording on disk: its segments (1 for a single file) and their bytes.
    pub fn on_disk(&self, segments: usize, bytes: u64) {
        self.segments
            .set(i64::try_from(segments).unwrap_or(i64::MAX));
        self.directory_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    pub fn segment_opened(&self) {
        self.segments_opened.inc();
    }

    /// A round of the fleet tables: the rows it wrote, or a failure.
    pub fn tables_round(&self, written: Option<usize>) {
        match written {
            Some(n) => {
                self.tables_rows.inc_by(n as u64);
            }
            None => {
                self.tables_failures.inc();
            }
        }
    }

    pub fn tables_queued(&self, n: usize) {
        self.tables_queued.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// The Prometheus text format (0.0.4), what the endpoint's content type says.
    fn text(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        openmetrics_to_text(&out)
    }
}

/// The client's OpenMetrics text as the Prometheus text format 0.0.4: a counter's family is
/// named with its `_total` there (its HELP and TYPE lines too; promtool's linter and older
/// parsers read them so), and there is no `# EOF`.
fn openmetrics_to_text(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    let mut help: Option<&str> = None;
    for line in om.lines() {
        if line == "# EOF" {
            continue;
        }
        if line.starts_with("# HELP ") {
            if let Some(h) = help.replace(line) {
                out.push_str(h);
                out.push('\n');
            }
            continue;
        }
        if let Some(name) = line
            .strip_prefix("# TYPE ")
            .and_then(|t| t.strip_suffix(" counter"))
            .filter(|n| !n.ends_with("_total"))
        {
            if let Some(h) = help.take() {
                let text = h.strip_prefix("# HELP ").unwrap_or(h);
                let text = text.strip_prefix(name).unwrap_or(text);
                out.push_str(&format!("# HELP {name}_total{text}\n"));
            }
            out.push_str(&format!("# TYPE {name}_total counter\n"));
            continue;
        }
        if let Some(h) = help.take() {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(h) = help {
        out.push_str(h);
        out.push('\n');
    }
    out
}

/// Serves `/healthz` (the recorder loop is alive), `/readyz` (and the pods were listed
/// recently) and `/metrics` on `addr` until the process ends.
pub(crate) async fn serve(
    addr: std::net::SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<tokio::task::JoinHandle<()>, Failure> {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::Runtime(format!("cannot serve metrics on {addr}: {e}")))?;
    let bound = listener.local_addr().unwrap_or(addr);
    eprintln!("serving /healthz, /readyz and /metrics on http://{bound}");
    let m = metrics.clone();
    let healthz = move || {
        let m = m.clone();
        async move {
            let beat = m.beat.load(Ordering::Relaxed);
            let ago = chrono::Utc::now().timestamp_millis() - beat;
            if let Some(why) = m.auth_unhealthy() {
                (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n"))
            } else if beat > 0 && ago < 10_000 {
                (StatusCode::OK, "ok\n".to_owned())
            } else {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the recorder loop has not run for 10 s\n".to_owned(),
                )
            }
        }
    };
    let m = metrics.clone();
    let readyz = move || {
        let m = m.clone();
        async move {
            match m.not_ready.lock().map(|g| g.clone()).ok().flatten() {
                None if m.beat.load(Ordering::Relaxed) > 0 => (StatusCode::OK, "ok\n".to_owned()),
                None => (StatusCode::SERVICE_UNAVAILABLE, "starting\n".to_owned()),
                Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
            }
        }
    };
    let m = metrics;
    let text = move || {
        let m = m.clone();
        async move {
            (
                [(
                    axum::http::header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                )],
                m.text(),
            )
                .into_response()
        }
    };
    let app = axum::Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(text));
    Ok(tokio::spawn(super::serve::bounded(
        listener,
        app,
        super::serve::ENDPOINTS,
        std::future::pending(),
    )))
}

/// `--metrics-addr`: an address, or a bare port (`9090`, `:9090`) bound on loopback only
/// (the endpoints say nothing secret, but nothing is exposed that was not asked for).
pub(crate) fn parse_listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    let port = s.strip_prefix(':').unwrap_or(s);
    if let Ok(port) = port.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| {
        format!("{s:?} is not an address to listen on (e.g. 9090 for loopback, 0.0.0.0:9090)")
    })
}

#[cfg(test)]
mod tests {
    use super::{openmetrics_to_text, parse_listen_addr};

    #[test]
    fn counters_are_named_with_their_total_and_there_is_no_eof() {
        let om = "# HELP a_events Events.\n# TYPE a_events counter\na_events_total 3\n\
                  # HELP b Bytes.\n# TYPE b gauge\n# UNIT b bytes\nb 1\n# EOF\n";
        assert_eq!(
            openmetrics_to_text(om),
            "# HELP a_events_total Events.\n# TYPE a_events_total counter\na_events_total 3\n\
             # HELP b Bytes.\n# TYPE b gauge\n# UNIT b bytes\nb 1\n"
        );
    }

    /// A port alone (or `:PORT`) is loopback: the metrics are served beyond this host only
    /// when an address says so (the Deployment's manifest binds 0.0.0.0 on purpose).
    #[test]
    fn the_tables_rounds_are_counted() {
        let m = super::Metrics::new();
        m.tables_round(Some(7));
        m.tables_round(Some(3));
        m.tables_round(None);
        m.tables_queued(4);
        let text = m.text();
        for line in [
            "spark_triage_recorder_tables_rows_written_total 10",
            "spark_triage_recorder_tables_write_failures_total 1",
            "spark_triage_recorder_tables_rows_queued 4",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
    }

    #[test]
    fn a_bare_port_listens_on_loopback_and_an_address_where_it_says() {
        assert_eq!(
            parse_listen_addr("9090").unwrap().to_string(),
            "127.0.0.1:9090"
        );
        assert_eq!(
            parse_listen_addr(":9090").unwrap().to_string(),
            "127.0.0.1:9090"
        );
        assert_eq!(
            parse_listen_addr("0.0.0.0:9090").unwrap().to_string(),
            "0.0.0.0:9090"
        );
        assert_eq!(
            parse_listen_addr("[::1]:9090").unwrap().to_string(),
            "[::1]:9090"
        );
        let err = parse_listen_addr("localhost:9090").unwrap_err();
        assert!(err.contains("is not an address to listen on"), "{err}");
        assert!(parse_listen_addr("99999").is_err(), "not a port");
    }
}
