fn main() -> std::process::ExitCode {
    rkers::cli::main()
}
