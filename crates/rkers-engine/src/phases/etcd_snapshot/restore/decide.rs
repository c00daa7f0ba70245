//! Step 3, pure: the restore's changeset, decided by the core from what was found; a snapshot
//! to share that no member has stops the restore here.

use super::Restore;
use super::observe::Found;
use crate::phases::etcd_snapshot::{RestorePlanProblem, SnapshotError, request};
use rkers_core::changeset::Changeset;
use rkers_core::diff::snapshot::{self, RestoreStage};

pub(super) fn changeset(
    command: &Restore<'_>,
    found: &Found,
) -> Result<Changeset<RestoreStage>, SnapshotError> {
    let cluster = command.cluster;
    let request = request(cluster, &command.opts.name, &command.image, command.s3);
    let file_image = &cluster.config.system_images.cert_downloader;
    snapshot::restore_snapshot(&request, file_image, &found.restore).map_err(|e| {
        SnapshotError::RestorePlan {
            name: command.opts.name.clone(),
            problem: Box::new(RestorePlanProblem::NotFound(e)),
        }
    })
}
