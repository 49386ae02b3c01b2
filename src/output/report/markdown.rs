//! The report as markdown that reads well pasted into a ticket: the header, then per
//! application its sections (each written by one function below, in the order they print).

use std::fmt::Write as _;

use spark_triage_core::diagnose::{Code, Severity};
use spark_triage_core::model::fmt_time;
use spark_triage_core::text;
use spark_triage_core::text::human_duration;

use super::{AppReport, Report};
use crate::output::cost::CostView;
use crate::store::MAX_KEPT;

/// Every value from the cluster: one line, no controls, no table cell breaks.
fn md(x: &str) -> String {
    text::field(x).replace('|', "\\|")
}

/// Markdown that reads well pasted into a ticket.
pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    write_header(&mut s, r);
    for a in &r.apps {
        write_app_heading(&mut s, a);
        write_not_listed(&mut s, a);
        write_endings(&mut s, a);
        write_findings(&mut s, a);
        write_oom(&mut s, a);
        write_pending(&mut s, a);
        write_missing(&mut s, a);
        write_churn(&mut s, a);
        write_cost(&mut s, a);
        write_actions(&mut s, a);
        write_recommendations(&mut s, a);
    }
    if !r.housekeeping.is_empty() {
        s.push_str("## Housekeeping\n\n");
        for h in &r.housekeeping {
            let _ = writeln!(
                s,
                "- **{}** (`{}`): {}",
                md(&h.namespace),
                h.code,
                md(&h.summary)
            );
            let _ = writeln!(s, "  {}", md(&h.hint));
        }
        s.push('\n');
    }
    s
}

/// The title, what the report covers, the gaps in the recording, or that no app was seen.
fn write_header(s: &mut String, r: &Report<'_>) {
    let _ = writeln!(s, "# spark-triage report: {}", r.source);
    let _ = writeln!(
        s,
        "\n{} {} to {} ({}), {}.\n",
        if r.event_log {
            "From Spark's event log (no pods, nodes, Kubernetes events, pending reasons or log \
             tails: what they would say is absent, not guessed),"
        } else {
            "Recorded"
        },
        r.started_at,
        r.ended_at,
        human_duration(chrono::Duration::seconds(r.duration_seconds)),
        md(&r.scope)
    );
    for g in &r.gaps {
        let _ = writeln!(
            s,
            "**Gap: nothing was recorded from {} to {}** (the recorder was not running); \
             executors that ended then may be missing below.\n",
            fmt_time(&g.from),
            fmt_time(&g.to)
        );
    }
    if r.apps.is_empty() {
        s.push_str("No Spark application was seen.\n");
    }
}

/// An app's title, its verdict (with the hint when it is trouble), the driver and the
/// executors' counts, and the findings supporting the verdict.
fn write_app_heading(s: &mut String, a: &AppReport<'_>) {
    let c = &a.counts;
    match &a.operator {
        // Named for its object, which is all there is before its pods.
        Some(o) => {
            let _ = writeln!(
                s,
                "## {} {}/{} (`{}`)\n",
                o.kind,
                md(&a.namespace),
                md(&o.name),
                md(&a.app_id)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "## {} (`{}`) in `{}`\n",
                md(a.app_name.as_deref().unwrap_or("?")),
                md(&a.app_id),
                md(&a.namespace)
            );
        }
    }
    let v = &a.verdict;
    let _ = writeln!(
        s,
        "**Verdict: {}** (`{}`, {}): {}\n",
        v.label,
        v.cause,
        v.severity.as_str(),
        md(&v.summary)
    );
    if v.severity != Severity::Info && !v.hint.is_empty() {
        let _ = writeln!(s, "> {}\n", md(&v.hint));
    }
    let normal = a.failures.iter().filter(|f| !f.failure).count();
    if let Some(o) = a
        .operator
        .as_ref()
        .filter(|_| a.driver_phase.is_none() && a.executors_seen == 0)
    {
        let _ = if o.kind == "ScheduledSparkApplication" {
            writeln!(
                s,
                "No pods of its own: its runs are SparkApplications, apps of their own; its \
                 ScheduledSparkApplication (`{}`), state `{}` (`{}`).\n",
                o.api_version,
                md(if o.state.is_empty() {
                    "(none yet)"
                } else {
                    &o.state
                }),
                o.describe
            )
        } else {
            writeln!(
                s,
                "No pod yet: known from its SparkApplication (`{}`), state `{}` (`{}`).\n",
                o.api_version,
                md(&o.state),
                o.describe
            )
        };
        for f in &a.verdict.supporting {
            let _ = writeln!(s, "**{}: {}**\n", f.code, md(&f.summary));
        }
        return;
    }
    let _ = writeln!(
        s,
        "Driver: {}. Executors seen: {} (at the end: {} running, {} pending, {} failed, {} deleted, {} missing); {} failure{}, {} other ending{} (normal or vanished).\n",
        md(a.driver_phase.as_deref().unwrap_or("not seen")),
        a.executors_seen,
        c.running,
        c.pending,
        c.failed,
        c.deleted,
        c.missing,
        a.failures_counted,
        if a.failures_counted == 1 { "" } else { "s" },
        normal,
        if normal == 1 { "" } else { "s" }
    );
    for f in &a.verdict.supporting {
        let _ = writeln!(s, "**{}: {}**\n", f.code, md(&f.summary));
    }
}

