//! `rkers util get-state-file`: the state recovered from the cluster, written through
//! `src/state` (atomic, mode 0600, the previous file kept as a timestamped backup), and the admin
//! kubeconfig rebuilt from it.

use crate::cli::CliError;
use crate::cli::args::ConnectArgs;
use crate::cli::commands::up::ssh_options_for;
use crate::cluster::Cluster;
use crate::output::Reporter;
use crate::phases::recover_state::{RecoverOptions, Source, recover_state};

pub async fn get_state_file(
    cluster: &Cluster,
    connect: &ConnectArgs,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<(), CliError> {
    let opts = RecoverOptions {
        agent_override: connect.ssh_agent_auth,
        ssh: ssh_options_for(connect, dry_run),
    };
    let (state, source) = recover_state(cluster, &opts, reporter)
        .await
        .map_err(CliError::failed)?;
    let from = match &source {
        Source::Api(server) => format!("the full-cluster-state Secret through {server}"),
        Source::Hosts(hosts) => format!("the files on host(s) {}", hosts.join(", ")),
    };
    let path = &cluster.files.state_path;
    if dry_run {
        reporter.info(format!(
            "would write {} with the state recovered from {from}",
            path.display()
        ));
        return Ok(());
    }
    let backup = state.save(path).map_err(CliError::failed)?;
    reporter.info(format!(
        "Successfully Deployed state file at [{}] (recovered from {from}){}",
        path.display(),
        crate::state::backup_note(backup.as_deref())
    ));
    // The kubeconfig follows the recovered certificates, as RKE1 rebuilds it.
    crate::cli::commands::offline::get_kubeconfig(cluster, reporter)
}
