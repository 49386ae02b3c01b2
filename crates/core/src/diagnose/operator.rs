//! What an operator's `SparkApplication` says of an application, as findings: the only
//! witness while no pod exists (a submission refused, an admission awaited, a rerun
//! scheduled), and the operator's own end when the pods are gone.
//!
//! The submission's refusal is the API server's, quoted by spark-submit's client inside
//! the operator's message: a ResourceQuota (`exceeded quota: NAME, requested: …`), an
//! admission webhook (`admission webhook "NAME" denied the request: …`), RBAC (`User "…"
//! cannot create resource "pods" …`) or an invalid pod (`is invalid: …`).

mod schedule;

pub use schedule::{
    GRACE as SCHEDULE_GRACE, UNSEEN as SCHEDULE_UNSEEN, overdue, read_is_witness, unscheduled,
};

use super::queueing::kueue_summary;
use super::{Code, Finding, Severity, Witness};
use crate::model::{OperatorApp, OperatorKind, OperatorPhase, SchedGroup, Time};
use crate::text;

/// What the tool read of one application's operator object.
#[derive(Debug, Clone, Copy)]
pub struct OperatorFacts<'a> {
    /// The object.
    pub app: &'a OperatorApp,
    /// Kueue's Workload for it (owned by the object), when read.
    pub admission: Option<&'a SchedGroup>,
    /// A driver pod of the application was seen.
    pub driver_seen: bool,
}

/// Why the API server refused spark-submit's driver pod, from the operator's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A ResourceQuota.
    Quota {
        /// Its name.
        quota: String,
        /// `requested: …, used: …, limited: …`.
        detail: String,
    },
    /// An admission webhook.
    Webhook {
        /// Its name.
        webhook: String,
        /// What it said.
        said: String,
    },
    /// RBAC: who may not do what, where.
    Rbac {
        /// The user or service account.
        who: String,
        /// The verb refused (`create`).
        verb: String,
        /// The resource (`pods`).
        resource: String,
        /// Where.
        namespace: String,
    },
    /// The pod spec is invalid (422).
    Invalid {
        /// What the API server said.
        said: String,
    },
    /// Something else.
    Other {
        /// The message's most telling line.
        said: String,
    },
}

const REF_KUBEFLOW: &str = "https://www.kubeflow.org/docs/components/spark-operator/user-guide/";
const REF_APACHE: &str = "https://apache.github.io/spark-kubernetes-operator/";

/// The text between `start` and the first of `ends` after it.
fn between<'a>(s: &'a str, start: &str, ends: &[&str]) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    let rest = &s[from..];
    let to = ends
        .iter()
        .filter_map(|e| rest.find(e))
        .min()
        .unwrap_or(rest.len());
    Some(rest[..to].trim())
}

/// The cause of a refused submission, read from the operator's message; every part taken
/// from it made safe to print (one line, no controls, no credentials, clipped).
pub fn refused(message: &str) -> Refused {
    match refused_raw(message) {
        Refused::Quota { quota, detail } => Refused::Quota {
            quota: safe(&quota),
            detail: safe(&detail),
        },
        Refused::Webhook { webhook, said } => Refused::Webhook {
            webhook: safe(&webhook),
            said: safe(&said),
        },
        Refused::Rbac {
            who,
            verb,
            resource,
            namespace,
        } => Refused::Rbac {
            who: safe(&who),
            verb: safe(&verb),
            resource: safe(&resource),
            namespace: safe(&namespace),
        },
        Refused::Invalid { said } => Refused::Invalid { said: safe(&said) },
        Refused::Other { said } => Refused::Other { said: safe(&said) },
    }
}

