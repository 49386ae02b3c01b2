use spark_triage::cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
