//! Arriving late: the live view opened five minutes (scenario time) after `mixed`'s
//! failures shows every age and "ago" from the cluster's own clocks (the pods'
//! `creationTimestamp`, the driver's `removeTime`), not from when it first saw them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use spark_triage_sim::SimHandle;
use spark_triage_sim::clock::SimClock;

use super::tmux::Tmux;

type Utc = chrono::DateTime<chrono::Utc>;

/// An app's executors by the cluster's own clocks: the pods' `creationTimestamp` (as
/// kubectl gets them) and, from the driver's REST list, `addTime` and the ending (the
/// container's finish when Spark's removal text has it, what the verdict reads, else when
/// the driver removed it).
pub(super) async fn cluster_times(
    sim: &SimHandle,
    app: &str,
) -> (
    BTreeMap<i64, Utc>,
    BTreeMap<i64, (Option<Utc>, Option<Utc>)>,
) {
    // The pods as kubectl gets them (`kubectl get pods -o json`).
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&sim.kubeconfig)
        .args(["get", "pods", "-n", "spark-jobs", "-o", "json"])
        .arg(format!("--selector=spark-app-name={app}"))
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kubectl's JSON");
    let mut created = BTreeMap::new();
    let mut driver_pod = None;
    for p in list["items"].as_array().expect("items") {
        let labels = &p["metadata"]["labels"];
        match labels["spark-exec-id"].as_str() {
            Some(id) => {
                let at = p["metadata"]["creationTimestamp"]
                    .as_str()
                    .expect("creationTimestamp");
                let at = chrono::DateTime::parse_from_rfc3339(at).unwrap();
                created.insert(id.parse::<i64>().unwrap(), at.with_timezone(&chrono::Utc));
            }
            None if labels["spark-role"] == "driver" => {
                driver_pod = Some((
                    p["metadata"]["name"].as_str().unwrap().to_owned(),
                    labels["spark-app-selector"].as_str().unwrap().to_owned(),
                ))
            }
            None => {}
        }
    }
    let client = super::common::client(sim).await;
    let (name, app_id) = driver_pod.unwrap_or_else(|| panic!("{app}'s driver"));
    let path = format!(
        "/api/v1/namespaces/spark-jobs/pods/{name}:4040/proxy/api/v1/applications/{app_id}/allexecutors"
    );
    let text = client
        .request_text(http::Request::get(path).body(Vec::new()).unwrap())
        .await
        .unwrap();
    let execs: serde_json::Value = serde_json::from_str(&text).unwrap();
    let time = |v: &serde_json::Value| {
        chrono::DateTime::parse_from_str(
            &v.as_str()?.replace("GMT", "+0000"),
            "%Y-%m-%dT%H:%M:%S%.3f%z",
        )
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
    };
    let driver = execs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let id = e["id"].as_str()?.parse().ok()?;
            let finished = e["removeReason"].as_str().and_then(|r| {
                let at = r
                    .split("container finished at: ")
                    .nth(1)?
                    .split_whitespace()
                    .next()?;
                chrono::DateTime::parse_from_rfc3339(at).ok()
            });
            let ended = finished
                .map(|t| t.with_timezone(&chrono::Utc))
                .or_else(|| time(&e["removeTime"]));
            Some((id, (time(&e["addTime"]), ended)))
        })
        .collect();
    (created, driver)
}