fn refused_raw(message: &str) -> Refused {
    if let Some(q) = between(message, "exceeded quota: ", &[", requested"]) {
        let detail = between(message, ", requested: ", &[". Received", "\n"])
            .map(|d| format!("requested: {d}"))
            .unwrap_or_default();
        let detail = detail
            .split(", reason=")
            .next()
            .unwrap_or_default()
            .trim_end_matches('.')
            .to_owned();
        return Refused::Quota {
            quota: q.to_owned(),
            detail,
        };
    }
    if let Some(w) = between(message, "admission webhook \"", &["\""]) {
        let said = between(message, "denied the request: ", &[". Received", "\n"])
            .unwrap_or_default()
            .to_owned();
        return Refused::Webhook {
            webhook: w.to_owned(),
            said,
        };
    }
    if let Some(who) = between(message, "is forbidden: User \"", &["\""]) {
        let verb = between(message, "\" cannot ", &[" resource"]).unwrap_or("create");
        let resource = between(message, "resource \"", &["\""]).unwrap_or("pods");
        let namespace = between(message, "in the namespace \"", &["\""]).unwrap_or_default();
        return Refused::Rbac {
            who: who.to_owned(),
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
        };
    }
    if let Some(said) = between(message, " is invalid: ", &[". Received", "\n"]) {
        return Refused::Invalid {
            said: said.to_owned(),
        };
    }
    // The line that says most: the client's exception message, else the last line.
    let said = between(message, "Message: ", &[". Received", "\n"])
        .or_else(|| message.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or(message);
    Refused::Other {
        said: said.trim().to_owned(),
    }
}

impl Refused {
    /// The cause in a clause (`the ResourceQuota etl-quota refused the driver pod (…)`).
    fn clause(&self) -> String {
        match self {
            Self::Quota { quota, detail } if detail.is_empty() => {
                format!("the ResourceQuota {quota} refused the driver pod")
            }
            Self::Quota { quota, detail } => {
                format!("the ResourceQuota {quota} refused the driver pod ({detail})")
            }
            Self::Webhook { webhook, said } => {
                format!("the admission webhook {webhook} denied the driver pod: {said}")
            }
            Self::Rbac {
                who,
                verb,
                resource,
                namespace,
            } => format!("{who} may not {verb} {resource} in namespace {namespace}"),
            Self::Invalid { said } => format!("the driver pod is invalid: {said}"),
            Self::Other { said } => format!("spark-submit failed: {said}"),
        }
    }

    fn hint(&self, namespace: &str) -> String {
        match self {
            Self::Quota { quota, .. } => format!(
                "The namespace's quota has no room for the driver: lower the driver's request \
                 (spark.driver.cores, spark.driver.memory and its overhead) or raise the quota \
                 (kubectl describe resourcequota {quota} -n {namespace}); the running pods of \
                 other apps hold what it counts (finished pods do not)."
            ),
            Self::Webhook { webhook, .. } => format!(
                "A policy refused the pod spec the operator made: change the SparkApplication's \
                 driver (labels, security context, resources, image) to satisfy it, or ask the \
                 owners of {webhook} (kubectl get validatingwebhookconfigurations,\
                 mutatingwebhookconfigurations)."
            ),
            Self::Rbac {
                who,
                verb,
                resource,
                namespace,
            } => format!(
                "Grant {who} `{verb}` on `{resource}` in {namespace} (a Role and RoleBinding; \
                 the operator's Helm chart makes them for the namespaces it watches: \
                 spark.jobNamespaces)."
            ),
            Self::Invalid { .. } => "The operator built a pod the API server rejects: fix the \
                 SparkApplication's driver fields named in the message."
                .to_owned(),
            Self::Other { .. } => "Read the operator's whole message (kubectl describe) and its \
                 logs for spark-submit's output."
                .to_owned(),
        }
    }
}

/// The operator's message made safe to print: one line, no controls, no credentials,
/// clipped.
fn safe(message: &str) -> String {
    let one = text::credentials(&text::escape_controls(message)).replace(['\n', '\r'], " ");
    text::clipped(&one, 600).into_owned()
}

fn reference(kind: OperatorKind) -> &'static str {
    match kind {
        OperatorKind::Kubeflow | OperatorKind::KubeflowScheduled => REF_KUBEFLOW,
        OperatorKind::Apache => REF_APACHE,
    }
}

/// `state SUBMISSION_FAILED, 2 submissions, 0 runs (kubeflow spark-operator)`.
fn state_line(app: &OperatorApp) -> String {
    let mut line = format!("{}: state {}", app.title(), app.state);
    if let Some(n) = app.submission_attempts {
        line.push_str(&format!(", {n} submission(s)"));
    }
    if let Some(n) = app.execution_attempts {
        line.push_str(&format!(", {n} run(s)"));
    }
    if let Some(p) = &app.restart.policy {
        line.push_str(&format!(", restartPolicy {p}"));
    }
    line
}

