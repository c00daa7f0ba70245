//! Step 5: what each command says around its stages and how it ends. The calico and flannel
//! repairs fail naming every host not fixed; the webhook removal fails when only protected configurations
//! block; the restore keeps the backup as `*.restored`.

use super::{CalicoFix, FixError, FlannelFix, Restore, WebhookFix};
use rkers_core::changeset::Changeset;
use rkers_core::diff::doctor_fix::{CalicoStage, FlannelStage, WebhookStage};

/// After the plan: the nodes whose check passed need nothing; a dry run names the hosts it
/// could not read (and fails on them, as the run does: [`calico_verdict`]). What the repair does beyond its
/// actions (a pod deleted through the API) is said here, in the dry run as in the run.
pub(super) fn calico_planned(command: &mut CalicoFix<'_>, changes: &Changeset<CalicoStage>) {
    for (node, summary) in &command.healthy {
        command
            .reporter
            .info(format!("{node}: {summary} — nothing to fix"));
    }
    if !changes.is_empty() {
        command.reporter.info(
            "then each repaired node's calico-node pod is deleted if it is not ready, so it \
             starts now rather than after its back-off",
        );
    }
    if command.dry_run {
        for (_, line) in &command.failures {
            command.reporter.warn(format!("not fixed: {line}"));
        }
    }
}

/// The hosts not fixed (not read, or the repair failed) fail the command, and its dry run.
pub(super) fn calico_verdict(command: &mut CalicoFix<'_>) -> Result<(), FixError> {
    if command.failures.is_empty() {
        return Ok(());
    }
    Err(FixError::NotFixed {
        failures: std::mem::take(&mut command.failures),
    })
}

/// After the plan: the nodes whose chain is in place need nothing; the broken nodes with no
/// flannel pod are not fixed (named, and the command fails, in the dry run as in the run); what
/// the run waits for after each deletion is said.
pub(super) fn flannel_planned(command: &mut FlannelFix<'_>, changes: &Changeset<FlannelStage>) {
    for (node, summary) in &command.healthy {
        command
            .reporter
            .info(format!("{node}: {summary} — nothing to fix"));
    }
    command
        .failures
        .extend(rkers_core::diff::doctor_fix::flannel_unfixable(
            &command.nodes,
        ));
    if !changes.is_empty() {
        command.reporter.info(format!(
            "after each deletion, the node's new flannel pod Ready and its FLANNEL-POSTRTG chain \
             back are waited for (up to {} s) before the next node",
            crate::checks::guard::CNI_READY_AFTER_UPGRADE.as_secs()
        ));
    }
    if command.dry_run {
        for (_, line) in &command.failures {
            command.reporter.warn(format!("not fixed: {line}"));
        }
    }
}

/// The hosts not fixed (not read, no flannel pod, or the chain not back) fail the command, and
/// its dry run.
pub(super) fn flannel_verdict(command: &mut FlannelFix<'_>) -> Result<(), FixError> {
    if command.failures.is_empty() {
        return Ok(());
    }
    Err(FixError::NotFixed {
        failures: std::mem::take(&mut command.failures),
    })
}

/// After the plan: the blocking configurations left alone, and whether nothing is removed.
pub(super) fn webhooks_planned(command: &mut WebhookFix<'_>, changes: &Changeset<WebhookStage>) {
    for (kind, name, who) in &command.kept {
        command.reporter.warn(format!(
            "{}/{name} blocks pod creation but is {who}: not touched; bring its backend back",
            kind.resource()
        ));
    }
    command.nothing = changes.is_empty();
    if command.nothing {
        command
            .reporter
            .info("no blocking webhook configuration to remove");
    } else {
        command.reporter.info(format!(
            "then the CNI DaemonSets are woken and their pods waited for (up to {} s)",
            super::CNI_WAIT.as_secs()
        ));
    }
}

/// Only protected configurations block: nothing the fix may remove, in the dry run as in the
/// run.
pub(super) fn webhooks_verdict(command: &mut WebhookFix<'_>) -> Result<(), FixError> {
    if command.nothing && !command.kept.is_empty() {
        return Err(FixError::OnlyProtected);
    }
    Ok(())
}

/// A stage on the API server or the local backup failed: its lines name the object or file.
pub(super) fn cluster_failed(failures: &[(String, String)]) -> FixError {
    FixError::Cluster(
        failures
            .iter()
            .map(|(_, why)| why.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The backup, restored, is kept renamed.
pub(super) fn restore_finish(command: &mut Restore<'_>) -> Result<(), FixError> {
    let path = &command.path;
    let done = path.with_extension("json.restored");
    std::fs::rename(path, &done).map_err(|e| FixError::Backup {
        path: path.display().to_string(),
        cause: e.to_string(),
    })?;
    command.reporter.info(format!(
        "restored; the backup is kept as {}",
        done.display()
    ));
    Ok(())
}