/// The times a line shows (`2026-12-05T20:45:10Z`, or `2026-12-05 20:45:10 +00:00` in a
/// local zone), in order.
fn times_in(line: &str) -> Vec<Utc> {
    let re = regex::Regex::new(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(Z| [+-]\d{2}:\d{2})")
        .unwrap();
    re.captures_iter(line)
        .map(|c| {
            let zone = if &c[3] == "Z" { "+00:00" } else { c[3].trim() };
            chrono::DateTime::parse_from_str(
                &format!("{} {} {zone}", &c[1], &c[2]),
                "%Y-%m-%d %H:%M:%S %:z",
            )
            .unwrap()
            .with_timezone(&chrono::Utc)
        })
        .collect()
}

/// A time shown equals the cluster's within a second (the screen shows whole seconds).
fn near(id: i64, what: &str, shown: Utc, truth: Utc, line: &str) {
    assert!(
        (shown - truth).num_milliseconds().abs() < 1000,
        "executor {id}: {what} shown {shown}, the cluster says {truth}: {line}"
    );
}

/// The table's rows drawn whole: an id first and its pod's name (`…-exec-<id>`) last.
fn whole_rows(table: &str) -> usize {
    table
        .lines()
        .filter(|line| {
            let cells: Vec<&str> = line.split('│').filter(|c| !c.trim().is_empty()).collect();
            let Some(row) = cells.last() else {
                return false;
            };
            let words: Vec<&str> = row.split_whitespace().collect();
            words
                .first()
                .and_then(|w| w.parse::<i64>().ok())
                .is_some_and(|id| {
                    words
                        .last()
                        .is_some_and(|w| w.ends_with(&format!("-exec-{id}")))
                })
        })
        .count()
}

/// Each row of the table (id, state, AGE or "… ago" once it ended) against the cluster's
/// times, within 2 s of the moments it can have been drawn at (`drawn`: from, to); every
/// executor of the app is checked.
fn check_ages(
    app: &str,
    table: &str,
    drawn: (Utc, Utc),
    created: &BTreeMap<i64, Utc>,
    driver: &BTreeMap<i64, (Option<Utc>, Option<Utc>)>,
    executors: usize,
) {
    let mut checked = 0;
    for line in table.lines() {
        let cells: Vec<&str> = line.split('│').filter(|c| !c.trim().is_empty()).collect();
        let Some(row) = cells.last() else { continue };
        let words: Vec<&str> = row.split_whitespace().collect();
        let Some(id) = words.first().and_then(|w| w.parse::<i64>().ok()) else {
            continue;
        };
        if words.len() < 3 {
            continue;
        }
        let age = &row[row.find(words[1]).unwrap()..];
        // STATE is one or two words ("deleted (missing)"); AGE follows.
        let after_state = if words[2].starts_with('(') { 3 } else { 2 };
        let shown_text = if words.get(after_state + 1) == Some(&"ago") {
            format!("{} ago", words[after_state])
        } else {
            words[after_state].to_owned()
        };
        let shown = super::common::age_seconds(&shown_text).unwrap_or_else(|| {
            panic!("{app} executor {id}: AGE {shown_text:?} is not a cluster time ({age})")
        });
        let truth = if shown_text.ends_with("ago") {
            driver.get(&id).and_then(|d| d.1).unwrap_or_else(|| {
                panic!("{app} executor {id} ended but the driver has no time for it")
            })
        } else {
            created.get(&id).copied().unwrap_or_else(|| {
                panic!("{app} executor {id}: no pod and shown as running\n{table}")
            })
        };
        let (from, to) = (
            (drawn.0 - truth).num_seconds(),
            (drawn.1 - truth).num_seconds(),
        );
        assert!(
            (from - 2..=to + 1).contains(&shown),
            "{app} executor {id}: shown {shown_text} ({shown} s), the cluster says {from}-{to} s\n{table}"
        );
        checked += 1;
    }
    assert_eq!(
        checked, executors,
        "every executor of {app} was checked:\n{table}"
    );
}

/// The `mixed` simulator run fast (25x) to `secs` of its time, then in real time, as a
/// cluster would be found; the live view (with `extra` flags) started on it in tmux.
fn opened_late(
    rt: &tokio::runtime::Runtime,
    secs: f64,
    extra: &str,
) -> (SimHandle, SimClock, Tmux) {
    let sim = rt.block_on(super::common::start_sim("mixed", 25.0, &[]));
    let clock = sim.clock();
    while clock.elapsed_secs() < secs {
        std::thread::sleep(Duration::from_millis(50));
    }
    clock.set_speed(1.0);
    let t = Tmux::start();
    t.wait_for("$", 10);
    let bin = env!("CARGO_BIN_EXE_spark-triage");
    t.keys(&[
        &format!(
            "{bin} --kubeconfig {} -n spark-jobs --poll-interval 2s{extra}",
            sim.kubeconfig.display()
        ),
        "Enter",
    ]);
    (sim, clock, t)
}

#[test]
#[cfg_attr(
    not(all(have_tmux, have_kubectl)),
    ignore = "needs tmux and kubectl (a real terminal, a real client's times; .ci/run installs them)"
)]
fn a_view_opened_five_minutes_after_the_failures_shows_the_cluster_s_times() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // mixed's failures are at 10-25 s (and Spark notices the vanished pod by 50 s): five
    // minutes after.
    let (sim, clock, t) = opened_late(&rt, 330.0, "");
    t.wait_for("Executors of etl-nightly", 30);
    // Every app (with how many executors it has, and how many ended or vanished).
    for (app, executors, endings, settled) in [
        ("etl-nightly", 13, 3, &["7F", "8F", "10M"][..]),
        ("adhoc-analysis", 6, 2, &["3F", "4D"][..]),
        ("streaming-sessions", 4, 1, &["3F"][..]),
    ] {
        t.keys(&[":", &format!("app {app}"), "Enter"]);
        t.wait_for(&format!("Executors of {app}"), 10);
        // The endings (from the driver's list) and the vanished one, newest first.
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut map = t.screen();
        while !(map.contains("map by id") && settled.iter().all(|s| map.contains(s))) {
            assert!(Instant::now() < deadline, "{app}: {settled:?} in\n{map}");
            std::thread::sleep(Duration::from_millis(200));
            map = t.screen();
        }
        // The table was drawn between these two moments of the cluster's clock.
        let drawn_after = clock.now();
        t.keys(&["v"]);
        let mut table = t.wait_for("table by id", 10);
        // A capture can tear while the terminal is being written (a row cut, the next not
        // drawn yet): captured again until every row is whole.
        let whole = Instant::now() + Duration::from_secs(5);
        while whole_rows(&table) < executors && Instant::now() < whole {
            std::thread::sleep(Duration::from_millis(100));
            table = t.screen();
        }
        let drawn = (drawn_after, clock.now());
        let (created, driver) = rt.block_on(cluster_times(&sim, app));
        check_ages(app, &table, drawn, &created, &driver, executors);
        // The endings, newest first by the cluster's times.
        let order: Vec<i64> = map
            .lines()
            .filter_map(|l| {
                let (_, rest) = l.split_once(" ago  executor ")?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .collect();
        assert_eq!(order.len(), endings, "{app}:\n{map}");
        let times: Vec<_> = order.iter().map(|id| driver[id].1.unwrap()).collect();
        assert!(
            times.windows(2).all(|w| w[0] >= w[1]),
            "{app}: endings {order:?} are not newest first by the driver's times {times:?}"
        );
        t.keys(&["v"]);
        t.wait_for("map by id", 10);
    }
    // Executor 7's pod was deleted minutes before the view started: describe reads its events
    // still in the cluster (once), so its node and its kubelet's words are there, and says
    // when it went by the cluster's clock.
    t.keys(&[":", "app etl-nightly", "Enter"]);
    t.wait_for("Executors of etl-nightly", 10);
    // To the executors (from the apps pane `d` moves there; there it opens a detail).
    t.keys(&["d"]);
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["Escape"]);
    // Executors 7 and 8 (OOM-killed, deleted) and 10 (vanished), every one gone before the
    // view started: their detail and describe give the cluster's times, to the second.
    let (_, driver) = rt.block_on(cluster_times(&sim, "etl-nightly"));
    let mut shown: BTreeMap<i64, (String, String)> = BTreeMap::new();
    for _ in 0..14 {
        t.keys(&["d"]);
        let popup = t.wait_for("Spark container", 10);
        t.keys(&["Escape"]);
        let id = [7, 8, 10]
            .into_iter()
            .find(|id| popup.contains(&format!("executor {id} [")));
        if let Some(id) = id {
            std::thread::sleep(Duration::from_millis(200));
            t.keys(&["D"]);
            let described = t.wait_for_all(&["Events (newest first):", "Created:"], 20);
            t.keys(&["Escape"]);
            shown.insert(id, (popup, described));
        }
        if shown.len() == 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        t.keys(&["Right"]);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        shown.keys().copied().collect::<Vec<_>>(),
        [7, 8, 10],
        "executors 7, 8 and 10 selected:\n{}",
        t.screen()
    );
    for (id, (detail, described)) in &shown {
        let (added, ended) = driver[id];
        let (added, ended) = (added.expect("addTime"), ended.expect("an end"));
        let line = |text: &str, key: &str| -> String {
            text.lines()
                .find(|l| l.contains(key))
                .unwrap_or_else(|| panic!("executor {id}: no {key:?} in\n{text}"))
                .to_owned()
        };
        // The detail's second line: "node … · created T (the driver's time) · ended T …".
        let times = line(detail, " · created ");
        let created_at = times_in(&times[times.find(" · created ").unwrap()..]);
        let ended_at = times_in(&times[times.find(" · ended ").expect("ended")..]);
        near(*id, "detail: created", created_at[0], added, &times);
        near(*id, "detail: ended", ended_at[0], ended, &times);
        // Describe: Created (the driver's addTime: no pod was seen) and Gone.
        let created = line(described, "Created:");
        near(
            *id,
            "describe: Created",
            times_in(&created)[0],
            added,
            &created,
        );
        let gone = line(described, "Gone:");
        let gone_at = times_in(&gone)[0];
        assert!(!gone.contains('*'), "executor {id}: a cluster time: {gone}");
        assert!(
            gone_at >= ended - chrono::Duration::seconds(1),
            "executor {id}: gone before it ended? {gone} (ended {ended})"
        );
        // Its node and its kubelet's words, read from the cluster's events (once).
        if *id != 10 {
            assert!(
                !described.contains("Node:           <"),
                "executor {id}: its node from its kubelet's events:\n{described}"
            );
            assert!(
                described.contains("Gone:           removed by the driver")
                    || described.contains("Gone:           deleted"),
                "executor {id}: when it went, by the cluster's clock:\n{described}"
            );
        }
    }
    t.keys(&["Escape"]);
    t.keys(&["q"]);
    t.wait_prompt(10);
    drop(sim);
}

