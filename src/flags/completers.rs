//! Values offered when a flag's value is completed (clap_complete's dynamic completion, run
//! by the shell at each Tab): kubeconfig contexts, namespaces and Spark applications from
//! the cluster the words typed so far point at, and the simulator's scenarios.
//!
//! A completer sees only the word being completed, so the other flags (`--kubeconfig`,
//! `--context`, `-n`, `-A`) are read from the command line the shell passed. Asking the
//! cluster is bounded by [`ASK_FOR`]: a Tab must never hang the shell; nothing (or the
//! kubeconfig's own answers) is offered when the cluster does not answer in time.

use std::ffi::OsStr;
use std::time::Duration;

use clap_complete::CompletionCandidate;
use clap_complete::engine::ValueCompleter;
use spark_triage_core::model::{LABEL_APP_ID, LABEL_APP_NAME};
use spark_triage_sim::scenario::BUILT_IN;

use crate::source::connection::{Connection, LiveOptions};
use crate::source::{Scope, connection};

/// How long a Tab may wait for the cluster.
const ASK_FOR: Duration = Duration::from_millis(2_500);

/// The words typed before the one being completed (the shell passes them all).
fn typed_words() -> Vec<String> {
    let mut words: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    words.pop();
    words
}

/// `--flag VALUE` or `--flag=VALUE` (the last one given) among `words`.
fn flag_value(words: &[String], names: &[&str]) -> Option<String> {
    let mut found = None;
    for (i, w) in words.iter().enumerate() {
        for n in names {
            if w == n {
                found = words.get(i + 1).cloned();
            } else if let Some(v) = w.strip_prefix(&format!("{n}=")) {
                found = Some(v.to_owned());
            }
        }
    }
    found
}

fn starting_with(
    current: &OsStr,
    names: impl IntoIterator<Item = (String, Option<String>)>,
) -> Vec<CompletionCandidate> {
    let prefix = current.to_string_lossy();
    let mut names: Vec<(String, Option<String>)> = names
        .into_iter()
        .filter(|(n, _)| n.starts_with(&*prefix))
        .collect();
    names.sort();
    names.dedup_by(|a, b| a.0 == b.0);
    names
        .into_iter()
        .map(|(n, help)| CompletionCandidate::new(n).help(help.map(Into::into)))
        .collect()
}

fn kubeconfig(words: &[String]) -> Option<kube::config::Kubeconfig> {
    match flag_value(words, &["--kubeconfig"]) {
        Some(path) => kube::config::Kubeconfig::read_from(path).ok(),
        None => kube::config::Kubeconfig::read().ok(),
    }
}

/// `--context`: the kubeconfig's contexts, each with its cluster and namespace.
pub fn contexts(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(kc) = kubeconfig(&typed_words()) else {
        return Vec::new();
    };
    starting_with(
        current,
        kc.contexts.iter().map(|c| {
            let help = c.context.as_ref().map(|x| match &x.namespace {
                Some(ns) => format!("cluster {}, namespace {ns}", x.cluster),
                None => format!("cluster {}", x.cluster),
            });
            (c.name.clone(), help)
        }),
    )
}

/// `--scenario`: the built-in scenarios (and files, which the flag also takes).
pub fn scenarios(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut out = starting_with(
        current,
        BUILT_IN
            .iter()
            .map(|(n, _)| ((*n).to_owned(), Some("built-in scenario".to_owned())))
            .chain([(
                "scale".to_owned(),
                Some("built-in scenario: many apps (--apps, --executors)".to_owned()),
            )]),
    );
    out.extend(clap_complete::engine::PathCompleter::file().complete(current));
    out
}

