//! The pure core of spark-triage: what a pod of a Spark application is (the projection
//! every other part reads), Spark's own executor states and texts, the diagnosis rules and
//! the one verdict per executor, and the reading of the documents people hand the tool.
//!
//! No I/O runtime, no Kubernetes client, no terminal: everything here is a function of its
//! input and never panics on cluster data. The product (sources, store, UI, commands) and
//! the simulator build on it; it depends on neither.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod allocator;
pub mod classify;
pub mod diagnose;
pub mod explain;
pub mod input;
pub mod model;
pub mod spark;
pub mod text;
pub mod version;
