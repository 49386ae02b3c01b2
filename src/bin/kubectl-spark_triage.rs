//! `kubectl spark-triage …`: kubectl runs this binary, found on PATH, for its plugin.

use spark_triage::cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