/// `-n`: the cluster's namespaces (those with Spark drivers marked), and the
/// kubeconfig's.
pub fn namespaces(current: &OsStr) -> Vec<CompletionCandidate> {
    let words = typed_words();
    let from_cluster = ask(&words, None, |conn| async move {
        let client = conn.client;
        let spark = spark_namespaces(&client).await.unwrap_or_default();
        let all = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client)
            .list_metadata(&kube::api::ListParams::default().limit(500))
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .filter_map(|n| n.metadata.name)
                    .collect()
            })
            .unwrap_or_else(|_| Vec::new());
        let mut out: Vec<(String, Option<String>)> = spark
            .iter()
            .map(|ns| (ns.clone(), Some("runs Spark".to_owned())))
            .collect();
        out.extend(
            all.into_iter()
                .filter(|ns| !spark.contains(ns))
                .map(|ns| (ns, None)),
        );
        out
    });
    let mut names = from_cluster.unwrap_or_default();
    if let Some(kc) = kubeconfig(&words) {
        names.extend(
            kc.contexts
                .iter()
                .filter_map(|c| c.context.as_ref()?.namespace.clone())
                .map(|ns| (ns, Some("a kubeconfig context's".to_owned()))),
        );
    }
    // The first answer for a name (the cluster's) is the one kept.
    let mut seen = std::collections::HashSet::new();
    names.retain(|(n, _)| seen.insert(n.clone()));
    starting_with(current, names)
}

/// `--app`: the Spark applications in scope (their names and ids, from the drivers).
pub fn apps(current: &OsStr) -> Vec<CompletionCandidate> {
    let words = typed_words();
    let all = words.iter().any(|w| w == "-A" || w == "--all-namespaces");
    let namespace = flag_value(&words, &["-n", "--namespace"]);
    let found = ask(&words, namespace.filter(|_| !all), move |conn| async move {
        let api: kube::Api<k8s_openapi::api::core::v1::Pod> = match (&conn.scope, all) {
            (Scope::Namespace(ns), false) => kube::Api::namespaced(conn.client.clone(), ns),
            _ => kube::Api::all(conn.client.clone()),
        };
        let drivers = api
            .list_metadata(
                &kube::api::ListParams::default()
                    .labels("spark-role=driver")
                    .limit(500),
            )
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        let mut out = Vec::new();
        for d in drivers {
            let labels = d.metadata.labels.unwrap_or_default();
            let ns = d.metadata.namespace.unwrap_or_default();
            let id = labels.get(LABEL_APP_ID).cloned();
            let name = labels.get(LABEL_APP_NAME).cloned();
            if let Some(name) = &name {
                out.push((
                    name.clone(),
                    Some(format!("{} in {ns}", id.clone().unwrap_or_default())),
                ));
            }
            if let Some(id) = id {
                out.push((id, Some(format!("{} in {ns}", name.unwrap_or_default()))));
            }
        }
        out
    });
    starting_with(current, found.unwrap_or_default())
}

async fn spark_namespaces(client: &kube::Client) -> Result<Vec<String>, kube::Error> {
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client.clone());
    let list = pods
        .list_metadata(
            &kube::api::ListParams::default()
                .labels("spark-role=driver")
                .limit(500),
        )
        .await?;
    let mut out: Vec<String> = list
        .items
        .into_iter()
        .filter_map(|p| p.metadata.namespace)
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Connects as the typed flags say and runs `f`, all within [`ASK_FOR`]; `None` when the
/// cluster is not there, refuses, or is slow. Runs on a thread of its own (the shell's
/// completion may be asked from inside a runtime).
fn ask<T, F, Fut>(words: &[String], namespace: Option<String>, f: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce(Connection) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
{
    let opts = LiveOptions {
        kubeconfig: flag_value(words, &["--kubeconfig"]).map(Into::into),
        context: flag_value(words, &["--context"]),
        namespace,
        request_timeout: ASK_FOR,
        ..Default::default()
    };
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async move {
            tokio::time::timeout(ASK_FOR, async move {
                let conn = connection::connect(&opts).await.ok()?;
                Some(f(conn).await)
            })
            .await
            .ok()
            .flatten()
        })
    })
    .join()
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_s_value_is_the_last_given_in_either_spelling() {
        let w = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            flag_value(&w("st status --context a -n x --context=b"), &["--context"]),
            Some("b".to_owned())
        );
        assert_eq!(
            flag_value(&w("st -n x status"), &["-n", "--namespace"]),
            Some("x".to_owned())
        );
        assert_eq!(flag_value(&w("st status --context"), &["--context"]), None);
    }

    #[test]
    fn scenarios_are_offered_by_prefix() {
        let got: Vec<String> = scenarios(OsStr::new("oom"))
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect();
        assert!(got.contains(&"oom-storm".to_owned()), "{got:?}");
        assert!(!got.contains(&"mixed".to_owned()), "{got:?}");
    }
}
