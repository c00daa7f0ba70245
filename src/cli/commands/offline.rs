//! Commands that need no node: `up --init`, `cert generate-csr`, `util get-kubeconfig`.

use crate::cli::CliError;
use crate::cluster::Cluster;
use crate::output::Reporter;
use std::path::Path;

/// RKE1's `up --init`: generate or refresh the state file (certificates + desired config), then
/// stop. With `dry_run`, says what would change and writes nothing.
pub fn init_state(
    cluster: &Cluster,
    reporter: &Reporter,
    custom_certs: Option<&Path>,
    dry_run: bool,
) -> Result<(), CliError> {
    let old = cluster.load_state().map_err(fail)?;
    let (state, changes) = cluster
        .init_state(old.as_ref(), custom_certs)
        .map_err(fail)?;
    let path = &cluster.files.state_path;
    if dry_run {
        reporter.info(format!(
            "would write {} ({} certificates new or changed, {} removed)",
            path.display(),
            changes.changed.len(),
            changes.removed.len()
        ));
        return Ok(());
    }
    let backup = state.save(path).map_err(CliError::failed)?;
    reporter.info(format!(
        "Successfully Deployed state file at [{}] ({} certificates new or changed, {} removed){}",
        path.display(),
        changes.changed.len(),
        changes.removed.len(),
        crate::state::backup_note(backup.as_deref())
    ));
    Ok(())
}

pub fn generate_csr(
    cluster: &Cluster,
    reporter: &Reporter,
    cert_dir: Option<&Path>,
) -> Result<(), CliError> {
    let spec = cluster.pki_spec().map_err(fail)?;
    let dir = cert_dir.unwrap_or(&cluster.files.cert_dir);
    let report = crate::pki::generate_csrs(&spec, dir).map_err(CliError::failed)?;
    reporter.info(format!(
        "wrote {} certificate signing requests to {} ({} unchanged)",
        report.written.len(),
        report.cert_dir.display(),
        report.kept.len()
    ));
    Ok(())
}

/// Rebuilds `kube_config_<name>.yml` from the state's current (else desired) certificates,
/// pointing at the first controlplane host, as RKE1 does (§6.1, §27).
pub fn get_kubeconfig(cluster: &Cluster, reporter: &Reporter) -> Result<(), CliError> {
    let state = cluster.load_state().map_err(fail)?.ok_or_else(|| {
        CliError::Failed(format!(
            "no state file at {}: run `rkers up` first, or `rkers util get-state-file`",
            cluster.files.state_path.display()
        ))
    })?;
    let side = if state.current_state.certificates_bundle.is_empty() {
        &state.desired_state
    } else {
        &state.current_state
    };
    // A kubeconfig with a CA `up` rejects would be handed to every kubectl user; refuse instead.
    let ca_ok = if side
        .certificates_bundle
        .get(crate::pki::names::CA_CERT_NAME)
        .is_some_and(|c| c.has_key())
    {
        crate::pki::check_signing_ca(&side.certificates_bundle)
    } else {
        // Custom certificates may come without the CA key; the certificate must still be a CA.
        crate::pki::check_ca_certificate(&side.certificates_bundle)
    };
    ca_ok.map_err(|e| {
        CliError::Failed(format!(
            "{}: {e}; the kubeconfig was not written (recover the state with \
             `rkers util get-state-file` or restore a backup next to it)",
            cluster.files.state_path.display()
        ))
    })?;
    cluster
        .write_admin_kubeconfig(&side.certificates_bundle, reporter)
        .map_err(fail)?;
    Ok(())
}

fn fail(e: crate::cluster::ClusterError) -> CliError {
    if e.is_invalid_config() {
        CliError::InvalidConfig(e.to_string())
    } else {
        CliError::failed(e)
    }
}
