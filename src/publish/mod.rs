//! What the tool publishes for others, beside its screen and its commands' output: the
//! Prometheus `/metrics` of the live view and the flight recorder ([`metrics`], with the
//! verdicts as series in [`verdicts`] and the `process_*` figures in [`process`]), and the
//! Kubernetes Events it writes on driver pods ([`events`]: the tool's second write path to
//! the cluster, after the actions, with its own grant), and the bounded HTTP server both
//! `/metrics` and MCP over HTTP run on ([`serve`]).

pub(crate) mod events;
pub(crate) mod metrics;
pub(crate) mod process;
pub(crate) mod serve;
pub(crate) mod verdicts;
