//! `status`'s table output: per application its lines (the app, its counts, verdict,
//! budget, driver view and pending reasons), then its executors' table.

use std::fmt::Write as _;

use spark_triage_core::diagnose::Severity;
use spark_triage_core::diagnose::budget::BudgetFrom as F;
use spark_triage_core::text;
use spark_triage_core::text::field as f;

use super::{AppStatus, StatusReport};
use crate::store::BudgetView;

/// The table output (`wide` adds node and the first finding's summary). Every value from
/// the cluster goes through [`spark_triage_core::text::field`]: none can forge a row or reverse a line.
pub fn render_table(r: &StatusReport, wide: bool) -> String {
    let mut out = String::new();
    if r.apps.is_empty() {
        out.push_str("No Spark applications found.\n");
    }
    for a in &r.apps {
        write_app_lines(&mut out, a);
        if a.operator.is_some() && a.driver.is_none() && a.executors.is_empty() {
            out.push('\n');
            continue;
        }
        write_driver_view(&mut out, a);
        write_pending(&mut out, a);
        let rows = executor_rows(a, wide);
        write_rows(&mut out, rows);
        out.push('\n');
    }
    for h in &r.housekeeping {
        let _ = writeln!(
            out,
            "Housekeeping ({}): {}\n  hint: {}",
            h.code,
            f(&h.summary),
            f(&h.hint)
        );
    }
    out
}

/// The app, its executors' counts, its verdict (with the hint when it is trouble), its
/// failure budget, and the findings supporting the verdict.
fn write_app_lines(out: &mut String, a: &AppStatus) {
    let c = &a.counts;
    if let Some(o) = &a.operator {
        let _ = writeln!(
            out,
            "{} {}/{} ({}): {}",
            o.kind,
            f(&a.namespace),
            f(&o.name),
            o.api_version,
            f(if o.state.is_empty() {
                "(none yet)"
            } else {
                &o.state
            })
        );
    }
    if a.operator.is_some() && a.driver.is_none() && a.executors.is_empty() {
        // No pod yet: the object is all there is.
        write_verdict(out, a);
        return;
    }
    let _ = writeln!(
        out,
        "{}/{} ({})  driver {} {}  deleteOnTermination={}",
        f(&a.namespace),
        f(a.app_name.as_deref().unwrap_or("?")),
        f(&a.app_id),
        f(a.driver.as_ref().map_or("-", |d| d.pod.as_str())),
        f(a.driver
            .as_ref()
            .and_then(|d| d.phase.as_deref())
            .unwrap_or("-")),
        if a.config_read {
            a.delete_on_termination.to_string()
        } else {
            "?".to_owned()
        }
    );
    let _ = writeln!(
        out,
        "  running {}  pending {}  failed {}  succeeded {}  deleted {}  terminating {}  unknown {}  missing {}",
        c.running, c.pending, c.failed, c.succeeded, c.deleted, c.terminating, c.unknown, c.missing
    );
    write_verdict(out, a);
    let _ = writeln!(out, "  {}", budget_line(&a.failure_budget));
    for x in &a.verdict.supporting {
        let _ = writeln!(
            out,
            "{}",
            text::finding_line(x.severity.as_str(), x.code, &x.summary)
        );
    }
}

/// The verdict, with its hint when it is trouble.
fn write_verdict(out: &mut String, a: &AppStatus) {
    let v = &a.verdict;
    let _ = writeln!(
        out,
        "  verdict [{}] {}: {}",
        v.severity.as_str(),
        v.cause,
        f(&v.summary)
    );
    if v.severity != Severity::Info && !v.hint.is_empty() {
        let _ = writeln!(out, "    hint: {}", f(&v.hint));
    }
}

/// How reading the driver's own executor list goes (nothing when never tried).
fn write_driver_view(out: &mut String, a: &AppStatus) {
    match &a.driver_api {
        Some(d) if d.state == "ok" && d.from == "event-log" => {
            let _ = writeln!(
                out,
                "  event log: {} executors registered with the driver (as of {})",
                d.driver_active, d.at
            );
        }
        Some(d) if d.state == "ok" => {
            let _ = writeln!(
                out,
                "  driver view: {} active in the driver, {} pods running (read {})",
                d.driver_active, d.pods_running, d.at
            );
        }
        Some(d) => {
            let _ = writeln!(
                out,
                "  driver view unavailable: {} (since {})",
                f(d.reason.as_deref().unwrap_or("?")),
                d.at
            );
        }
        None => {}
    }
}

