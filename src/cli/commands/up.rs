//! `rkers up`.

use crate::cli::CliError;
use crate::cli::args::{ConnectArgs, HostKeyPolicy, UpArgs};
use crate::cluster::Cluster;
use crate::hosts::SshOptions;
use crate::output::Reporter;
use crate::phases::up::{UpError, UpOptions, up};
use std::io::IsTerminal;

pub fn ssh_options(c: &ConnectArgs) -> SshOptions {
    SshOptions {
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

pub async fn run(cluster: &Cluster, args: &UpArgs, reporter: &Reporter) -> Result<(), CliError> {
    let opts = UpOptions {
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
        ssh: ssh_options(&args.connect),
    };
    let started = std::time::Instant::now();
    let result = up(cluster, &opts, reporter).await;
    // Also after a failure: where the time went up to it is as useful then.
    reporter.timing_summary(started.elapsed());
    result.map_err(|e| match e {
        UpError::Cluster(c) if c.is_invalid_config() => CliError::InvalidConfig(c.to_string()),
        other => CliError::Failed(other.to_string()),
    })
}
