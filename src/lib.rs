//! spark-triage: watch and explain the executor pods of Apache Spark applications on
//! Kubernetes.
//!
//! The pure core (`model`, `classify`, `spark`, `diagnose`, `input`, `explain`) is the
//! `spark-triage-core` crate and the simulated cluster the `spark-triage-sim` crate; both
//! are re-exported here under their old names. This crate holds the sources, the store,
//! recordings, the app and its UI, the effects and the commands.

// The pure core, under the names the rest of the product has always used.
pub use spark_triage_core::{classify, diagnose, explain, input, model, spark, text, version};
// The simulated cluster (`demo`, `sim`, the tests).
pub use spark_triage_sim as sim;

pub mod actions;
pub mod app;
pub mod cli;
pub mod commands;
pub mod effect;
pub mod record;
pub mod redact;
pub mod report;
pub mod source;
pub mod status;
pub mod store;
pub mod tui;
pub mod ui;
