//! Writes: create (with the defaults the real server fills in), update, modify, and
//! delete with grace periods, finalizers and preconditions.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{ChangeType, DeleteOptions, Deleted, Obj, ObjectStore, Resource};
use crate::clock::fmt_time;
use crate::error::ApiError;

impl ObjectStore {
    /// POST: names, uid, RV, timestamps and the defaults the real server fills in.
    pub fn create(
        &self,
        resource: Resource,
        ns: &str,
        mut value: Value,
    ) -> Result<Arc<Obj>, ApiError> {
        if !value.is_object() {
            return Err(ApiError::bad_request("the body must be a JSON object"));
        }
        let mut inner = self.lock();
        if !value["metadata"].is_object() {
            value["metadata"] = json!({});
        }
        let meta = &mut value["metadata"];
        let name = match meta["name"].as_str().filter(|s| !s.is_empty()) {
            Some(n) => n.to_owned(),
            None => match meta["generateName"].as_str() {
                Some(prefix) => {
                    let n = format!(
                        "{prefix}{}",
                        random_suffix(inner.uid_counter + self.uid_seed)
                    );
                    meta["name"] = Value::String(n.clone());
                    n
                }
                None => {
                    return Err(ApiError::invalid(
                        resource,
                        "",
                        "metadata.name",
                        "name or generateName is required",
                    ));
                }
            },
        };
        if resource.namespaced() {
            if ns.is_empty() {
                return Err(ApiError::bad_request("a namespace is required"));
            }
            if !inner
                .objects
                .get(&Resource::Namespaces)
                .is_some_and(|m| m.contains_key(&(String::new(), ns.to_owned())))
            {
                return Err(ApiError::not_found(Resource::Namespaces, ns));
            }
            if let Some(body_ns) = meta["namespace"].as_str()
                && !body_ns.is_empty()
                && body_ns != ns
            {
                return Err(ApiError::bad_request(format!(
                    "the namespace of the provided object ({body_ns}) does not match the namespace sent on the request ({ns})"
                )));
            }
            meta["namespace"] = Value::String(ns.to_owned());
        } else if let Some(m) = meta.as_object_mut() {
            m.remove("namespace");
        }
        let key = (
            if resource.namespaced() {
                ns.to_owned()
            } else {
                String::new()
            },
            name.clone(),
        );
        if inner
            .objects
            .get(&resource)
            .is_some_and(|m| m.contains_key(&key))
        {
            return Err(ApiError::already_exists(resource, &name));
        }
        if resource == Resource::Pods {
            super::quota::admit(&inner, ns, &name, &value)?;
        }
        let uid = self.next_uid(&mut inner);
        let now = fmt_time(self.clock.now());
        let meta = &mut value["metadata"];
        meta["uid"] = Value::String(uid);
        meta["creationTimestamp"] = Value::String(now.clone());
        if let Some(m) = meta.as_object_mut() {
            m.remove("deletionTimestamp");
            m.remove("deletionGracePeriodSeconds");
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        value["metadata"]["generation"] = json!(1);
        value["kind"] = Value::String(resource.kind().to_owned());
        value["apiVersion"] = Value::String(resource.group_version().to_owned());
        apply_defaults(resource, &mut value, &now);
        Ok(self.commit(&mut inner, resource, ChangeType::Added, None, value))
    }

    /// PUT (and the result of PATCH): replaces the object, or only its status for `/status`.
    /// A stale `metadata.resourceVersion` is a 409.
    pub fn update(
        &self,
        resource: Resource,
        ns: &str,
        name: &str,
        mut value: Value,
        status_only: bool,
    ) -> Result<Arc<Obj>, ApiError> {
        let mut inner = self.lock();
        let key = (ns.to_owned(), name.to_owned());
        let current = inner.existing(resource, &key)?;
        let cur = current.value();
        if let Some(rv) = value["metadata"]["resourceVersion"].as_str()
            && !rv.is_empty()
            && rv != current.rv().to_string()
        {
            return Err(ApiError::conflict(resource, name));
        }
        if status_only {
            let status = value.get("status").cloned().unwrap_or(Value::Null);
            value = cur.clone();
            value["status"] = status;
        } else {
            // Identity and server-owned metadata cannot be changed by a client.
            let cur_meta = &cur["metadata"];
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "namespace",
                "name",
            ] {
                match cur_meta.get(k) {
                    Some(v) => value["metadata"][k] = v.clone(),
                    None => {
                        if let Some(m) = value["metadata"].as_object_mut() {
                            m.remove(k);
                        }
                    }
                }
            }
            value["kind"] = cur["kind"].clone();
            value["apiVersion"] = cur["apiVersion"].clone();
            if resource == Resource::Pods && value.get("status").is_none() {
                value["status"] = cur["status"].clone();
            }
            // Once deleting, finalizers may only be removed.
            if cur_meta.get("deletionTimestamp").is_some() {
                let before = string_set(&cur_meta["finalizers"]);
                let added = string_set(&value["metadata"]["finalizers"])
                    .into_iter()
                    .any(|f| !before.contains(&f));
                if added {
                    return Err(ApiError::forbidden_msg(format!(
                        "{} \"{name}\" is forbidden: no new finalizers can be added if the object is being deleted",
                        resource.plural()
                    )));
                }
            }
            if value["spec"] != cur["spec"] {
                let g = cur["metadata"]["generation"].as_i64().unwrap_or(1);
                value["metadata"]["generation"] = json!(g + 1);
            }
        }
        let deleting = value["metadata"].get("deletionTimestamp").is_some();
        let finalizers_empty = string_set(&value["metadata"]["finalizers"]).is_empty();
        // A deleting object whose last finalizer went away is removed — unless it is a pod
        // still inside its grace period (the kubelet's final delete removes it then).
        let remove = deleting
            && finalizers_empty
            && (resource != Resource::Pods
                || value["metadata"]["deletionGracePeriodSeconds"] == json!(0));
        if remove {
            return Ok(self.commit(
                &mut inner,
                resource,
                ChangeType::Deleted,
                Some(current),
                value,
            ));
        }
        Ok(self.commit(
            &mut inner,
            resource,
            ChangeType::Modified,
            Some(current),
            value,
        ))
    }

