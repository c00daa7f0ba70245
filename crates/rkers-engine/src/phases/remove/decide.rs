//! Step 3, pure: the removal's changeset, decided by the core from what was found; the local
//! files are deleted only when connect reached every host.

use super::Remove;
use super::observe::Found;
use rkers_core::changeset::Changeset;
use rkers_core::diff::removal::{self, CleanerImages, RemovalStage};

pub(super) fn changeset(command: &Remove<'_>, found: &Found) -> Changeset<RemovalStage> {
    let images = &command.cluster.config.system_images;
    let images = CleanerImages {
        linux: images.alpine.clone(),
        windows: images.kubernetes_services_sidecar.clone(),
    };
    removal::remove_cluster(
        &found.hosts,
        &images,
        command.failures.is_empty(),
        &found.local_files,
    )
}
