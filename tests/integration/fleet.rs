//! Fleet history end to end: the `churn` scenario recorded with `--tables` into a loopback S3
//! bucket (moto's, checking every request's signature), the recorder SIGKILLed and resumed
//! once; then the tables read by real engines (pyspark's Spark SQL and DuckDB, from PyPI)
//! and by `report --tables`, each giving the per-cause counts `report` gives on the same
//! recording, with no row twice. docs/fleet.md's example queries run here too.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use spark_triage::fleet::Table;
use spark_triage::fleet::parquet::column_names;

use super::common::{start_sim, succeeded, triage};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The pyspark venv's python (scripts/e2e/pyspark-venv.sh: pyspark and duckdb). The index
/// was reachable when the tests were built (`have_pypi`), so a failed install is a failure.
fn readers_python() -> std::path::PathBuf {
    let out = std::process::Command::new("bash")
        .arg(format!("{ROOT}/scripts/e2e/pyspark-venv.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "scripts/e2e/pyspark-venv.sh failed (see above)"
    );
    // …/venv/lib/python3.x/site-packages/pyspark
    let pyspark = String::from_utf8_lossy(&out.stdout);
    let dir = std::path::PathBuf::from(pyspark.lines().last().unwrap_or_default().trim());
    dir.ancestors()
        .nth(4)
        .map(|v| v.join("bin/python"))
        .expect("pyspark-venv.sh says where pyspark is")
}

/// Runs a Python program with these arguments; its stdout as JSON.
fn python(python: &std::path::Path, program: &str, args: &[&str]) -> Value {
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(program)
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// DuckDB over the Hive layout: counts per cause, and rows against distinct keys per table.
const DUCKDB: &str = r#"
import duckdb, json, sys
root = sys.argv[1]
def t(name):
    return f"read_parquet('{root}/{name}/*/*/*.parquet', hive_partitioning=true)"
out = {"by_cause": dict(duckdb.sql(f"select cause, count(*) from {t('executor_endings')} group by cause").fetchall())}
for name in ["executor_endings", "pending_waits"]:
    out[name] = list(duckdb.sql(f"select count(*), count(distinct (app_id, executor_id)) from {t(name)}").fetchone())
out["clusters"] = [r[0] for r in duckdb.sql(f"select distinct cluster from {t('executor_endings')}").fetchall()]
out["columns"] = {name: [c[0] for c in duckdb.sql(f"describe select * from {t(name)}").fetchall()]
                  for name in ["executor_endings", "pending_waits"]}
print(json.dumps(out))
"#;

/// Spark SQL (pyspark, local[1]) over the same directory.
const PYSPARK: &str = r#"
import json, sys
from pyspark.sql import SparkSession
root = sys.argv[1]
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.read.parquet(f"{root}/executor_endings").createOrReplaceTempView("executor_endings")
spark.read.parquet(f"{root}/pending_waits").createOrReplaceTempView("pending_waits")
rows = spark.sql("select cause, count(*) as n from executor_endings group by cause").collect()
out = {"by_cause": {r["cause"]: r["n"] for r in rows}}
for name in ["executor_endings", "pending_waits"]:
    r = spark.sql(f"select count(*) as n, count(distinct app_id, executor_id) as k from {name}").collect()[0]
    out[name] = [r["n"], r["k"]]
out["clusters"] = [r["cluster"] for r in spark.sql("select distinct cluster from executor_endings").collect()]
out["columns"] = {name: spark.table(name).columns for name in ["executor_endings", "pending_waits"]}
print(json.dumps(out))
spark.stop()
"#;

/// The cost columns of the run backfilled from tests/fixtures/eventlog/cost/shuffle-loss.json:
/// its app_runs row's (recompute, paid, busy) and its costliest ending's (executor, task
/// time redone, attempts added).
const DUCKDB_COST: &str = r#"
import duckdb, json, sys
root = sys.argv[1]
def t(name):
    return f"read_parquet('{root}/{name}/*/*/*.parquet', hive_partitioning=true, union_by_name=true)"
run = duckdb.sql(f"select recompute_wall_seconds, allocated_core_seconds, busy_task_seconds from {t('app_runs')} where app_name = 'cost-shuffle-loss'").fetchone()
ending = duckdb.sql(f"select executor_id, recomputed_task_seconds, stage_attempts_added from {t('executor_endings')} where app_name = 'cost-shuffle-loss' order by recomputed_task_seconds desc limit 1").fetchone()
print(json.dumps({"run": list(run), "ending": list(ending)}))
"#;

const PYSPARK_COST: &str = r#"
import json, sys
from pyspark.sql import SparkSession
root = sys.argv[1]
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
for name in ["executor_endings", "app_runs"]:
    spark.read.option("mergeSchema", "true").parquet(f"{root}/{name}").createOrReplaceTempView(name)
r = spark.sql("select recompute_wall_seconds, allocated_core_seconds, busy_task_seconds from app_runs where app_name = 'cost-shuffle-loss'").collect()[0]
e = spark.sql("select executor_id, recomputed_task_seconds, stage_attempts_added from executor_endings where app_name = 'cost-shuffle-loss' order by recomputed_task_seconds desc limit 1").collect()[0]
print(json.dumps({"run": list(r), "ending": list(e)}))
spark.stop()
"#;

/// The bucket's `fleet/` objects copied to `copy` (scripts/s3/get.py): their keys.
fn copy_bucket(bin: &str, endpoint: &str, env: &[(&str, &str)], copy: &std::path::Path) -> String {
    let got = std::process::Command::new(format!("{bin}/python"))
        .arg(format!("{ROOT}/scripts/s3/get.py"))
        .args([endpoint, "spark-logs", "fleet/"])
        .arg(copy)
        .envs(env.iter().copied())
        .stderr(Stdio::inherit())
        .output()
        .expect("get.py runs");
    assert!(got.status.success(), "scripts/s3/get.py failed");
    String::from_utf8_lossy(&got.stdout).into_owned()
}

/// `report -o json`'s per-cause counts, summed over its apps.
fn by_cause(report: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for a in report["apps"].as_array().cloned().unwrap_or_default() {
        for (cause, n) in a["by_cause"].as_object().cloned().unwrap_or_default() {
            *out.entry(cause).or_default() += n.as_u64().unwrap_or(0);
        }
    }
    out
}

fn as_counts(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, n)| (k, n.as_u64().unwrap_or(0)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(all(have_python3, have_java, have_pypi)),
    ignore = "needs python3, the Python package index (moto, pyspark, duckdb) and java (pyspark's Spark)"
)]
async fn tables_recorded_to_s3_across_a_sigkill_read_the_same_in_spark_duckdb_and_report() {
    let py = readers_python();
    let (_moto, endpoint, bin) = super::object_store::moto();
    let base = std::env::temp_dir().join(format!("st-fleet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("empty")).expect("tmp");
    // A user with a key allowed s3:*, and the bucket (spark-logs), nothing in it.
    let fill = std::process::Command::new(format!("{bin}/python"))
        .arg(format!("{ROOT}/scripts/s3/fill.py"))
        .arg(&endpoint)
        .arg(base.join("empty"))
        .stderr(Stdio::inherit())
        .output()
        .expect("fill.py runs");
    assert!(fill.status.success(), "scripts/s3/fill.py failed");
    let key: Value = serde_json::from_slice(&fill.stdout).expect("the key as JSON");
    let (id, secret) = (
        key["access_key_id"].as_str().expect("an id").to_owned(),
        key["secret_access_key"]
            .as_str()
            .expect("a secret")
            .to_owned(),
    );
    let env = [
        ("AWS_ACCESS_KEY_ID", id.as_str()),
        ("AWS_SECRET_ACCESS_KEY", secret.as_str()),
        ("AWS_ENDPOINT", endpoint.as_str()),
    ];
    let url = "s3://spark-logs/fleet";

    let sim = start_sim("churn", 1.0, &[]).await;
    let kc = sim.kubeconfig.display().to_string();
    let dir = base.join("segments");
    let record = |extra: &[&str]| {
        let mut c = triage(&["record", "--kubeconfig", &kc, "-A"])
            .without_machine_aws()
            .arg(&dir)
            // Executors are forgotten (at each rotation) long before a tables round: their
            // rows must outlive the store's memory of them.
            .args(["--rotate", "20s", "--forget-after", "20s"])
            .args(["--tables", url, "--tables-every", "45s"])
            .args(["--cluster-name", "sim-eu"])
            .args(extra)
            .envs(env)
            .command();
        c.stdout(Stdio::null()).stderr(Stdio::piped());
        c
    };
    let mut first = record(&[]).spawn().expect("record starts");
    tokio::time::sleep(Duration::from_secs(55)).await;
    // SIGKILL: whatever it wrote stays; what it had not written yet is the resumed run's.
    first.start_kill().expect("SIGKILL");
    let _ = first.wait().await;
    let second = record(&["--duration", "50s"])
        .output()
        .await
        .expect("the second run");
    succeeded(&second);
    let log = String::from_utf8_lossy(&second.stderr);
    assert!(log.contains("tables: "), "it says what it wrote: {log}");
    assert!(!log.contains("warning"), "{log}");
    assert!(!log.contains(&secret), "no secret said");

    // `report` on the recording: the reference.
    let out = triage(&["report"])
        .without_machine_aws()
        .arg(&dir)
        .args(["-o", "json"])
        .output()
        .await;
    succeeded(&out);
    let reference = by_cause(&serde_json::from_slice(&out.stdout).expect("JSON"));
    let endings: u64 = reference.values().sum();
    assert!(endings >= 10, "churn ends executors: {reference:?}");

    // `report --tables` on the bucket.
    let out = triage(&["report", "--tables", url, "--since", "1d", "-o", "json"])
        .without_machine_aws()
        .envs(env)
        .output()
        .await;
    succeeded(&out);
    let fleet: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        as_counts(&fleet["totals"]["by_cause"]),
        reference,
        "report --tables against report"
    );
    assert_eq!(fleet["clusters"], serde_json::json!(["sim-eu"]));
    // A cluster with no rows: nothing read.
    let out = triage(&[
        "report",
        "--tables",
        url,
        "--cluster",
        "other",
        "-o",
        "json",
    ])
    .without_machine_aws()
    .envs(env)
    .output()
    .await;
    succeeded(&out);
    let none: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(none["files_read"], 0, "pruned by partition: {none}");

    // The bucket's objects as the engines read them (each one whole: every object parses).
    let copy = base.join("copy");
    let keys = copy_bucket(&bin, &endpoint, &env, &copy);
    assert!(
        keys.lines().all(|k| k.ends_with(".parquet")
            && k.contains("/cluster=sim-eu/date=")
            && !k.rsplit('/').next().unwrap_or_default().starts_with('.')),
        "only whole table files, Hive-partitioned: {keys}"
    );
    assert!(
        keys.lines()
            .filter(|k| k.starts_with("fleet/executor_endings/"))
            .count()
            >= 2,
        "written in rounds, by both runs: {keys}"
    );
    let copy_s = copy.display().to_string();

    for (engine, program) in [("duckdb", DUCKDB), ("pyspark", PYSPARK)] {
        let got = python(&py, program, &[&copy_s]);
        assert_eq!(
            as_counts(&got["by_cause"]),
            reference,
            "{engine} against report"
        );
        for table in ["executor_endings", "pending_waits"] {
            assert_eq!(
                got[table][0], got[table][1],
                "{engine}: no row of {table} twice: {got}"
            );
        }
        assert_eq!(got["clusters"], serde_json::json!(["sim-eu"]), "{engine}");
        // Every declared column, in order, then the partition's: a column declared once
        // (fleet::rows' table_row!) reaches the engines.
        for table in [Table::Endings, Table::Waits] {
            let mut want = column_names(table).to_vec();
            want.extend(["cluster", "date"]);
            assert_eq!(
                got["columns"][table.name()],
                serde_json::json!(want),
                "{engine}: the columns of {}",
                table.name()
            );
        }
    }

    // A run nobody recorded, backfilled from its Spark event log as another cluster: the
    // app's run is in app_runs (churn's app does not end).
    let out = triage(&["export"])
        .without_machine_aws()
        .arg(format!("{ROOT}/tests/fixtures/eventlog/real-spark-k8s"))
        .args(["--tables", url, "--cluster-name", "backfill"])
        .envs(env)
        .output()
        .await;
    succeeded(&out);
    // And a real Spark 4.3 run whose executor was SIGKILLed under a shuffle: the cost of its
    // loss, as `report` of its log says it.
    let cost_log = format!("{ROOT}/tests/fixtures/eventlog/cost/shuffle-loss.json");
    let out = triage(&[
        "export",
        &cost_log,
        "--tables",
        url,
        "--cluster-name",
        "backfill",
    ])
    .without_machine_aws()
    .envs(env)
    .output()
    .await;
    succeeded(&out);
    let out = triage(&["report", &cost_log, "-o", "json"]).output().await;
    succeeded(&out);
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let cost = &report["apps"][0]["cost"];
    let _ = std::fs::remove_dir_all(&copy);
    assert!(
        copy_bucket(&bin, &endpoint, &env, &copy).contains("fleet/app_runs/cluster=backfill/"),
        "the backfilled run"
    );
    let copy_s = copy.display().to_string();
    for (engine, program) in [("duckdb", DUCKDB_COST), ("pyspark", PYSPARK_COST)] {
        let got = python(&py, program, &[&copy_s]);
        let close = |a: &Value, b: &Value| {
            (a.as_f64().unwrap_or(f64::NAN) - b.as_f64().unwrap_or(f64::NAN)).abs() < 1e-6
        };
        assert!(
            close(&got["run"][0], &cost["recompute_seconds"])
                && close(&got["run"][1], &cost["waste"]["allocated_core_seconds"])
                && close(&got["run"][2], &cost["waste"]["busy_task_seconds"]),
            "{engine}: app_runs' cost {got} against report's {cost}"
        );
        let loss = &cost["losses"][0];
        assert_eq!(got["ending"][0], loss["executor"], "{engine}: {got}");
        let redone = loss["rerun_task_seconds"].as_f64().unwrap_or_default()
            + loss["task_seconds_lost"].as_f64().unwrap_or_default();
        assert!(
            close(&got["ending"][1], &serde_json::json!(redone))
                && got["ending"][2] == serde_json::json!(loss["reruns"].as_array().map(Vec::len)),
            "{engine}: executor_endings' cost {got} against report's {loss}"
        );
    }
    // `report --tables` sums the cost columns per app, and says them in Markdown.
    let out = triage(&[
        "report",
        "--tables",
        url,
        "--cluster",
        "backfill",
        "--from",
        "2026-12-01T00:00:00Z",
    ])
    .without_machine_aws()
    .envs(env)
    .output()
    .await;
    succeeded(&out);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("## Cost (runs with an event log read)")
            && md.contains("| cost-shuffle-loss | 1 |"),
        "{md}"
    );
    // docs/fleet.md's queries, each as written there, run by DuckDB over the tables.
    fleet_md_queries_run(&py, &copy_s);

    // Exporting the same recording again adds nothing: every row is there.
    let out = triage(&["export"])
        .without_machine_aws()
        .arg(&dir)
        .args(["--tables", url, "--cluster-name", "sim-eu"])
        .envs(env)
        .output()
        .await;
    succeeded(&out);
    let all = String::from_utf8_lossy(&out.stderr);
    let said = all
        .lines()
        .find(|l| l.starts_with("exported "))
        .unwrap_or_else(|| panic!("what it exported: {all}"));
    let there: u64 = said
        .split("; ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("how many were there: {said}"));
    assert!(said.contains("exported 0 rows"), "{said}");
    assert!(there >= endings, "every ending was found there: {said}");
    let _ = std::fs::remove_dir_all(&base);
}

/// The ```sql blocks of docs/fleet.md, with `{root}` for the tables' directory: each runs.
fn fleet_md_queries_run(py: &std::path::Path, root: &str) {
    let doc = std::fs::read_to_string(format!("{ROOT}/docs/fleet.md")).expect("docs/fleet.md");
    let queries: Vec<&str> = doc
        .split("```sql\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert!(queries.len() >= 4, "docs/fleet.md has its example queries");
    let duckdb = r#"
import duckdb, json, sys
root, queries = sys.argv[1], json.loads(sys.argv[2])
con = duckdb.connect()
for name in ["executor_endings", "app_runs", "pending_waits"]:
    con.sql(f"create view {name} as select * from read_parquet('{root}/{name}/*/*/*.parquet', hive_partitioning=true)")
print(json.dumps([con.sql(f"select count(*) from ({q}) q").fetchone()[0] for q in queries]))
"#;
    let pyspark = r#"
import json, sys
from pyspark.sql import SparkSession
root, queries = sys.argv[1], json.loads(sys.argv[2])
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
for name in ["executor_endings", "app_runs", "pending_waits"]:
    spark.read.parquet(f"{root}/{name}").createOrReplaceTempView(name)
print(json.dumps([spark.sql(q).count() for q in queries]))
spark.stop()
"#;
    let queries_json = serde_json::to_string(&queries).expect("JSON");
    for (engine, program) in [("duckdb", duckdb), ("pyspark", pyspark)] {
        let got = python(py, program, &[root, &queries_json]);
        let rows: Vec<u64> = got
            .as_array()
            .expect("counts")
            .iter()
            .map(|n| n.as_u64().unwrap_or(0))
            .collect();
        assert_eq!(rows.len(), queries.len(), "{engine}: every query ran");
        for (q, n) in queries.iter().zip(&rows) {
            assert!(*n > 0, "{engine}: no row from\n{q}");
        }
    }
}

/// A recorder whose last tables round failed says so and exits non-zero (it exited 0):
/// the recording is whole, and the message says how to write the rows from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorder_whose_last_tables_write_failed_exits_non_zero() {
    let sim = start_sim("mixed", 4.0, &[]).await;
    let dir = std::env::temp_dir().join(format!("st-tables-fail-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    // A file where the tables' directory would be: every write fails.
    let blocked = dir.join("not-a-dir");
    std::fs::write(&blocked, b"x").expect("file");
    let rec = dir.join("rec.ndjson");
    let out = triage(&["record"])
        .without_machine_aws()
        .arg(&rec)
        .arg("--kubeconfig")
        .arg(&sim.kubeconfig)
        .args([
            "-n",
            "spark-jobs",
            "--duration",
            "8s",
            "--tables-every",
            "2s",
            "--tables",
        ])
        .arg(blocked.join("t"))
        .output()
        .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tables: the last rows were not written") && err.contains("is whole"),
        "{err}"
    );
    // The rerun it advises is one `export` takes: the same place and cluster name.
    let advised = err
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("a command in backquotes: {err}"));
    assert!(
        advised.starts_with("spark-triage export ")
            && advised.contains(&format!("--tables {}", blocked.join("t").display()))
            && advised.contains("--cluster-name spark-triage-sim"),
        "{advised}"
    );
    assert!(rec.exists(), "the recording is kept");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 1 MiB tmpfs, unmounted (and its directory removed) when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("st-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(&dir)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "mount a tmpfs: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Every file under `dir`, by its path below it.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(e.path());
            } else {
                out.push(
                    e.path()
                        .strip_prefix(dir)
                        .expect("under")
                        .display()
                        .to_string(),
                );
            }
        }
    }
    out.sort();
    out
}

