//! The six read-only tools: their parameters, their handlers (each reads the store's
//! snapshot and answers JSON stamped with what it is as of), and the server's own info.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use spark_triage_core::diagnose::Severity;
use spark_triage_core::diagnose::app_verdict::VerdictView;
use spark_triage_core::model;
use spark_triage_core::model::Time;

use super::*;
use crate::output;
use crate::output::AppOrder;
use crate::output::cost::{CostView, PodCostView};
use crate::output::report::{Window, from_state, markdown};
use crate::publish::events;
use crate::record::State;
use crate::store::{AppRecord, ExecutorRecord, Store, by_trouble, ended_at};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct AppParam {
    /// The application's name (spark-app-name) or id (spark-app-selector).
    pub app: String,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub(crate) struct ListParam {
    /// `trouble` (default: the most trouble first, as the live view and `status` list them)
    /// or `name`.
    #[serde(default)]
    pub sort: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ExecutorParam {
    /// The application's name or id.
    pub app: String,
    /// The executor id (spark-exec-id): a number, or its digits as a string.
    #[serde(deserialize_with = "number_or_digits")]
    pub executor: i64,
}

/// An id as a number or a string of digits: agents send ids both ways ("7" as often as 7).
fn number_or_digits<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        N(i64),
        S(String),
    }
    match Id::deserialize(d)? {
        Id::N(n) => Ok(n),
        Id::S(s) => s.trim().parse().map_err(|_| {
            serde::de::Error::custom(format!("executor {s:?} is not an executor id (digits)"))
        }),
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct PodParam {
    /// The pod's name (an executor's or a driver's).
    pub pod: String,
    /// Its namespace, when the name is in several.
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct TimelineParam {
    /// The application's name or id.
    pub app: String,
    /// At most this many lines, the newest (default 200).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ReportParam {
    /// Only this application (name or id); every app when absent.
    #[serde(default)]
    pub app: Option<String>,
    /// `markdown` (default) or `json`.
    #[serde(default)]
    pub format: Option<String>,
}

#[tool_router(vis = "pub(super)")]
impl Triage {
    #[tool(
        description = "Every Spark application in scope, the most trouble first (the app verdict's severity, then failures, missing and waiting executors; sort=name for by name): its verdict (cause, severity, summary), driver state, executors by Spark's state, executor endings by cause, and Spark's failure budget as numbers; beside them, what namespaces keep that nobody reads (housekeeping: finished driver pods).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_apps(&self, Parameters(p): Parameters<ListParam>) -> Answer {
        let order = match p.sort.as_deref() {
            None | Some("trouble") => AppOrder::Trouble,
            Some("name") => AppOrder::Name,
            Some(s) => return Err(format!("sort {s:?}: trouble or name")),
        };
        let snap = self.snapshot().await?;
        let mut records: Vec<&std::sync::Arc<AppRecord>> = snap.apps.values().collect();
        by_trouble(&mut records);
        order.apply(&mut records);
        let apps: Vec<Value> = records.into_iter().map(|a| app_summary(a)).collect();
        let mut out = json!({"source": self.describe(), "apps": apps});
        let kept = output::housekeeping(&snap, snap.now);
        if !kept.is_empty() {
            out["housekeeping"] = serde_json::to_value(kept).map_err(|e| e.to_string())?;
        }
        self.answer(&snap, out)
    }

    #[tool(
        description = "One application's verdict: its cause with evidence and hint, supporting findings, the driver, counts, pending reasons, failure budget, and each executor whose verdict is a warning or an error.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn app_verdict(&self, Parameters(p): Parameters<AppParam>) -> Answer {
        let snap = self.snapshot().await?;
        let mut report = output::status::report(&snap, Some(&p.app));
        if report.apps.is_empty() {
            return Err(self.no_app(&snap, &p.app));
        }
        let mut out = Vec::new();
        for mut a in report.apps.drain(..) {
            let total = a.executors.len();
            a.executors
                .retain(|e| e.severity.is_some_and(|s| s != Severity::Info));
            let record = find_app(&snap, &a.namespace, &a.app_id);
            let mut v = serde_json::to_value(&a).map_err(|e| e.to_string())?;
            if let Some(list) = v["executors"].as_array_mut() {
                for e in list {
                    seconds_ago(e, snap.now);
                }
            }
            v["executors_total"] = json!(total);
            v["executors_shown"] = json!(
                "those whose verdict is a warning or an error; executor_verdict gives any one"
            );
            if let Some(r) = record {
                v["endings_by_cause"] = json!(endings_by_cause(r));
                if let Some(n) = not_kept(r) {
                    v["ended_not_kept"] = n;
                }
                v["budget"] = json!(r.budget_text());
                v["failure_budget"] = json!(r.budget_view());
            }
            out.push(v);
        }
        self.answer(&snap, Value::Array(out))
    }

    #[tool(
        description = "One executor's verdict: Spark's state, why it ended or waits (each finding with its evidence, witness and hint), what Spark counted, its pod's exit code and reason, node, times.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn executor_verdict(&self, Parameters(p): Parameters<ExecutorParam>) -> Answer {
        let snap = self.snapshot().await?;
        let apps = apps_named(&snap, &p.app);
        if apps.is_empty() {
            return Err(self.no_app(&snap, &p.app));
        }
        let found: Vec<Value> = apps
            .iter()
            .filter_map(|a| Some(executor_view(&snap, a, a.executors.get(&p.executor)?)))
            .collect();
        match found.len() {
            0 => Err(format!(
                "application {:?} has no executor {} (ids there: {})",
                p.app,
                p.executor,
                events::ranges(
                    &apps
                        .iter()
                        .flat_map(|a| a.executors.keys().copied())
                        .collect()
                )
            )),
            1 => self.answer(&snap, found.into_iter().next().unwrap_or_default()),
            _ => self.answer(&snap, Value::Array(found)),
        }
    }

    #[tool(
        description = "Explain a Spark pod by name: an executor's verdict (as executor_verdict), or for a driver pod its application's verdict.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain_pod(&self, Parameters(p): Parameters<PodParam>) -> Answer {
        let snap = self.snapshot().await?;
        let in_ns = |a: &AppRecord| p.namespace.as_deref().is_none_or(|n| n == a.namespace);
        let holds = |a: &AppRecord| {
            a.executors.values().any(|e| e.pod.name == p.pod)
                || a.driver.as_ref().is_some_and(|d| d.pod == p.pod)
        };
        let mut namespaces: Vec<&str> = snap
            .apps
            .values()
            .filter(|a| in_ns(a) && holds(a))
            .map(|a| a.namespace.as_str())
            .collect();
        namespaces.dedup();
        if namespaces.len() > 1 {
            return Err(format!(
                "pods named {:?} are in several namespaces ({}): give namespace",
                p.pod,
                namespaces.join(", ")
            ));
        }
        for a in snap.apps.values().filter(|a| in_ns(a)) {
            if let Some(e) = a.executors.values().find(|e| e.pod.name == p.pod) {
                return self.answer(&snap, executor_view(&snap, a, e));
            }
            if a.driver.as_ref().is_some_and(|d| d.pod == p.pod) {
                let v: VerdictView = a.verdict().into();
                return self.answer(
                    &snap,
                    json!({
                        "pod": p.pod,
                        "role": "driver",
                        "namespace": a.namespace,
                        "app_id": a.app_id,
                        "app_name": a.app_name,
                        "verdict": v,
                    }),
                );
            }
        }
        // The namespace asked for, then what the view holds (it once read "in namespace
        // kube-system in namespace spark-jobs").
        Err(match p.namespace.as_deref() {
            Some(n) => format!(
                "no Spark pod named {:?} in namespace {n} (the view holds {})",
                p.pod,
                self.describe()
            ),
            None => format!("no Spark pod named {:?} in {}", p.pod, self.describe()),
        })
    }

    #[tool(
        description = "One application's timeline: its executors' transitions and the driver's and sources' events, oldest first, by the cluster's clocks (clock says whose: pod, container, driver, deletion, event; seen when only this tool's first sight of it is known).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn timeline(&self, Parameters(p): Parameters<TimelineParam>) -> Answer {
        let snap = self.snapshot().await?;
        let apps = apps_named(&snap, &p.app);
        if apps.is_empty() {
            return Err(self.no_app(&snap, &p.app));
        }
        let limit = p.limit.unwrap_or(200).clamp(1, 10_000);
        let out: Vec<Value> = apps
            .iter()
            .map(|a| {
                let skip = a.timeline.len().saturating_sub(limit);
                json!({
                    "namespace": a.namespace,
                    "app_id": a.app_id,
                    "app_name": a.app_name,
                    "lines_left_out": skip,
                    "timeline": a.timeline.iter().skip(skip).map(|t| json!({
                        "at": model::fmt_time(&t.at),
                        "clock": t.clock,
                        "executor": t.executor,
                        "text": t.text,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        self.answer(&snap, Value::Array(out))
    }

    #[tool(
        description = "The post-mortem report (what `spark-triage report` writes): failures, findings, the OOM breakdown, pending, missing executors, churn and recommendations; markdown, or json with format=json.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn report(&self, Parameters(p): Parameters<ReportParam>) -> Answer {
        let snap = self.snapshot().await?;
        if let Some(app) = &p.app
            && apps_named(&snap, app).is_empty()
        {
            return Err(self.no_app(&snap, app));
        }
        let state = State {
            store: Store::from_snapshot((*snap).clone()),
            ..Default::default()
        };
        let window = Window {
            app: p.app.clone(),
            ..Default::default()
        };
        let r = from_state(&self.describe(), &self.header(), &state, &window);
        match p.format.as_deref() {
            None | Some("markdown" | "md") => {
                let md = markdown(&r);
                // A view that may be out of date says so before anything else.
                Ok(match self.as_of(&snap)["warning"].as_str() {
                    Some(w) => format!("> **Warning:** {w}\n\n{md}"),
                    None => md,
                })
            }
            Some("json") => self.answer(
                &snap,
                serde_json::to_value(&r).map_err(|e| format!("cannot write JSON: {e}"))?,
            ),
            Some(f) => Err(format!("format {f:?}: markdown or json")),
        }
    }

    #[tool(
        description = "What an application's executor losses cost it and what it paid for and left idle, from its Spark event log (report's log, or the live view's --event-log-dir), else live from its running driver's REST API (the losses only; cost.from says which): each loss's shuffle chain (tasks lost, stages recomputed and retried, the wall-clock time redone) with the executor's cause; executor time paid, busy and idle, dynamic allocation's idle tail, what shuffle tracking held, and the one setting that would have saved the most (an estimate); and from its pods (pod_cost): pods deleted before they ran, memory limited against the peak used.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn app_cost(&self, Parameters(p): Parameters<AppParam>) -> Answer {
        let snap = self.snapshot().await?;
        let apps = apps_named(&snap, &p.app);
        if apps.is_empty() {
            return Err(self.no_app(&snap, &p.app));
        }
        let out: Vec<Value> = apps
            .into_iter()
            .map(|a| {
                let mut v = json!({
                    "namespace": a.namespace,
                    "app_id": a.app_id,
                    "app_name": a.app_name,
                });
                let pods = PodCostView::of(a);
                if let Some(p) = &pods {
                    v["pod_cost"] = json!(p);
                }
                match CostView::of(a) {
                    Some(c) => {
                        let mut lines = c.lines();
                        lines.extend(pods.iter().flat_map(|p| p.lines.iter().cloned()));
                        v["lines"] = json!(lines);
                        v["cost"] = json!(c);
                    }
                    None => {
                        if let Some(p) = &pods {
                            v["lines"] = json!(p.lines);
                        }
                        v["cost"] = Value::Null;
                        v["why_none"] = json!(
                            "no event log was read for this app, and its running driver's REST \
                             API told no loss (it is read once its executors fail tasks): its \
                             cost comes from its stages and tasks (report EVENTLOG, or the live \
                             view with --event-log-dir)"
                        );
                    }
                }
                v
            })
            .collect();
        self.answer(&snap, Value::Array(out))
    }
}

#[tool_handler]
impl ServerHandler for Triage {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            // Its own name and version, not the SDK's (an agent's client shows and logs it).
            .with_server_info(
                rmcp::model::Implementation::new("spark-triage", env!("CARGO_PKG_VERSION"))
                    .with_title("spark-triage: why Spark executors on Kubernetes ended"),
            )
            .with_instructions(
            "spark-triage explains the executor pods of Apache Spark applications on Kubernetes: \
             why each ended (container OOMKilled 137, JVM OOM 52, eviction, preemption, node kill…) \
             or waits, and each application's verdict. Start with list_apps; app_verdict and \
             executor_verdict give the evidence and the hint (the setting to change). Read-only.",
        )
    }
}

fn find_app<'a>(snap: &'a Snapshot, ns: &str, id: &str) -> Option<&'a AppRecord> {
    snap.apps.get(&(ns.to_owned(), id.to_owned())).map(|a| &**a)
}

