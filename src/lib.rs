//! spark-triage: watch and explain the executor pods of Apache Spark applications on
//! Kubernetes.
//!
//! The pure core (`model`, `classify`, `spark`, `diagnose`, `input`, `explain`) is the
//! `spark-triage-core` crate and the simulated cluster the `spark-triage-sim` crate; both
//! are reached by their own names (`spark_triage_core::model`), never through this crate.
//! This crate holds the sources, the store, recordings, the app and its UI, the effects and
//! the commands.

pub mod actions;
pub mod app;
pub mod cli;
pub mod commands;
pub mod diagnostics;
pub mod effect;
pub mod eventlog;
pub mod evidence;
pub mod failure;
pub mod flags;
pub mod fleet;
pub mod output;
pub mod publish;
pub mod record;
pub mod redact;
pub mod settings;
pub mod source;
pub mod storage;
pub mod store;
pub mod tui;
pub mod ui;
