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

pub mod parquet;
pub mod place;
pub mod rows;

use std::collections::{BTreeMap, HashMap, HashSet};

pub use place::Place;
pub use rows::{Key, Rows, Table};

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
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub files: usize,
    pub rows: usize,
    pub bytes: u64,
    /// Rows already in the tables (written before a restart, or by an earlier export).
    pub skipped: usize,
}

/// Writes rows into the tables, each once.
#[derive(Debug)]
pub struct Writer {
    pub place: Place,
    cluster: String,
    /// The keys (hashed: 8 bytes each) in each partition read or written so far; only the
    /// partitions the last round touched are kept (an older one is read again if needed).
    known: HashMap<(Table, String), HashSet<u64>>,
}

impl Writer {
    pub fn new(place: Place, cluster: String) -> Self {
        Self {
            place,
            cluster,
            known: HashMap::new(),
        }
    }

    fn partition(&self, table: Table, date: &str) -> String {
        format!("{}/cluster={}/date={date}", table.name(), self.cluster)
    }

    /// The keys already in a partition (read once, then kept).
    async fn known(&mut self, table: Table, date: &str) -> Result<&mut HashSet<u64>, String> {
        let k = (table, date.to_owned());
        if !self.known.contains_key(&k) {
            let mut keys = HashSet::new();
            for f in self.place.list(&self.partition(table, date)).await? {
                let data = self.place.get(&f).await?;
                let got = parquet::keys(table, data)
                    .map_err(|e| format!("{}/{}: {e}", self.place.shown, f.key))?;
                keys.extend(got.iter().map(Key::hash64));
            }
            self.known.insert(k.clone(), keys);
        }
        Ok(self.known.entry(k).or_default())
    }

