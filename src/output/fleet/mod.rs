//! `report --tables URL`: the fleet report, from the Parquet tables the recorders (or
//! `export --tables`) wrote: per application across its runs and clusters, the endings by
//! cause, the OOM breakdown, the failures Spark counted, the waits, the worst nodes. Read
//! a file at a time (partitions outside the window or cluster are not read), so memory is
//! the aggregates', not the rows'.

use std::collections::BTreeMap;

use serde::Serialize;
use spark_triage_core::diagnose::Code;
use spark_triage_core::model::{Time, fmt_time};

use crate::fleet::place::Listed;
use crate::fleet::{Place, Table, parquet, rows};

mod markdown;

pub use markdown::markdown;

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
    /// Files that are not readable table files (what each said): the report is without
    /// them (or their rows after the fault).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
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
    /// The median wait, to within 5 % (waits are summed in 5 %-wide buckets).
    pub pending_median_seconds: Option<f64>,
    /// What its runs' executor losses cost and what they left idle, summed over the runs
    /// whose cost was read (their event logs); absent when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<FleetCost>,
}

/// Cost figures summed over an app's runs (`app_runs`' cost columns).
#[derive(Debug, Serialize, Default, Clone, PartialEq, schemars::JsonSchema)]
pub struct FleetCost {
    /// Runs whose cost was read.
    pub runs: usize,
    pub recompute_wall_seconds: f64,
    pub recomputed_task_seconds: f64,
    pub allocated_core_seconds: f64,
    pub busy_task_seconds: f64,
    pub idle_tail_executor_seconds: f64,
}

impl FleetCost {
    fn add(&mut self, r: &rows::RunRow) {
        let Some(wall) = r.recompute_wall_seconds else {
            return;
        };
        self.runs += 1;
        self.recompute_wall_seconds += wall;
        self.recomputed_task_seconds += r.recomputed_task_seconds.unwrap_or(0.0);
        self.allocated_core_seconds += r.allocated_core_seconds.unwrap_or(0.0);
        self.busy_task_seconds += r.busy_task_seconds.unwrap_or(0.0);
        self.idle_tail_executor_seconds += r.idle_tail_executor_seconds.unwrap_or(0.0);
    }

    /// The share of the paid core time no task used, in percent.
    pub fn idle_percent(&self) -> Option<f64> {
        (self.allocated_core_seconds > 0.0).then(|| {
            (100.0 * (1.0 - self.busy_task_seconds / self.allocated_core_seconds)).max(0.0)
        })
    }
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
    /// To within 5 % (waits are summed in 5 %-wide buckets).
    pub median_seconds: f64,
    pub max_seconds: f64,
}

impl Totals {
    fn add(&mut self, e: &parquet::EndingRef<'_>) {
        self.endings += 1;
        self.failures += usize::from(e.failure);
        self.counted += usize::from(e.counted);
        self.missing += usize::from(e.missing);
        bump(&mut self.by_cause, e.cause);
        // Only the codes an OOM can be (a full parse per row costs seconds a month).
        if let Some(code) = Code::OOM.into_iter().find(|c| c.as_str() == e.cause) {
            self.oom.add(code, e.severity);
        }
    }

    fn merge(&mut self, o: &Totals) {
        self.endings += o.endings;
        self.failures += o.failures;
        self.counted += o.counted;
        self.missing += o.missing;
        self.oom.container += o.oom.container;
        self.oom.jvm += o.oom.jvm;
        self.oom.node += o.oom.node;
        for (c, n) in &o.by_cause {
            *self.by_cause.entry(c.clone()).or_default() += n;
        }
    }
}

/// One more under `key` (allocating the key only the first time).
fn bump(m: &mut BTreeMap<String, usize>, key: &str) {
    match m.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            m.insert(key.to_owned(), 1);
        }
    }
}

/// Durations in logarithmic buckets (5 % wide): a median and a maximum in constant memory,
/// whatever the number of waits.
#[derive(Debug, Default, Clone)]
struct Histogram {
    buckets: BTreeMap<u32, usize>,
    n: usize,
    max: f64,
}

