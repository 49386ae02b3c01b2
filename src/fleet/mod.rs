//! Fleet history: the verdicts as Parquet tables (`executor_endings`, `app_runs`,
//! `pending_waits`) under `TABLE/cluster=NAME/date=YYYY-MM-DD/part-….parquet` (Hive-style:
//! Spark, DuckDB, Trino and Athena prune by it), in a directory or a bucket. Written by the
//! recorder (`record DIR --tables URL`, every `--tables-every`) and by `export --tables`
//! (from any recording or event log); read by `report --tables`. docs/fleet.md.
//!
//! Idempotent: a row's key is its app id + executor id, and its partition follows from the
//! row (its end's date), so before writing into a partition the writer reads the keys of
//! the files already there and writes only the new rows. A recorder killed and resumed, or
//! an export run twice, adds no row twice.

pub mod columns;
pub mod parquet;
pub mod place;
pub mod rows;

use std::collections::{BTreeMap, HashMap, HashSet};

pub use place::Place;
pub use rows::{Key, Rows, Table};
use spark_triage_core::model::Time;

use crate::publish::metrics::Metrics;
use crate::publish::verdicts::SETTLE;
use crate::redact;
use crate::store::{Snapshot, times};

/// A cluster's name as a partition value: letters, digits, `.`, `_`, `-`; at most 63.
pub fn check_cluster(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 63
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        || name.starts_with('.')
    {
        return Err(format!(
            "{name:?} is not a cluster name for the tables' partitions: 1 to 63 letters, digits, \
             '.', '_' or '-'"
        ));
    }
    Ok(())
}

/// A kube context's name made a cluster name (`arn:aws:eks:…/prod` → `arn-aws-eks-…-prod`).
pub fn cluster_of_context(context: &str) -> String {
    let s: String = context
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s
        .trim_start_matches('.')
        .chars()
        .take(63)
        .collect::<String>();
    if s.is_empty() { "default".into() } else { s }
}

/// What a round wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    pub files: usize,
    pub rows: usize,
    pub bytes: u64,
    /// Rows already in the tables (written before a restart, by another writer, or by an
    /// earlier export).
    pub skipped: usize,
    /// The rows now in the tables (written or found there), by [`tagged`] key.
    pub done: Vec<u64>,
    /// Files that could not be read (their keys are not known: said, then passed over).
    pub unreadable: Vec<String>,
    /// The first thing that failed (a partition not listed, a file not written): those
    /// rows are not in `done`; the rest of the round stands.
    pub error: Option<String>,
}

