//! Step 1, before any host: the config allows a rotation (encryption on, not a custom
//! provider file), the state holds the provider file the cluster runs with and it has an
//! aescbc key; the rotation to make, or the one an earlier run left unfinished.

use super::{RotateKey, RotateKeyError, RotateOptions};
use crate::cluster::Cluster;
use crate::output::Reporter;
use crate::plan::encryption::{self, EncryptionKey};
use rkers_core::diff::key_rotation::Rotation;

pub(super) fn rotation<'c>(
    cluster: &'c Cluster,
    opts: &'c RotateOptions,
    reporter: &Reporter,
) -> Result<RotateKey<'c>, RotateKeyError> {
    let sec = cluster
        .config
        .services
        .kube_api
        .enabled_secrets_encryption()
        .ok_or(RotateKeyError::Disabled)?;
    if sec.custom_config.is_some() {
        return Err(RotateKeyError::CustomConfig);
    }
    let state = cluster
        .load_state()?
        .ok_or_else(|| RotateKeyError::NoState(cluster.files.state_path.clone()))?;
    let applied = if state.current_state.encryption_config.is_empty() {
        &state.desired_state.encryption_config
    } else {
        &state.current_state.encryption_config
    };
    if applied.is_empty() || !encryption::encrypts_with_aescbc(applied) {
        return Err(RotateKeyError::NoKey);
    }
    let keys = encryption::aescbc_keys(applied)?;
    for k in &keys {
        cluster.redactor.register(&k.secret);
    }
    let rotation = Rotation::resume_or_start(keys, || {
        let k = EncryptionKey::generate();
        cluster.redactor.register(&k.secret);
        k
    });
    if rotation.resuming {
        reporter.info(format!(
            "resuming the rotation to key {} left unfinished",
            rotation.new.name
        ));
    }
    Ok(RotateKey {
        cluster,
        opts,
        reporter: reporter.clone(),
        state,
        rotation,
    })
}
