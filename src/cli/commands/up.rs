//! `rkers up`.

use crate::cli::CliError;
use crate::cli::args::{ConnectArgs, HostKeyPolicy, UpArgs};
use crate::cluster::Cluster;
use crate::hosts::{Links, SshOptions};
use crate::output::Reporter;
use crate::phases::adoption::AdoptionRefused;
use crate::phases::up::{UpError, UpOptions, up};
use std::io::IsTerminal;

/// The SSH options of a command that may change hosts.
pub fn ssh_options(c: &ConnectArgs) -> SshOptions {
    ssh_options_for(c, false)
}

/// With `read_only` (preflight, cert list, --dry-run) a new host key is shown but not written
/// to known_hosts: such a run leaves every file as it was.
pub fn ssh_options_for(c: &ConnectArgs, read_only: bool) -> SshOptions {
    SshOptions {
        record_new_host_keys: !read_only,
        known_hosts_path: c.known_hosts.clone(),
        host_key_policy: match c.ssh_host_key_policy {
            HostKeyPolicy::Strict => crate::hosts::target::HostKeyPolicy::Strict,
            HostKeyPolicy::AcceptNew => crate::hosts::target::HostKeyPolicy::AcceptNew,
            HostKeyPolicy::Insecure => crate::hosts::target::HostKeyPolicy::Insecure,
        },
        concurrency: c.concurrency as usize,
        passphrase_prompt: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        ..SshOptions::default()
    }
}

/// `links`: how hosts are reached when not over SSH (`--local`, `--dind`).
pub async fn run(
    cluster: &Cluster,
    args: &UpArgs,
    reporter: &Reporter,
    links: Option<Links>,
) -> Result<(), CliError> {
    let mut opts = UpOptions {
        dry_run: args.dry_run,
        force: args.force,
        disable_port_check: args.disable_port_check,
        custom_certs: args.custom_certs.then(|| {
            args.cert_dir
                .clone()
                .unwrap_or_else(|| cluster.files.cert_dir.clone())
        }),
        agent_override: args.connect.ssh_agent_auth,
        ignore_docker_version_flag: args.connect.ignore_docker_version,
        ssh: ssh_options_for(&args.connect, args.dry_run),
        yes: args.yes,
        confirm: terminal_question(),
        ignore_blocking_webhooks: args.ignore_blocking_webhooks,
        ignore_removed_apis: args.ignore_removed_apis,
        dind: args.links.dind,
        no_snapshot: args.no_snapshot,
        node_ready_timeout: args.node_ready_timeout.map(std::time::Duration::from_secs),
        minor_back_from_snapshot: false,
    };
    if let Some(links) = links {
        opts.ssh.links = links;
    }
    let started = std::time::Instant::now();
    let result = up(cluster, &opts, reporter).await;
    // Also after a failure: where the time went up to it is as useful then.
    reporter.timing_summary(started.elapsed());
    result.map_err(|e| match e {
        UpError::Cluster(c) if c.is_invalid_config() => CliError::InvalidConfig(c.to_string()),
        // Nobody to ask and no --yes: a usage error, like `remove` without a terminal.
        UpError::Adoption(AdoptionRefused::NoTerminal) => CliError::Usage(e.to_string()),
        other => CliError::failed(other),
    })
}

/// The adoption question on the terminal, when there is one to ask on.
fn terminal_question() -> Option<crate::phases::adoption::ConfirmAdoption> {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return None;
    }
    Some(std::sync::Arc::new(|_summary: &str| {
        // The summary itself was printed by `up`; only the question is asked here.
        crate::output::stderr_prompt(format_args!(
            "Adopt this cluster and make these changes? [y/N]: "
        ));
        let mut answer = String::new();
        if std::io::BufRead::read_line(&mut std::io::stdin().lock(), &mut answer).is_err() {
            return false;
        }
        matches!(answer.trim(), "y" | "Y" | "yes")
    }))
}
