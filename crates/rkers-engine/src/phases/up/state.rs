//! Step 1, state: the previous state read, the desired state (certificates generated or
//! reconciled) built; it is written before any host changes (§9.1), once the run goes ahead.

use super::{UpError, UpOptions};
use crate::cluster::{CertificatesJob, Cluster};
use crate::config::RkeConfig;
use crate::diff::minor::{MinorStep, minor_step};
use crate::metadata::K8sVersion;
use crate::output::Reporter;
use crate::pki::{Bundle, Changes};
use crate::state::StateFile;

/// The states `up` starts from.
pub(super) struct Loaded {
    /// The state file as found, if any.
    pub(super) old: Option<StateFile>,
    /// The cluster.yml the previous run applied.
    /// Boxed: a config is 10 KiB, and `Loaded` moves through several debug-build frames.
    pub(super) old_current: Option<Box<RkeConfig>>,
    /// The state this run writes: `desiredState` is what it applies.
    pub(super) state: StateFile,
    /// What the run does to the cluster's minor (always `Same` for a new cluster).
    pub(super) minor: MinorStep,
}

/// What `up` reads before it connects: the state found, and what the desired state needs
/// besides the certificates, which the job [`start`] returns makes meanwhile.
pub(super) struct Started {
    old: Option<StateFile>,
    old_current: Option<Box<RkeConfig>>,
    minor: MinorStep,
    /// The encryption provider file the run applies (empty: encryption off).
    pub(super) encryption_config: String,
}

impl Started {
    pub(super) fn old_current(&self) -> Option<&RkeConfig> {
        self.old_current.as_deref()
    }
}

/// Reads the state file and checks the version step; the certificates are left to make.
pub(super) fn start(
    cluster: &Cluster,
    opts: &UpOptions,
) -> Result<(Started, CertificatesJob), UpError> {
    let old = cluster.load_state()?;
    let old_current = old
        .as_ref()
        .and_then(|s| s.current_state.rke_config.as_ref())
        .map(RkeConfig::from_state_json)
        .transpose()
        .map(|c| c.map(Box::new))
        .map_err(|source| UpError::StateConfig {
            path: cluster.files.state_path.clone(),
            source,
        })?;
    let minor = match &old_current {
        Some(_) if opts.minor_back_from_snapshot => MinorStep::Same,
        Some(old) => check_minor_step(cluster, old)?,
        None => MinorStep::Same,
    };
    let certificates = cluster.certificates(old.as_ref(), opts.custom_certs.as_deref())?;
    let encryption_config = cluster.desired_encryption_config(old.as_ref())?;
    let started = Started {
        old,
        old_current,
        minor,
        encryption_config,
    };
    Ok((started, certificates))
}

/// The states `up` starts from, once the certificates of [`start`] are made. The new state is
/// saved once the run is known to go ahead (after the adoption question and the check for a
/// running cluster without state) and before any host changes.
pub(super) fn loaded(
    cluster: &Cluster,
    started: Started,
    (bundle, changes): (Bundle, Changes),
) -> Loaded {
    tracing::debug!(changed = ?changes.changed, removed = ?changes.removed, "certificates");
    let state = cluster.state_with(started.old.as_ref(), bundle, started.encryption_config);
    Loaded {
        old: started.old,
        old_current: started.old_current,
        state,
        minor: started.minor,
    }
}

pub(super) fn save_desired_state(
    cluster: &Cluster,
    state: &StateFile,
    reporter: &Reporter,
) -> Result<(), UpError> {
    let path = &cluster.files.state_path;
    let backup = state.save_to(&cluster.files.storage, path)?;
    let kept = crate::state::backup_note(backup.as_deref());
    reporter.info(format!(
        "Successfully Deployed state file at [{}]{kept}",
        path.display()
    ));
    Ok(())
}

/// The one-minor rule between the version the cluster runs (its state's) and cluster.yml's.
/// A state whose version does not parse (never one RKE1 or rkers wrote) is not checked.
fn check_minor_step(cluster: &Cluster, old: &RkeConfig) -> Result<MinorStep, UpError> {
    let (Ok(current), Ok(target)) = (
        K8sVersion::parse(&old.kubernetes_version),
        K8sVersion::parse(&cluster.config.kubernetes_version),
    ) else {
        return Ok(MinorStep::Same);
    };
    Ok(minor_step(
        &current,
        &target,
        &cluster.catalog.supported_versions(),
    )?)
}