/// The live view forgets executors gone longer than `--forget-after` (its memory stays
/// bounded over a long watch): opened minutes after `mixed`'s failures with a one-minute
/// horizon, the header says so, the ended executors leave the map (the driver's list does
/// not bring them back), and the failure budget still counts them.
#[test]
#[cfg_attr(
    not(have_tmux),
    ignore = "needs tmux (the real-terminal tests; .ci/run installs it)"
)]
fn the_live_view_forgets_executors_gone_past_its_horizon() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (sim, _clock, t) = opened_late(&rt, 200.0, " --forget-after 1m");
    // The first forget comes a quarter of the horizon after the start.
    let screen = t.wait_for("gone >1m forgotten", 40);
    let map = screen
        .lines()
        .skip_while(|l| !l.contains("Executors of etl-nightly"))
        .take_while(|l| !l.contains("Endings"))
        .collect::<Vec<_>>()
        .join("\n");
    for gone in ["7F", "8F", "10M"] {
        assert!(!map.contains(gone), "{gone} was forgotten:\n{screen}");
    }
    assert!(map.contains("1R") && map.contains("13R"), "{screen}");
    // Still counted against the app: OOMKilled (7) and JVM OOM (8).
    assert!(screen.contains("failures 2/20 allowed"), "{screen}");
    // It stays forgotten across the driver's next reads (every 10 s).
    std::thread::sleep(Duration::from_secs(12));
    let later = t.screen();
    assert!(later.contains("gone >1m forgotten"), "{later}");
    assert!(!later.contains("7F") && !later.contains("10M"), "{later}");
    t.keys(&["q"]);
    t.wait_prompt(10);
    drop(sim);
}
