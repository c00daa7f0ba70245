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
    use args::{CertCommand, Command, EncryptCommand, UtilCommand};
    let reporter = crate::output::Reporter::new(cli.output, cli.quiet);
    if let Command::Config(a) = &cli.command {
        return commands::config_cmd::run(a);
    }
    // Every other command reads the config first: an invalid config stops it with exit 2,
    // whatever the command.
    let path = cli
        .command
        .config_path()
        .expect("every other command has --config");
    let cluster = crate::cluster::Cluster::load(path, &reporter).map_err(|e| {
        if e.is_invalid_config() {
            CliError::InvalidConfig(format!(
                "{path}: invalid cluster configuration:\n{e}",
                path = path.display()
            ))
        } else {
            CliError::Failed(e.to_string())
        }
    })?;
    match &cli.command {
        Command::Up(a) if a.init => {
            let custom = a.custom_certs.then(|| {
                a.cert_dir
                    .clone()
                    .unwrap_or_else(|| cluster.files.cert_dir.clone())
            });
            commands::offline::init_state(&cluster, &reporter, custom.as_deref(), a.dry_run)
        }
        Command::Up(a) => commands::up::run(&cluster, a, &reporter).await,
        Command::Remove(a) => commands::remove::run(&cluster, a, &reporter).await,
        Command::Version(_) => commands::version::run(&cluster).await,
        Command::Preflight(a) => commands::preflight::run(&cluster, a, &reporter).await,
        Command::Doctor(a) => commands::doctor::run(&cluster, a, &reporter).await,
        Command::Etcd { command } => commands::etcd::run(&cluster, command, &reporter).await,
        Command::Cert {
            command: CertCommand::GenerateCsr { cert_dir, .. },
        } => commands::offline::generate_csr(&cluster, &reporter, cert_dir.as_deref()),
        Command::Cert {
            command: command @ (CertCommand::Rotate { .. } | CertCommand::List { .. }),
        } => commands::cert::run(&cluster, command, &reporter).await,
        Command::Encrypt {
            command: EncryptCommand::RotateKey {
                connect, dry_run, ..
            },
        } => commands::encrypt::rotate(&cluster, connect, *dry_run, &reporter).await,
        Command::Util {
            command: UtilCommand::GetKubeconfig { .. },
        } => commands::offline::get_kubeconfig(&cluster, &reporter),
        Command::Util {
            command: UtilCommand::GetStateFile {
                connect, dry_run, ..
            },
        } => commands::state_file::get_state_file(&cluster, connect, *dry_run, &reporter).await,
        Command::Config(_) => unreachable!("handled above"),
    }
}
