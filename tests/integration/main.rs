//! Integration tests: one binary, one module per area.

mod common;
mod explain;
mod fuzz;
mod kubectl;
mod scenarios;
mod sim_api;
