//! Step 4, pure: the rotation's changeset, decided by the core from the rotated bundle and
//! the hosts as found; the admin kubeconfig it rewrites is rendered here from that bundle.

use super::observe::Found;
use super::{CertRotate, RotateError};
use rkers_core::changeset::Changeset;
use rkers_core::diff::cert_rotation::{self, AdminKubeconfig, CertStage};

pub(super) fn changeset(
    command: &CertRotate<'_>,
    found: &Found,
) -> Result<Changeset<CertStage>, RotateError> {
    let cluster = command.cluster;
    let bundle = &command.state.desired_state.certificates_bundle;
    let kubeconfig = AdminKubeconfig {
        path: cluster.files.kubeconfig_path.display().to_string(),
        contents: cluster.admin_kubeconfig(bundle)?.into_bytes(),
    };
    Ok(cert_rotation::rotate_certs(
        &found.hosts,
        bundle,
        kubeconfig,
        command.opts.rotate_ca,
    ))
}
