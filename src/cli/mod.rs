//! The command line: argument parsing, dispatch and exit codes.
//!
//! Exit codes (documented in the README):
//! - 0: success
//! - 1: the operation failed (a host, a container, a health check...)
//! - 2: invalid configuration or invalid command-line usage
//! - 3: the command is not implemented yet
//! - 130, 143, 129: interrupted by SIGINT, SIGTERM or SIGHUP (128 + the signal's number)

pub mod args;
mod commands;
mod terminal;

pub use args::Cli;

use crate::phases::interrupt::interrupt_signal;
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
    /// The command line asks for something that cannot be done this way (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The operation failed with one of the library's typed errors (exit 1): its hosts and
    /// causes reach the final JSON event.
    #[error("{0}")]
    Error(Box<dyn crate::error::HostContext + Send + Sync + 'static>),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Failed(_) | CliError::Error(_) => 1,
            CliError::InvalidConfig(_) | CliError::Usage(_) => 2,
            CliError::NotImplemented(_) => 3,
        }
    }

    /// An operation's typed error, kept whole for the final event.
    pub fn failed(e: impl crate::error::HostContext + Send + Sync + 'static) -> Self {
        CliError::Error(Box::new(e))
    }

    /// The failure as the final event shows it.
    pub fn report(&self) -> crate::error::ErrorReport {
        match self {
            CliError::Error(e) => crate::error::ErrorReport::of(e.as_ref()),
            other => crate::error::ErrorReport::message(other.to_string()),
        }
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    init_logging(&cli);
    let terminal = terminal::Saved::capture();
    let reporter = crate::output::Reporter::new(cli.output, cli.quiet);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let message = format!("cannot start the async runtime: {e}");
            crate::output::stderr_line(format_args!("error: {message}"));
            reporter.finish_run(1, Some(&message));
            return ExitCode::from(1);
        }
    };
    // `serve` stops on these signals itself, letting its operations end.
    let own_signals = !matches!(cli.command, args::Command::Serve(_));
    // Listened for before the run starts: a signal during its first, synchronous steps must
    // not end the process with the default action.
    let interrupted = {
        let _runtime = runtime.enter();
        interrupt_signal()
    };
    let result = runtime.block_on(async {
        tokio::select! {
            r = run(cli, &reporter) => Ok(r),
            // The flag is set before the run's work is dropped, so what it left unfinished
            // reports "interrupted".
            signal = async {
                let signal = interrupted.await;
                crate::output::mark_interrupted();
                signal
            }, if own_signals => Err(signal),
        }
    });
    let (code, error) = match result {
        Ok(Ok(())) => (0, None),
        Ok(Err(e)) => {
            let report = e.report().redacted(crate::output::redact);
            crate::output::stderr_line(format_args!("error: {}", report.message));
            (e.exit_code(), Some(report))
        }
        Err(signal) => {
            terminal.restore();
            let message = signal.message();
            crate::output::stderr_line(&message);
            // What the dropped run left to undo (a node it cordoned) gets a short while.
            runtime.block_on(crate::phases::finish_interrupted(INTERRUPT_CLEANUP));
            // A thread blocked reading the terminal (a passphrase prompt) never returns: do not
            // wait for it.
            runtime.shutdown_timeout(std::time::Duration::from_millis(200));
            reporter.finish_run(signal.exit_code(), Some(&message));
            return ExitCode::from(signal.exit_code());
        }
    };
    reporter.finish_run_with(code, error.as_ref());
    ExitCode::from(code)
}

/// How long an interrupted run may spend undoing what it left (uncordoning nodes).
const INTERRUPT_CLEANUP: std::time::Duration = std::time::Duration::from_secs(15);

/// clap's own message and exit code (0 for --help and --version, 2 otherwise); a run that asked
/// for JSON still ends with its result event.
fn usage_error(e: clap::Error) -> ExitCode {
    let mut code = u8::try_from(e.exit_code()).unwrap_or(2);
    // `--version` and `--help` are answers on stdout: one that cannot be written is a failure,
    // not exit 0.
    if let Err(error) = e.print()
        && code == 0
        && error.kind() != std::io::ErrorKind::BrokenPipe
    {
        crate::output::stderr_line(format_args!("error: cannot write to stdout: {error}"));
        code = 1;
    }
    let args: Vec<String> = std::env::args().collect();
    let json = args
        .windows(2)
        .any(|w| w[0] == "--output" && w[1] == "json")
        || args.iter().any(|a| a == "--output=json");
    if json && code != 0 {
        let message = e.kind().as_str().unwrap_or("invalid usage").to_string();
        crate::output::Reporter::new(crate::output::OutputFormat::Json, false)
            .finish_run(code, Some(&message));
    }
    ExitCode::from(code)
}

