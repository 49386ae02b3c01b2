//! Switching the live view to another namespace or context while it runs (`:ns`, `:ctx`).
//!
//! The new scope is checked first (a context is connected to; a namespace is looked up and
//! LISTed once),
//! so a refusal leaves the old sources running and says why. Then the old sources are
//! stopped and awaited (nothing of the old scope can follow), a
//! [`SourceEvent::ScopeChanged`] goes down the same channel (the store drops the old
//! scope, a recording keeps the switch), and the new scope's sources start.

use std::sync::Arc;

use kube::api::ListParams;
use spark_triage_core::text;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::connection::{Connection, LiveOptions};
use super::{Scope, SourceEvent};
use crate::redact;
use crate::settings::ReadOnly;

/// Where to switch to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchTo {
    Namespace(String),
    AllNamespaces,
    /// A kubeconfig context (in its own namespace, or the configuration file's for it).
    Context(String),
}

/// The flags and configuration file worked out again for another context: its options
/// and whether writes are allowed there.
pub type Reconfigure = Arc<dyn Fn(&str) -> Result<(LiveOptions, ReadOnly), String> + Send + Sync>;

/// A switch made: the connection the view now runs on, and, after a context switch, the
/// new context's read-only setting.
#[derive(Debug)]
pub struct Switched {
    pub conn: Connection,
    pub readonly: Option<ReadOnly>,
}

/// Owns the running sources of one scope.
pub struct Switcher {
    conn: Connection,
    tx: mpsc::Sender<SourceEvent>,
    tasks: Vec<JoinHandle<()>>,
    /// `None`: one cluster only (the demo's simulator).
    reconfigure: Option<Reconfigure>,
}

impl Switcher {
    /// Starts the sources of `conn`.
    pub fn start(
        conn: Connection,
        tx: mpsc::Sender<SourceEvent>,
        reconfigure: Option<Reconfigure>,
    ) -> Self {
        let tasks = super::live::spawn(&conn, tx.clone());
        Self {
            conn,
            tx,
            tasks,
            reconfigure,
        }
    }

    /// Switches, or says why not (the old sources then run on).
    pub async fn switch(&mut self, to: SwitchTo) -> Result<Switched, String> {
        let (conn, readonly) = match to {
            SwitchTo::Namespace(ns) => (self.rescoped(Scope::Namespace(ns)), None),
            SwitchTo::AllNamespaces => (self.rescoped(Scope::All), None),
            SwitchTo::Context(name) => {
                let Some(reconfigure) = &self.reconfigure else {
                    return Err(format!(
                        "this view has one cluster ({}): no context {name:?} to switch to",
                        self.conn.context
                    ));
                };
                let (mut opts, readonly) = reconfigure(&name)?;
                // One clock for the view across its switches: the runner, the tick and the
                // forgetting hold this one, and the new cluster's `Date` corrects it.
                opts.clock = Some(self.conn.clock.clone());
                let mut conn = super::connection::connect(&opts)
                    .await
                    .map_err(|e| e.to_string())?;
                // The event logs of the new context's apps are read from the same place.
                conn.extra = self.conn.extra.clone();
                (conn, Some(readonly))
            }
        };
        probe(&conn).await?;
        for t in self.tasks.drain(..) {
            t.abort();
            let _ = t.await;
        }
        let _ = self
            .tx
            .send(SourceEvent::ScopeChanged {
                context: conn.context.clone(),
                scope: conn.describe_scope(),
                at: conn.clock.now(),
            })
            .await;
        self.tasks = super::live::spawn(&conn, self.tx.clone());
        self.conn = conn.clone();
        Ok(Switched { conn, readonly })
    }

    /// The same cluster in another scope (its driver view starts with no app in view).
    fn rescoped(&self, scope: Scope) -> Connection {
        Connection {
            scope,
            focus: Default::default(),
            ..self.conn.clone()
        }
    }

    /// Stops the sources.
    pub fn stop(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl std::fmt::Debug for Switcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Switcher")
            .field("conn", &self.conn)
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Switcher {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One LIST in the new scope: a namespace the user may not read is refused before the
/// old scope is dropped.
async fn probe(conn: &Connection) -> Result<(), String> {
    // A namespace that is not there: a LIST in it answers empty, as if it had no Spark
    // apps, and the view would be dropped for nothing (`:ns nope` is refused like `:ctx
    // nope`). A user who may not read namespace objects is let through to the LIST.
    if let Scope::Namespace(ns) = &conn.scope {
        let api: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(conn.client.clone());
        if let Ok(Err(kube::Error::Api(s))) =
            tokio::time::timeout(conn.timeout, api.get_metadata(ns)).await
            && s.code == 404
        {
            return Err(format!(
                "no namespace {ns:?} in context {} (:ns all, or Tab for its namespaces)",
                conn.context
            ));
        }
    }
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        super::connection::pods_api(&conn.client, &conn.scope);
    let params = ListParams::default().labels(&conn.selector).limit(1);
    let list = api.list_metadata(&params);
    match tokio::time::timeout(conn.timeout, list).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(s))) if s.code == 403 => Err(format!(
            "{}: forbidden ({})",
            conn.scope.describe(),
            redact::one_line(&s.message)
        )),
        Ok(Err(e)) => Err(format!(
            "{}: {}",
            conn.scope.describe(),
            super::errors::error_line(&e)
        )),
        Err(_) => Err(format!(
            "{}: no answer within {}",
            conn.scope.describe(),
            text::human_std_duration(conn.timeout)
        )),
    }
}
