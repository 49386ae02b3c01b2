//! The tables' rows as Parquet (Apache Arrow's crates): one file of rows in, bytes out, and
//! back. The schemas are docs/schemas/tables.md's; a column is added, never renamed or
//! retyped (version [`SCHEMA_VERSION`], in each file's metadata). `cluster` and `date` are
//! not in the files: they are the Hive partition's (`cluster=…/date=…`), as engines read them.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::{
    arrow::{ArrowWriter, arrow_reader::ParquetRecordBatchReaderBuilder},
    basic::{Compression, ZstdLevel},
    file::{metadata::KeyValue, properties::WriterProperties},
};

use super::rows::{EndingRow, Key, RunRow, Table, WaitRow};
use spark_triage_core::model::Time;

/// The tables' schema version (each file's `spark_triage.schema_version`).
pub const SCHEMA_VERSION: u32 = 1;

/// A column: its name, type and whether it may be null.
struct Col(&'static str, DataType, bool);

fn ts() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

fn columns(t: Table) -> Vec<Col> {
    use DataType::{Boolean, Float64, Int32, Int64, Utf8};
    match t {
        Table::Endings => vec![
            Col("namespace", Utf8, false),
            Col("app_id", Utf8, false),
            Col("app_name", Utf8, true),
            Col("spark_version", Utf8, true),
            Col("executor_id", Int64, false),
            Col("cause", Utf8, false),
            Col("severity", Utf8, false),
            Col("state", Utf8, false),
            Col("pod", Utf8, false),
            Col("node", Utf8, true),
            Col("started_at", ts(), true),
            Col("ended_at", ts(), false),
            Col("ended_clock", Utf8, false),
            Col("exit_code", Int32, true),
            Col("container_reason", Utf8, true),
            Col("counted", Boolean, false),
            Col("failure", Boolean, false),
            Col("missing", Boolean, false),
            Col("ending", Utf8, false),
            Col("witness", Utf8, true),
            Col("summary", Utf8, true),
            Col("memory_limit_bytes", Int64, true),
            Col("memory_request_bytes", Int64, true),
            Col("executor_memory", Utf8, true),
            Col("executor_memory_overhead", Utf8, true),
            Col("executor_cores", Utf8, true),
            Col("max_failures", Int32, true),
            Col("dynamic_allocation", Boolean, false),
        ],
        Table::Runs => vec![
            Col("namespace", Utf8, false),
            Col("app_id", Utf8, false),
            Col("app_name", Utf8, true),
            Col("spark_version", Utf8, true),
            Col("driver_pod", Utf8, true),
            Col("driver_node", Utf8, true),
            Col("driver_phase", Utf8, true),
            Col("started_at", ts(), true),
            Col("ended_at", ts(), false),
            Col("verdict", Utf8, false),
            Col("severity", Utf8, false),
            Col("summary", Utf8, false),
            Col("executors", Int64, false),
            Col("failures", Int64, false),
            Col("failures_counted", Int64, false),
            Col("failures_allowed", Int64, true),
            Col("missing", Int64, false),
            Col("by_cause", Utf8, false),
            Col("executor_memory", Utf8, true),
            Col("executor_memory_overhead", Utf8, true),
            Col("executor_cores", Utf8, true),
            Col("max_failures", Int32, true),
            Col("dynamic_allocation", Boolean, false),
        ],
        Table::Waits => vec![
            Col("namespace", Utf8, false),
            Col("app_id", Utf8, false),
            Col("app_name", Utf8, true),
            Col("executor_id", Int64, false),
            Col("pod", Utf8, false),
            Col("node", Utf8, true),
            Col("reason", Utf8, false),
            Col("message", Utf8, true),
            Col("waited_from", ts(), false),
            Col("waited_until", ts(), false),
            Col("seconds", Float64, false),
            Col("then", Utf8, false),
        ],
    }
}

fn schema(t: Table) -> Arc<Schema> {
    Arc::new(Schema::new(
        columns(t)
            .into_iter()
            .map(|Col(n, d, null)| Field::new(n, d, null))
            .collect::<Vec<_>>(),
    ))
}

/// The column names of a table, in order (docs and tests read them).
pub fn column_names(t: Table) -> Vec<&'static str> {
    columns(t).into_iter().map(|c| c.0).collect()
}

