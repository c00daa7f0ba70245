//! Step 3, pure: the rotation's changeset, decided by the core from the loaded keys and the
//! controlplane hosts as found; kube-apiserver's health check after each restart presents the
//! certificates the state holds.

use super::RotateKey;
use super::observe::Controlplane;
use crate::diff::HealthProbe;
use crate::phases::encryption::{APISERVER_HEALTH, apiserver_tls};
use rkers_core::changeset::Changeset;
use rkers_core::diff::key_rotation::{self, RotationStage};

pub(super) fn changeset(command: &RotateKey<'_>, found: &Controlplane) -> Changeset<RotationStage> {
    let check = HealthProbe {
        url: APISERVER_HEALTH.into(),
        tls: Some(apiserver_tls(&command.state)),
    };
    key_rotation::rotate_key(
        &command.rotation,
        &found.found,
        &command.cluster.config.system_images.cert_downloader,
        &check,
    )
}
