//! The fleet tables' figures: bytes per 1,000 executor endings, and how long the fleet report
//! (`report --tables`) takes over 30 days of a 10,000-executor cluster at churn 5/s
//! (12.96 million endings, 432,000 a day).
//!
//! The rows are synthesised from a sample: `FLEET_SAMPLE=DIR` names tables the `scale`
//! scenario's recorder wrote (scripts/bench-fleet.sh records them); each sample row is
//! repeated with its times moved and its app id made one run per app and day. Without
//! it, rows shaped as the scale scenario's (OOM-killed executors of 1 GiB + 384 MiB) are used.
//! Written as the recorder writes them: one file per table and hour. Then the report is
//! timed in-process (the CLI's own run is timed by the script).
//!
//! `FLEET_OUT=DIR` keeps the tables there (else a temporary directory, removed).

use std::time::Instant;

use spark_triage::fleet::{Place, Rows, TablesWriter, parquet, rows};
use spark_triage::output::fleet;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::model::Time;

const DAYS: i64 = 30;
const PER_HOUR: usize = 5 * 3600;

fn sample() -> (Vec<rows::EndingRow>, Vec<rows::WaitRow>) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if let Ok(dir) = std::env::var("FLEET_SAMPLE") {
        let place = Place::open(&dir, &Default::default()).expect("FLEET_SAMPLE");
        return rt.block_on(async {
            let mut endings = Vec::new();
            let mut waits = Vec::new();
            for f in place.list("executor_endings").await.expect("list") {
                endings.extend(
                    parquet::decode::<rows::EndingRow>(place.get(&f).await.expect("get"))
                        .expect("rows"),
                );
            }
            for f in place.list("pending_waits").await.expect("list") {
                waits.extend(
                    parquet::decode::<rows::WaitRow>(place.get(&f).await.expect("get"))
                        .expect("rows"),
                );
            }
            assert!(!endings.is_empty(), "no executor_endings in {dir}");
            eprintln!(
                "sample: {} endings, {} waits from {dir}",
                endings.len(),
                waits.len()
            );
            (endings, waits)
        });
    }
    let at: Time = "2026-11-01T00:00:00Z".parse().expect("time");
    let endings = (0..10)
        .map(|app| rows::EndingRow {
            namespace: "spark-scale".into(),
            app_id: format!("spark-{app:032x}"),
            app_name: Some(format!("scale-app-{app}")),
            spark_version: Some("4.0.1".into()),
            executor_id: 1,
            cause: "container-oom-killed".into(),
            severity: Severity::Error,
            state: "failed".into(),
            pod: format!("scale-app-{app}-exec-1"),
            node: Some(format!("scale-node-{app}")),
            started_at: Some(at),
            ended_at: at,
            ended_clock: "container".into(),
            exit_code: Some(137),
            container_reason: Some("OOMKilled".into()),
            counted: true,
            failure: true,
            missing: false,
            ending: "deleted-by-spark".into(),
            witness: Some("pod".into()),
            summary: Some(
                "The container exceeded its memory limit (1408Mi) and the kernel OOM-killed it"
                    .into(),
            ),
            memory_limit_bytes: Some(1408 << 20),
            memory_request_bytes: Some(1408 << 20),
            executor_memory: Some("1024m".into()),
            executor_memory_overhead: Some("384m".into()),
            executor_cores: Some("1".into()),
            max_failures: Some(i32::MAX),
            dynamic_allocation: false,
            recomputed_task_seconds: None,
            recompute_wall_seconds: None,
            stage_attempts_added: None,
        })
        .collect();
    let waits = (0..10)
        .map(|app| rows::WaitRow {
            namespace: "spark-scale".into(),
            app_id: format!("spark-{app:032x}"),
            app_name: Some(format!("scale-app-{app}")),
            executor_id: 1,
            pod: format!("scale-app-{app}-exec-1"),
            node: Some(format!("scale-node-{app}")),
            reason: "pending".into(),
            message: None,
            waited_from: at,
            waited_until: at,
            seconds: 1.5,
            then: "running".into(),
        })
        .collect();
    (endings, waits)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it with no figures wanted.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let (endings, waits) = sample();
    let keep = std::env::var("FLEET_OUT").ok();
    let dir = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir()
            .join(format!("st-bench-fleet-{}", std::process::id()))
            .display()
            .to_string()
    });
    let _ = std::fs::remove_dir_all(&dir);
    let start: Time = "2026-11-01T00:00:00Z".parse().expect("time");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let t0 = Instant::now();
    let mut writer = TablesWriter::new(
        Place::open(&dir, &Default::default()).expect("dir"),
        "scale".into(),
    );
    let (mut rows_written, mut ending_bytes, mut files) = (0usize, 0u64, 0usize);
    for day in 0..DAYS {
        let mut next_id: std::collections::HashMap<String, i64> = Default::default();
        for hour in 0..24 {
            let hour_start = start + chrono::Duration::hours(day * 24 + hour);
            let mut batch = Rows::default();
            for i in 0..PER_HOUR {
                let at = hour_start + chrono::Duration::milliseconds((i * 200) as i64);
                let s = &endings[i % endings.len()];
                let app_id = format!("{}-d{day}", s.app_id);
                let id = next_id.entry(app_id.clone()).or_insert(0);
                *id += 1;
                let mut e = s.clone();
                e.executor_id = *id;
                e.pod = format!("{}-exec-{id}", e.app_name.as_deref().unwrap_or("app"));
                e.started_at = Some(at - chrono::Duration::minutes(30));
                e.ended_at = at;
                e.app_id = app_id;
                if !waits.is_empty() {
                    let mut w = waits[i % waits.len()].clone();
                    w.app_id.clone_from(&e.app_id);
                    w.executor_id = e.executor_id;
                    w.pod.clone_from(&e.pod);
                    w.waited_from = at - chrono::Duration::minutes(31);
                    w.waited_until =
                        w.waited_from + chrono::Duration::milliseconds((w.seconds * 1000.0) as i64);
                    batch.waits.push(w);
                }
                batch.endings.push(e);
            }
            let only_endings = Rows {
                endings: std::mem::take(&mut batch.endings),
                ..Rows::default()
            };
            let now = hour_start + chrono::Duration::hours(1);
            let w = rt.block_on(writer.write(&only_endings, now));
            assert!(w.error.is_none(), "{:?}", w.error);
            rows_written += w.rows;
            ending_bytes += w.bytes;
            files += w.files;
            let w = rt.block_on(writer.write(&batch, now));
            assert!(w.error.is_none(), "{:?}", w.error);
            files += w.files;
        }
    }
    let wrote = t0.elapsed();
    println!(
        "wrote {rows_written} executor endings ({files} files in all) in {:.1} s",
        wrote.as_secs_f64()
    );
    println!(
        "executor_endings: {ending_bytes} bytes, {:.0} bytes per 1,000 endings ({:.1} MiB a day)",
        ending_bytes as f64 * 1000.0 / rows_written as f64,
        ending_bytes as f64 / DAYS as f64 / 1_048_576.0
    );
    let place = Place::open(&dir, &Default::default()).expect("dir");
    let filter = fleet::Filter {
        since: start,
        until: start + chrono::Duration::days(DAYS),
        cluster: None,
        app: None,
    };
    let t1 = Instant::now();
    let report = rt.block_on(fleet::build(&place, &filter)).expect("report");
    println!(
        "report --tables over {DAYS} days: {:.2} s ({} files, {} bytes read, {} endings, {} apps)",
        t1.elapsed().as_secs_f64(),
        report.files_read,
        report.bytes_read,
        report.totals.endings,
        report.apps.len()
    );
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