/// The findings an operator's object gives of its application.
pub fn findings(f: &OperatorFacts<'_>, now: Time) -> Vec<Finding> {
    let app = f.app;
    if app.kind == OperatorKind::KubeflowScheduled {
        return schedule::findings(f, now);
    }
    let owner = capitalized(app.kind.owner());
    let msg = app.message.as_deref().filter(|m| !m.is_empty());
    let base = |code, severity, summary: String| {
        let mut x = Finding::new(code, severity, summary)
            .witness(Witness::Operator)
            .evidence(state_line(app))
            .reference(reference(app.kind));
        if let Some(m) = msg {
            x = x.evidence(format!("message: {}", safe(m)));
        }
        x
    };
    let mut out = Vec::new();
    let rerun = app.will_rerun();
    match app.phase {
        _ if app.submission_refused() => {
            let cause = refused(msg.unwrap_or_default());
            let tried = app.submission_attempts.unwrap_or(1).max(1);
            let left = match rerun {
                Some(true) => format!("{tried} submission(s) tried, the operator tries again"),
                Some(false) => format!("{tried} submission(s) tried, no more allowed"),
                None => format!("{tried} submission(s) tried"),
            };
            out.push(
                base(
                    Code::SubmissionFailed,
                    Severity::Error,
                    format!(
                        "{owner} could not submit it: {} ({left}){}",
                        cause.clause(),
                        if f.driver_seen {
                            "; the run shown here is an earlier one"
                        } else {
                            "; no pod was made"
                        }
                    ),
                )
                .hint(cause.hint(&app.namespace)),
            );
        }
        OperatorPhase::PendingRerun | OperatorPhase::Failing
            if app.phase == OperatorPhase::PendingRerun || rerun == Some(true) =>
        {
            let run = app.execution_attempts.unwrap_or(1).max(1);
            let allowed = app.reruns_allowed().map_or_else(
                || "as its restart policy allows (no limit said)".to_owned(),
                |a| format!("rerun {run} of {a} its restart policy allows"),
            );
            let why = msg.map_or_else(String::new, |m| format!(" ({})", safe(m)));
            out.push(
                base(
                    Code::RerunPending,
                    Severity::Warn,
                    format!(
                        "Run {run} failed{why}; {} reruns it: {allowed}",
                        app.kind.owner()
                    ),
                )
                .hint(
                    "A rerun repeats the failure unless its cause was passing: read why the last \
                     run ended (its driver's verdict while the pod lasts, the operator's message) \
                     before it starts again; each rerun gets a new spark-app-selector.",
                ),
            );
        }
        OperatorPhase::Suspended => out.push(admission(f)),
        // Not yet submitted, held by `spec.suspend` or a Workload not admitted.
        OperatorPhase::New
            if app.suspended
                || app.queue.is_some()
                    && f.admission
                        .and_then(|w| w.condition("Admitted"))
                        .is_none_or(|c| c.status != "True") =>
        {
            out.push(admission(f));
        }
        OperatorPhase::Failed | OperatorPhase::Failing if !f.driver_seen => {
            let code = if app.state == "DriverEvicted" {
                Code::DriverEvicted
            } else {
                Code::DriverFailed
            };
            let why = msg.map_or_else(|| app.state.to_string(), safe);
            out.push(
                base(
                    code,
                    Severity::Error,
                    format!("{owner} says the run failed: {why}"),
                )
                .hint(
                    "Its driver pod is gone, so this is the operator's word alone: keep a flight \
                     recorder running (spark-triage record DIR --rotate 1h) to keep the driver's \
                     own evidence, or set the operator to keep finished drivers.",
                ),
            );
        }
        OperatorPhase::Succeeded | OperatorPhase::Succeeding if !f.driver_seen => {
            out.push(base(
                Code::AppSucceeded,
                Severity::Info,
                format!("{owner} says it succeeded"),
            ));
        }
        OperatorPhase::New | OperatorPhase::Submitted | OperatorPhase::Running
            if !f.driver_seen =>
        {
            let since = app
                .since
                .or(app.created_at)
                .map(|t| format!(" {} ago", text::human_duration(now - t)))
                .unwrap_or_default();
            out.push(
                base(
                    Code::DriverNotSeen,
                    Severity::Info,
                    format!(
                        "{owner}: {}{since}; no driver pod seen yet",
                        app.phase.as_str()
                    ),
                )
                .hint(
                    "The operator has not made the driver pod yet, or it is outside the scope \
                     read (-n, -l): kubectl describe the object for the operator's events.",
                ),
            );
        }
        _ => {}
    }
    out
}

