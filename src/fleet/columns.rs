//! A table's columns, declared once ([`table_row!`]): the row's fields give the names in
//! order, each column's Arrow type and nullability ([`Cell`]), the encoder and the decoder.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, TimeUnit};
use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::Time;

/// The three tables, by their stable names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Endings,
    Runs,
    Waits,
}

impl Table {
    pub const ALL: [Self; 3] = [Self::Endings, Self::Runs, Self::Waits];

    pub fn name(self) -> &'static str {
        match self {
            Self::Endings => "executor_endings",
            Self::Runs => "app_runs",
            Self::Waits => "pending_waits",
        }
    }
}

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
    /// Each row's value when a file has no such column (one written before the column was
    /// added): null for a nullable column; none (an error) for the others.
    fn absent() -> Option<Self>;
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
    fn absent() -> Option<Self> {
        None
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
    fn absent() -> Option<Self> {
        Some(None)
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
        Ok(severity(a.value(r)))
    }
}

/// The severity a column names; one this build does not know (a newer writer's) reads as
/// info, as the tables' readers always read it: an older reader still reads a newer table.
pub fn severity(name: &str) -> Severity {
    Severity::parse(name).unwrap_or(Severity::Info)
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
    /// Appends a batch's rows to `out`; an error names the column and the row (`first`:
    /// the file's row number of the batch's first).
    fn decode(b: &RecordBatch, first: usize, out: &mut Vec<Self>) -> Result<(), String>;
}

/// A column's field: its name, and its type and nullability from the row field's type.
pub fn field<C: Cell>(name: &str) -> Field {
    Field::new(name, C::data_type(), C::NULLABLE)
}

/// A batch's column for a row field of type `C`: `None` when the file has none and the
/// column may be null (a file from before it was added); an error names it otherwise.
pub fn column<'a, C: Cell>(b: &'a RecordBatch, name: &str) -> Result<Option<&'a C::Array>, String> {
    if b.column_by_name(name).is_none() && C::absent().is_some() {
        return Ok(None);
    }
    col::<C::Array>(b, name).map(Some)
}

/// Row `r` of a column (`first`: the file's row number of the batch's first), or an error
/// naming the column and the row.
pub fn cell<C: Cell>(
    a: Option<&C::Array>,
    r: usize,
    first: usize,
    name: &str,
) -> Result<C, String> {
    let got = match a {
        Some(a) => C::get(a, r),
        None => C::absent().ok_or_else(|| "no such column".to_owned()),
    };
    got.map_err(|e| format!("column {name}, row {}: {e}", first + r))
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

        impl $crate::fleet::columns::Columns for $row {
            const TABLE: $crate::fleet::columns::Table = $table;
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];
            fn fields() -> Vec<arrow_schema::Field> {
                vec![$($crate::fleet::columns::field::<$ty>(stringify!($field))),*]
            }
            fn arrays(rows: &[Self]) -> Vec<arrow_array::ArrayRef> {
                vec![$(<$ty as $crate::fleet::columns::Cell>::array(
                    rows.iter().map(|r| &r.$field),
                )),*]
            }
            fn decode(
                b: &arrow_array::RecordBatch,
                first: usize,
                out: &mut Vec<Self>,
            ) -> Result<(), String> {
                $(let $field = $crate::fleet::columns::column::<$ty>(b, stringify!($field))?;)*
                out.reserve(b.num_rows());
                for r in 0..b.num_rows() {
                    out.push(Self {
                        $($field: $crate::fleet::columns::cell::<$ty>(
                            $field,
                            r,
                            first,
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

/// A column of a batch, of the type asked, or an error naming it.
pub fn col<'a, A: Array + 'static>(b: &'a RecordBatch, name: &str) -> Result<&'a A, String> {
    b.column_by_name(name)
        .ok_or_else(|| format!("no column {name}"))?
        .as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| format!("column {name} is not of the table's type"))
}
