//! What the commands print: the `status` and `report` documents (as JSON, YAML, tables,
//! markdown), JSON written to stdout, and the progress line on stderr.

use crate::store::{AppRecord, Natural};

pub mod fleet;
pub mod json;
pub mod progress;
pub mod report;
pub mod status;
pub mod yaml;

/// The order of the applications in a listing (`--sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AppOrder {
    /// The most trouble first: the app verdict's severity, then failures, missing
    /// executors, waiting executors, then the name (the live view's order).
    #[default]
    Trouble,
    /// By namespace, name and id.
    Name,
}

/// An application in a listing, by name: (namespace, name, id).
pub trait AppName {
    fn app_key(&self) -> (&str, Option<&str>, &str);
}

impl AppName for AppRecord {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (&self.namespace, self.app_name.as_deref(), &self.app_id)
    }
}

impl AppName for status::AppStatus {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (&self.namespace, self.app_name.as_deref(), &self.app_id)
    }
}

impl AppName for report::AppReport<'_> {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (&self.namespace, self.app_name.as_deref(), &self.app_id)
    }
}

impl<T: AppName> AppName for std::sync::Arc<T> {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (**self).app_key()
    }
}

impl<T: AppName> AppName for &T {
    fn app_key(&self) -> (&str, Option<&str>, &str) {
        (**self).app_key()
    }
}

impl AppOrder {
    /// Re-sorts a listing made in trouble order when the name order was asked for.
    pub fn apply<T: AppName>(self, apps: &mut [T]) {
        if self == Self::Name {
            apps.sort_by_cached_key(|a| {
                let (ns, name, id) = a.app_key();
                (
                    Natural(ns.to_owned()),
                    name.map(|n| Natural(n.to_owned())),
                    Natural(id.to_owned()),
                )
            });
        }
    }
}