impl Histogram {
    fn bucket(s: f64) -> u32 {
        // ln(1 + s) in steps of ln(1.05): 0 s is bucket 0; a year is about 350.
        ((1.0 + s.max(0.0)).ln() / 1.05f64.ln()) as u32
    }

    fn add(&mut self, s: f64) {
        if !s.is_finite() {
            return;
        }
        *self.buckets.entry(Self::bucket(s)).or_default() += 1;
        self.n += 1;
        self.max = self.max.max(s);
    }

    /// The median, to within its bucket (the bucket's middle).
    fn median(&self) -> Option<f64> {
        let half = self.n.checked_sub(1)? / 2;
        let mut seen = 0;
        for (b, n) in &self.buckets {
            seen += n;
            if seen > half {
                let mid = 1.05f64.powf(f64::from(*b) + 0.5) - 1.0;
                return Some((mid * 10.0).round() / 10.0);
            }
        }
        None
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
struct AppTally {
    ids: std::collections::BTreeSet<String>,
    run_verdicts: BTreeMap<String, usize>,
    totals: Totals,
    waits: Histogram,
    cost: FleetCost,
}

/// A node's failures, and by cause.
type NodeSums = (usize, BTreeMap<String, usize>);

/// The sums, keyed by application; a row finds its app without allocating.
#[derive(Default)]
struct Sums {
    apps: Vec<((String, String, String), AppTally)>,
    index: std::collections::HashMap<(String, String, String), usize>,
    /// cluster → node → (failures, by cause).
    nodes: BTreeMap<String, BTreeMap<String, NodeSums>>,
    waits: BTreeMap<String, Histogram>,
}

impl Sums {
    /// The app of a row of `cluster` (its name, else its id), with the run's id noted.
    fn app(&mut self, cluster: &str, ns: &str, id: &str, name: Option<&str>) -> &mut AppTally {
        let key = (
            cluster.to_owned(),
            ns.to_owned(),
            name.unwrap_or(id).to_owned(),
        );
        let i = match self.index.get(&key) {
            Some(i) => *i,
            None => {
                self.apps.push((key.clone(), AppTally::default()));
                self.index.insert(key, self.apps.len() - 1);
                self.apps.len() - 1
            }
        };
        let a = &mut self.apps[i].1;
        if !a.ids.contains(id) {
            a.ids.insert(id.to_owned());
        }
        a
    }
}

/// A file's rows of one app come together: the last app's index is reused.
struct Last {
    key: (String, String, Option<String>),
    index: usize,
}

fn app_index(
    sums: &mut Sums,
    last: &mut Option<Last>,
    cluster: &str,
    ns: &str,
    id: &str,
    name: Option<&str>,
) -> usize {
    if let Some(l) = last
        && l.key.0 == ns
        && l.key.1 == id
        && l.key.2.as_deref() == name
    {
        return l.index;
    }
    sums.app(cluster, ns, id, name);
    let key = (
        cluster.to_owned(),
        ns.to_owned(),
        name.unwrap_or(id).to_owned(),
    );
    let index = sums.index[&key];
    *last = Some(Last {
        key: (ns.to_owned(), id.to_owned(), name.map(str::to_owned)),
        index,
    });
    index
}

/// A table's files in the window: listed a cluster and a date at a time (a year of
/// history is not listed to read a month), or whole for a window over 400 days.
async fn files_in_window(
    place: &Place,
    table: Table,
    f: &Filter,
    from_date: &str,
    to_date: &str,
) -> Result<Vec<Listed>, String> {
    let clusters: Vec<String> = match &f.cluster {
        Some(c) => vec![c.clone()],
        None => place
            .folders(table.name())
            .await?
            .into_iter()
            .filter_map(|p| p.strip_prefix("cluster=").map(str::to_owned))
            .collect(),
    };
    let days = (f.until.date_naive() - f.since.date_naive()).num_days();
    let mut out = Vec::new();
    for c in clusters {
        let base = format!("{}/cluster={c}", table.name());
        if days > 400 {
            out.extend(place.list(&base).await?);
            continue;
        }
        let mut d = f.since.date_naive();
        while d <= f.until.date_naive() {
            out.extend(
                place
                    .list(&format!("{base}/date={}", d.format("%Y-%m-%d")))
                    .await?,
            );
            let Some(next) = d.succ_opt() else { break };
            d = next;
        }
    }
    out.retain(|l| {
        partition(&l.key).is_some_and(|(c, d)| {
            f.cluster.as_deref().is_none_or(|w| w == c) && d >= from_date && d <= to_date
        })
    });
    Ok(out)
}

/// One table file folded into the sums: the report's filter, the file's cluster, whether
/// any of its rows was in the report, and the last app a row found (a file's rows of one
/// app come together).
struct FileFold<'s> {
    f: &'s Filter,
    sums: &'s mut Sums,
    cluster: &'s str,
    seen: bool,
    last: Option<Last>,
}

impl FileFold<'_> {
    /// In the report's window.
    fn in_window(&self, t: Option<Time>) -> bool {
        t.is_some_and(|t| t >= self.f.since && t <= self.f.until)
    }

