use std::collections::BTreeMap;

use super::*;
use crate::spark::spark_time;

/// A driver's `spark.properties` as spark-submit writes it (the keys this module reads plus
/// ones it must ignore, a secret among them).
fn props(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut p: BTreeMap<String, String> = [
        ("spark.app.name", "etl-nightly"),
        ("spark.app.id", "spark-3f1c2a9d"),
        ("spark.executor.instances", "8"),
        ("spark.executor.memory", "4g"),
        ("spark.kubernetes.namespace", "data"),
        ("spark.hadoop.fs.s3a.secret.key", "AKIA-not-for-print"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    for (k, v) in extra {
        p.insert((*k).to_owned(), (*v).to_owned());
    }
    p
}

fn v(s: &str) -> Option<SparkVersion> {
    SparkVersion::parse(s)
}

fn findings(extra: &[(&str, &str)], version: &str) -> Vec<Finding> {
    config_findings(
        &Settings::from_properties(&props(extra)),
        v(version),
        FailureBudget::Limit(16),
        0,
    )
}

#[test]
fn spark_defaults_predict_nothing() {
    assert!(findings(&[], "4.3.0").is_empty());
    assert!(findings(&[], "3.5.7").is_empty());
    let s = Settings::from_properties(&props(&[]));
    assert!(
        !format!("{s:?}").contains("AKIA"),
        "only the settings read are kept"
    );
}

#[test]
fn dynamic_allocation_without_shuffle_tracking_refuses_to_start() {
    let da = [
        ("spark.dynamicAllocation.enabled", "true"),
        ("spark.dynamicAllocation.shuffleTracking.enabled", "false"),
    ];
    let f = findings(&da, "4.3.0");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].code, Code::DynamicAllocationShuffle);
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].witness, Witness::Config);
    assert!(
        f[0].summary.contains("refuses to start"),
        "{}",
        f[0].summary
    );
    assert!(
        f[0].hint
            .contains("--conf spark.dynamicAllocation.shuffleTracking.enabled=true")
    );

    // Unset: 3.4+ tracks by default (SPARK-39846), 3.3 does not.
    let unset = [("spark.dynamicAllocation.enabled", "true")];
    assert!(findings(&unset, "3.4.0").is_empty());
    let f = findings(&unset, "3.3.2");
    assert_eq!(f[0].severity, Severity::Error);
    assert!(
        f[0].evidence[0].contains("default in Spark 3.3.2 is false"),
        "{:?}",
        f[0].evidence
    );
    // The version unknown: said so, not guessed.
    let f = config_findings(
        &Settings::from_properties(&props(&unset)),
        None,
        FailureBudget::Unknown,
        0,
    );
    assert_eq!(f[0].severity, Severity::Info);
    assert!(f[0].summary.contains("depends on the Spark version"));

    // Decommission with shuffle blocks (their default) is a way; so is a remote shuffle.
    let decom = [
        ("spark.dynamicAllocation.enabled", "true"),
        ("spark.dynamicAllocation.shuffleTracking.enabled", "false"),
        ("spark.decommission.enabled", "true"),
    ];
    assert!(findings(&decom, "4.3.0").is_empty());
    // Decommission also keeps the data when a tracking timeout releases executors, and
    // when the version is unknown.
    let decom_timeout = [
        ("spark.dynamicAllocation.enabled", "true"),
        ("spark.dynamicAllocation.shuffleTracking.timeout", "10min"),
        ("spark.decommission.enabled", "true"),
    ];
    assert!(findings(&decom_timeout, "4.3.0").is_empty());
    assert!(
        config_findings(
            &Settings::from_properties(&props(
                &decom[..1]
                    .iter()
                    .chain(&decom[2..])
                    .copied()
                    .collect::<Vec<_>>()
            )),
            None,
            FailureBudget::Unknown,
            0
        )
        .is_empty()
    );
    let celeborn = [
        ("spark.dynamicAllocation.enabled", "true"),
        ("spark.dynamicAllocation.shuffleTracking.enabled", "false"),
        (
            "spark.shuffle.sort.io.plugin.class",
            "org.apache.spark.shuffle.celeborn.CelebornShuffleDataIO",
        ),
    ];
    assert!(findings(&celeborn, "4.3.0").is_empty());
}

#[test]
fn a_shuffle_tracking_timeout_releases_executors_whose_shuffle_data_is_needed() {
    let f = findings(
        &[
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.dynamicAllocation.shuffleTracking.timeout", "10min"),
        ],
        "4.3.0",
    );
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warn);
    assert_eq!(
        f[0].summary,
        "Executors that hold shuffle data are released after 10min: a stage that reads that \
         data later fails to fetch it and is recomputed"
    );
    // An external shuffle service on Kubernetes: none ships with Spark.
    let f = findings(
        &[
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.shuffle.service.enabled", "true"),
        ],
        "4.3.0",
    );
    assert_eq!(f[0].severity, Severity::Warn);
    assert!(f[0].hint.contains("7337"));
}

#[test]
fn the_heartbeat_must_be_well_below_the_network_timeout() {
    // Spark refuses interval >= timeout (SPARK-22754); a bare network timeout is seconds.
    let f = findings(
        &[
            ("spark.executor.heartbeatInterval", "120s"),
            ("spark.network.timeout", "120"),
        ],
        "4.3.0",
    );
    assert_eq!(f[0].code, Code::HeartbeatSettings);
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(
        f[0].evidence,
        ["spark.executor.heartbeatInterval=2min, spark.network.timeout=2min"]
    );
    // Not a quarter of it: warned, with how many misses lose an executor.
    let f = findings(&[("spark.executor.heartbeatInterval", "60s")], "4.3.0");
    assert_eq!(f[0].severity, Severity::Warn);
    assert!(
        f[0].summary.contains("2 missed heartbeats"),
        "{}",
        f[0].summary
    );
    assert!(f[0].evidence[0].ends_with("spark.network.timeout=2min (default)"));
    // A bare interval is milliseconds: 30000 = 30s, exactly a quarter: fine.
    assert!(findings(&[("spark.executor.heartbeatInterval", "30000")], "4.3.0").is_empty());
    assert!(findings(&[("spark.network.timeout", "600s")], "4.3.0").is_empty());
}

