//! The `scale` scenario, made rather than read: many apps on nodes big enough, with churn.

use super::*;

/// The `scale` scenario: `apps` applications of `executors` each, on nodes big enough.
pub fn scale(apps: u32, executors: u32, churn_per_sec: f64) -> Scenario {
    let total = u64::from(apps) * u64::from(executors);
    let nodes = total.div_ceil(100).max(1) as u32;
    let mut s = Scenario {
        name: "scale".into(),
        description: format!("{apps} apps × {executors} executors, churn {churn_per_sec}/s"),
        namespaces: vec!["spark-scale".into()],
        nodes: vec![NodeSpec {
            name: "scale-node".into(),
            count: nodes,
            cpu: "512".into(),
            memory: "4Ti".into(),
            pods: 1000,
            labels: BTreeMap::new(),
            taints: Vec::new(),
        }],
        pods: Vec::new(),
        quotas: Vec::new(),
        apps: Vec::new(),
        timeline: Vec::new(),
    };
    // Churn: each executor dies at a uniform time within total / churn seconds of starting,
    // so from the start about `churn` executors die per second (replacements likewise).
    let after = if churn_per_sec > 0.0 {
        let span = total as f64 / churn_per_sec;
        Some(format!("0ms..{}ms", (span * 1000.0) as u64))
    } else {
        None
    };
    for i in 0..apps {
        s.apps.push(AppSpec {
            name: format!("scale-app-{i}"),
            namespace: "spark-scale".into(),
            executors,
            delete_on_termination: true,
            cores: 1,
            memory_mib: 1024,
            overhead_mib: 384,
            spark_version: default_spark_version(),
            image: default_image(),
            // Spark's largest int: a bigger value is refused by Spark's conf parsing.
            max_failures: Some(SPARK_MAX_INT),
            start: None,
            allocation_batch: executors.max(1),
            conf: std::collections::BTreeMap::new(),
            priority_class: None,
            priority: None,
            fates: after
                .clone()
                .map(|a| {
                    vec![Fate {
                        executor: ExecutorSel::All,
                        after: Some(a),
                        exit: Some(137),
                        reason: Some("OOMKilled".into()),
                        ..Fate::default()
                    }]
                })
                .unwrap_or_default(),
            driver_fate: None,
            driver_memory: None,
            scale: Vec::new(),
            scheduling: None,
            allocator: Allocator::Direct,
            operator: None,
            executors_forbidden: false,
            streaming: None,
        });
    }
    s
}
