//! `rkers encrypt rotate-key`.

use crate::cli::CliError;
use crate::cli::args::ConnectArgs;
use crate::cli::commands::up::ssh_options_for;
use crate::cluster::Cluster;
use crate::output::Reporter;
use crate::phases::encrypt_rotate::{RotateOptions, rotate_key};

pub async fn rotate(
    cluster: &Cluster,
    connect: &ConnectArgs,
    dry_run: bool,
    reporter: &Reporter,
) -> Result<(), CliError> {
    let opts = RotateOptions {
        dry_run,
        agent_override: connect.ssh_agent_auth,
        ssh: ssh_options_for(connect, dry_run),
    };
    rotate_key(cluster, &opts, reporter)
        .await
        .map_err(CliError::failed)
}
