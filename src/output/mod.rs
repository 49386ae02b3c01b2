//! What the commands print: the `status` and `report` documents (as JSON, YAML, tables,
//! markdown), JSON written to stdout, and the progress line on stderr.

pub mod fleet;
pub mod json;
pub mod progress;
pub mod report;
pub mod status;

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

impl AppOrder {
    /// Re-sorts a listing made in trouble order when the name order was asked for.
    pub fn apply<T>(self, apps: &mut [T], key: impl Fn(&T) -> (&str, Option<&str>, &str)) {
        if self == Self::Name {
            apps.sort_by(|a, b| key(a).cmp(&key(b)));
        }
    }
}
