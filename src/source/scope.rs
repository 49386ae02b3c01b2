//! Scope mistakes: a namespace that does not exist, or one without Spark while other
//! namespaces have drivers. `status` turns the first into exit 1; the live view says both
//! in its apps pane instead of waiting silently with "sources ok".

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::ListParams;
use tokio::sync::mpsc;

use super::connection::Connection;
use super::{Scope, SourceEvent};

/// What the API says about the scope.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScopeFacts {
    /// The namespace in scope does not exist (a 404; unknown when forbidden).
    pub namespace_missing: bool,
    /// Namespaces with Spark drivers (one LIST across namespaces with the `spark-role=driver`
    /// selector, at most 500), when the API allows it and there are any.
    pub spark_namespaces: Option<Vec<String>>,
}

impl ScopeFacts {
    /// Why nothing was found in namespace `ns` when Spark drivers run there: the user's
    /// selector matches none of their pods (`None`: that is not why).
    pub fn selector_excludes(&self, ns: &str, selector: Option<&str>) -> Option<String> {
        let sel = selector?;
        self.spark_namespaces
            .as_ref()
            .is_some_and(|v| v.iter().any(|n| n == ns))
            .then(|| {
                format!(
                    "no Spark applications match -l {sel} in namespace {ns}, though Spark drivers run there"
                )
            })
    }

    /// "; Spark applications run in: a, b" or nothing.
    pub fn elsewhere(&self) -> String {
        self.spark_namespaces
            .as_ref()
            .map_or_else(String::new, |v| {
                format!("; Spark applications run in: {}", v.join(", "))
            })
    }
}

/// Asks the API about a namespace scope (`None` for all namespaces).
pub async fn facts(conn: &Connection) -> Option<ScopeFacts> {
    let Scope::Namespace(ns) = &conn.scope else {
        return None;
    };
    let spark_namespaces = Api::<Pod>::all(conn.client.clone())
        .list_metadata(&ListParams::default().labels("spark-role=driver").limit(500))
        .await
        .ok()
        .map(|l| {
            let mut v: Vec<String> = l
                .items
                .into_iter()
                .filter_map(|p| p.metadata.namespace)
                .collect();
            v.sort();
            v.dedup();
            v
        })
        .filter(|v| !v.is_empty());
    let namespace_missing = matches!(
        Api::<Namespace>::all(conn.client.clone()).get(ns).await,
        Err(kube::Error::Api(e)) if e.code == 404
    );
    Some(ScopeFacts {
        namespace_missing,
        spark_namespaces,
    })
}

/// For the live view: once the first LIST is in, a note when the scope looks wrong.
pub(super) async fn scope_note(conn: Connection, tx: mpsc::Sender<SourceEvent>) {
    let Some(f) = facts(&conn).await else {
        return;
    };
    let Scope::Namespace(ns) = &conn.scope else {
        return;
    };
    let text = if f.namespace_missing {
        format!("namespace {ns:?} does not exist{}", f.elsewhere())
    } else if f.spark_namespaces.as_ref().is_some_and(|v| !v.contains(ns)) {
        format!("no Spark drivers in namespace {ns}{}", f.elsewhere())
    } else {
        return;
    };
    // The drivers' list is not narrowed by the user's selector: with one, say which.
    let text = match &conn.user_selector {
        Some(sel) => format!("{text} (the selector -l {sel} narrows what is shown)"),
        None => text,
    };
    let _ = tx
        .send(SourceEvent::ScopeNote {
            text,
            at: conn.clock.now(),
        })
        .await;
}