fn s<T>(rows: &[T], f: impl Fn(&T) -> &str) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
}
fn os<T>(rows: &[T], f: impl Fn(&T) -> Option<&str>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<StringArray>())
}
fn i<T>(rows: &[T], f: impl Fn(&T) -> i64) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(rows.iter().map(f)))
}
fn oi<T>(rows: &[T], f: impl Fn(&T) -> Option<i64>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<Int64Array>())
}
fn oi32<T>(rows: &[T], f: impl Fn(&T) -> Option<i32>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<Int32Array>())
}
fn b<T>(rows: &[T], f: impl Fn(&T) -> bool) -> ArrayRef {
    Arc::new(rows.iter().map(|r| Some(f(r))).collect::<BooleanArray>())
}
fn t<T>(rows: &[T], f: impl Fn(&T) -> Option<Time>) -> ArrayRef {
    Arc::new(
        rows.iter()
            .map(|r| f(r).map(|t| t.timestamp_micros()))
            .collect::<TimestampMicrosecondArray>()
            .with_timezone("UTC"),
    )
}

fn batch_endings(r: &[EndingRow]) -> Vec<ArrayRef> {
    vec![
        s(r, |x| &x.namespace),
        s(r, |x| &x.app_id),
        os(r, |x| x.app_name.as_deref()),
        os(r, |x| x.spark_version.as_deref()),
        i(r, |x| x.executor_id),
        s(r, |x| &x.cause),
        s(r, |x| &x.severity),
        s(r, |x| &x.state),
        s(r, |x| &x.pod),
        os(r, |x| x.node.as_deref()),
        t(r, |x| x.started_at),
        t(r, |x| Some(x.ended_at)),
        s(r, |x| &x.ended_clock),
        oi32(r, |x| x.exit_code),
        os(r, |x| x.container_reason.as_deref()),
        b(r, |x| x.counted),
        b(r, |x| x.failure),
        b(r, |x| x.missing),
        s(r, |x| &x.ending),
        os(r, |x| x.witness.as_deref()),
        os(r, |x| x.summary.as_deref()),
        oi(r, |x| x.memory_limit_bytes),
        oi(r, |x| x.memory_request_bytes),
        os(r, |x| x.executor_memory.as_deref()),
        os(r, |x| x.executor_memory_overhead.as_deref()),
        os(r, |x| x.executor_cores.as_deref()),
        oi32(r, |x| x.max_failures),
        b(r, |x| x.dynamic_allocation),
    ]
}

fn batch_runs(r: &[RunRow]) -> Vec<ArrayRef> {
    vec![
        s(r, |x| &x.namespace),
        s(r, |x| &x.app_id),
        os(r, |x| x.app_name.as_deref()),
        os(r, |x| x.spark_version.as_deref()),
        os(r, |x| x.driver_pod.as_deref()),
        os(r, |x| x.driver_node.as_deref()),
        os(r, |x| x.driver_phase.as_deref()),
        t(r, |x| x.started_at),
        t(r, |x| Some(x.ended_at)),
        s(r, |x| &x.verdict),
        s(r, |x| &x.severity),
        s(r, |x| &x.summary),
        i(r, |x| x.executors),
        i(r, |x| x.failures),
        i(r, |x| x.failures_counted),
        oi(r, |x| x.failures_allowed),
        i(r, |x| x.missing),
        s(r, |x| &x.by_cause),
        os(r, |x| x.executor_memory.as_deref()),
        os(r, |x| x.executor_memory_overhead.as_deref()),
        os(r, |x| x.executor_cores.as_deref()),
        oi32(r, |x| x.max_failures),
        b(r, |x| x.dynamic_allocation),
    ]
}