    /// Reads, changes and writes an object in one step (controllers' writes). `f` returns
    /// `false` to leave the object alone.
    pub fn modify(
        &self,
        resource: Resource,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value) -> bool,
    ) -> Option<Arc<Obj>> {
        let mut inner = self.lock();
        let key = (ns.to_owned(), name.to_owned());
        let current = inner.objects.get(&resource)?.get(&key)?.clone();
        let mut value = current.value();
        if !f(&mut value) {
            return Some(current);
        }
        Some(self.commit(
            &mut inner,
            resource,
            ChangeType::Modified,
            Some(current),
            value,
        ))
    }

    /// DELETE, with Kubernetes' graceful pod deletion and finalizer rules (docs/simulator.md, "What is simulated").
    pub fn delete(
        &self,
        resource: Resource,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let mut inner = self.lock();
        let key = (ns.to_owned(), name.to_owned());
        let current = inner.existing(resource, &key)?;
        let cur = current.value();
        if let Some(uid) = &opts.precondition_uid
            && cur["metadata"]["uid"].as_str() != Some(uid.as_str())
        {
            return Err(ApiError::conflict_msg(
                resource,
                name,
                format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    cur["metadata"]["uid"].as_str().unwrap_or_default()
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv
            && *rv != current.rv().to_string()
        {
            return Err(ApiError::conflict(resource, name));
        }
        if opts.dry_run {
            return Ok(Deleted::Pending(current));
        }
        let finalizers = !string_set(&cur["metadata"]["finalizers"]).is_empty();
        let grace = if resource == Resource::Pods {
            let phase = cur["status"]["phase"].as_str().unwrap_or_default();
            let unscheduled = cur["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
            if unscheduled || phase == "Succeeded" || phase == "Failed" {
                0
            } else {
                opts.grace_period_seconds
                    .or_else(|| cur["spec"]["terminationGracePeriodSeconds"].as_i64())
                    .unwrap_or(30)
                    .max(0)
            }
        } else {
            0
        };
        let already = cur["metadata"].get("deletionTimestamp").is_some();
        if grace == 0 && !finalizers {
            let mut last = cur.clone();
            if !already {
                last["metadata"]["deletionTimestamp"] = Value::String(fmt_time(self.clock.now()));
            }
            last["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            let obj = self.commit(
                &mut inner,
                resource,
                ChangeType::Deleted,
                Some(current),
                last,
            );
            return Ok(Deleted::Gone(obj));
        }
        let mut value = cur.clone();
        let now = self.clock.now();
        let requested = now + chrono::Duration::seconds(grace.min(86_400 * 365));
        // A shorter grace period may replace a longer one; a longer never extends it.
        let keep_existing = already
            && value["metadata"]["deletionGracePeriodSeconds"]
                .as_i64()
                .is_some_and(|g| g <= grace);
        if keep_existing {
            return Ok(Deleted::Pending(current));
        }
        value["metadata"]["deletionTimestamp"] = Value::String(fmt_time(requested));
        value["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        let g = value["metadata"]["generation"].as_i64().unwrap_or(1);
        value["metadata"]["generation"] = json!(g + 1);
        let obj = self.commit(
            &mut inner,
            resource,
            ChangeType::Modified,
            Some(current),
            value,
        );
        Ok(Deleted::Pending(obj))
    }
}

fn string_set(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn random_suffix(seed: u64) -> String {
    const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..5)
        .map(|_| ALPHA[rng.usize(..ALPHA.len())] as char)
        .collect()
}

/// Defaults the real API server fills in on create.
fn apply_defaults(resource: Resource, value: &mut Value, now: &str) {
    match resource {
        Resource::Pods => {
            if !value["spec"].is_object() {
                value["spec"] = json!({});
            }
            let spec = &mut value["spec"];
            for (k, v) in [
                ("restartPolicy", json!("Always")),
                ("terminationGracePeriodSeconds", json!(30)),
                ("schedulerName", json!("default-scheduler")),
                ("dnsPolicy", json!("ClusterFirst")),
                ("serviceAccountName", json!("default")),
                ("enableServiceLinks", json!(true)),
                ("priority", json!(0)),
            ] {
                if spec.get(k).is_none() {
                    spec[k] = v;
                }
            }
            if !value["status"].is_object() {
                value["status"] = json!({});
            }
            if value["status"].get("phase").is_none() {
                value["status"]["phase"] = json!("Pending");
            }
            // The API server's pod strategy (`applySchedulingGatedCondition`): a pod created
            // with scheduling gates says so.
            let gated = value["spec"]["schedulingGates"]
                .as_array()
                .is_some_and(|g| !g.is_empty());
            let has_cond = value["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "PodScheduled"));
            if gated && !has_cond {
                let cond = json!({"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates", "lastProbeTime": null,
                    "lastTransitionTime": now});
                match value["status"]["conditions"].as_array_mut() {
                    Some(c) => c.push(cond),
                    None => value["status"]["conditions"] = json!([cond]),
                }
            }
            if value["status"].get("qosClass").is_none() {
                let requests = value["spec"]["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| {
                        c["resources"]["requests"].is_object()
                            || c["resources"]["limits"].is_object()
                    });
                value["status"]["qosClass"] =
                    json!(if requests { "Burstable" } else { "BestEffort" });
            }
        }
        Resource::Events => {
            if value.get("count").is_none() && value.get("series").is_none() {
                value["count"] = json!(1);
            }
            if value.get("firstTimestamp").is_none() && value.get("eventTime").is_none() {
                value["firstTimestamp"] = json!(now);
                value["lastTimestamp"] = json!(now);
            }
        }
        Resource::Namespaces if value["status"].get("phase").is_none() => {
            value["status"] = json!({"phase": "Active"});
        }
        _ => {}
    }
}
