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
use spark_triage_core::{diagnose::Severity, model::Time};

/// The tables' schema version (each file's `spark_triage.schema_version`).
pub const SCHEMA_VERSION: u32 = 1;

/// A value a column holds: its Arrow type, how a column of them is built and read back.
/// `Option<T>` is the same column that may be null.
pub trait Scalar: Sized + 'static {
    type Array: Array + 'static;
    fn data_type() -> DataType;
    fn array<'a>(values: impl Iterator<Item = Option<&'a Self>>) -> ArrayRef;
    fn value(a: &Self::Array, r: usize) -> Result<Self, String>;
}

/// A row field's type as a column: a [`Scalar`], or an `Option` of one (nullable).
pub trait Cell: Sized {
    type Array: Array + 'static;
    const NULLABLE: bool;
    fn data_type() -> DataType;
    fn array<'a>(values: impl Iterator<Item = &'a Self>) -> ArrayRef
    where
        Self: 'a;
    /// Row `r`; `Err` names what is wrong (a null where the table has none).
    fn get(a: &Self::Array, r: usize) -> Result<Self, String>;
}

impl<T: Scalar> Cell for T {
    type Array = T::Array;
    const NULLABLE: bool = false;
    fn data_type() -> DataType {
        T::data_type()
    }
    fn array<'a>(values: impl Iterator<Item = &'a Self>) -> ArrayRef {
        T::array(values.map(Some))
    }
    fn get(a: &Self::Array, r: usize) -> Result<Self, String> {
        if a.is_null(r) {
            return Err("null, where the table has none".into());
        }
        T::value(a, r)
    }
}

impl<T: Scalar> Cell for Option<T> {
    type Array = T::Array;
    const NULLABLE: bool = true;
    fn data_type() -> DataType {
        T::data_type()
    }
    fn array<'a>(values: impl Iterator<Item = &'a Self>) -> ArrayRef {
        T::array(values.map(Option::as_ref))
    }
    fn get(a: &Self::Array, r: usize) -> Result<Self, String> {
        if a.is_null(r) {
            return Ok(None);
        }
        T::value(a, r).map(Some)
    }
}

/// Scalars whose Arrow array collects from `Option`s of themselves.
macro_rules! scalar {
    ($t:ty, $array:ty, $data:expr) => {
        impl Scalar for $t {
            type Array = $array;
            fn data_type() -> DataType {
                $data
            }
            fn array<'a>(values: impl Iterator<Item = Option<&'a Self>>) -> ArrayRef {
                Arc::new(values.map(|v| v.copied()).collect::<$array>())
            }
            fn value(a: &Self::Array, r: usize) -> Result<Self, String> {
                Ok(a.value(r))
            }
        }
    };
}
scalar!(i64, Int64Array, DataType::Int64);
scalar!(i32, Int32Array, DataType::Int32);
scalar!(f64, Float64Array, DataType::Float64);
scalar!(bool, BooleanArray, DataType::Boolean);

impl Scalar for String {
    type Array = StringArray;
    fn data_type() -> DataType {
        DataType::Utf8
    }
    fn array<'a>(values: impl Iterator<Item = Option<&'a Self>>) -> ArrayRef {
        Arc::new(
            values
                .map(|v| v.map(String::as_str))
                .collect::<StringArray>(),
        )
    }
    fn value(a: &StringArray, r: usize) -> Result<Self, String> {
        Ok(a.value(r).to_owned())
    }
}

/// A severity, by its name (`error`, `warn`, `info`).
impl Scalar for Severity {
    type Array = StringArray;
    fn data_type() -> DataType {
        DataType::Utf8
    }
    fn array<'a>(values: impl Iterator<Item = Option<&'a Self>>) -> ArrayRef {
        Arc::new(
            values
                .map(|v| v.map(|s| s.as_str()))
                .collect::<StringArray>(),
        )
    }
    fn value(a: &StringArray, r: usize) -> Result<Self, String> {
        severity(a.value(r))
    }
}

fn severity(name: &str) -> Result<Severity, String> {
    Severity::parse(name).ok_or_else(|| format!("{name:?} is not a severity"))
}