/// Writes a command's product (a listing, a report, a generated file) to stdout. A reader that
/// closed the pipe (`| head`) has what it asked for; any other failure to write (a full disk)
/// fails the command, where `println!` would panic (exit 101) and a dropped line would report
/// success.
pub(crate) fn print_out(text: impl std::fmt::Display) -> Result<(), CliError> {
    match crate::output::write_stdout(text) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::Failed(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

fn init_logging(cli: &Cli) {
    let level = if cli.trace {
        "rkers=trace"
    } else if cli.debug {
        "rkers=debug"
    } else if matches!(cli.command, args::Command::Serve(_)) {
        // A server's log is its operations' starts and ends (never a secret).
        "rkers::serve=info"
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

/// One operator at a time: a command that changes the cluster holds its run lock until it
/// ends (also when interrupted: the lock goes with the dropped run), and is refused at once
/// while another run holds it. A dry run takes nothing and only says who holds it.
fn run_lock(
    command: &args::Command,
    cluster: &crate::cluster::Cluster,
    reporter: &crate::output::Reporter,
) -> Result<Option<crate::state::RunLock>, CliError> {
    let Some((name, dry_run)) = command.run_lock_name() else {
        return Ok(None);
    };
    lock_cluster(name, dry_run, cluster, reporter)
}

/// [`run_lock`] for a command named `name`.
pub(crate) fn lock_cluster(
    name: &str,
    dry_run: bool,
    cluster: &crate::cluster::Cluster,
    reporter: &crate::output::Reporter,
) -> Result<Option<crate::state::RunLock>, CliError> {
    let state = &cluster.files.state_path;
    if dry_run {
        if let Some(holder) = crate::state::current_holder(state) {
            reporter.warn(format!(
                "{holder} is working on this cluster now: this plan does not include what it \
                 still changes"
            ));
        }
        return Ok(None);
    }
    let lock = crate::state::RunLock::acquire(state, name).map_err(CliError::failed)?;
    if let Some(notice) = lock.takeover_notice() {
        reporter.warn(notice);
    }
    Ok(Some(lock))
}

/// The commands whose product is text with no JSON form (a listing, a script, a manual page,
/// a generated file): named as the refusal of `--output json` says them.
fn text_only(command: &args::Command) -> Option<&'static str> {
    use args::Command;
    match command {
        Command::Config(a) if a.list_version => Some("config --list-version"),
        Command::Config(a) if a.system_images => Some("config --system-images"),
        Command::Config(a) if a.print => Some("config --print"),
        Command::Version(a) if a.client => Some("version --client"),
        Command::Version(_) => Some("version"),
        Command::Completions { .. } => Some("completions"),
        Command::Man => Some("man"),
        _ => None,
    }
}

async fn run(cli: Cli, reporter: &crate::output::Reporter) -> Result<(), CliError> {
    use args::{CertCommand, Command, EncryptCommand, ImageCommand, UtilCommand};
    // JSON output is JSON: a text product with a JSON line after it is neither.
    if reporter.is_json()
        && let Some(command) = text_only(&cli.command)
    {
        return Err(CliError::Usage(format!(
            "`rkers {command}` prints text, which has no JSON form: run it without --output json"
        )));
    }
    match &cli.command {
        Command::Config(a) => return commands::config_cmd::run(a),
        Command::Version(a) if a.client => return commands::version::print_client(),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "rkers", &mut script);
            return print_out(String::from_utf8_lossy(&script));
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .map_err(|e| CliError::Failed(format!("cannot render the manual page: {e}")))?;
            return print_out(String::from_utf8_lossy(&page));
        }
        // The desired config comes from the state file, not from cluster.yml.
        Command::Rollback(a) => return commands::rollback::run(a, reporter).await,
        Command::Serve(a) => {
            return crate::serve::run(a).await.map_err(|e| match e {
                crate::serve::ServeError::Setup(m) => CliError::Usage(m),
                crate::serve::ServeError::Failed(m) => CliError::Failed(m),
            });
        }
        _ => {}
    }
    // Every other command reads the config first: an invalid config stops it with exit 2,
    // whatever the command.
    let path = cli
        .command
        .config_path()
        .expect("every other command has --config");
    let mut cluster = crate::cluster::Cluster::load(path, reporter).map_err(|e| {
        if e.is_invalid_config() {
            CliError::InvalidConfig(format!(
                "{path}: invalid cluster configuration:\n{e}",
                path = path.display()
            ))
        } else {
            CliError::failed(e)
        }
    })?;
    let _run_lock = run_lock(&cli.command, &cluster, reporter)?;
    let links = commands::local::prepare(&cli.command, &mut cluster, reporter).await?;
    match &cli.command {
        Command::Up(a) if a.init => {
            let custom = a.custom_certs.then(|| {
                a.cert_dir
                    .clone()
                    .unwrap_or_else(|| cluster.files.cert_dir.clone())
            });
            commands::offline::init_state(&cluster, reporter, custom.as_deref(), a.dry_run)
        }
        Command::Up(a) => commands::up::run(&cluster, a, reporter, links).await,
        Command::Remove(a) => commands::remove::run(&cluster, a, reporter, links).await,
        Command::Version(_) => commands::version::run(&cluster).await,
        Command::Preflight(a) => commands::preflight::run(&cluster, a, reporter).await,
        Command::Doctor(a) => commands::doctor::run(&cluster, a, reporter).await,
        Command::Etcd { command } => commands::etcd::run(&cluster, command, reporter).await,
        Command::Cert {
            command: CertCommand::GenerateCsr { cert_dir, .. },
        } => commands::offline::generate_csr(&cluster, reporter, cert_dir.as_deref()),
        Command::Cert {
            command: command @ (CertCommand::Rotate { .. } | CertCommand::List { .. }),
        } => commands::cert::run(&cluster, command, reporter).await,
        Command::Encrypt {
            command: EncryptCommand::RotateKey {
                connect, dry_run, ..
            },
        } => commands::encrypt::rotate(&cluster, connect, *dry_run, reporter).await,
        Command::Util {
            command: UtilCommand::GetKubeconfig { .. },
        } => commands::offline::get_kubeconfig(&cluster, reporter),
        Command::Util {
            command: UtilCommand::GetStateFile {
                connect, dry_run, ..
            },
        } => commands::state_file::get_state_file(&cluster, connect, *dry_run, reporter).await,
        Command::Image {
            command: ImageCommand::Build(a),
        } => commands::image::build(&cluster, a, reporter).await,
        Command::Config(_)
        | Command::Completions { .. }
        | Command::Man
        | Command::Serve(_)
        | Command::Rollback(_) => {
            unreachable!("handled above")
        }
    }
}