/// A key with its table, as one number (what the recorder remembers of a row it handed on).
pub fn tagged(table: Table, key: &Key) -> u64 {
    key.hash64() ^ (table as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// What a writer knows of a partition: the files it read and the keys in them.
#[derive(Debug, Default)]
struct Seen {
    files: HashSet<String>,
    keys: HashSet<u64>,
}

/// Writes rows into the tables, each once.
#[derive(Debug)]
pub struct TablesWriter {
    pub place: Place,
    cluster: String,
    /// The partitions read or written so far (keys hashed: 8 bytes each); only those the
    /// last round touched are kept.
    known: HashMap<(Table, String), Seen>,
}

/// The dates either side of `date` (`YYYY-MM-DD`): a row's end can be dated by another
/// clock by another writer (the container's, the driver's), a day apart around midnight.
fn neighbours(date: &str) -> Vec<String> {
    match chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d") {
        Ok(d) => [d.pred_opt(), Some(d), d.succ_opt()]
            .into_iter()
            .flatten()
            .map(|d| d.format("%Y-%m-%d").to_string())
            .collect(),
        Err(_) => vec![date.to_owned()],
    }
}

impl TablesWriter {
    pub fn new(mut place: Place, cluster: String) -> Self {
        place.clean = true;
        Self {
            place,
            cluster,
            known: HashMap::new(),
        }
    }

    fn partition(&self, table: Table, date: &str) -> String {
        format!("{}/cluster={}/date={date}", table.name(), self.cluster)
    }

    /// Brings a partition's keys up to date: lists it and reads the files not read yet
    /// (another writer's, an export's). A file that cannot be read is said and passed over.
    async fn refresh(
        &mut self,
        table: Table,
        date: &str,
        unreadable: &mut Vec<String>,
    ) -> Result<(), String> {
        let listed = self.place.list(&self.partition(table, date)).await?;
        let seen = self.known.entry((table, date.to_owned())).or_default();
        for f in listed {
            if seen.files.contains(&f.key) {
                continue;
            }
            // Not reached (a timeout, a 5xx): the partition is not known; its rows wait.
            let data = self.place.get(&f).await?;
            // Not Parquet of ours: said and passed over (its rows cannot be read by anyone).
            match parquet::keys(table, data) {
                Ok(keys) => seen.keys.extend(keys),
                Err(e) => unreadable.push(format!("{}/{}: {e}", self.place.shown, f.key)),
            }
            seen.files.insert(f.key);
        }
        Ok(())
    }

    /// Whether a partition or one a day either side has the key.
    fn has(&self, table: Table, date: &str, key: u64) -> bool {
        neighbours(date).iter().any(|d| {
            self.known
                .get(&(table, d.clone()))
                .is_some_and(|s| s.keys.contains(&key))
        })
    }

    /// Writes the rows not in the tables yet: one file per table and date. A failed file
    /// leaves its rows unwritten (out of `done`, said in `error`: the caller tries them
    /// again); what did get written stands.
    pub async fn write(&mut self, rows: &Rows, now: chrono::DateTime<chrono::Utc>) -> Written {
        let mut out = Written::default();
        let mut first_error = None;
        let endings = group(
            &rows.endings,
            |r| rows::date(&r.ended_at),
            rows::EndingRow::key,
        );
        let runs = group(&rows.runs, |r| rows::date(&r.ended_at), rows::RunRow::key);
        let waits = group(
            &rows.waits,
            |r| rows::date(&r.waited_from),
            rows::WaitRow::key,
        );
        // The partitions to read: each row's date and the days either side.
        let touched: std::collections::BTreeSet<(Table, String)> = endings
            .keys()
            .map(|d| (Table::Endings, d))
            .chain(runs.keys().map(|d| (Table::Runs, d)))
            .chain(waits.keys().map(|d| (Table::Waits, d)))
            .flat_map(|(t, d)| neighbours(d).into_iter().map(move |n| (t, n)))
            .collect();
        let mut failed = HashSet::new();
        for (table, date) in &touched {
            if let Err(e) = self.refresh(*table, date, &mut out.unreadable).await {
                first_error.get_or_insert(e);
                failed.insert((*table, date.clone()));
            }
        }
        let mut jobs: Vec<(Table, String, Vec<Key>, Vec<u8>)> = Vec::new();
        macro_rules! plan {
            ($groups:expr, $table:expr) => {
                for (date, group) in $groups {
                    // A partition not read: its rows wait for a round that reads it.
                    if neighbours(&date)
                        .into_iter()
                        .any(|d| failed.contains(&($table, d)))
                    {
                        continue;
                    }
                    let (there, fresh): (Vec<_>, Vec<_>) = group
                        .into_iter()
                        .partition(|(k, _)| self.has($table, &date, k.hash64()));
                    out.skipped += there.len();
                    out.done
                        .extend(there.iter().map(|(k, _)| tagged($table, k)));
                    if fresh.is_empty() {
                        continue;
                    }
                    let keys: Vec<Key> = fresh.iter().map(|(k, _)| k.clone()).collect();
                    let rows: Vec<_> = fresh.into_iter().map(|(_, r)| (*r).clone()).collect();
                    match parquet::encode(&rows) {
                        Ok(bytes) => jobs.push(($table, date, keys, bytes)),
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
            };
        }
        plan!(endings, Table::Endings);
        plan!(runs, Table::Runs);
        plan!(waits, Table::Waits);
        for (table, date, keys, bytes) in jobs {
            let name = format!(
                "{}/part-{}-{:016x}.parquet",
                self.partition(table, &date),
                now.format("%Y%m%dT%H%M%SZ"),
                fnv(&keys)
            );
            let size = bytes.len() as u64;
            match self.place.put(&name, bytes).await {
                Ok(()) => {
                    out.files += 1;
                    out.rows += keys.len();
                    out.bytes += size;
                    out.done.extend(keys.iter().map(|k| tagged(table, k)));
                    let seen = self.known.entry((table, date)).or_default();
                    seen.files.insert(name);
                    seen.keys.extend(keys.iter().map(Key::hash64));
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // Memory stays that of the partitions in use (a recorder runs for months).
        self.known.retain(|k, _| touched.contains(k));
        out.error = first_error;
        out
    }
}

/// Rows by partition date, each once by key (the first of a key wins).
fn group<R>(
    rows: &[R],
    date: impl Fn(&R) -> String,
    key: impl Fn(&R) -> Key,
) -> BTreeMap<String, Vec<(Key, &R)>> {
    let mut seen = HashSet::new();
    let mut out: BTreeMap<String, Vec<(Key, &R)>> = BTreeMap::new();
    for r in rows {
        let k = key(r);
        if seen.insert(k.clone()) {
            out.entry(date(r)).or_default().push((k, r));
        }
    }
    out
}

/// FNV-1a of the keys: a file's name differs with its rows (two rounds in one second do
/// not overwrite each other), and is the same for the same rows.
fn fnv(keys: &[Key]) -> u64 {
    keys.iter().fold(0xcbf2_9ce4_8422_2325, |h: u64, k| {
        (h ^ k.hash64()).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Rows handed on at most (a writer that cannot write for long: the newest wait).
const PENDING_MAX: usize = 1_000_000;
/// Keys remembered as written (the oldest forgotten first): 8 bytes each.
const DONE_MAX: usize = 2_000_000;
/// How often the store's settled rows are taken (well within any `--forget-after`).
const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// The recorder's side (`record --tables`): every 10 s takes the rows that settled from the
/// store into its own queue (so a row outlives the store forgetting its executor), and
/// every `every` hands the queue to a task that writes it; a row leaves the queue once it is
/// in the tables.
#[derive(Debug)]
pub struct Feed {
    tx: tokio::sync::mpsc::Sender<Rows>,
    done_rx: tokio::sync::mpsc::UnboundedReceiver<Vec<u64>>,
    /// Its answer at the end: whether the last round wrote every row it was given.
    task: tokio::task::JoinHandle<bool>,
    every: std::time::Duration,
    last_write: std::time::Instant,
    last_collect: Option<std::time::Instant>,
    endings: HashMap<u64, rows::EndingRow>,
    runs: HashMap<u64, rows::RunRow>,
    waits: HashMap<u64, rows::WaitRow>,
    /// When each ending (and each app's end) was first seen: rows settle from then.
    first_seen: HashMap<u64, std::time::Instant>,
    done: HashSet<u64>,
    done_order: std::collections::VecDeque<u64>,
    said_full: bool,
    said_dead: bool,
    /// The oldest end not in the tables yet (µs since the epoch; 0: all held, `i64::MAX`:
    /// none):
    /// the recorder forgets no executor gone since (see [`Feed::hold`]).
    hold: std::sync::Arc<std::sync::atomic::AtomicI64>,
    metrics: Option<std::sync::Arc<Metrics>>,
}

impl Feed {
    pub(crate) fn start(
        place: Place,
        cluster: String,
        every: std::time::Duration,
        metrics: Option<std::sync::Arc<Metrics>>,
    ) -> Self {
        let queued_metrics = metrics.clone();
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Rows>(1);
        let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut w = TablesWriter::new(place, cluster);
            let mut last_ok = true;
            while let Some(rows) = rx.recv().await {
                let done = w.write(&rows, chrono::Utc::now()).await;
                let said = |e: &str| redact::escape_controls(e).into_owned();
                for f in &done.unreadable {
                    eprintln!("warning: tables: cannot read {}", said(f));
                }
                if done.files > 0 {
                    eprintln!(
                        "tables: {} rows in {} files ({} bytes) to {}",
                        done.rows, done.files, done.bytes, w.place.shown
                    );
                }
                if let Some(m) = &metrics {
                    m.tables_round(Some(done.rows));
                }
                // Its other rows stay queued: the next round writes them.
                last_ok = done.error.is_none();
                if let Some(e) = &done.error {
                    if let Some(m) = &metrics {
                        m.tables_round(None);
                    }
                    eprintln!("warning: tables: {}", said(e));
                }
                let _ = done_tx.send(done.done);
            }
            last_ok
        });
        // The first write within a minute: what a killed run left unwritten goes out even
        // when runs are shorter than `every`.
        let now = std::time::Instant::now();
        let first = every.min(std::time::Duration::from_secs(60));
        Self {
            tx,
            done_rx,
            task,
            every,
            last_write: now.checked_sub(every - first).unwrap_or(now),
            last_collect: None,
            endings: HashMap::new(),
            runs: HashMap::new(),
            waits: HashMap::new(),
            first_seen: HashMap::new(),
            done: HashSet::new(),
            done_order: std::collections::VecDeque::new(),
            said_full: false,
            said_dead: false,
            // Until the first look at the store: hold everything.
            hold: std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0)),
            metrics: queued_metrics,
        }
    }

    /// The time before which the recorder may forget executors: none whose row is not in
    /// the tables yet (a SIGKILLed recorder's queue is lost; the resumed run finds them in
    /// its directory's state and writes them).
    pub fn hold(&self) -> std::sync::Arc<std::sync::atomic::AtomicI64> {
        self.hold.clone()
    }

    fn pending(&self) -> usize {
        self.endings.len() + self.runs.len() + self.waits.len()
    }

    /// Rows the writer put in the tables leave the queue and are remembered.
    fn take_done(&mut self) {
        while let Ok(keys) = self.done_rx.try_recv() {
            for k in keys {
                self.endings.remove(&k);
                self.runs.remove(&k);
                self.waits.remove(&k);
                if self.done.insert(k) {
                    self.done_order.push_back(k);
                }
            }
        }
        while self.done_order.len() > DONE_MAX {
            if let Some(old) = self.done_order.pop_front() {
                self.done.remove(&old);
            }
        }
    }

    /// Takes the store's rows into the queue: those settled (`all`: every one).
    fn collect(&mut self, snap: &Snapshot, all: bool, at: Time) {
        let now = std::time::Instant::now();
        let settle = SETTLE;
        let mut present = HashSet::new();
        let (done, queued, first_seen) = (&self.done, &self.endings, &mut self.first_seen);
        let mut oldest: Option<chrono::DateTime<chrono::Utc>> = None;
        let got = rows::of(snap, |a, e| {
            let k = tagged(
                Table::Endings,
                &Key {
                    app_id: a.app_id.clone(),
                    executor_id: e.id,
                },
            );
            present.insert(k);
            if done.contains(&k) {
                return rows::Ready::Taken;
            }
            if let Some((at, _)) = times::ended(e) {
                oldest = Some(oldest.map_or(at, |o| o.min(at)));
            }
            if queued.contains_key(&k) {
                return rows::Ready::Taken;
            }
            let since = *first_seen.entry(k).or_insert(now);
            if all || now.duration_since(since) >= settle {
                rows::Ready::Yes
            } else {
                rows::Ready::No
            }
        });
        for r in got.endings {
            let k = tagged(Table::Endings, &r.key());
            self.first_seen.remove(&k);
            self.endings.insert(k, r);
        }
        for r in got.runs {
            let k = tagged(Table::Runs, &r.key());
            present.insert(k);
            if self.done.contains(&k) || self.runs.contains_key(&k) {
                continue;
            }
            let since = *self.first_seen.entry(k).or_insert(now);
            if all || now.duration_since(since) >= settle {
                self.first_seen.remove(&k);
                self.runs.insert(k, r);
            }
        }
        for r in got.waits {
            let k = tagged(Table::Waits, &r.key());
            if !self.done.contains(&k) {
                self.waits.entry(k).or_insert(r);
            }
        }
        // Endings no longer in the store before they settled: nothing to wait for.
        self.first_seen.retain(|k, _| present.contains(k));
        // Executors gone since the oldest end not in the tables (queued waits and runs
        // too), or in the last minute (seen after this look), are not forgotten: a minute
        // earlier still, for the clocks' skew (an end's clock against the sighting's). A
        // writer that stopped, or far behind (a full queue, six hours), holds nothing back:
        // the queue keeps its rows.
        let now = at;
        let queued = self
            .waits
            .values()
            .map(|w| w.waited_until)
            .chain(self.runs.values().map(|r| r.ended_at))
            .min();
        let oldest = [oldest, queued, Some(now - chrono::Duration::seconds(60))]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now)
            - chrono::Duration::seconds(60);
        let hold = if self.pending() > PENDING_MAX
            || self.tx.is_closed()
            || oldest < now - chrono::Duration::hours(6)
        {
            i64::MAX
        } else {
            oldest.timestamp_micros()
        };
        self.hold.store(hold, std::sync::atomic::Ordering::Relaxed);
        if self.pending() > PENDING_MAX {
            if !self.said_full {
                self.said_full = true;
                eprintln!(
                    "warning: tables: over {PENDING_MAX} rows wait to be written; waits are \
                     dropped until the writer catches up"
                );
            }
            let over = self.pending() - PENDING_MAX;
            let drop: Vec<u64> = self.waits.keys().take(over).copied().collect();
            for k in drop {
                self.waits.remove(&k);
            }
        }
    }

    fn queued(&self) -> Rows {
        Rows {
            endings: self.endings.values().cloned().collect(),
            runs: self.runs.values().cloned().collect(),
            waits: self.waits.values().cloned().collect(),
        }
    }

    /// Each second: every 10 s the settled rows into the queue; every `every` the queue to
    /// the writer (unless it is still busy with the last one).
    /// `at`: now on the cluster's clock.
    pub fn each_second(&mut self, snap: &Snapshot, at: Time) {
        self.take_done();
        if let Some(m) = &self.metrics {
            m.tables_queued(self.pending());
        }
        if self
            .last_collect
            .is_none_or(|t| t.elapsed() >= COLLECT_EVERY)
        {
            self.last_collect = Some(std::time::Instant::now());
            self.collect(snap, false, at);
        }
        if self.last_write.elapsed() < self.every || self.pending() == 0 {
            return;
        }
        if self.tx.is_closed() && !self.said_dead {
            self.said_dead = true;
            eprintln!("error: tables: the writer stopped; no more rows are written to the tables");
        }
        if let Ok(permit) = self.tx.try_reserve() {
            self.last_write = std::time::Instant::now();
            permit.send(self.queued());
        }
    }

    /// At the end: every row (settled or not: a recorder that stops writes what it knows)
    /// and the writer's last files, a minute at most.
    /// The last rows written: `false` when they were not (the round failed, the writer
    /// died, or a minute passed), said on stderr; the caller exits non-zero then.
    pub async fn finish(mut self, snap: &Snapshot, at: Time) -> bool {
        self.take_done();
        self.collect(snap, true, at);
        let rows = self.queued();
        let Self { tx, task, .. } = self;
        let last = async move {
            if !rows.is_empty() && tx.send(rows).await.is_err() {
                return false;
            }
            drop(tx);
            task.await.unwrap_or(false)
        };
        match tokio::time::timeout(std::time::Duration::from_secs(60), last).await {
            Ok(ok) => ok,
            Err(_) => {
                eprintln!("warning: tables: the last rows were not written within a minute");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use spark_triage_core::diagnose;
    use spark_triage_core::diagnose::Severity;

    use super::*;

    fn ending(app: &str, id: i64, at: &str) -> rows::EndingRow {
        rows::EndingRow {
            namespace: "spark-jobs".into(),
            app_id: app.into(),
            app_name: Some("etl".into()),
            spark_version: Some("4.0.1".into()),
            executor_id: id,
            cause: "container-oom-killed".into(),
            severity: diagnose::Severity::Error,
            state: "failed".into(),
            pod: format!("etl-exec-{id}"),
            node: Some("node-1".into()),
            started_at: None,
            ended_at: at.parse().expect("time"),
            ended_clock: "container".into(),
            exit_code: Some(137),
            container_reason: Some("OOMKilled".into()),
            counted: true,
            failure: true,
            missing: false,
            ending: "deleted-by-spark".into(),
            witness: Some("pod".into()),
            summary: Some("OOMKilled".into()),
            memory_limit_bytes: Some(4 << 30),
            memory_request_bytes: None,
            executor_memory: Some("3g".into()),
            executor_memory_overhead: None,
            executor_cores: Some("2".into()),
            max_failures: None,
            dynamic_allocation: true,
            recomputed_task_seconds: None,
            recompute_wall_seconds: None,
            stage_attempts_added: None,
        }
    }

    #[test]
    fn rows_come_back_as_written() {
        let rows = vec![
            ending("spark-a", 1, "2026-12-04T10:00:00Z"),
            ending("spark-a", 2, "2026-12-04T10:00:01.5Z"),
        ];
        let bytes = parquet::encode(&rows).expect("encode");
        assert_eq!(
            parquet::decode::<rows::EndingRow>(bytes.clone().into()).expect("decode"),
            rows
        );
        assert_eq!(
            parquet::keys(Table::Endings, bytes.into()).expect("keys"),
            rows.iter().map(|r| r.key().hash64()).collect::<Vec<_>>()
        );
    }

    super::columns::table_row! {
        /// Every kind of cell, with and without nulls.
        pub struct EveryCell in Table::Waits => {
            pub s: String,
            pub os: Option<String>,
            pub i: i64,
            pub oi: Option<i64>,
            pub n: i32,
            pub on: Option<i32>,
            pub f: f64,
            pub of: Option<f64>,
            pub b: bool,
            pub ob: Option<bool>,
            pub t: Time,
            pub ot: Option<Time>,
            pub sev: diagnose::Severity,
            pub osev: Option<diagnose::Severity>,
        }
    }

    /// The schema a file says it has (its Arrow schema, from the Parquet footer).
    fn file_fields(bytes: Vec<u8>) -> Vec<(String, arrow_schema::DataType, bool)> {
        let b = ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            bytes::Bytes::from(bytes),
        )
        .expect("a Parquet file");
        b.schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
            .collect()
    }

    #[test]
    fn a_column_declared_once_is_in_the_schema_the_writer_and_the_reader() {
        use super::columns::Columns;
        let t = |s: &str| s.parse().expect("time");
        let rows = vec![
            EveryCell {
                s: "a".into(),
                os: Some("b".into()),
                i: -1,
                oi: Some(i64::MAX),
                n: 137,
                on: Some(-52),
                f: 1.5,
                of: Some(f64::MAX),
                b: true,
                ob: Some(false),
                t: t("2026-12-04T10:00:00.000001Z"),
                ot: Some(t("1970-01-01T00:00:00Z")),
                sev: Severity::Warn,
                osev: Some(Severity::Error),
            },
            EveryCell {
                s: String::new(),
                os: None,
                i: 0,
                oi: None,
                n: 0,
                on: None,
                f: 0.0,
                of: None,
                b: false,
                ob: None,
                t: t("2026-12-05T00:00:00Z"),
                ot: None,
                sev: Severity::Info,
                osev: None,
            },
        ];
        let bytes = parquet::encode(&rows).expect("encode");
        // The names in declaration order; a type and its nullability from the field's type.
        let want: Vec<_> = EveryCell::fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
            .collect();
        assert_eq!(file_fields(bytes.clone()), want);
        let names: Vec<&str> = want.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, EveryCell::NAMES);
        assert_eq!(
            want.iter()
                .filter(|f| f.2)
                .map(|f| f.0.as_str())
                .collect::<Vec<_>>(),
            ["os", "oi", "on", "of", "ob", "ot", "osev"]
        );
        assert_eq!(
            parquet::decode::<EveryCell>(bytes.into()).expect("decode"),
            rows
        );
        // The real tables: what a file of them says is what column_names says (and the
        // schemas doc, by the test below); the borrowed readers read declared columns.
        let file = parquet::encode(&[ending("spark-a", 1, "2026-12-04T10:00:00Z")]).expect("e");
        let got: Vec<String> = file_fields(file).into_iter().map(|f| f.0).collect();
        assert_eq!(got, parquet::column_names(Table::Endings));
        for c in parquet::ENDING_REF {
            assert!(rows::EndingRow::NAMES.contains(c), "{c}");
        }
        for c in parquet::WAIT_REF {
            assert!(rows::WaitRow::NAMES.contains(c), "{c}");
        }
    }

    /// A file of these rows with only some of the columns (one from before the others were
    /// added).
    fn file_without(rows: &[EveryCell], dropped: &[&str]) -> bytes::Bytes {
        use arrow_array::RecordBatch;
        use arrow_schema::Schema;

        use super::columns::Columns;
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(EveryCell::fields())),
            EveryCell::arrays(rows),
        )
        .expect("batch");
        let keep: Vec<usize> = (0..EveryCell::NAMES.len())
            .filter(|&i| !dropped.contains(&EveryCell::NAMES[i]))
            .collect();
        let batch = batch.project(&keep).expect("project");
        let mut file = Vec::new();
        let mut w =
            ::parquet::arrow::ArrowWriter::try_new(&mut file, batch.schema(), None).expect("w");
        w.write(&batch).expect("write");
        w.close().expect("close");
        file.into()
    }

    #[test]
    fn a_file_from_before_a_nullable_column_was_added_reads_it_as_null() {
        let t = |s: &str| s.parse().expect("time");
        let row = EveryCell {
            s: "a".into(),
            os: Some("b".into()),
            i: 1,
            oi: Some(2),
            n: 3,
            on: Some(4),
            f: 0.5,
            of: Some(0.25),
            b: true,
            ob: Some(true),
            t: t("2026-12-04T10:00:00Z"),
            ot: Some(t("2026-12-04T10:00:01Z")),
            sev: diagnose::Severity::Warn,
            osev: Some(diagnose::Severity::Error),
        };
        let older = file_without(std::slice::from_ref(&row), &["os", "ot", "osev"]);
        let read = parquet::decode::<EveryCell>(older).expect("an older file reads");
        assert_eq!(
            read,
            [EveryCell {
                os: None,
                ot: None,
                osev: None,
                ..row.clone()
            }]
        );
        // A column that may not be null, missing: not one of ours.
        let e = parquet::decode::<EveryCell>(file_without(&[row], &["i"])).expect_err("no i");
        assert!(e.contains("no column i"), "{e}");
    }

    #[test]
    fn a_severity_this_build_does_not_know_reads_as_info() {
        assert_eq!(super::columns::severity("critical"), Severity::Info);
        assert_eq!(super::columns::severity("warn"), Severity::Warn);
    }

    #[test]
    fn a_null_where_the_table_has_none_is_an_error_naming_the_column() {
        use arrow_array::{RecordBatch, new_null_array};
        use arrow_schema::{Field, Schema};

        use super::columns::Columns;
        // The table's types, every column nullable and null.
        let fields: Vec<Field> = rows::WaitRow::fields()
            .iter()
            .map(|f| Field::new(f.name(), f.data_type().clone(), true))
            .collect();
        let columns = fields
            .iter()
            .map(|f| new_null_array(f.data_type(), 1))
            .collect();
        let b = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("batch");
        let mut out = Vec::new();
        let e = rows::WaitRow::decode(&b, 8192, &mut out).expect_err("nulls");
        // The row is the file's (a batch's first row is its 8192nd).
        assert_eq!(
            e,
            "column namespace, row 8192: null, where the table has none"
        );
        assert!(out.is_empty());
    }

    #[test]
    fn a_file_that_is_not_parquet_is_an_error_not_a_panic() {
        for bad in [
            &b""[..],
            b"PAR1",
            b"PAR1\0\0\0\0PAR1",
            b"not parquet at all",
        ] {
            assert!(parquet::decode::<rows::EndingRow>(bytes::Bytes::from_static(bad)).is_err());
            assert!(parquet::keys(Table::Runs, bytes::Bytes::from_static(bad)).is_err());
        }
    }

    #[test]
    fn a_file_of_other_types_or_nulls_is_an_error_or_read_as_absent() {
        use arrow_array::{Int32Array, RecordBatch, StringArray};
        use arrow_schema::{DataType, Field, Schema};
        // app_id as a number: the table's type is a string.
        let schema = Arc::new(Schema::new(vec![
            Field::new("app_id", DataType::Int32, true),
            Field::new("executor_id", DataType::Int32, true),
        ]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(vec![Some(1), None])),
                Arc::new(Int32Array::from(vec![Some(1), None])),
            ],
        )
        .expect("batch");
        let mut file = Vec::new();
        let mut w = ::parquet::arrow::ArrowWriter::try_new(&mut file, schema, None).expect("w");
        w.write(&b).expect("write");
        w.close().expect("close");
        let file = bytes::Bytes::from(file);
        let e = parquet::keys(Table::Endings, file.clone()).expect_err("wrong types");
        assert!(e.contains("app_id"), "{e}");
        assert!(parquet::each_ending(file.clone(), |_| {}).is_err());
        assert!(parquet::each_wait(file.clone(), |_| {}).is_err());
        assert!(parquet::decode::<rows::RunRow>(file).is_err());
        // Nulls where the table has none: read as empty, no panic.
        let schema = Arc::new(Schema::new(vec![Field::new(
            "app_id",
            DataType::Utf8,
            true,
        )]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(vec![None::<&str>]))],
        )
        .expect("batch");
        let mut file = Vec::new();
        let mut w = ::parquet::arrow::ArrowWriter::try_new(&mut file, schema, None).expect("w");
        w.write(&b).expect("write");
        w.close().expect("close");
        let keys = parquet::keys(Table::Runs, bytes::Bytes::from(file)).expect("keys");
        assert_eq!(keys, [Key::hash_of("", -1)]);
    }

    #[test]
    fn the_schemas_doc_names_every_column_in_order() {
        let doc = include_str!("../../docs/schemas/tables.md");
        for table in Table::ALL {
            let section = doc
                .split(&format!("## {}\n", table.name()))
                .nth(1)
                .expect("a section per table");
            let section = section.split("\n## ").next().unwrap_or_default();
            let documented: Vec<&str> = section
                .lines()
                .filter_map(|l| l.strip_prefix("| "))
                .filter_map(|l| l.split(" |").next())
                .filter(|c| !matches!(*c, "column" | "---"))
                .collect();
            assert_eq!(documented, parquet::column_names(table), "{}", table.name());
        }
    }

    #[tokio::test]
    async fn a_second_write_of_the_same_rows_adds_none_even_from_a_new_writer() {
        let dir = std::env::temp_dir().join(format!("st-tables-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let open = || Place::open(&dir.display().to_string(), &Default::default()).expect("dir");
        let rows = Rows {
            endings: vec![
                ending("spark-a", 1, "2026-12-04T10:00:00Z"),
                // Another day: another partition.
                ending("spark-a", 2, "2026-12-05T00:00:01Z"),
                // The same key twice in one round: once.
                ending("spark-a", 2, "2026-12-05T00:00:01Z"),
            ],
            ..Rows::default()
        };
        let now = chrono::Utc::now();
        let mut w = TablesWriter::new(open(), "c1".into());
        let first = w.write(&rows, now).await;
        assert_eq!(first.error, None);
        assert_eq!((first.files, first.rows, first.skipped), (2, 2, 0));
        let again = w.write(&rows, now).await;
        assert_eq!((again.rows, again.skipped), (0, 2));
        // Another writer at work beside this one (an export while the recorder runs): this
        // one reads its new file before writing.
        let mut beside = TablesWriter::new(open(), "c1".into());
        let theirs = Rows {
            endings: vec![ending("spark-b", 1, "2026-12-04T12:00:00Z")],
            ..Rows::default()
        };
        assert_eq!(beside.write(&theirs, now).await.rows, 1);
        assert_eq!(w.write(&theirs, now).await.rows, 0);
        // The same ending dated a day later by another clock (around midnight): there.
        let late = Rows {
            endings: vec![ending("spark-a", 1, "2026-12-05T00:00:02Z")],
            ..Rows::default()
        };
        assert_eq!(
            TablesWriter::new(open(), "c1".into())
                .write(&late, now)
                .await
                .rows,
            0
        );
        // A restarted writer reads the keys back from the files.
        let mut more = rows.clone();
        more.endings
            .push(ending("spark-a", 3, "2026-12-04T11:00:00Z"));
        let again = TablesWriter::new(open(), "c1".into())
            .write(&more, now)
            .await;
        assert_eq!((again.files, again.rows), (1, 1));
        let listed = open().list("executor_endings").await.expect("list");
        assert_eq!(listed.len(), 4, "{listed:?}");
        assert!(listed.iter().all(|l| {
            l.key
                .starts_with("executor_endings/cluster=c1/date=2026-12-0")
        }));
        // Another cluster's partition is its own.
        let other = TablesWriter::new(open(), "c2".into())
            .write(&rows, now)
            .await;
        assert_eq!(other.rows, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_context_is_made_a_cluster_name() {
        assert_eq!(
            cluster_of_context("arn:aws:eks:eu-west-1:1:cluster/prod"),
            "arn-aws-eks-eu-west-1-1-cluster-prod"
        );
        assert!(check_cluster(&cluster_of_context("..")).is_ok());
        assert!(check_cluster("a/b").is_err());
        assert!(check_cluster("").is_err());
    }
}