    /// The app the report asks for (every app when it names none).
    fn app_matches(&self, id: &str, name: Option<&str>) -> bool {
        self.f
            .app
            .as_deref()
            .is_none_or(|a| a == id || name == Some(a))
    }

    /// An `executor_endings` row: its app's totals, and its node's failures.
    fn ending(&mut self, e: parquet::EndingRef<'_>) {
        if !self.in_window(e.ended_at) || !self.app_matches(e.app_id, e.app_name) {
            return;
        }
        self.seen = true;
        let i = app_index(
            self.sums,
            &mut self.last,
            self.cluster,
            e.namespace,
            e.app_id,
            e.app_name,
        );
        self.sums.apps[i].1.totals.add(&e);
        if e.failure
            && let Some(node) = e.node
        {
            let nodes = match self.sums.nodes.get_mut(self.cluster) {
                Some(n) => n,
                None => self.sums.nodes.entry(self.cluster.to_owned()).or_default(),
            };
            let n = match nodes.get_mut(node) {
                Some(n) => n,
                None => nodes.entry(node.to_owned()).or_default(),
            };
            n.0 += 1;
            bump(&mut n.1, e.cause);
        }
    }

    /// An `app_runs` file's rows: each run's verdict, under its app.
    fn runs(&mut self, runs: Vec<rows::RunRow>) {
        for r in runs {
            if !self.in_window(Some(r.ended_at))
                || !self.app_matches(&r.app_id, r.app_name.as_deref())
            {
                continue;
            }
            self.seen = true;
            let a = self
                .sums
                .app(self.cluster, &r.namespace, &r.app_id, r.app_name.as_deref());
            bump(&mut a.run_verdicts, &r.verdict);
            a.cost.add(&r);
        }
    }

    /// A `pending_waits` row: its app's waits, and the waits by what held them.
    fn wait(&mut self, w: parquet::WaitRef<'_>) {
        if !self.in_window(w.waited_from) || !self.app_matches(w.app_id, w.app_name) {
            return;
        }
        self.seen = true;
        let i = app_index(
            self.sums,
            &mut self.last,
            self.cluster,
            w.namespace,
            w.app_id,
            w.app_name,
        );
        self.sums.apps[i].1.waits.add(w.seconds);
        match self.sums.waits.get_mut(w.reason) {
            Some(h) => h.add(w.seconds),
            None => self
                .sums
                .waits
                .entry(w.reason.to_owned())
                .or_default()
                .add(w.seconds),
        }
    }
}

