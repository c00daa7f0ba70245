//! The command line: argument parsing, dispatch and exit codes.
//!
//! Exit codes (documented in the README):
//! - 0: success
//! - 1: the operation failed (a host, a container, a health check...)
//! - 2: invalid configuration or invalid command-line usage
//! - 3: the command is not implemented yet
//! - 130: interrupted (SIGINT)

pub mod args;
mod commands;

pub use args::Cli;

use clap::Parser;
use std::process::ExitCode;

/// Why a command did not succeed, mapped to the exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    InvalidConfig(String),
    #[error("`rkers {0}` is not implemented yet")]
    NotImplemented(&'static str),
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Failed(_) => 1,
            CliError::InvalidConfig(_) => 2,
            CliError::NotImplemented(_) => 3,
        }
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        tokio::select! {
            r = run(cli) => Some(r),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    match result {
        Some(Ok(())) => ExitCode::SUCCESS,
        Some(Err(e)) => {
            eprintln!("error: {}", crate::output::redact(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
        None => {
            eprintln!("interrupted");
            ExitCode::from(130)
        }
    }
}

fn init_logging(cli: &Cli) {
    let level = if cli.trace {
        "rkers=trace"
    } else if cli.debug {
        "rkers=debug"
    } else {
        "off"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("RKERS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(cli: Cli) -> Result<(), CliError> {
    use args::Command;
    match &cli.command {
        Command::Config(a) => commands::config_cmd::run(a),
        _ => {
            let _ = cli.command.config_path();
            Err(CliError::NotImplemented("command"))
        }
    }
}
