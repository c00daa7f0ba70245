//! Step 3, pure: the save's changeset, decided by the core from what was found.

use super::Save;
use super::observe::Found;
use crate::phases::etcd_snapshot::request;
use rkers_core::changeset::Changeset;
use rkers_core::diff::snapshot::{self, SaveStage};

pub(super) fn changeset(command: &Save<'_>, found: &Found) -> Changeset<SaveStage> {
    let request = request(
        command.cluster,
        &command.opts.name,
        &command.image,
        command.s3,
    );
    snapshot::save_snapshot(&request, &found.members, found.state.as_deref())
}
