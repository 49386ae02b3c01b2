fn main() -> std::process::ExitCode {
    spark_triage::cli::main()
}