fn apps_named<'a>(snap: &'a Snapshot, app: &str) -> Vec<&'a AppRecord> {
    snap.apps
        .values()
        .filter(|a| a.app_id == app || a.app_name.as_deref() == Some(app))
        .map(|a| &**a)
        .collect()
}

/// Ended executors by their verdict's cause, those let go past the store's bound with them
/// (as `report` counts them).
fn endings_by_cause(a: &AppRecord) -> std::collections::BTreeMap<String, usize> {
    let mut m = a.trimmed.by_cause.clone();
    for e in a.executors.values() {
        if ended_at(e).is_some() {
            let cause = e.verdict.cause_code();
            *m.entry(cause.to_owned()).or_default() += 1;
        }
    }
    m
}

/// Ended executors counted but no longer kept (past the store's bound), when there are.
fn not_kept(a: &AppRecord) -> Option<Value> {
    let t = &a.trimmed;
    (!t.is_empty()).then(|| {
        json!({
            "executors": t.executors,
            "failures": t.failures,
            "note": "the first to end, counted in endings_by_cause but not listed: a store keeps 25,000 executors whole",
        })
    })
}

fn app_summary(a: &AppRecord) -> Value {
    let v = a.verdict();
    let c = v.cause();
    let mut out = json!({
        "namespace": a.namespace,
        "app_id": a.app_id,
        "app_name": a.app_name,
        "verdict": {"cause": c.code, "severity": c.severity, "summary": c.summary},
        "driver": v.driver.as_ref().map(|d| json!({"pod": d.pod, "state": d.state.as_str(), "phase": d.phase})),
        "counts": a.counts(),
        "endings_by_cause": endings_by_cause(a),
        "failure_budget": a.budget_view(),
        "budget": a.budget_text(),
    });
    if let Some(n) = not_kept(a) {
        out["ended_not_kept"] = n;
    }
    if let Some(h) = a.cost_headline() {
        // What its losses cost and what it idled (app_cost says how).
        out["cost"] = json!(h);
    }
    if let Some(o) = &a.operator {
        // Submitted through an operator: its object, the only witness before any pod.
        out["operator"] = json!({
            "kind": o.kind.kind(),
            "api_version": format!("{}/{}", o.kind.group(), o.kind.version()),
            "name": o.name,
            "state": o.state,
            "describe": o.describe_command(),
        });
    }
    out
}

