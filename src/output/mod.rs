//! What the commands print: the `status` and `report` documents (as JSON, YAML, tables,
//! markdown), JSON written to stdout, and the progress line on stderr.

pub mod fleet;
pub mod json;
pub mod progress;
pub mod report;
pub mod status;