fn batch_waits(r: &[WaitRow]) -> Vec<ArrayRef> {
    vec![
        s(r, |x| &x.namespace),
        s(r, |x| &x.app_id),
        os(r, |x| x.app_name.as_deref()),
        i(r, |x| x.executor_id),
        s(r, |x| &x.pod),
        os(r, |x| x.node.as_deref()),
        s(r, |x| &x.reason),
        os(r, |x| x.message.as_deref()),
        t(r, |x| Some(x.waited_from)),
        t(r, |x| Some(x.waited_until)),
        Arc::new(Float64Array::from_iter_values(r.iter().map(|x| x.seconds))),
        s(r, |x| &x.then),
    ]
}

/// Rows of one table, in the order given.
#[derive(Debug, Clone, Copy)]
pub enum Of<'a> {
    Endings(&'a [EndingRow]),
    Runs(&'a [RunRow]),
    Waits(&'a [WaitRow]),
}

impl Of<'_> {
    pub fn table(&self) -> Table {
        match self {
            Self::Endings(_) => Table::Endings,
            Self::Runs(_) => Table::Runs,
            Self::Waits(_) => Table::Waits,
        }
    }
}

/// One Parquet file of these rows (zstd; row groups of at most 64k rows).
pub fn encode(rows: Of<'_>) -> Result<Vec<u8>, String> {
    let table = rows.table();
    let arrays = match rows {
        Of::Endings(r) => batch_endings(r),
        Of::Runs(r) => batch_runs(r),
        Of::Waits(r) => batch_waits(r),
    };
    let batch = RecordBatch::try_new(schema(table), arrays).map_err(|e| e.to_string())?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(65_536))
        .set_created_by(format!("spark-triage {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![
            KeyValue::new("spark_triage.table".into(), table.name().to_owned()),
            KeyValue::new(
                "spark_triage.schema_version".into(),
                SCHEMA_VERSION.to_string(),
            ),
        ]))
        .build();
    let mut out = Vec::new();
    let mut w =
        ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.close().map_err(|e| e.to_string())?;
    Ok(out)
}

/// The largest batch a file is read in (rows): a file is read a batch at a time.
const BATCH_ROWS: usize = 8192;
/// The most rows a table file may have (an hour of a 10,000-executor cluster at churn 5/s
/// is 18,000): a file that says more is not one of ours, and is not decoded.
const MAX_ROWS: i64 = 20_000_000;

/// Each batch of a file in turn, reading only the columns named (all when `None`). A file
/// the Parquet reader cannot take (corrupt, hostile: even one that makes it panic) is an
/// error.
fn each_batch(
    file: bytes::Bytes,
    only: Option<&[&str]>,
    mut f: impl FnMut(&RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    let guarded = |what: &str, e: Box<dyn std::any::Any + Send>| {
        let why = e
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| e.downcast_ref::<&str>().copied())
            .unwrap_or("no reason");
        format!("the Parquet reader failed {what}: {why}")
    };
    let reader = catch_unwind(AssertUnwindSafe(|| {
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| e.to_string())?;
        let rows = builder.metadata().file_metadata().num_rows();
        if rows > MAX_ROWS {
            return Err(format!(
                "{rows} rows, over the {MAX_ROWS} a table file may have"
            ));
        }
        let builder = match only {
            Some(names) => {
                let mask = parquet::arrow::ProjectionMask::columns(
                    builder.parquet_schema(),
                    names.iter().copied(),
                );
                builder.with_projection(mask)
            }
            None => builder,
        };
        builder
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| e.to_string())
    }))
    .map_err(|e| guarded("opening the file", e))??;
    let mut reader = reader;
    loop {
        let next = catch_unwind(AssertUnwindSafe(|| reader.next()))
            .map_err(|e| guarded("reading the file", e))?;
        match next {
            None => return Ok(()),
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(b)) => f(&b)?,
        }
    }
}

/// A column of a batch, of the type asked, or an error naming it.
fn col<'a, A: Array + 'static>(b: &'a RecordBatch, name: &str) -> Result<&'a A, String> {
    b.column_by_name(name)
        .ok_or_else(|| format!("no column {name}"))?
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| format!("column {name} is not of the table's type"))
}