    /// Writes the rows not in the tables yet: one file per table and date. A failed file
    /// leaves its rows unwritten (the next round tries them again).
    pub async fn write(
        &mut self,
        rows: &Rows,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Written, String> {
        let mut out = Written::default();
        let mut first_error = None;
        let endings = group(
            &rows.endings,
            |r| rows::date(&r.ended_at),
            rows::Ending::key,
        );
        let runs = group(&rows.runs, |r| rows::date(&r.ended_at), rows::Run::key);
        let waits = group(&rows.waits, |r| rows::date(&r.waited_from), rows::Wait::key);
        // Memory stays that of the partitions in use (a recorder runs for months).
        let touched: HashSet<(Table, String)> = endings
            .keys()
            .map(|d| (Table::Endings, d.clone()))
            .chain(runs.keys().map(|d| (Table::Runs, d.clone())))
            .chain(waits.keys().map(|d| (Table::Waits, d.clone())))
            .collect();
        let mut jobs: Vec<(Table, String, Vec<Key>, Vec<u8>)> = Vec::new();
        macro_rules! plan {
            ($groups:expr, $table:expr, $of:path) => {
                for (date, group) in $groups {
                    let known = match self.known($table, &date).await {
                        Ok(k) => k,
                        Err(e) => {
                            first_error.get_or_insert(e);
                            continue;
                        }
                    };
                    let fresh: Vec<_> = group
                        .into_iter()
                        .filter(|(k, _)| !known.contains(&k.hash64()))
                        .collect();
                    if fresh.is_empty() {
                        continue;
                    }
                    let keys: Vec<Key> = fresh.iter().map(|(k, _)| k.clone()).collect();
                    let rows: Vec<_> = fresh.into_iter().map(|(_, r)| (*r).clone()).collect();
                    match parquet::encode($of(&rows)) {
                        Ok(bytes) => jobs.push(($table, date, keys, bytes)),
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
            };
        }
        let total = rows.len();
        plan!(endings, Table::Endings, parquet::Of::Endings);
        plan!(runs, Table::Runs, parquet::Of::Runs);
        plan!(waits, Table::Waits, parquet::Of::Waits);
        let planned: usize = jobs.iter().map(|j| j.2.len()).sum();
        out.skipped = total.saturating_sub(planned);
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
                    self.known
                        .entry((table, date))
                        .or_default()
                        .extend(keys.iter().map(Key::hash64));
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        self.known.retain(|k, _| touched.contains(k));
        match first_error {
            Some(e) if out.files == 0 => Err(e),
            Some(e) => Err(format!("{e} (other files were written: {} rows)", out.rows)),
            None => Ok(out),
        }
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

/// The recorder's side (`record --tables`): plans rows from the store every `every` and
/// hands them to a task that writes them.
#[derive(Debug)]
pub struct Recording {
    tx: tokio::sync::mpsc::Sender<Rows>,
    task: tokio::task::JoinHandle<()>,
    every: std::time::Duration,
    last: std::time::Instant,
}

impl Recording {
    pub fn start(place: Place, cluster: String, every: std::time::Duration) -> Self {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Rows>(2);
        let task = tokio::spawn(async move {
            let mut w = Writer::new(place, cluster);
            while let Some(rows) = rx.recv().await {
                match w.write(&rows, chrono::Utc::now()).await {
                    Ok(done) if done.files > 0 => eprintln!(
                        "tables: {} rows in {} files ({} bytes) to {}",
                        done.rows, done.files, done.bytes, w.place.shown
                    ),
                    Ok(_) => {}
                    // The rows stay in the store: the next round writes them.
                    Err(e) => eprintln!("warning: tables: {}", crate::redact::escape_controls(&e)),
                }
            }
        });
        // The first round within a minute: what a killed run left unwritten goes out even
        // when runs are shorter than `every`.
        let now = std::time::Instant::now();
        let first = every.min(std::time::Duration::from_secs(60));
        Self {
            tx,
            task,
            every,
            last: now.checked_sub(every - first).unwrap_or(now),
        }
    }

    /// Each second: every `every`, the settled rows to the writer (a writer still busy with
    /// the last round is not queued more: the next round has them all).
    pub fn each_second(&mut self, snap: &crate::store::Snapshot) {
        if self.last.elapsed() < self.every {
            return;
        }
        self.last = std::time::Instant::now();
        let settled = crate::source::clock::now()
            - chrono::Duration::from_std(crate::record::verdicts::SETTLE).unwrap_or_default();
        let rows = rows::of(snap, |_, e| {
            crate::store::times::ended(e).is_some_and(|(at, _)| at <= settled)
        });
        if !rows.is_empty() {
            let _ = self.tx.try_send(rows);
        }
    }

    /// At the end: every row, settled or not, and the writer's last files (a minute at most).
    pub async fn finish(self, snap: &crate::store::Snapshot) {
        let rows = rows::of(snap, |_, _| true);
        let Self { tx, task, .. } = self;
        if !rows.is_empty() && tx.send(rows).await.is_err() {
            return;
        }
        drop(tx);
        if tokio::time::timeout(std::time::Duration::from_secs(60), task)
            .await
            .is_err()
        {
            eprintln!("warning: tables: the last rows were not written within a minute");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ending(app: &str, id: i64, at: &str) -> rows::Ending {
        rows::Ending {
            namespace: "spark-jobs".into(),
            app_id: app.into(),
            app_name: Some("etl".into()),
            spark_version: Some("4.0.1".into()),
            executor_id: id,
            cause: "container-oom-killed".into(),
            severity: "error".into(),
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
        }
    }

    #[test]
    fn rows_come_back_as_written() {
        let rows = vec![
            ending("spark-a", 1, "2026-12-04T10:00:00Z"),
            ending("spark-a", 2, "2026-12-04T10:00:01.5Z"),
        ];
        let bytes = parquet::encode(parquet::Of::Endings(&rows)).expect("encode");
        assert_eq!(
            parquet::endings(bytes.clone().into()).expect("decode"),
            rows
        );
        assert_eq!(
            parquet::keys(Table::Endings, bytes.into()).expect("keys"),
            rows.iter().map(rows::Ending::key).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_file_that_is_not_parquet_is_an_error_not_a_panic() {
        for bad in [
            &b""[..],
            b"PAR1",
            b"PAR1\0\0\0\0PAR1",
            b"not parquet at all",
        ] {
            assert!(parquet::endings(bytes::Bytes::from_static(bad)).is_err());
            assert!(parquet::keys(Table::Runs, bytes::Bytes::from_static(bad)).is_err());
        }
    }

    #[test]
    fn the_schemas_doc_names_every_column_in_order() {
        let doc = include_str!("../../../docs/schemas/tables.md");
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
        let mut w = Writer::new(open(), "c1".into());
        let first = w.write(&rows, now).await.expect("write");
        assert_eq!((first.files, first.rows, first.skipped), (2, 2, 1));
        assert_eq!(w.write(&rows, now).await.expect("again").rows, 0);
        // A restarted writer reads the keys back from the files.
        let mut more = rows.clone();
        more.endings
            .push(ending("spark-a", 3, "2026-12-04T11:00:00Z"));
        let again = Writer::new(open(), "c1".into())
            .write(&more, now)
            .await
            .expect("resumed");
        assert_eq!((again.files, again.rows), (1, 1));
        let listed = open().list("executor_endings").await.expect("list");
        assert_eq!(listed.len(), 3, "{listed:?}");
        assert!(listed.iter().all(|l| {
            l.key
                .starts_with("executor_endings/cluster=c1/date=2026-12-0")
        }));
        // Another cluster's partition is its own.
        let other = Writer::new(open(), "c2".into())
            .write(&rows, now)
            .await
            .expect("c2");
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
