//! Integration tests: one binary, one module per area.
#![allow(
    clippy::unwrap_used,
    reason = "test helpers fail loudly on unexpected errors, like the tests"
)]

mod actions;
mod agreement;
mod alerts;
mod allocators;
mod app_verdicts;
mod cli;
mod common;
mod credentials;
mod deploy;
mod driver_view;
mod event_logs;
mod events;
mod explain;
mod fleet;
mod flight;
mod fuzz;
mod headline;
mod history_server;
mod hostile;
mod hostile_actions;
mod hostile_network;
mod hostile_text;
mod housekeeping;
mod krew;
mod kubectl;
mod mcp;
mod metrics;
mod object_store;
mod operators;
mod process_kubelet;
mod real_kubelet;
mod recordings;
#[path = "../support/reference.rs"]
mod reference;
mod scenarios;
mod schemas;
mod status;
#[path = "../support/tmux.rs"]
mod tmux;
mod tui_late;
mod tui_switch;
mod tui_tmux;
mod verdicts;
