//! Executor pods the API server refuses for another reason than a quota: the driver's
//! service account may not create pods (RBAC), an admission webhook denies them, or the pod
//! Spark builds is invalid. No pod, no event: the driver's log is the one witness (the
//! fabric8 client's `Failure executing: POST at: …/pods. Message: …`), and the app runs
//! with no executor.
//!
//! Ref: `ExecutorPodsAllocator.requestNewExecutors` (the POST, its exception ending the
//! round, retried every `spark.kubernetes.allocation.batch.delay`); fabric8's 403 text
//! ("Forbidden!Configured service account doesn't have access. Service account may have
//! been revoked."); Spark's RBAC for the driver
//! (`spark.kubernetes.authenticate.driver.serviceAccountName`).

use super::AppFacts;
use crate::diagnose::operator::{Refused, refused};
use crate::diagnose::{Code, Finding, Severity, Witness};
use crate::text;

const REF_RBAC: &str = "https://spark.apache.org/docs/latest/running-on-kubernetes.html#rbac";

/// The driver log's last line that says the API server refused an executor pod (not a
/// quota: `quota-exhausted` reads the quota itself).
pub fn refused_creation(lines: &[String]) -> Option<&str> {
    lines.iter().rev().map(String::as_str).find(|l| {
        l.contains("Failure executing: POST at:")
            && l.contains("/pods")
            && (l.contains("is forbidden") || l.contains("denied the request"))
            && !l.contains("exceeded quota")
            || l.contains("Failure executing: POST at:") && l.contains(" is invalid: ")
    })
}

pub(super) fn executors_refused(f: &AppFacts<'_>) -> Option<Finding> {
    let line = f
        .driver_refusal
        .filter(|_| f.driver_running && f.live_executors == 0)?;
    let cause = refused(line);
    let (summary, hint) = match &cause {
        Refused::Rbac {
            who,
            verb,
            resource,
            namespace,
        } => (
            format!(
                "The driver may not create its executors: {who} may not {verb} {resource} in \
                 namespace {namespace}; the API server refuses every executor pod and the app \
                 runs with none"
            ),
            format!(
                "Grant the driver's service account (spark.kubernetes.authenticate.driver.\
                 serviceAccountName) `{verb}` on `{resource}` in {namespace}, with get, list, \
                 watch and delete on pods and create on configmaps and services (a Role and \
                 RoleBinding; kubectl auth can-i {verb} {resource} --as={who} -n {namespace} \
                 checks it). An operator's Helm chart makes this role for the namespaces it \
                 watches (spark.jobNamespaces)."
            ),
        ),
        Refused::Webhook { webhook, said } => (
            format!(
                "The admission webhook {webhook} denies the driver's executor pods: {said}; the \
                 app runs with none"
            ),
            "Change the executors' pod (spark.kubernetes.executor.podTemplateFile, labels, \
             resources, security context) to satisfy the policy, or ask its owners."
                .to_owned(),
        ),
        other => (
            format!(
                "The API server refuses the driver's executor pods ({}); the app runs with none",
                match other {
                    Refused::Invalid { said } => format!("invalid: {said}"),
                    Refused::Other { said } | Refused::Quota { detail: said, .. } => said.clone(),
                    _ => String::new(),
                }
            ),
            "Fix the executor pod settings the message names (spark.kubernetes.executor.*, the \
             pod template)."
                .to_owned(),
        ),
    };
    let evidence =
        text::clipped(&text::credentials(&text::escape_controls(line)), 600).into_owned();
    Some(
        Finding::new(Code::ExecutorsRefused, Severity::Error, summary)
            .witness(Witness::LogTail)
            .evidence(format!("driver log: {evidence}"))
            .hint(hint)
            .reference(REF_RBAC),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const RBAC: &str = "io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: \
        POST at: https://kubernetes.default.svc/api/v1/namespaces/etl/pods. Message: \
        Forbidden!Configured service account doesn't have access. Service account may have been \
        revoked. pods is forbidden: User \"system:serviceaccount:etl:spark\" cannot create \
        resource \"pods\" in API group \"\" in the namespace \"etl\".";

    fn facts(line: Option<&str>, running: bool, live: u32) -> AppFacts<'_> {
        AppFacts {
            driver_refusal: line,
            driver_running: running,
            live_executors: live,
            ..AppFacts::default()
        }
    }

    #[test]
    fn the_refusal_is_found_in_the_log_and_a_quota_left_to_its_own_rule() {
        let lines = |l: &str| {
            vec![
                "INFO starting".to_owned(),
                l.to_owned(),
                "INFO later".to_owned(),
            ]
        };
        assert_eq!(refused_creation(&lines(RBAC)), Some(RBAC));
        let quota = "io.fabric8…: Failure executing: POST at: https://k/api/v1/namespaces/etl/pods. \
            Message: pods \"x\" is forbidden: exceeded quota: q, requested: pods=1.";
        assert_eq!(refused_creation(&lines(quota)), None);
        assert_eq!(refused_creation(&lines("WARN nothing to see")), None);
    }

    #[test]
    fn a_driver_that_may_not_create_pods_is_named_with_the_missing_grant() {
        let f = executors_refused(&facts(Some(RBAC), true, 0)).expect("a finding");
        assert_eq!(
            (f.code, f.severity, f.witness),
            (Code::ExecutorsRefused, Severity::Error, Witness::LogTail)
        );
        assert_eq!(
            f.summary,
            "The driver may not create its executors: system:serviceaccount:etl:spark may not \
             create pods in namespace etl; the API server refuses every executor pod and the app \
             runs with none"
        );
        assert!(
            f.hint.contains(
                "kubectl auth can-i create pods --as=system:serviceaccount:etl:spark -n etl"
            ),
            "{}",
            f.hint
        );
        // Executors running, or a driver that ended: the old line says nothing now.
        assert!(executors_refused(&facts(Some(RBAC), true, 2)).is_none());
        assert!(executors_refused(&facts(Some(RBAC), false, 0)).is_none());
    }
}
