//! Spark's failure budget (`spark.executor.maxNumFailures` and its defaults), as the app's
//! findings and the incident strip say it.

/// Spark's failure budget for an app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureBudget {
    /// Spark aborts the app (exit 11) when more executors than this have failed.
    Limit(u32),
    /// Before 4.0 Spark has no executor-failure limit on Kubernetes.
    NoneBeforeSpark4,
    /// Dynamic allocation without `maxExecutors`: effectively unlimited.
    Unlimited,
    /// The driver's configuration was not read.
    Unknown,
}