/// Why executors wait, when any do.
fn write_pending(out: &mut String, a: &AppStatus) {
    if !a.pending_reasons.is_empty() {
        let reasons: Vec<String> = a
            .pending_reasons
            .iter()
            .map(|p| format!("{} x{}", f(&p.reason), p.count))
            .collect();
        let _ = writeln!(out, "  pending: {}", reasons.join(", "));
    }
}

/// The executors' table: the heading row, then a row per executor, every cell through
/// [`spark_triage_core::text::field`].
fn executor_rows(a: &AppStatus, wide: bool) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "ID".to_owned(),
        "STATE".to_owned(),
        "AGE".to_owned(),
        "EXIT".to_owned(),
        "REASON".to_owned(),
        "DRIVER".to_owned(),
        "SPARK".to_owned(),
        "FINDINGS".to_owned(),
        "POD".to_owned(),
    ]];
    if wide {
        rows[0].extend(["NODE".to_owned(), "SUMMARY".to_owned()]);
    }
    for e in &a.executors {
        let state = if e.missing {
            format!("{} (missing)", e.state)
        } else if e.gone {
            format!("{} (gone)", e.state)
        } else {
            e.state.to_string()
        };
        let mut row = vec![
            e.id.to_string(),
            state,
            e.age.clone(),
            e.exit_code
                .map_or_else(|| "-".to_owned(), |c| c.to_string()),
            e.container_reason.unwrap_or("-").to_owned(),
            match &e.driver {
                None => "-",
                Some(d) => match &d.executor {
                    None => "unknown",
                    Some(x) if x.active => "active",
                    Some(_) => "removed",
                },
            }
            .to_owned(),
            match &e.spark {
                None => "-",
                Some(s) if s.counted => "counted",
                Some(_) => "not-counted",
            }
            .to_owned(),
            if e.findings.is_empty() {
                "-".to_owned()
            } else {
                e.findings
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            },
            e.pod.to_owned(),
        ];
        if wide {
            row.push(e.node.unwrap_or("-").to_owned());
            row.push(e.summary.unwrap_or("-").to_owned());
        }
        rows.push(row.iter().map(|c| f(c).into_owned()).collect());
    }
    rows
}

/// The rows in columns as wide as their widest cell (the last column unpadded).
fn write_rows(out: &mut String, rows: Vec<Vec<String>>) {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i + 1 == row.len() {
                    c.clone()
                } else {
                    format!("{c:<w$}", w = widths[i])
                }
            })
            .collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
}

/// `failures 2/20 allowed (spark.executor.maxNumFailures, Spark 4.0.1)`: the budget in the
/// table, as numbers with where they come from.
pub fn budget_line(b: &BudgetView) -> String {
    let version = b
        .spark_version
        .as_deref()
        .map(|v| format!(", Spark {v}"))
        .unwrap_or_default();
    let used = b.failures_counted;
    match (b.failures_allowed, b.limit_from) {
        (Some(l), F::MaxNumFailures) => {
            format!("failures {used}/{l} allowed (spark.executor.maxNumFailures{version})")
        }
        (Some(l), F::DefaultMaxExecutors) => format!(
            "failures {used}/{l} allowed (default: max(2 × spark.dynamicAllocation.maxExecutors, 3){version})"
        ),
        (Some(l), _) => format!(
            "failures {used}/{l} allowed (default: max(2 × spark.executor.instances, 3){version})"
        ),
        (None, F::Unlimited) => {
            format!("failures {used} (no limit: dynamic allocation without maxExecutors{version})")
        }
        (None, F::NoneBeforeSpark4) => {
            format!("failures {used} (no limit before Spark 4{version})")
        }
        (None, _) => format!(
            "failures {used} (limit unknown: the driver's configuration was not read{version})"
        ),
    }
}
