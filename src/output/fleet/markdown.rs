//! The fleet report as markdown that reads well pasted into a ticket.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use spark_triage_core::text;

use super::FleetReport;

fn causes(m: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(c, n)| format!("`{}` ×{n}", text::field(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Markdown that reads well pasted into a ticket.
pub fn markdown(r: &FleetReport) -> String {
    let md = |x: &str| text::field(x).replace('|', "\\|");
    let mut s = String::new();
    let _ = writeln!(s, "# spark-triage fleet report: {}", md(&r.source));
    let _ = writeln!(
        s,
        "\n{} to {}, clusters: {} ({} files, {} bytes read).\n",
        r.since,
        r.until,
        if r.clusters.is_empty() {
            "none".to_owned()
        } else {
            r.clusters
                .iter()
                .map(|c| md(c))
                .collect::<Vec<_>>()
                .join(", ")
        },
        r.files_read,
        r.bytes_read
    );
    for u in &r.unreadable {
        let _ = writeln!(s, "**Not read:** {}\n", md(u));
    }
    let t = &r.totals;
    if t.endings == 0 && r.apps.is_empty() {
        s.push_str("No executor ended in the window.\n");
        return s;
    }
    let _ = writeln!(
        s,
        "**{} executors ended, {} failures ({} counted by Spark), {} missing.** By cause: {}\n",
        t.endings,
        t.failures,
        t.counted,
        t.missing,
        causes(&t.by_cause)
    );
    if t.oom.container + t.oom.jvm + t.oom.node > 0 {
        let _ = writeln!(
            s,
            "**Out of memory:** container (cgroup, OOMKilled) {} · JVM heap (exit 52) {} · node-level SIGKILL {}\n",
            t.oom.container, t.oom.jvm, t.oom.node
        );
    }
    s.push_str("## Applications\n\n| cluster | namespace | app | runs | ended | failures | counted | OOM (container/JVM/node) | causes |\n|---|---|---|---|---|---|---|---|---|\n");
    for a in &r.apps {
        let o = &a.totals.oom;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {}/{}/{} | {} |",
            md(&a.cluster),
            md(&a.namespace),
            md(&a.app),
            a.runs,
            a.totals.endings,
            a.totals.failures,
            a.totals.counted,
            o.container,
            o.jvm,
            o.node,
            causes(&a.totals.by_cause)
        );
    }
    s.push('\n');
    let mut costly: Vec<_> = r
        .apps
        .iter()
        .filter_map(|a| Some((a, a.cost.as_ref()?)))
        .collect();
    if !costly.is_empty() {
        // The most recomputation first, then the most idle.
        costly.sort_by(|(_, x), (_, y)| {
            y.recompute_wall_seconds
                .total_cmp(&x.recompute_wall_seconds)
                .then(
                    y.idle_tail_executor_seconds
                        .total_cmp(&x.idle_tail_executor_seconds),
                )
        });
        s.push_str("## Cost (runs with an event log read)

| cluster | namespace | app | runs | recompute (wall) | task time redone | core time paid | idle | dynamic allocation's idle tail |
|---|---|---|---|---|---|---|---|---|
");
        for (a, c) in costly {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.0}s | {:.0}s | {:.0}s | {} | {:.0}s |",
                md(&a.cluster),
                md(&a.namespace),
                md(&a.app),
                c.runs,
                c.recompute_wall_seconds,
                c.recomputed_task_seconds,
                c.allocated_core_seconds,
                c.idle_percent()
                    .map_or_else(|| "-".to_owned(), |p| format!("{p:.0} %")),
                c.idle_tail_executor_seconds
            );
        }
        s.push('\n');
    }
    if !r.nodes.is_empty() {
        s.push_str("## Nodes with the most failed executors\n\n| cluster | node | failures | causes |\n|---|---|---|---|\n");
        for n in &r.nodes {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                md(&n.cluster),
                md(&n.node),
                n.failures,
                causes(&n.by_cause)
            );
        }
        s.push('\n');
    }
    if !r.waits.is_empty() {
        s.push_str("## Waits\n\n| held by | executors | median | max |\n|---|---|---|---|\n");
        for w in &r.waits {
            let _ = writeln!(
                s,
                "| {} | {} | {:.0}s | {:.0}s |",
                md(&w.reason),
                w.waits,
                w.median_seconds,
                w.max_seconds
            );
        }
        s.push('\n');
    }
    s
}