/// `the kubeflow spark-operator` → `The kubeflow spark-operator`, to start a sentence.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Held before submission: Kueue's Workload not admitted, or `spec.suspend`.
fn admission(f: &OperatorFacts<'_>) -> Finding {
    let app = f.app;
    let queue = app.queue.as_deref().unwrap_or("(none)");
    // Evicted or preempted by Kueue after it ran: that is why it waits again.
    let evicted = f.admission.and_then(|w| {
        ["Evicted", "Preempted"]
            .into_iter()
            .find_map(|t| w.condition(t).filter(|c| c.status == "True"))
            .map(|c| (w, c))
    });
    let (summary, severity, hint) = match (evicted, f.admission.and_then(kueue_summary)) {
        (Some((w, c)), _) => (
            format!(
                "Kueue {} the Workload {} ({}): {}; the operator holds it until Kueue admits \
                 it again",
                if c.type_ == "Preempted"
                    || c.reason.as_deref().is_some_and(|r| r.contains("Preempt"))
                {
                    "preempted"
                } else {
                    "evicted"
                },
                w.name,
                c.reason.as_deref().unwrap_or("-"),
                c.message.as_deref().map_or_else(String::new, safe)
            ),
            Severity::Error,
            match c.reason.as_deref() {
                Some(r) if r.contains("Preempt") || c.type_ == "Preempted" => {
                    "Kueue preempted it for a higher-priority or borrowing workload in its \
                     ClusterQueue or cohort: give it a higher WorkloadPriorityClass, or a queue \
                     with guaranteed (nominal) quota."
                }
                Some(r) if r.contains("PodsReadyTimeout") => {
                    "Kueue's waitForPodsReady timed out: its pods were admitted but not all \
                     became ready in time (image pulls, volumes, node capacity); fix what kept \
                     them pending, or raise waitForPodsReady.timeout."
                }
                _ => {
                    "Kueue stopped the Workload (its queue stopped, deactivated or deleted): \
                     kubectl get workloads -n NS -o yaml shows its Evicted condition."
                }
            }
            .to_owned(),
        ),
        (None, Some((s, sev, h))) => (
            format!("Waiting for admission: {s}; nothing is submitted until then"),
            sev,
            h,
        ),
        (None, None) if app.queue.is_some() => (
            format!(
                "Waiting for Kueue (LocalQueue {queue}): the object is suspended and its \
                 Workload was not read"
            ),
            Severity::Warn,
            "Kueue makes a Workload for each SparkApplication it manages: kubectl get \
             workloads -n NS shows why it is not admitted (read access to \
             workloads.kueue.x-k8s.io lets the tool say it)."
                .to_owned(),
        ),
        (None, None) => (
            "Suspended (spec.suspend: true): nothing is submitted until it is resumed".to_owned(),
            Severity::Warn,
            "Resume it (spec.suspend: false), or find what suspended it (an admission \
             controller, a user)."
                .to_owned(),
        ),
    };
    let mut x = Finding::new(Code::AdmissionWaiting, severity, summary)
        .witness(Witness::Operator)
        .evidence(state_line(app))
        .hint(hint)
        .reference(reference(app.kind));
    if let Some(w) = f.admission {
        x = x.evidence(format!(
            "Workload {}: {}",
            w.key(),
            w.conditions
                .iter()
                .map(|c| format!("{}={}", c.type_, c.status))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    x
}

#[cfg(test)]
mod tests;