#[test]
fn batch_settings_that_flood_the_api_server_at_the_apps_size() {
    let big = [
        ("spark.executor.instances", "2000"),
        ("spark.kubernetes.allocation.batch.size", "200"),
    ];
    let f = findings(&big, "4.3.0");
    assert_eq!(f[0].code, Code::AllocationFlood);
    assert_eq!(f[0].severity, Severity::Warn);
    assert_eq!(
        f[0].summary,
        "The driver may create 200 executor pods a second (200 every 1s): 2000 executors \
         requested within 9s"
    );
    assert_eq!(
        f[0].evidence,
        [
            "spark.kubernetes.allocation.batch.size=200, batch.delay=1s (default)",
            "no spark.kubernetes.allocation.maxPendingPods bound"
        ]
    );
    // The same batch for an app of 100 is one batch: no flood.
    let small = [
        ("spark.executor.instances", "100"),
        ("spark.kubernetes.allocation.batch.size", "200"),
    ];
    assert!(findings(&small, "4.3.0").is_empty());
    // A missing unit: "1" is 1 ms, refused from 4.0 (SPARK-49447), a flood before.
    let f = findings(
        &[
            ("spark.executor.instances", "500"),
            ("spark.kubernetes.allocation.batch.delay", "1"),
        ],
        "4.1.0",
    );
    assert_eq!(f[0].severity, Severity::Error);
    assert!(
        f[0].summary.contains("Spark 4.1.0 refuses it"),
        "{}",
        f[0].summary
    );
    let f = findings(
        &[
            ("spark.executor.instances", "500"),
            ("spark.kubernetes.allocation.batch.delay", "1"),
        ],
        "3.5.7",
    );
    assert_eq!(f[0].severity, Severity::Warn);
    assert!(
        f[0].summary
            .starts_with("The driver may create 5000 executor pods a second (5 every 1ms)"),
        "{}",
        f[0].summary
    );
}

#[test]
fn the_task_and_executor_budgets_are_told_apart() {
    let s = Settings::from_properties(&props(&[("spark.task.maxFailures", "1")]));
    let f = config_findings(&s, v("4.3.0"), FailureBudget::Limit(16), 3);
    assert_eq!(f[0].code, Code::FailureBudgets);
    assert_eq!(f[0].severity, Severity::Warn);
    assert_eq!(
        f[0].summary,
        "No task is retried: one executor lost to the app's own failure fails its job; the app \
         aborts (exit 11) after more than 16 executor failures (spark.executor.maxNumFailures; \
         3 counted)"
    );
    // A task budget set: both budgets, for the record.
    let s = Settings::from_properties(&props(&[("spark.task.maxFailures", "8")]));
    let f = config_findings(&s, v("3.5.7"), FailureBudget::NoneBeforeSpark4, 2);
    assert_eq!(f[0].severity, Severity::Info);
    assert_eq!(
        f[0].summary,
        "Two budgets: a task's job aborts after 8 failed attempts (spark.task.maxFailures); \
         Spark 3.5.7 has no executor-failure limit on Kubernetes (2 counted)"
    );
    // Unset: the executor budget is the crash-loop finding's to say.
    let s = Settings::from_properties(&props(&[]));
    assert!(config_findings(&s, v("3.5.7"), FailureBudget::NoneBeforeSpark4, 2).is_empty());
}

#[test]
fn a_value_spark_cannot_read_is_said_not_taken_as_its_default() {
    let f = findings(
        &[
            ("spark.dynamicAllocation.enabled", "yes"),
            ("spark.network.timeout", "2 minutes"),
        ],
        "4.3.0",
    );
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].code, Code::UnreadableSetting);
    // Spark reads booleans ignoring case: "True" is true, not unreadable.
    let g = findings(
        &[
            ("spark.dynamicAllocation.enabled", "True"),
            ("spark.dynamicAllocation.shuffleTracking.enabled", "FALSE"),
        ],
        "4.3.0",
    );
    assert_eq!(g[0].code, Code::DynamicAllocationShuffle, "{g:#?}");
    assert_eq!(g[0].severity, Severity::Error);
    assert_eq!(
        f[0].evidence,
        [
            "spark.dynamicAllocation.enabled=\"yes\"",
            "spark.network.timeout=\"2 minutes\""
        ]
    );
}

#[test]
fn spark_time_strings() {
    let ms = Duration::from_millis(1);
    let s = Duration::from_secs(1);
    assert_eq!(spark_time("500ms", s), Some(Duration::from_millis(500)));
    assert_eq!(spark_time(" 2min ", ms), Some(Duration::from_secs(120)));
    assert_eq!(spark_time("1H", ms), Some(Duration::from_secs(3600)));
    assert_eq!(spark_time("100us", ms), Some(Duration::from_micros(100)));
    assert_eq!(spark_time("120", s), Some(Duration::from_secs(120)));
    assert_eq!(spark_time("120", ms), Some(Duration::from_millis(120)));
    assert_eq!(spark_time("", ms), None);
    assert_eq!(spark_time("1 fortnight", ms), None);
    assert_eq!(spark_time("99999999999999999999", ms), None);
}
