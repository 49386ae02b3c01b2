//! What an app's Spark properties say of the cost of a loss, read the same from an event
//! log's environment and a driver's REST API's: whether dynamic allocation removes idle
//! executors, and what keeps a lost executor's shuffle output.

use std::collections::BTreeMap;

use crate::text;

/// Spark's own shuffle managers (as it lowercases them): an executor's output lives on
/// its disks.
const SORT: [&str; 3] = [
    "sort",
    "tungsten-sort",
    "org.apache.spark.shuffle.sort.sortshufflemanager",
];

/// The properties a cost reads.
#[derive(Debug, Clone, Copy)]
pub struct Conf<'a>(pub &'a BTreeMap<String, String>);

impl Conf<'_> {
    /// A property, when set to something.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Whether a property is `true`.
    pub fn on(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// `spark.dynamicAllocation.enabled`.
    pub fn dynamic_allocation(&self) -> bool {
        self.on("spark.dynamicAllocation.enabled")
    }

    /// What keeps a lost executor's shuffle output, as the configuration says.
    pub fn shuffle_kept_by(&self) -> Option<String> {
        if self.on("spark.shuffle.service.enabled") {
            return Some("the external shuffle service (spark.shuffle.service.enabled)".into());
        }
        if let Some(m) = self.get("spark.shuffle.manager")
            && !SORT.contains(&m.trim().to_ascii_lowercase().as_str())
        {
            let m = text::clipped(&text::field(m), 120).into_owned();
            return Some(format!(
                "a remote shuffle service (spark.shuffle.manager {m})"
            ));
        }
        // shuffleBlocks is on by default (Spark 3.1+) once storage decommissioning is.
        let shuffle_blocks = self
            .get("spark.storage.decommission.shuffleBlocks.enabled")
            .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"));
        (self.on("spark.decommission.enabled")
            && self.on("spark.storage.decommission.enabled")
            && shuffle_blocks)
            .then(|| {
                "decommissioning's shuffle migration, on a graceful removal only (a pod deleted, \
                 preempted or evicted within its grace; not an OOM kill or a node lost)"
                    .into()
            })
    }
}
