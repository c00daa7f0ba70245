//! The command line: argument parsing, dispatch and exit codes.

pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(3)
}
