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

/// Where an app's failure budget comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetFrom {
    /// `spark.executor.maxNumFailures` as set.
    MaxNumFailures,
    /// Spark's default: max(2 × `spark.executor.instances` (default 2), 3).
    DefaultInstances,
    /// Spark's default with dynamic allocation: max(2 × `spark.dynamicAllocation.maxExecutors`, 3).
    DefaultMaxExecutors,
    /// Dynamic allocation without `maxExecutors`: no limit in practice.
    Unlimited,
    /// Before Spark 4.0: no executor-failure limit on Kubernetes.
    NoneBeforeSpark4,
    /// The driver's configuration was not read.
    Unknown,
}