/// Reads the tables and folds them into the report.
pub async fn build(place: &Place, f: &Filter) -> Result<FleetReport, String> {
    let (from_date, to_date) = (rows::date(&f.since), rows::date(&f.until));
    let mut files_read = 0;
    let mut bytes_read = 0;
    let mut clusters = std::collections::BTreeSet::new();
    let mut sums = Sums::default();
    let mut unreadable = Vec::new();
    for table in Table::ALL {
        let listed = files_in_window(place, table, f, &from_date, &to_date).await?;
        for l in listed {
            let Some((cluster, _)) = partition(&l.key) else {
                continue;
            };
            let data = place.get(&l).await?;
            files_read += 1;
            bytes_read += data.len() as u64;
            let mut fold = FileFold {
                f,
                sums: &mut sums,
                cluster,
                seen: false,
                last: None,
            };
            let read = match table {
                Table::Endings => parquet::each_ending(data, |e| fold.ending(e)),
                Table::Runs => parquet::decode::<rows::RunRow>(data).map(|runs| fold.runs(runs)),
                Table::Waits => parquet::each_wait(data, |w| fold.wait(w)),
            };
            // Not a table file of ours (corrupt, another writer's types): said, and the rest
            // of the fleet reported (what it held before the fault is counted).
            if let Err(e) = read {
                unreadable.push(format!("{}/{}: {e}", place.shown, l.key));
            }
            if fold.seen {
                clusters.insert(cluster.to_owned());
            }
        }
    }
    let (totals, out_apps) = fleet_apps(sums.apps);
    let out_nodes = fleet_nodes(sums.nodes);
    let out_waits = fleet_waits(sums.waits);
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
        unreadable,
    })
}

/// The apps, most failures first, and the totals of them all.
fn fleet_apps(apps: Vec<((String, String, String), AppTally)>) -> (Totals, Vec<FleetApp>) {
    let mut totals = Totals::default();
    let mut out_apps: Vec<FleetApp> = apps
        .into_iter()
        .map(|((cluster, namespace, app), a)| {
            totals.merge(&a.totals);
            FleetApp {
                cluster,
                namespace,
                app,
                runs: a.ids.len(),
                run_verdicts: a.run_verdicts,
                pending_waits: a.waits.n,
                pending_median_seconds: a.waits.median(),
                cost: (a.cost.runs > 0).then_some(a.cost),
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
    (totals, out_apps)
}

/// The nodes with the most failed executors (at most 20).
fn fleet_nodes(nodes: BTreeMap<String, BTreeMap<String, NodeSums>>) -> Vec<FleetNode> {
    let mut out_nodes: Vec<FleetNode> = nodes
        .into_iter()
        .flat_map(|(cluster, nodes)| {
            nodes
                .into_iter()
                .map(move |(node, (failures, by_cause))| FleetNode {
                    cluster: cluster.clone(),
                    node,
                    failures,
                    by_cause,
                })
        })
        .collect();
    out_nodes.sort_by(|a, b| b.failures.cmp(&a.failures).then(a.node.cmp(&b.node)));
    out_nodes.truncate(20);
    out_nodes
}

/// The waits by what held them, the most first.
fn fleet_waits(waits: BTreeMap<String, Histogram>) -> Vec<FleetWait> {
    let mut out_waits: Vec<FleetWait> = waits
        .into_iter()
        .map(|(reason, h)| FleetWait {
            reason,
            waits: h.n,
            median_seconds: h.median().unwrap_or(0.0),
            max_seconds: h.max,
        })
        .collect();
    out_waits.sort_by(|a, b| b.waits.cmp(&a.waits).then(a.reason.cmp(&b.reason)));
    out_waits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_a_histogram_is_within_its_bucket() {
        let mut h = Histogram::default();
        assert_eq!(h.median(), None);
        for s in [1.0, 2.0, 3.0, 100.0, 1000.0, f64::NAN] {
            h.add(s);
        }
        assert_eq!(h.n, 5, "a NaN is not a wait");
        let m = h.median().expect("median");
        assert!((m - 3.0).abs() <= 3.0 * 0.05 + 0.1, "{m}");
        assert_eq!(h.max, 1000.0);
        let mut one = Histogram::default();
        one.add(0.0);
        assert!(one.median().expect("median") < 0.1);
    }

    #[test]
    fn a_key_names_its_partition() {
        assert_eq!(
            partition("executor_endings/cluster=prod-eu/date=2026-12-04/part-1.parquet"),
            Some(("prod-eu", "2026-12-04"))
        );
        assert_eq!(partition("executor_endings/part-1.parquet"), None);
    }
}