/// Tables written into a full disk (a 1 MiB tmpfs nearly filled): the export fails and
/// says so, leaves no hidden `.tmp` file behind (the one that filled the disk stayed, so
/// the rerun failed the same way), and the rerun once there is room writes every row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(have_root), ignore = "needs root (mounts a 1 MiB tmpfs)")]
async fn a_full_disk_leaves_no_temporary_file_and_the_rerun_succeeds() {
    let fs = Tmpfs::mount("tables-full");
    // All but 8 KiB taken: a table file does not fit.
    let filler = fs.0.join("filler");
    std::fs::write(&filler, vec![0u8; 1024 * 1024 - 8 * 1024]).ok();
    let used = std::fs::metadata(&filler).map_or(0, |m| m.len());
    assert!(used > 900 * 1024, "the filler took {used} bytes");
    let tables = fs.0.join("t");
    let export = || {
        triage(&["export"])
            .without_machine_aws()
            .arg(format!("{ROOT}/tests/fixtures/mixed-session.ndjson"))
            .arg("--tables")
            .arg(&tables)
            .args(["--cluster-name", "full"])
            .output()
    };
    let out = export().await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let left = files_under(&fs.0);
    assert!(
        left.iter().all(|f| !f.ends_with(".tmp")),
        "a temporary file left behind: {left:?}"
    );
    // Room again: the rerun writes the rows, and nothing hidden stays.
    std::fs::remove_file(&filler).expect("free the space");
    let out = export().await;
    succeeded(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exported ") && !err.contains("exported 0 rows"),
        "{err}"
    );
    let left = files_under(&fs.0);
    assert!(
        left.iter().any(|f| f.ends_with(".parquet")) && left.iter().all(|f| !f.ends_with(".tmp")),
        "{left:?}"
    );
}
