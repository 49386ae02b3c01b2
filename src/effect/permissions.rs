//! What the current user may do: asked once per namespace with SelfSubjectAccessReviews,
//! corrected by any 403 a write meets, and the gate every write passes.

use std::collections::BTreeMap;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};

use crate::settings::ReadOnly;

/// Why a write is not allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    #[error("read-only mode ({0})")]
    ReadOnly(String),
    #[error("missing permission: {verb} pods in namespace {namespace}")]
    Permission { verb: String, namespace: String },
    /// Every write is logged first: a log that cannot be written refuses the write.
    #[error("refusing: the actions log cannot be written ({0}); every write is logged")]
    Unlogged(String),
}

impl Denied {
    /// The refusal every write meets in read-only mode, if on.
    pub fn read_only(r: &ReadOnly) -> Option<Self> {
        match r {
            ReadOnly::Off => None,
            ReadOnly::On(why) => Some(Self::ReadOnly(why.clone())),
        }
    }
}

/// What the API said the current user may do, per namespace and verb.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    allowed: BTreeMap<(String, String), bool>,
}

impl Permissions {
    /// Asks the API (SelfSubjectAccessReview) about `delete` and `patch` on pods in each
    /// namespace. A failing review counts as denied.
    pub async fn check(client: &Client, namespaces: &[String]) -> Self {
        let mut allowed = BTreeMap::new();
        for ns in namespaces {
            for verb in ["delete", "patch"] {
                allowed.insert((ns.clone(), verb.to_owned()), can(client, ns, verb).await);
            }
        }
        Self { allowed }
    }

    pub fn allow_all(namespaces: &[String]) -> Self {
        let mut allowed = BTreeMap::new();
        for ns in namespaces {
            for verb in ["delete", "patch"] {
                allowed.insert((ns.clone(), verb.to_owned()), true);
            }
        }
        Self { allowed }
    }

    /// Adds answers about more namespaces.
    pub fn merge(&mut self, other: Permissions) {
        self.allowed.extend(other.allowed);
    }

    /// Whether this namespace was asked about.
    pub fn knows(&self, namespace: &str) -> bool {
        self.allowed.keys().any(|(ns, _)| ns == namespace)
    }

    /// Records a 403 seen on a write.
    pub fn deny(&mut self, namespace: &str, verb: &str) {
        self.allowed
            .insert((namespace.to_owned(), verb.to_owned()), false);
    }

    /// `Ok` when `verb` on pods in `namespace` may be done. Unknown namespaces are allowed
    /// (the API will say no if not, and that is recorded).
    pub fn gate(&self, readonly: &ReadOnly, namespace: &str, verb: &str) -> Result<(), Denied> {
        if let Some(no) = Denied::read_only(readonly) {
            return Err(no);
        }
        match self.allowed.get(&(namespace.to_owned(), verb.to_owned())) {
            Some(false) => Err(Denied::Permission {
                verb: verb.to_owned(),
                namespace: namespace.to_owned(),
            }),
            _ => Ok(()),
        }
    }
}

async fn can(client: &Client, namespace: &str, verb: &str) -> bool {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_owned()),
                verb: Some(verb.to_owned()),
                resource: Some("pods".to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    api.create(&PostParams::default(), &review)
        .await
        .ok()
        .and_then(|r| r.status)
        .is_some_and(|s| s.allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_says_why() {
        let mut p = Permissions::allow_all(&["spark-jobs".to_owned()]);
        assert_eq!(p.gate(&ReadOnly::Off, "spark-jobs", "delete"), Ok(()));
        assert_eq!(
            p.gate(&ReadOnly::flag(), "spark-jobs", "delete"),
            Err(Denied::ReadOnly("--readonly".into()))
        );
        p.deny("spark-jobs", "patch");
        assert_eq!(
            p.gate(&ReadOnly::Off, "spark-jobs", "patch")
                .unwrap_err()
                .to_string(),
            "missing permission: patch pods in namespace spark-jobs"
        );
        assert_eq!(p.gate(&ReadOnly::Off, "elsewhere", "patch"), Ok(()));
    }
}