fn executor_view(snap: &Snapshot, a: &AppRecord, e: &ExecutorRecord) -> Value {
    // The status document's line for it (times, ending, what Spark did), and every finding
    // whole: evidence and hint.
    let status = output::status::report(snap, Some(&a.app_id));
    let line = status
        .apps
        .iter()
        .find(|s| s.namespace == a.namespace)
        .and_then(|s| s.executors.iter().find(|x| x.id == e.id));
    let mut v = line
        .and_then(|l| serde_json::to_value(l).ok())
        .unwrap_or_else(|| json!({"id": e.id, "pod": e.pod.name}));
    v["namespace"] = json!(a.namespace);
    v["app_id"] = json!(a.app_id);
    v["app_name"] = json!(a.app_name);
    v["findings"] = serde_json::to_value(e.findings()).unwrap_or_default();
    seconds_ago(&mut v, snap.now);
    v
}

/// Beside an executor's times, how long ago they were by the view's clock, in seconds
/// (`age_seconds` since its pod was created, `ended_seconds_ago`): an agent need not do
/// date arithmetic on RFC 3339 strings.
fn seconds_ago(v: &mut Value, now: Option<Time>) {
    let Some(now) = now else { return };
    let ago = |field: &str| {
        let t = chrono::DateTime::parse_from_rfc3339(v.get(field)?.as_str()?).ok()?;
        Some((now - t.to_utc()).num_seconds().max(0))
    };
    let (age, ended) = (ago("created_at"), ago("ended_at"));
    if let Some(a) = age {
        v["age_seconds"] = json!(a);
    }
    if let Some(e) = ended {
        v["ended_seconds_ago"] = json!(e);
    }
}
