//! Cluster addons (§19): the network plugin, DNS (CoreDNS or kube-dns, NodeLocal DNS),
//! metrics-server, ingress-nginx and the user's own manifests.
//!
//! RKE1 renders KDM's Go templates into a ConfigMap per addon and runs a Job that calls
//! `kubectl apply` on it; those Jobs cannot start before a node runs pods, fail with a bare
//! timeout and never prune (§32 pain point 2, §33.14). rkers renders the same manifests from
//! the same Go template bodies KDM ships (data/addon-templates.json, generated from the pinned
//! RKE module by data/generate), and applies them itself with server-side apply (field
//! manager `rkers`). It keeps RKE1's ConfigMap per addon (`kube-system/<resource>`, key
//! `<resource>`), so RKE1 still sees the addons as deployed, and uses the manifest stored there
//! as the inventory of the previous run: objects it listed that the new rendering lacks are
//! deleted, and an addon turned off (`none`, the other DNS provider, empty `addons`) has all of
//! them deleted.
//!
//! * [`plan`] — pure: config + KDM catalog → manifests per addon, and what to keep when rkers
//!   lacks a template.
//! * [`vars`] — the variables RKE1 hands each template.
//! * [`gotemplate`] — KDM's Go template bodies rendered as RKE1 renders them (gotmpl and RKE's
//!   function map, gotmpl patched as vendor/README.md says); `yaml` is its `toYaml`.
//! * [`apply`] — server-side apply, prune, the RKE1 ConfigMaps.
//! * [`wait`] — readiness of each addon's workloads and, on failure, the pods' states, events
//!   and last log lines; CNI readiness of the nodes.

pub mod apply;
pub mod gotemplate;
pub mod plan;
pub mod vars;
pub mod wait;
mod yaml;

pub use apply::{AddonChange, apply_addon, parse_manifest};
pub use plan::plan_addons;

/// RKE1's resource names (ConfigMap and Job names) of each addon (§34).
pub mod resource {
    pub const NETWORK: &str = "rke-network-plugin";
    pub const KUBE_DNS: &str = "rke-kube-dns-addon";
    pub const COREDNS: &str = "rke-coredns-addon";
    pub const NODELOCAL: &str = "rke-nodelocal-addon";
    pub const METRICS: &str = "rke-metrics-addon";
    pub const INGRESS: &str = "rke-ingress-controller";
    pub const USER: &str = "rke-user-addon";
    pub const USER_INCLUDES: &str = "rke-user-includes-addons";
}

pub use rkers_core::addon::AddonPlan;

#[derive(Debug, thiserror::Error)]
pub enum AddonError {
    #[error("no addon template {0} is bundled with rkers")]
    NoTemplate(String),
    /// `why` says why no deployed manifest can be kept and ends with the remedies.
    #[error("{addon}: template {template} is not bundled with rkers and {why}")]
    NotBundled {
        addon: String,
        template: String,
        why: String,
    },
    #[error("no {addon} template found for Kubernetes version {version}")]
    NoTemplateForVersion { addon: String, version: String },
    #[error("rendering addon template {template}: {message}")]
    Render { template: String, message: String },
    #[error("network plugin {0} is not supported by rkers")]
    UnsupportedPlugin(String),
    #[error("network option {key}: {value:?} is not a number")]
    BadOption { key: String, value: String },
    #[error("addon {resource}: manifest document {index}: {message}")]
    Manifest {
        resource: String,
        index: usize,
        message: String,
    },
    #[error("addons_include {include}: {message}")]
    Include { include: String, message: String },
    #[error("addon {resource}: {object}: {message}")]
    Api {
        resource: String,
        object: String,
        message: String,
    },
    #[error("{0}")]
    NotReady(String),
}