/// An instant, in microseconds, UTC.
impl Scalar for Time {
    type Array = TimestampMicrosecondArray;
    fn data_type() -> DataType {
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    }
    fn array<'a>(values: impl Iterator<Item = Option<&'a Self>>) -> ArrayRef {
        Arc::new(
            values
                .map(|t| t.map(Time::timestamp_micros))
                .collect::<TimestampMicrosecondArray>()
                .with_timezone("UTC"),
        )
    }
    fn value(a: &TimestampMicrosecondArray, r: usize) -> Result<Self, String> {
        chrono::DateTime::from_timestamp_micros(a.value(r))
            .ok_or_else(|| format!("{} µs is not a time", a.value(r)))
    }
}

/// A table's row type: its columns, in order, as [`table_row!`] declares them.
pub trait Columns: Sized {
    const TABLE: Table;
    /// The column names, in order (docs and tests read them).
    const NAMES: &'static [&'static str];
    fn fields() -> Vec<Field>;
    fn arrays(rows: &[Self]) -> Vec<ArrayRef>;
    /// Appends a batch's rows to `out`; an error names the column.
    fn decode(b: &RecordBatch, out: &mut Vec<Self>) -> Result<(), String>;
}

/// A column's field: its name, and its type and nullability from the row field's type.
pub fn field<C: Cell>(name: &str) -> Field {
    Field::new(name, C::data_type(), C::NULLABLE)
}

/// Row `r` of a column, or an error naming the column.
pub fn cell<C: Cell>(a: &C::Array, r: usize, name: &str) -> Result<C, String> {
    C::get(a, r).map_err(|e| format!("column {name}, row {r}: {e}"))
}

/// Declares a table's row once, one line per column: the struct, its column names in
/// order, the schema (type and nullability from each field's type), the encoder and the
/// decoder. A column added here reaches all of them, and docs/schemas/tables.md by its test.
macro_rules! table_row {
    (
        $(#[$meta:meta])*
        pub struct $row:ident in $table:expr => {
            $($(#[$fmeta:meta])* pub $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $row {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $crate::fleet::parquet::Columns for $row {
            const TABLE: $crate::fleet::rows::Table = $table;
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];
            fn fields() -> Vec<arrow_schema::Field> {
                vec![$($crate::fleet::parquet::field::<$ty>(stringify!($field))),*]
            }
            fn arrays(rows: &[Self]) -> Vec<arrow_array::ArrayRef> {
                vec![$(<$ty as $crate::fleet::parquet::Cell>::array(
                    rows.iter().map(|r| &r.$field),
                )),*]
            }
            fn decode(
                b: &arrow_array::RecordBatch,
                out: &mut Vec<Self>,
            ) -> Result<(), String> {
                $(let $field = $crate::fleet::parquet::col::<
                    <$ty as $crate::fleet::parquet::Cell>::Array,
                >(b, stringify!($field))?;)*
                out.reserve(b.num_rows());
                for r in 0..b.num_rows() {
                    out.push(Self {
                        $($field: $crate::fleet::parquet::cell::<$ty>(
                            $field,
                            r,
                            stringify!($field),
                        )?,)*
                    });
                }
                Ok(())
            }
        }
    };
}
pub(crate) use table_row;

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

/// A column of a batch, of the type asked, or an error naming it.
pub fn col<'a, A: Array + 'static>(b: &'a RecordBatch, name: &str) -> Result<&'a A, String> {
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

fn get_t(a: &TimestampMicrosecondArray, r: usize) -> Option<Time> {
    (!a.is_null(r))
        .then(|| chrono::DateTime::from_timestamp_micros(a.value(r)))
        .flatten()
}

/// A file's rows of one table (the fleet report and the tests read them back).
pub fn decode<R: Columns>(file: bytes::Bytes) -> Result<Vec<R>, String> {
    let mut out = Vec::new();
    each_batch(file, None, |b| R::decode(b, &mut out))?;
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
                severity: severity(sev.value(r))
                    .map_err(|e| format!("column severity, row {r}: {e}"))?,
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
