//! `report --tables URL`: the fleet report, from the Parquet tables the recorders (or
//! `export --tables`) wrote: per application across its runs and clusters, the endings by
//! cause, the OOM breakdown, the failures Spark counted, the waits, the worst nodes. Read
//! a file at a time (partitions outside the window or cluster are not read), so memory is
//! the aggregates', not the rows'.

use std::{collections::BTreeMap, fmt::Write as _};

use serde::Serialize;

use crate::record::tables::{Place, Table, parquet, place::Listed, rows};
use spark_triage_core::model::{Time, fmt_time};

/// What to read.
#[derive(Debug, Clone)]
pub struct Filter {
    pub since: Time,
    pub until: Time,
    pub cluster: Option<String>,
    /// An app's name or id.
    pub app: Option<String>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FleetReport {
    pub source: String,
    pub since: String,
    pub until: String,
    /// The clusters whose rows were read.
    pub clusters: Vec<String>,
    pub files_read: usize,
    pub bytes_read: u64,
    pub totals: Totals,
    /// Applications (by cluster, namespace and name: its runs together), most failures first.
    pub apps: Vec<FleetApp>,
    /// The nodes with the most failed executors (at most 20).
    pub nodes: Vec<FleetNode>,
    /// Waits for a node or a container, by what held them.
    pub waits: Vec<FleetWait>,
}

#[derive(Debug, Serialize, Default, schemars::JsonSchema)]
pub struct Totals {
    pub endings: usize,
    pub failures: usize,
    /// Counted toward `spark.executor.maxNumFailures`.
    pub counted: usize,
    pub missing: usize,
    /// Endings by their verdict's cause (a finding code, `none`).
    pub by_cause: BTreeMap<String, usize>,
    pub oom: super::report::OomBreakdown,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FleetApp {
    pub cluster: String,
    pub namespace: String,
    /// Its name (its id when it had none).
    pub app: String,
    /// Its runs' app ids seen (endings or runs).
    pub runs: usize,
    /// Runs that ended, by the app verdict's cause (`app_runs.verdict`).
    pub run_verdicts: BTreeMap<String, usize>,
    #[serde(flatten)]
    pub totals: Totals,
    pub pending_waits: usize,
    pub pending_median_seconds: Option<f64>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FleetNode {
    pub cluster: String,
    pub node: String,
    pub failures: usize,
    pub by_cause: BTreeMap<String, usize>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FleetWait {
    pub reason: String,
    pub waits: usize,
    pub median_seconds: f64,
    pub max_seconds: f64,
}

impl Totals {
    fn add(&mut self, e: &rows::Ending) {
        self.endings += 1;
        self.failures += usize::from(e.failure);
        self.counted += usize::from(e.counted);
        self.missing += usize::from(e.missing);
        *self.by_cause.entry(e.cause.clone()).or_default() += 1;
        match (e.cause.as_str(), e.severity.as_str()) {
            ("container-oom-killed", _) => self.oom.container += 1,
            ("jvm-oom", _) => self.oom.jvm += 1,
            ("node-sigkill", "error") => self.oom.node += 1,
            _ => {}
        }
    }
}

/// `cluster=NAME/date=YYYY-MM-DD` of a file's key.
fn partition(key: &str) -> Option<(&str, &str)> {
    let mut cluster = None;
    let mut date = None;
    for part in key.split('/') {
        if let Some(c) = part.strip_prefix("cluster=") {
            cluster = Some(c);
        } else if let Some(d) = part.strip_prefix("date=") {
            date = Some(d);
        }
    }
    Some((cluster?, date?))
}

#[derive(Default)]
struct App {
    ids: std::collections::BTreeSet<String>,
    run_verdicts: BTreeMap<String, usize>,
    totals: Totals,
    waits: Vec<f64>,
}

/// Reads the tables and folds them into the report.
pub async fn build(place: &Place, f: &Filter) -> Result<FleetReport, String> {
    let (from_date, to_date) = (rows::date(&f.since), rows::date(&f.until));
    let mut files_read = 0;
    let mut bytes_read = 0;
    let mut clusters = std::collections::BTreeSet::new();
    let mut apps: BTreeMap<(String, String, String), App> = BTreeMap::new();
    let mut nodes: BTreeMap<(String, String), (usize, BTreeMap<String, usize>)> = BTreeMap::new();
    let mut waits: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let in_window = |t: &Time| *t >= f.since && *t <= f.until;
    let app_matches =
        |id: &str, name: Option<&str>| f.app.as_deref().is_none_or(|a| a == id || name == Some(a));
    for table in Table::ALL {
        let prefix = match &f.cluster {
            Some(c) => format!("{}/cluster={c}", table.name()),
            None => table.name().to_owned(),
        };
        let listed: Vec<Listed> = place
            .list(&prefix)
            .await?
            .into_iter()
            .filter(|l| {
                partition(&l.key).is_some_and(|(c, d)| {
                    f.cluster.as_deref().is_none_or(|w| w == c)
                        && d >= from_date.as_str()
                        && d <= to_date.as_str()
                })
            })
            .collect();
        for l in listed {
            let Some((cluster, _)) = partition(&l.key) else {
                continue;
            };
            let cluster = cluster.to_owned();
            let data = place.get(&l).await?;
            files_read += 1;
            bytes_read += data.len() as u64;
            let bad = |e: String| format!("{}/{}: {e}", place.shown, l.key);
            let app_key = |ns: &str, id: &str, name: Option<&str>| {
                (
                    cluster.clone(),
                    ns.to_owned(),
                    name.unwrap_or(id).to_owned(),
                )
            };
            match table {
                Table::Endings => {
                    for e in parquet::endings(data).map_err(bad)? {
                        if !in_window(&e.ended_at) || !app_matches(&e.app_id, e.app_name.as_deref())
                        {
                            continue;
                        }
                        clusters.insert(cluster.clone());
                        let a = apps
                            .entry(app_key(&e.namespace, &e.app_id, e.app_name.as_deref()))
                            .or_default();
                        a.ids.insert(e.app_id.clone());
                        a.totals.add(&e);
                        if e.failure
                            && let Some(node) = &e.node
                        {
                            let n = nodes.entry((cluster.clone(), node.clone())).or_default();
                            n.0 += 1;
                            *n.1.entry(e.cause.clone()).or_default() += 1;
                        }
                    }
                }
                Table::Runs => {
                    for r in parquet::runs(data).map_err(bad)? {
                        if !in_window(&r.ended_at) || !app_matches(&r.app_id, r.app_name.as_deref())
                        {
                            continue;
                        }
                        clusters.insert(cluster.clone());
                        let a = apps
                            .entry(app_key(&r.namespace, &r.app_id, r.app_name.as_deref()))
                            .or_default();
                        a.ids.insert(r.app_id.clone());
                        *a.run_verdicts.entry(r.verdict.clone()).or_default() += 1;
                    }
                }
                Table::Waits => {
                    for w in parquet::waits(data).map_err(bad)? {
                        if !in_window(&w.waited_from)
                            || !app_matches(&w.app_id, w.app_name.as_deref())
                        {
                            continue;
                        }
                        clusters.insert(cluster.clone());
                        let a = apps
                            .entry(app_key(&w.namespace, &w.app_id, w.app_name.as_deref()))
                            .or_default();
                        a.ids.insert(w.app_id.clone());
                        a.waits.push(w.seconds);
                        waits.entry(w.reason.clone()).or_default().push(w.seconds);
                    }
                }
            }
        }
    }
    let mut totals = Totals::default();
    let mut out_apps: Vec<FleetApp> = apps
        .into_iter()
        .map(|((cluster, namespace, app), mut a)| {
            totals.endings += a.totals.endings;
            totals.failures += a.totals.failures;
            totals.counted += a.totals.counted;
            totals.missing += a.totals.missing;
            totals.oom.container += a.totals.oom.container;
            totals.oom.jvm += a.totals.oom.jvm;
            totals.oom.node += a.totals.oom.node;
            for (c, n) in &a.totals.by_cause {
                *totals.by_cause.entry(c.clone()).or_default() += n;
            }
            FleetApp {
                cluster,
                namespace,
                app,
                runs: a.ids.len(),
                run_verdicts: a.run_verdicts,
                pending_waits: a.waits.len(),
                pending_median_seconds: median(&mut a.waits),
                totals: a.totals,
            }
        })
        .collect();
    out_apps.sort_by(|a, b| {
        b.totals
            .failures
            .cmp(&a.totals.failures)
            .then(b.totals.endings.cmp(&a.totals.endings))
            .then((&a.cluster, &a.namespace, &a.app).cmp(&(&b.cluster, &b.namespace, &b.app)))
    });
    let mut out_nodes: Vec<FleetNode> = nodes
        .into_iter()
        .map(|((cluster, node), (failures, by_cause))| FleetNode {
            cluster,
            node,
            failures,
            by_cause,
        })
        .collect();
    out_nodes.sort_by(|a, b| b.failures.cmp(&a.failures).then(a.node.cmp(&b.node)));
    out_nodes.truncate(20);
    let mut out_waits: Vec<FleetWait> = waits
        .into_iter()
        .map(|(reason, mut s)| FleetWait {
            reason,
            waits: s.len(),
            median_seconds: median(&mut s).unwrap_or(0.0),
            max_seconds: s.iter().copied().fold(0.0, f64::max),
        })
        .collect();
    out_waits.sort_by(|a, b| b.waits.cmp(&a.waits).then(a.reason.cmp(&b.reason)));
    Ok(FleetReport {
        source: place.shown.clone(),
        since: fmt_time(&f.since),
        until: fmt_time(&f.until),
        clusters: clusters.into_iter().collect(),
        files_read,
        bytes_read,
        totals,
        apps: out_apps,
        nodes: out_nodes,
        waits: out_waits,
    })
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

fn causes(m: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(c, n)| format!("`{}` ×{n}", spark_triage_core::text::field(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Markdown that reads well pasted into a ticket.
pub fn markdown(r: &FleetReport) -> String {
    let md = |x: &str| spark_triage_core::text::field(x).replace('|', "\\|");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_its_partition() {
        assert_eq!(
            partition("executor_endings/cluster=prod-eu/date=2026-12-04/part-1.parquet"),
            Some(("prod-eu", "2026-12-04"))
        );
        assert_eq!(partition("executor_endings/part-1.parquet"), None);
    }
}
