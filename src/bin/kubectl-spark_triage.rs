//! `kubectl spark-triage …`: kubectl runs this binary, found on PATH, for its plugin.

fn main() -> std::process::ExitCode {
    spark_triage::cli::main()
}
