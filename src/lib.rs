//! spark-triage: watch and explain the executor pods of Apache Spark applications on
//! Kubernetes.
//!
//! The pure core (`model`, `classify`, `spark`, `diagnose`) does no I/O and never panics on
//! cluster data; `input` reads documents people hand us; `explain` and `cli` are the edge.

pub mod actions;
pub mod app;
pub mod classify;
pub mod cli;
pub mod commands;
pub mod diagnose;
pub mod effect;
pub mod explain;
pub mod input;
pub mod model;
pub mod record;
pub mod redact;
pub mod report;
pub mod sim;
pub mod source;
pub mod spark;
pub mod status;
pub mod store;
pub mod tui;
pub mod ui;
