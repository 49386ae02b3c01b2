//! The tables' rows as Parquet (Apache Arrow's crates): one file of rows in, bytes out, and
//! back. The schemas are docs/schemas/tables.md's; a column is added, never renamed or
//! retyped (version [`SCHEMA_VERSION`], in each file's metadata). `cluster` and `date` are
//! not in the files: they are the Hive partition's (`cluster=…/date=…`), as engines read them.

use std::sync::Arc;

use arrow_array::{
    Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::Time;

use super::columns::{Columns, col, severity};
use super::rows::{EndingRow, Key, RunRow, Table, WaitRow};

/// The tables' schema version (each file's `spark_triage.schema_version`).
pub const SCHEMA_VERSION: u32 = 1;

fn schema<R: Columns>() -> Arc<Schema> {
    Arc::new(Schema::new(R::fields()))
}

/// The column names of a table, in order.
pub fn column_names(t: Table) -> &'static [&'static str] {
    match t {
        Table::Endings => EndingRow::NAMES,
        Table::Runs => RunRow::NAMES,
        Table::Waits => WaitRow::NAMES,
    }
}

/// One Parquet file of these rows (zstd; row groups of at most 64k rows).
pub fn encode<R: Columns>(rows: &[R]) -> Result<Vec<u8>, String> {
    let table = R::TABLE;
    let batch = RecordBatch::try_new(schema::<R>(), R::arrays(rows)).map_err(|e| e.to_string())?;
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

fn get_t(a: &TimestampMicrosecondArray, r: usize) -> Option<Time> {
    (!a.is_null(r))
        .then(|| chrono::DateTime::from_timestamp_micros(a.value(r)))
        .flatten()
}

/// A file's rows of one table (the fleet report and the tests read them back).
pub fn decode<R: Columns>(file: bytes::Bytes) -> Result<Vec<R>, String> {
    let mut out = Vec::new();
    each_batch(file, None, |b| R::decode(b, out.len(), &mut out))?;
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
    pub severity: Severity,
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

/// The columns [`EndingRef`] reads.
pub const ENDING_REF: &[&str] = &[
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

/// Each `executor_endings` row, reading only the columns the fleet report needs.
pub fn each_ending(file: bytes::Bytes, mut f: impl FnMut(EndingRef<'_>)) -> Result<(), String> {
    each_batch(file, Some(ENDING_REF), |b| {
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
                severity: severity(sev.value(r)),
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

/// The columns [`WaitRef`] reads.
pub const WAIT_REF: &[&str] = &[
    "namespace",
    "app_id",
    "app_name",
    "reason",
    "seconds",
    "waited_from",
];

/// Each `pending_waits` row, reading only the columns the fleet report needs.
pub fn each_wait(file: bytes::Bytes, mut f: impl FnMut(WaitRef<'_>)) -> Result<(), String> {
    each_batch(file, Some(WAIT_REF), |b| {
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
