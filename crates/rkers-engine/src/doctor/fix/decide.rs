//! Step 3, pure: each command's changeset, decided by the core from what was observed.

use super::observe::{CalicoFound, FlannelFound, WebhooksFound};
use super::{CalicoFix, FixError, Restore, WebhookFix, backup_path};
use crate::checks::calico;
use rkers_core::changeset::Changeset;
use rkers_core::diff::doctor_fix::{
    self, BackupFile, CalicoNode, CalicoRepair, CalicoStage, FlannelStage, RestoreStage,
    WebhookStage,
};

pub(super) fn calico(command: &CalicoFix<'_>, found: &CalicoFound) -> Changeset<CalicoStage> {
    let repair = CalicoRepair {
        mode: calico::WANT_MODE,
        owner: "root:root".into(),
        entry: calico::TMPFILES_ENTRY.into(),
        image: command.cluster.config.system_images.kubernetes.clone(),
    };
    let nodes: Vec<CalicoNode> = found.probed.iter().map(|p| p.node.clone()).collect();
    doctor_fix::calico_fix(&repair, &nodes)
}

/// The pods to delete (the broken nodes with none are named by
/// [`super::record::flannel_planned`] with [`doctor_fix::flannel_unfixable`]).
pub(super) fn flannel(found: &FlannelFound) -> Changeset<FlannelStage> {
    doctor_fix::flannel_fix(&found.nodes)
}

pub(super) fn webhooks(
    command: &WebhookFix<'_>,
    found: &WebhooksFound,
) -> Result<Changeset<WebhookStage>, FixError> {
    let path = backup_path(command.cluster);
    let backup = BackupFile {
        dir: path
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    doctor_fix::fix_webhooks(&backup, found.existing.clone(), found.objects.clone()).map_err(|e| {
        FixError::Backup {
            path: path.display().to_string(),
            cause: e.to_string(),
        }
    })
}

pub(super) fn restore(
    command: &Restore<'_>,
    items: &[serde_json::Value],
) -> Result<Changeset<RestoreStage>, FixError> {
    Ok(doctor_fix::restore_webhooks(
        &command.path.display().to_string(),
        items.to_vec(),
    )?)
}
