//! What the tool publishes for others, beside its screen and its commands' output: the
//! Prometheus `/metrics` of the live view and the flight recorder ([`metrics`], with the
//! verdicts as series in [`verdicts`] and the `process_*` figures in [`process`]), and the
//! Kubernetes Events it writes on driver pods ([`events`]: the tool's second write path to
//! the cluster, after the actions, with its own grant), and the bounded HTTP server both
//! `/metrics` and MCP over HTTP run on ([`serve`]).

/// Declares metric families once, as data: one line per family (the field holding it, its
/// name after the prefix, its help). Gives the list (`$list`: the docs are checked against
/// it) and the method registering them under a prefix.
macro_rules! families {
    ($list:ident, $register:ident for $ty:ty { $($field:ident => $name:literal: $help:literal,)* }) => {
        /// The families (name after the prefix, help), as registered.
        #[cfg_attr(not(test), allow(dead_code, reason = "the docs' test reads it"))]
        pub(crate) const $list: &[(&str, &str)] = &[$(($name, $help)),*];

        impl $ty {
            fn $register(&self, r: &mut prometheus_client::registry::Registry, prefix: &str) {
                $(r.register(format!("{prefix}_{}", $name), $help, self.$field.clone());)*
            }
        }
    };
}

pub(crate) mod events;
pub(crate) mod metrics;
pub(crate) mod process;
pub(crate) mod serve;
pub(crate) mod verdicts;

#[cfg(test)]
mod tests {
    /// Every family declared is documented under its full name, and every metric the docs
    /// table names is declared: a family added in one place is said in both or fails here.
    #[test]
    fn the_docs_name_every_family_and_only_those() {
        let docs = [
            include_str!("../../docs/metrics.md"),
            include_str!("../../docs/flight-recorder.md"),
        ]
        .concat();
        let declared: Vec<String> = [
            (super::verdicts::PREFIX, super::verdicts::FAMILIES),
            (super::metrics::RECORDER_PREFIX, super::metrics::RECORDER),
            (super::metrics::RECORDER_PREFIX, super::metrics::HEALTH),
            ("spark_triage_view", super::metrics::HEALTH),
        ]
        .iter()
        .flat_map(|(p, list)| list.iter().map(move |(name, _)| format!("{p}_{name}")))
        .chain(["spark_triage_build_info".to_owned()])
        .collect();
        let mentioned = |name: &str| {
            docs.match_indices(name).any(|(at, _)| {
                let rest = &docs[at + name.len()..];
                let rest = rest.strip_prefix("_total").unwrap_or(rest);
                !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            })
        };
        let undocumented: Vec<&String> = declared.iter().filter(|n| !mentioned(n)).collect();
        assert!(undocumented.is_empty(), "not in the docs: {undocumented:?}");
        // The docs' tables: one row per metric, its name first.
        let tabled: Vec<&str> = docs
            .lines()
            .filter_map(|l| l.strip_prefix("| `spark_triage_"))
            .filter_map(|l| l.split(['`', '{']).next())
            .collect();
        assert!(tabled.len() >= 10, "{tabled:?}");
        for t in tabled {
            let name = format!("spark_triage_{}", t.strip_suffix("_total").unwrap_or(t));
            assert!(
                declared.contains(&name),
                "{name}: in the docs, not declared"
            );
        }
    }
}