/// The executors that ended first, past the most a store keeps whole.
fn write_not_listed(s: &mut String, a: &AppReport<'_>) {
    if let Some(n) = &a.not_listed {
        let _ = writeln!(
            s,
            "{} executors that ended first ({} to {}; {} failures) are {}: a store keeps {} executors whole.\n",
            n.executors,
            n.ended_from.as_deref().unwrap_or("-"),
            n.ended_to.as_deref().unwrap_or("-"),
            n.failures,
            if n.counted {
                "counted here but not listed"
            } else {
                "neither listed nor counted here (the window starts among them)"
            },
            MAX_KEPT,
        );
    }
}

/// The table of the executors that ended.
fn write_endings(s: &mut String, a: &AppReport<'_>) {
    if !a.failures.is_empty() {
        s.push_str("### Executors that ended\n\n| time | executor | failure | state | exit | finding | Spark | summary |\n|---|---|---|---|---|---|---|---|\n");
        for f in &a.failures {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                f.at,
                f.executor,
                if f.failure { "yes" } else { "no" },
                f.state,
                f.exit_code
                    .map_or_else(|| "-".to_owned(), |c| c.to_string()),
                f.finding.map_or("-", Code::as_str),
                if f.counted { "counted" } else { "not counted" },
                md(f.summary.as_deref().unwrap_or("-"))
            );
        }
        s.push('\n');
    }
}

/// The executors' findings, counted by code.
fn write_findings(s: &mut String, a: &AppReport<'_>) {
    if !a.by_finding.is_empty() {
        let mut counts: Vec<(&Code, &usize)> = a.by_finding.iter().collect();
        counts.sort_by_key(|(k, _)| k.as_str());
        let list: Vec<String> = counts
            .into_iter()
            .map(|(k, v)| format!("`{k}` ×{v}"))
            .collect();
        let _ = writeln!(s, "**Findings:** {}\n", list.join(", "));
    }
}

/// The OOM breakdown, when any executor ran out of memory.
fn write_oom(s: &mut String, a: &AppReport<'_>) {
    let o = &a.oom;
    if o.container + o.jvm + o.node > 0 {
        let _ = writeln!(
            s,
            "**Out of memory:** container (cgroup, OOMKilled) {} · JVM heap (exit 52) {} · node-level SIGKILL {}\n",
            o.container, o.jvm, o.node
        );
    }
}

/// Time spent pending, and why.
fn write_pending(s: &mut String, a: &AppReport<'_>) {
    let p = &a.pending;
    if p.executors > 0 {
        let reasons: Vec<String> = p
            .reasons
            .iter()
            .map(|(r, n)| format!("{} ×{n}", md(r)))
            .collect();
        let _ = writeln!(
            s,
            "**Pending:** {} executor(s) waited (median {}, max {}); {} still pending at the end{}.\n",
            p.executors,
            p.median_seconds.map_or_else(
                || "-".to_owned(),
                |x| human_duration(chrono::Duration::seconds(x))
            ),
            p.max_seconds.map_or_else(
                || "-".to_owned(),
                |x| human_duration(chrono::Duration::seconds(x))
            ),
            p.still_pending,
            if reasons.is_empty() {
                String::new()
            } else {
                format!(": {}", reasons.join(", "))
            }
        );
    }
}

/// The missing executors.
fn write_missing(s: &mut String, a: &AppReport<'_>) {
    if !a.missing.is_empty() {
        s.push_str("**Missing executors** (vanished from a full LIST with no deletion seen):\n\n");
        for m in &a.missing {
            let _ = writeln!(
                s,
                "- executor {} at {}: {}",
                m.executor,
                m.at,
                md(&m.spark_verdict)
            );
        }
        s.push('\n');
    }
}

/// The churn windows.
fn write_churn(s: &mut String, a: &AppReport<'_>) {
    if !a.churn_windows.is_empty() {
        let w: Vec<String> = a
            .churn_windows
            .iter()
            .map(|w| format!("{} to {} ({} failures)", w.from, w.to, w.failures))
            .collect();
        let _ = writeln!(s, "**Churn:** {}\n", w.join("; "));
    }
}

/// The actions taken.
fn write_actions(s: &mut String, a: &AppReport<'_>) {
    if !a.actions.is_empty() {
        s.push_str("**Actions taken:**\n\n");
        for x in &a.actions {
            let _ = writeln!(s, "- {}", md(x));
        }
        s.push('\n');
    }
}

/// What the losses cost and what was left idle, from the event log.
fn write_cost(s: &mut String, a: &AppReport<'_>) {
    let mut lines = a.cost.as_ref().map(CostView::lines).unwrap_or_default();
    lines.extend(a.pod_cost.iter().flat_map(|p| p.lines.iter().cloned()));
    if lines.is_empty() {
        return;
    }
    s.push_str(
        "### Cost

",
    );
    for line in lines {
        let _ = writeln!(s, "- {}", md(&line));
    }
    s.push('\n');
}

/// The recommendations, each with its executors and evidence.
fn write_recommendations(s: &mut String, a: &AppReport<'_>) {
    if !a.recommendations.is_empty() {
        s.push_str("### Recommendations\n\n");
        for r in &a.recommendations {
            let mut ids: Vec<String> = r.executor_ids.iter().take(10).map(i64::to_string).collect();
            if r.executor_ids.len() > 10 {
                ids.push(format!("and {} more", r.executor_ids.len() - 10));
            }
            let _ = writeln!(
                s,
                "- **{}** (`{}`, {}, {} executor{}: {}): {}",
                md(&r.label),
                r.finding,
                if r.failure {
                    "failure"
                } else {
                    r.severity.as_str()
                },
                r.executors,
                if r.executors == 1 { "" } else { "s" },
                ids.join(", "),
                md(&r.advice)
            );
            for e in &r.evidence {
                let _ = writeln!(s, "  - {}", md(e));
            }
        }
        s.push('\n');
    }
}
