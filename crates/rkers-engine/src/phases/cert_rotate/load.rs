//! Step 1, before any host: the webhooks that would block the restarted system pods
//! (incidents.md §3), then the state with its bundle rotated as desired.

use super::{CertRotate, RotateError, RotateOptions};
use crate::cluster::Cluster;
use crate::output::Reporter;
use crate::pki;

pub(super) async fn rotation<'c>(
    cluster: &'c Cluster,
    opts: &'c RotateOptions,
    reporter: &Reporter,
) -> Result<CertRotate<'c>, RotateError> {
    crate::checks::guard::check_webhooks_before_changes(
        cluster,
        opts.ignore_blocking_webhooks,
        opts.dry_run,
        reporter,
    )
    .await?;

    let phase = reporter.phase("state");
    let old = cluster
        .load_state()?
        .filter(|s| !s.current_state.certificates_bundle.is_empty())
        .ok_or_else(|| RotateError::NoCertificates(cluster.files.state_path.clone()))?;
    let loaded_bundle = old.current_state.certificates_bundle.clone();
    let (mut state, _) = cluster.init_state(Some(&old), None)?;
    let spec = cluster.pki_spec()?;
    let (bundle, changes) = pki::rotate_bundle(
        std::mem::take(&mut state.desired_state.certificates_bundle),
        &spec,
        &opts.services,
        opts.rotate_ca,
    )
    .map_err(RotateError::Pki)?;
    for cert in bundle.values() {
        cluster.redactor.register(&cert.key_pem);
    }
    state.desired_state.certificates_bundle = bundle;
    reporter.info(format!(
        "Rotating certificates: {}",
        changes
            .changed
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    ));
    phase.done();
    Ok(CertRotate {
        cluster,
        opts,
        reporter: reporter.clone(),
        state,
        loaded_bundle,
        spec,
        pool: None,
    })
}