/// The keys of a file's rows (app id + executor id; `app_runs`: executor -1), hashed
/// ([`Key::hash64`]) a batch at a time.
pub fn keys(table: Table, file: bytes::Bytes) -> Result<Vec<u64>, String> {
    let names: &[&str] = match table {
        Table::Runs => &["app_id"],
        _ => &["app_id", "executor_id"],
    };
    let mut out = Vec::new();
    each_batch(file, Some(names), |b| {
        let apps = col::<StringArray>(b, "app_id")?;
        let ids = match table {
            Table::Runs => None,
            _ => Some(col::<Int64Array>(b, "executor_id")?),
        };
        for r in 0..b.num_rows() {
            out.push(Key::hash_of(apps.value(r), ids.map_or(-1, |c| c.value(r))));
        }
        Ok(())
    })?;
    Ok(out)
}

fn get_s(a: &StringArray, r: usize) -> Option<String> {
    (!a.is_null(r)).then(|| a.value(r).to_owned())
}
fn get_t(a: &TimestampMicrosecondArray, r: usize) -> Option<Time> {
    (!a.is_null(r))
        .then(|| chrono::DateTime::from_timestamp_micros(a.value(r)))
        .flatten()
}
fn get_i(a: &Int64Array, r: usize) -> Option<i64> {
    (!a.is_null(r)).then(|| a.value(r))
}
fn get_i32(a: &Int32Array, r: usize) -> Option<i32> {
    (!a.is_null(r)).then(|| a.value(r))
}

