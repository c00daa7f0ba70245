//! `rkers remove`: confirmation, then the teardown phase.

use crate::cli::CliError;
use crate::cli::args::RemoveArgs;
use crate::cli::commands::up::ssh_options_for;
use crate::cluster::Cluster;
use crate::hosts::Links;
use crate::output::Reporter;
use crate::phases::remove::{RemoveError, RemoveOptions, remove};
use std::io::{BufRead, IsTerminal};

/// `links`: how hosts are reached when not over SSH (`--local`).
pub async fn run(
    cluster: &Cluster,
    args: &RemoveArgs,
    reporter: &Reporter,
    links: Option<Links>,
) -> Result<(), CliError> {
    if !args.force && !args.dry_run && !confirmed()? {
        return Err(CliError::Failed(
            "removal cancelled: nothing was changed".into(),
        ));
    }
    let mut opts = RemoveOptions {
        dry_run: args.dry_run,
        keep_backups: args.keep_backups,
        agent_override: args.connect.ssh_agent_auth,
        ssh: ssh_options_for(&args.connect, args.dry_run),
    };
    if args.dind {
        return super::local::remove_dind(cluster, args.keep_backups, args.dry_run, reporter).await;
    }
    if let Some(links) = links {
        opts.ssh.links = links;
    }
    remove(cluster, &opts, reporter).await.map_err(|e| match e {
        RemoveError::Cluster(c) if c.is_invalid_config() => CliError::InvalidConfig(c.to_string()),
        other => CliError::failed(other),
    })
}

/// Asks on the terminal, as RKE1 does; without a terminal there is nobody to ask, so the
/// command refuses rather than guessing.
fn confirmed() -> Result<bool, CliError> {
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Usage(
            "`rkers remove` asks for confirmation, but standard input is not a terminal: \
             run it with --force to remove the cluster without asking"
                .into(),
        ));
    }
    crate::output::stderr_prompt(format_args!(
        "Are you sure you want to remove Kubernetes cluster [y/n]: "
    ));
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| CliError::Failed(format!("cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
