//! API errors as `metav1.Status` objects: kube-rs and kubectl read `reason` first, then `code`.

use serde_json::{Value, json};

use crate::resource::Resource;

/// An error the API server answers with.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn not_found(resource: Resource, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", resource.plural()),
        )
        .with_details(json!({"name": name, "kind": resource.plural()}))
    }

    pub fn not_found_path(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    pub fn already_exists(resource: Resource, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", resource.plural()),
        )
        .with_details(json!({"name": name, "kind": resource.plural()}))
    }

    pub fn conflict(resource: Resource, name: &str) -> Self {
        Self::conflict_msg(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn conflict_msg(resource: Resource, name: &str, why: impl std::fmt::Display) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                resource.plural()
            ),
        )
        .with_details(json!({"name": name, "kind": resource.plural()}))
    }

    pub fn invalid(resource: Resource, name: &str, field: &str, message: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!(
                "{} \"{name}\" is invalid: {field}: {message}",
                resource.kind()
            ),
        )
        .with_details(json!({"name": name, "kind": resource.plural(),
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}]}))
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn forbidden(user: &str, verb: &str, resource: &str, namespace: Option<&str>) -> Self {
        Self::forbidden_in(user, verb, resource, "", namespace)
    }

    /// Forbidden in an API group, worded as the API server's RBAC authorizer words it
    /// (`podgroups.scheduling.volcano.sh is forbidden: … in API group "scheduling.volcano.sh"`).
    pub fn forbidden_in(
        user: &str,
        verb: &str,
        resource: &str,
        group: &str,
        namespace: Option<&str>,
    ) -> Self {
        let scope = match namespace {
            Some(ns) => format!(" in the namespace \"{ns}\""),
            None => " at the cluster scope".to_owned(),
        };
        let full = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        Self::new(
            403,
            "Forbidden",
            format!(
                "{full} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{group}\"{scope}"
            ),
        )
        .with_details(json!({"kind": resource, "group": group}))
    }

    pub fn forbidden_msg(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    pub fn unsupported_media(ct: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got {ct:?})"
            ),
        )
    }

    /// As kube-apiserver answers a request whose credentials no authenticator accepts.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// The Status object.
    pub fn status(&self) -> Value {
        let mut s = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}
