//! One addon of a run ([`AddonPlan`]), as the root package renders it from the config and the
//! version metadata and the diff plans applying or removing it, and what the cluster holds of
//! it ([`AddonObserved`]), as the root package reads it through the API.

/// One addon of a run: what to deploy under its resource name, or `None` to remove whatever a
/// previous run deployed there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddonPlan {
    pub resource: &'static str,
    /// The KDM template key the manifest was rendered from (system addons only).
    pub template: Option<String>,
    pub manifest: Option<String>,
    /// RKE1 fails `up` when a system addon fails and only warns for user addons (§19.1).
    pub critical: bool,
    /// `template` is not bundled with rkers, so `manifest` cannot be rendered: it is the one
    /// the cluster runs, taken from RKE1's ConfigMap by the root package's
    /// `addons::plan::keep_deployed` (`None` until then; such a plan is never applied
    /// unresolved).
    pub unbundled: bool,
}

/// One addon as the cluster holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddonObserved {
    /// The manifest stored in RKE1's ConfigMap, when there is one.
    pub stored: Option<String>,
    /// Objects of the new manifest that are missing or that applying it would change.
    pub changed: Vec<String>,
    /// Objects the stored manifest lists and the new one lacks.
    pub pruned: Vec<String>,
}
