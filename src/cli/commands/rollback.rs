//! `rkers rollback`: the cluster brought back to what the previous successful `up` applied,
//! from the state file alone (issue 30). The command line's part only: the state file and
//! cluster.yml next to `--config`, the run lock, the flags and how the nodes are reached
//! (`--local` and `--dind` as `up` reaches them); deciding and going back is
//! [`crate::phases::rollback`], shared with the library API.

use crate::cli::CliError;
use crate::cli::args::RollbackArgs;
use crate::cli::commands::local::{self, LinkMode};
use crate::config;
use crate::metadata::Catalog;
use crate::output::Reporter;
use crate::phases::rollback::{self, RollbackRunError};
use crate::phases::up::{UpError, UpOptions};
use crate::state::{ClusterFiles, StateFile};

pub async fn run(args: &RollbackArgs, reporter: &Reporter) -> Result<(), CliError> {
    let path = &args.config.config;
    let files = ClusterFiles::from_config_path(path);
    let state = StateFile::load(&files.state_path).map_err(CliError::failed)?;
    let catalog = Catalog::load().map_err(|e| CliError::Failed(e.to_string()))?;
    let state_name = files.state_path.display().to_string();
    let prepared = rollback::prepare(
        state.as_ref(),
        args.restore_snapshot,
        files,
        catalog,
        &state_name,
        reporter,
    )
    .map_err(|e| {
        if e.is_about_the_state() {
            CliError::Failed(format!("{state_name}: {e}"))
        } else {
            CliError::Failed(e.to_string())
        }
    })?;
    let current = config::load_file(path).map(|l| l.config);
    let cluster_yml_nodes = current.as_ref().ok().map(|c| c.nodes.clone());
    let differences = rollback::cluster_yml_differences(current, &prepared.cluster);
    let _run_lock =
        crate::cli::lock_cluster("rollback", args.dry_run, &prepared.cluster, reporter)?;
    let mode = LinkMode::of(&args.links, args.dry_run)?;
    let mut opts = up_options(args);
    if let Some(links) = local::prepare_recorded(
        mode,
        &prepared.cluster,
        cluster_yml_nodes.as_deref(),
        reporter,
    )
    .await?
    {
        opts.ssh.links = links;
    }
    let restore_snapshot = prepared.restore_snapshot.as_deref();
    rollback::run(&prepared.cluster, restore_snapshot, opts, reporter)
        .await
        .map_err(|e| match e {
            RollbackRunError::Up(UpError::Cluster(c)) if c.is_invalid_config() => {
                CliError::InvalidConfig(c.to_string())
            }
            RollbackRunError::Up(other) => CliError::failed(other),
            RollbackRunError::Restore(other) => CliError::failed(other),
        })?;
    rollback::report_differences(&differences, reporter);
    Ok(())
}

fn up_options(args: &RollbackArgs) -> UpOptions {
    UpOptions {
        dry_run: args.dry_run,
        force: false,
        disable_port_check: args.disable_port_check,
        custom_certs: None,
        agent_override: args.connect.ssh_agent_auth,
        ignore_docker_version_flag: args.connect.ignore_docker_version,
        ssh: super::up::ssh_options_for(&args.connect, args.dry_run),
        // The state is rkers' own: there is no adoption to confirm.
        yes: false,
        confirm: None,
        ignore_blocking_webhooks: args.ignore_blocking_webhooks,
        // Going back within a minor serves the same API versions.
        ignore_removed_apis: false,
        dind: args.links.dind,
        no_snapshot: args.no_snapshot,
        node_ready_timeout: None,
        minor_back_from_snapshot: false,
    }
}