/// An `executor_endings` file's rows (the fleet report reads them back).
pub fn endings(file: bytes::Bytes) -> Result<Vec<EndingRow>, String> {
    let mut out = Vec::new();
    each_batch(file, None, |b| {
        let st = |n| col::<StringArray>(b, n);
        let (ns, app, name, ver, cause, sev, state, pod, node) = (
            st("namespace")?,
            st("app_id")?,
            st("app_name")?,
            st("spark_version")?,
            st("cause")?,
            st("severity")?,
            st("state")?,
            st("pod")?,
            st("node")?,
        );
        let (clock, reason, ending, witness, summary, mem, over, cores) = (
            st("ended_clock")?,
            st("container_reason")?,
            st("ending")?,
            st("witness")?,
            st("summary")?,
            st("executor_memory")?,
            st("executor_memory_overhead")?,
            st("executor_cores")?,
        );
        let id = col::<Int64Array>(b, "executor_id")?;
        let started = col::<TimestampMicrosecondArray>(b, "started_at")?;
        let ended = col::<TimestampMicrosecondArray>(b, "ended_at")?;
        let exit = col::<Int32Array>(b, "exit_code")?;
        let flag = |n| col::<BooleanArray>(b, n);
        let (counted, failure, missing, dynamic) = (
            flag("counted")?,
            flag("failure")?,
            flag("missing")?,
            flag("dynamic_allocation")?,
        );
        let limit = col::<Int64Array>(b, "memory_limit_bytes")?;
        let request = col::<Int64Array>(b, "memory_request_bytes")?;
        let maxf = col::<Int32Array>(b, "max_failures")?;
        for r in 0..b.num_rows() {
            let Some(ended_at) = get_t(ended, r) else {
                return Err("a row with no ended_at".into());
            };
            out.push(EndingRow {
                namespace: ns.value(r).to_owned(),
                app_id: app.value(r).to_owned(),
                app_name: get_s(name, r),
                spark_version: get_s(ver, r),
                executor_id: id.value(r),
                cause: cause.value(r).to_owned(),
                severity: sev.value(r).to_owned(),
                state: state.value(r).to_owned(),
                pod: pod.value(r).to_owned(),
                node: get_s(node, r),
                started_at: get_t(started, r),
                ended_at,
                ended_clock: clock.value(r).to_owned(),
                exit_code: get_i32(exit, r),
                container_reason: get_s(reason, r),
                counted: counted.value(r),
                failure: failure.value(r),
                missing: missing.value(r),
                ending: ending.value(r).to_owned(),
                witness: get_s(witness, r),
                summary: get_s(summary, r),
                memory_limit_bytes: get_i(limit, r),
                memory_request_bytes: get_i(request, r),
                executor_memory: get_s(mem, r),
                executor_memory_overhead: get_s(over, r),
                executor_cores: get_s(cores, r),
                max_failures: get_i32(maxf, r),
                dynamic_allocation: dynamic.value(r),
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// A `pending_waits` file's rows.
pub fn waits(file: bytes::Bytes) -> Result<Vec<WaitRow>, String> {
    let mut out = Vec::new();
    each_batch(file, None, |b| {
        let st = |n| col::<StringArray>(b, n);
        let (ns, app, name, pod, node, reason, message, then) = (
            st("namespace")?,
            st("app_id")?,
            st("app_name")?,
            st("pod")?,
            st("node")?,
            st("reason")?,
            st("message")?,
            st("then")?,
        );
        let id = col::<Int64Array>(b, "executor_id")?;
        let from = col::<TimestampMicrosecondArray>(b, "waited_from")?;
        let until = col::<TimestampMicrosecondArray>(b, "waited_until")?;
        let secs = col::<Float64Array>(b, "seconds")?;
        for r in 0..b.num_rows() {
            let (Some(waited_from), Some(waited_until)) = (get_t(from, r), get_t(until, r)) else {
                return Err("a row with no waited_from or waited_until".into());
            };
            out.push(WaitRow {
                namespace: ns.value(r).to_owned(),
                app_id: app.value(r).to_owned(),
                app_name: get_s(name, r),
                executor_id: id.value(r),
                pod: pod.value(r).to_owned(),
                node: get_s(node, r),
                reason: reason.value(r).to_owned(),
                message: get_s(message, r),
                waited_from,
                waited_until,
                seconds: secs.value(r),
                then: then.value(r).to_owned(),
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// An `app_runs` file's rows.
pub fn runs(file: bytes::Bytes) -> Result<Vec<RunRow>, String> {
    let mut out = Vec::new();
    each_batch(file, None, |b| {
        let st = |n| col::<StringArray>(b, n);
        let (ns, app, name, ver, dpod, dnode, dphase, verdict, sev, summary, by_cause) = (
            st("namespace")?,
            st("app_id")?,
            st("app_name")?,
            st("spark_version")?,
            st("driver_pod")?,
            st("driver_node")?,
            st("driver_phase")?,
            st("verdict")?,
            st("severity")?,
            st("summary")?,
            st("by_cause")?,
        );
        let (mem, over, cores) = (
            st("executor_memory")?,
            st("executor_memory_overhead")?,
            st("executor_cores")?,
        );
        let started = col::<TimestampMicrosecondArray>(b, "started_at")?;
        let ended = col::<TimestampMicrosecondArray>(b, "ended_at")?;
        let n = |c| col::<Int64Array>(b, c);
        let (execs, fails, counted, allowed, missing) = (
            n("executors")?,
            n("failures")?,
            n("failures_counted")?,
            n("failures_allowed")?,
            n("missing")?,
        );
        let maxf = col::<Int32Array>(b, "max_failures")?;
        let dynamic = col::<BooleanArray>(b, "dynamic_allocation")?;
        for r in 0..b.num_rows() {
            let Some(ended_at) = get_t(ended, r) else {
                return Err("a row with no ended_at".into());
            };
            out.push(RunRow {
                namespace: ns.value(r).to_owned(),
                app_id: app.value(r).to_owned(),
                app_name: get_s(name, r),
                spark_version: get_s(ver, r),
                driver_pod: get_s(dpod, r),
                driver_node: get_s(dnode, r),
                driver_phase: get_s(dphase, r),
                started_at: get_t(started, r),
                ended_at,
                verdict: verdict.value(r).to_owned(),
                severity: sev.value(r).to_owned(),
                summary: summary.value(r).to_owned(),
                executors: execs.value(r),
                failures: fails.value(r),
                failures_counted: counted.value(r),
                failures_allowed: get_i(allowed, r),
                missing: missing.value(r),
                by_cause: by_cause.value(r).to_owned(),
                executor_memory: get_s(mem, r),
                executor_memory_overhead: get_s(over, r),
                executor_cores: get_s(cores, r),
                max_failures: get_i32(maxf, r),
                dynamic_allocation: dynamic.value(r),
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// What the fleet report reads of an `executor_endings` row, borrowed from the file's
/// columns (no allocation per row).
#[derive(Debug, Clone, Copy)]
pub struct EndingRef<'a> {
    pub namespace: &'a str,
    pub app_id: &'a str,
    pub app_name: Option<&'a str>,
    pub cause: &'a str,
    pub severity: &'a str,
    pub node: Option<&'a str>,
    pub ended_at: Option<Time>,
    pub failure: bool,
    pub counted: bool,
    pub missing: bool,
}

/// What the fleet report reads of a `pending_waits` row.
#[derive(Debug, Clone, Copy)]
pub struct WaitRef<'a> {
    pub namespace: &'a str,
    pub app_id: &'a str,
    pub app_name: Option<&'a str>,
    pub reason: &'a str,
    pub seconds: f64,
    pub waited_from: Option<Time>,
}

fn opt(a: &StringArray, r: usize) -> Option<&str> {
    (!a.is_null(r)).then(|| a.value(r))
}

/// Each `executor_endings` row, reading only the columns the fleet report needs.
pub fn each_ending(file: bytes::Bytes, mut f: impl FnMut(EndingRef<'_>)) -> Result<(), String> {
    const COLS: &[&str] = &[
        "namespace",
        "app_id",
        "app_name",
        "cause",
        "severity",
        "node",
        "ended_at",
        "failure",
        "counted",
        "missing",
    ];
    each_batch(file, Some(COLS), |b| {
        let st = |n| col::<StringArray>(b, n);
        let (ns, app, name, cause, sev, node) = (
            st("namespace")?,
            st("app_id")?,
            st("app_name")?,
            st("cause")?,
            st("severity")?,
            st("node")?,
        );
        let ended = col::<TimestampMicrosecondArray>(b, "ended_at")?;
        let flag = |n| col::<BooleanArray>(b, n);
        let (failure, counted, missing) = (flag("failure")?, flag("counted")?, flag("missing")?);
        for r in 0..b.num_rows() {
            f(EndingRef {
                namespace: ns.value(r),
                app_id: app.value(r),
                app_name: opt(name, r),
                cause: cause.value(r),
                severity: sev.value(r),
                node: opt(node, r),
                ended_at: get_t(ended, r),
                failure: failure.value(r),
                counted: counted.value(r),
                missing: missing.value(r),
            });
        }
        Ok(())
    })
}

/// Each `pending_waits` row, reading only the columns the fleet report needs.
pub fn each_wait(file: bytes::Bytes, mut f: impl FnMut(WaitRef<'_>)) -> Result<(), String> {
    const COLS: &[&str] = &[
        "namespace",
        "app_id",
        "app_name",
        "reason",
        "seconds",
        "waited_from",
    ];
    each_batch(file, Some(COLS), |b| {
        let st = |n| col::<StringArray>(b, n);
        let (ns, app, name, reason) = (
            st("namespace")?,
            st("app_id")?,
            st("app_name")?,
            st("reason")?,
        );
        let secs = col::<Float64Array>(b, "seconds")?;
        let from = col::<TimestampMicrosecondArray>(b, "waited_from")?;
        for r in 0..b.num_rows() {
            f(WaitRef {
                namespace: ns.value(r),
                app_id: app.value(r),
                app_name: opt(name, r),
                reason: reason.value(r),
                seconds: secs.value(r),
                waited_from: get_t(from, r),
            });
        }
        Ok(())
    })
}
