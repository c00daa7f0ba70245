//! Step 5, once the run is not a dry run: the state saved with the new bundle as desired (the
//! current state still names what the containers run with), and the executor the stages run
//! through: the connected hosts, the helper image, the registries' credentials and the admin
//! kubeconfig the API calls go through.

use super::observe::Found;
use super::{CertRotate, RotateError};
use crate::phases::executor::Executor;

pub(super) fn executor(
    command: &CertRotate<'_>,
    found: &Found,
) -> Result<Executor<'static>, RotateError> {
    let cluster = command.cluster;
    let state_path = &cluster.files.state_path;
    let phase = command.reporter.phase("save state");
    command.state.save_to(&cluster.files.storage, state_path)?;
    command.reporter.info(format!(
        "Successfully Deployed state file at [{}]",
        state_path.display()
    ));
    phase.done();
    let image = &cluster.config.system_images.cert_downloader;
    Ok(
        Executor::new(&command.reporter, image, cluster.registry_credentials())
            .with_hosts(found.pool.hosts())
            .with_kubeconfig(&cluster.files),
    )
}
