//! The namespace's ResourceQuotas, listed every poll interval: an executor pod the quota
//! refuses is never created, so its status is the only evidence (`quota-exhausted`).
//! A refused list (403) is said once and not retried: the tool works without quotas.

use std::time::Duration;

use k8s_openapi::api::core::v1::ResourceQuota;
use kube::Api;
use kube::api::ListParams;
use spark_triage_core::model::Quota;
use tokio::sync::mpsc;

use super::connection::{Connection, send};
use super::{Health, Scope, SourceEvent, SourceKind, errors};

pub(super) async fn quota_poll(conn: Connection, every: Duration, tx: mpsc::Sender<SourceEvent>) {
    let now = || conn.clock.now();
    let (api, namespace): (Api<ResourceQuota>, Option<String>) = match &conn.scope {
        Scope::Namespace(ns) => (Api::namespaced(conn.client.clone(), ns), Some(ns.clone())),
        Scope::All => (Api::all(conn.client.clone()), None),
    };
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    // The last list sent: an unchanged list is not sent again (recordings stay small).
    let mut last: Option<Vec<Quota>> = None;
    loop {
        tick.tick().await;
        // Quotas are few; one page of 500 is plenty (more are ignored, not an error).
        let ev = match api.list(&ListParams::default().limit(500)).await {
            Ok(list) => {
                let quotas: Vec<Quota> = list.items.iter().map(Quota::from_core).collect();
                if last.as_ref() == Some(&quotas) && !failing {
                    continue;
                }
                last = Some(quotas.clone());
                SourceEvent::QuotasListed {
                    namespace: namespace.clone(),
                    quotas,
                    at: now(),
                }
            }
            Err(kube::Error::Api(s)) if s.code == 403 => {
                let health = Health::Forbidden {
                    permission: format!("list resourcequotas in {}", conn.scope.describe()),
                };
                let ev = SourceEvent::SourceHealth {
                    source: SourceKind::Quotas,
                    health,
                    at: now(),
                };
                send(&tx, ev).await;
                return;
            }
            Err(e) => {
                failing = true;
                SourceEvent::SourceHealth {
                    source: SourceKind::Quotas,
                    health: Health::Retrying {
                        error: errors::error_line(&e),
                    },
                    at: now(),
                }
            }
        };
        let listed = matches!(ev, SourceEvent::QuotasListed { .. });
        if !send(&tx, ev).await {
            return;
        }
        if listed
            && std::mem::take(&mut failing)
            && !send(
                &tx,
                SourceEvent::SourceHealth {
                    source: SourceKind::Quotas,
                    health: Health::Connected,
                    at: now(),
                },
            )
            .await
        {
            return;
        }
    }
}
