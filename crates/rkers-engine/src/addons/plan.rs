//! The addon plan (§19): for each addon in RKE1's order, its manifest rendered from the
//! template the cluster's version selects ([`super::vars`] computes the variables), marked for
//! removal, or marked unbundled and resolved against what the cluster already runs
//! ([`keep_deployed`]). Pure: no I/O except what the caller passes in (user addon include texts).

use super::vars::{dns_vars, ingress_vars, metrics_vars, network_vars, nodelocal_vars};
use super::{AddonError, AddonPlan, resource};
use crate::config::RkeConfig;
use crate::metadata::{Catalog, addon as kdm};
use std::collections::BTreeMap;

/// The Go template body of `key`: the metadata file's own (a KDM data.json given at run time
/// brings its templates, as it does for RKE1), else the embedded one.
fn body(catalog: &Catalog, key: &str) -> Option<String> {
    catalog
        .template_body(key)
        .map(str::to_string)
        .or_else(|| super::gotemplate::embedded_body(key))
}

/// Whether rkers can render template `key`: a KDM body it has.
fn bundled(catalog: &Catalog, key: &str) -> bool {
    body(catalog, key).is_some()
}

/// Renders template `key` with `vars`: KDM's Go template body as RKE1 renders it.
pub fn render_template(
    catalog: &Catalog,
    key: &str,
    vars: &serde_json::Value,
) -> Result<String, AddonError> {
    let body = body(catalog, key).ok_or_else(|| AddonError::NoTemplate(key.to_string()))?;
    super::gotemplate::render(key, &body, vars)
}

/// RKE1's normalisation of user addon documents: each starts with `---` and ends with a newline.
pub fn normalise_user_doc(doc: &str) -> String {
    let mut out = String::new();
    if !doc.trim_start().starts_with("---") {
        out.push_str("---\n");
    }
    out.push_str(doc);
    if !doc.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// A system addon's plan: its template rendered with its variables, marked unbundled when
/// rkers lacks the template, or turned off (`None`).
fn system_plan(
    catalog: &Catalog,
    resource: &'static str,
    selected: Option<(String, serde_json::Value)>,
) -> Result<AddonPlan, AddonError> {
    let mut plan = AddonPlan {
        resource,
        template: None,
        manifest: None,
        critical: true,
        unbundled: false,
    };
    if let Some((key, vars)) = selected {
        if bundled(catalog, &key) {
            plan.manifest = Some(render_template(catalog, &key, &vars)?);
        } else {
            plan.unbundled = true;
        }
        plan.template = Some(key);
    }
    Ok(plan)
}

/// Every addon in RKE1's order (§19.1), each rendered, marked for removal, or marked
/// unbundled (resolved by [`keep_deployed`] once the cluster's ConfigMaps are read).
/// `includes` are the texts of `addons_include`, already read, in config order.
pub fn plan_addons(
    cfg: &RkeConfig,
    catalog: &Catalog,
    includes: &[String],
) -> Result<Vec<AddonPlan>, AddonError> {
    let mut plans = vec![system_plan(
        catalog,
        resource::NETWORK,
        network_vars(cfg, catalog)?,
    )?];

    let dns = dns_vars(cfg, catalog)?;
    let provider = dns.as_ref().map(|(a, _, _)| *a);
    let dns_plan = system_plan(catalog, resource::COREDNS, dns.map(|(_, k, v)| (k, v)))?;
    // The provider not selected goes first, as in RKE1, so that a switch removes the old one
    // even when the new one then fails. RKE1 removes nothing for `none` (§33.14); rkers removes
    // both, since `none` asks for no DNS addon.
    let mut dns_addons = [
        (kdm::KUBEDNS, resource::KUBE_DNS),
        (kdm::COREDNS, resource::COREDNS),
    ];
    dns_addons.sort_by_key(|(addon, _)| provider == Some(*addon));
    for (addon, res) in dns_addons {
        let selected = provider == Some(addon);
        plans.push(if selected {
            AddonPlan {
                resource: res,
                ..dns_plan.clone()
            }
        } else {
            system_plan(catalog, res, None)?
        });
    }

    plans.push(system_plan(
        catalog,
        resource::NODELOCAL,
        nodelocal_vars(cfg, catalog)?,
    )?);
    plans.push(system_plan(
        catalog,
        resource::METRICS,
        metrics_vars(cfg, catalog)?,
    )?);
    plans.push(system_plan(
        catalog,
        resource::INGRESS,
        ingress_vars(cfg, catalog)?,
    )?);

    // User addons only warn on failure in RKE1 (§19.1); rkers keeps that.
    plans.push(AddonPlan {
        resource: resource::USER,
        critical: false,
        manifest: (!cfg.addons.trim().is_empty()).then(|| cfg.addons.clone()),
        template: None,
        unbundled: false,
    });
    let included: String = includes.iter().map(|d| normalise_user_doc(d)).collect();
    plans.push(AddonPlan {
        resource: resource::USER_INCLUDES,
        critical: false,
        manifest: (!included.trim().is_empty()).then_some(included),
        template: None,
        unbundled: false,
    });
    Ok(plans)
}

/// The manifests RKE1's ConfigMaps hold, as far as they could be read: by resource name, or
/// why none could be read (a new cluster, an API server that did not answer).
pub type DeployedManifests<'a> = Result<&'a BTreeMap<String, String>, &'a ManifestsUnread>;

/// Why the manifests RKE1's ConfigMaps hold could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestsUnread {
    /// The cluster is new: nothing was deployed yet.
    #[error("new cluster")]
    NewCluster,
    /// The kubeconfig rkers keeps could not be read (its path and why).
    #[error("{path}: {source}")]
    Kubeconfig {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// No client of the API server could be made from it.
    #[error(transparent)]
    Api(#[from] crate::kubeapi::KubeApiError),
    /// A ConfigMap could not be read (it names the resource and the server's answer).
    #[error(transparent)]
    ConfigMap(#[from] AddonError),
}

/// The addon an unbundled plan is for, as its KDM template key names it (`canal-v3.30.2` ->
/// `canal`).
fn addon_name(plan: &AddonPlan) -> &str {
    let template = plan.template.as_deref().unwrap_or(plan.resource);
    template.split_once("-v").map_or(template, |(name, _)| name)
}

/// How to get past an addon whose template is not bundled and which the cluster does not run.
fn not_bundled_remedy(resource: &str) -> &'static str {
    if resource == resource::NETWORK {
        "choose another network plugin (network.plugin) or Kubernetes version \
         (kubernetes_version) in cluster.yml, or deploy the plugin's manifest yourself as a \
         user addon (addons or addons_include) with network.plugin: none"
    } else {
        "choose another provider or Kubernetes version (kubernetes_version) in cluster.yml, or \
         deploy the addon's manifest yourself as a user addon (addons or addons_include) with \
         its provider set to none"
    }
}

/// Resolves every unbundled plan to the manifest the cluster already runs (RKE1's ConfigMap
/// for its resource), so that it changes and prunes nothing, with one line per such addon
/// saying so; or, when the cluster runs none, the error that names the addon, the template
/// and the remedies. Bundled plans pass through unchanged.
pub fn keep_deployed(
    plans: Vec<AddonPlan>,
    deployed: DeployedManifests,
) -> Result<(Vec<AddonPlan>, Vec<String>), AddonError> {
    let mut notes = Vec::new();
    let mut out = Vec::with_capacity(plans.len());
    for mut plan in plans {
        if plan.unbundled && plan.manifest.is_none() {
            let addon = addon_name(&plan).to_string();
            let template = plan.template.clone().unwrap_or_default();
            let configmap = format!(
                "ConfigMap {}/{}",
                super::apply::ADDON_NAMESPACE,
                plan.resource
            );
            let stored = match deployed {
                Ok(map) => map
                    .get(plan.resource)
                    .filter(|m| !m.trim().is_empty())
                    .ok_or_else(|| format!("no {configmap} holds a deployed manifest of it")),
                Err(why) => Err(format!("{configmap} could not be read ({why})")),
            };
            let manifest = stored.map_err(|why| AddonError::NotBundled {
                addon: addon.clone(),
                template: template.clone(),
                why: format!(
                    "{why}, so there is no manifest to keep; {}",
                    not_bundled_remedy(plan.resource)
                ),
            })?;
            notes.push(format!(
                "{addon}: template {template} is not bundled with rkers; keeping the manifest \
                 deployed in {configmap} (unchanged)"
            ));
            plan.manifest = Some(manifest.clone());
        }
        out.push(plan);
    }
    Ok((out, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addons::vars::network_vars;
    use std::path::Path;

    fn docs(label: &str, text: &str) -> Vec<serde_json::Value> {
        crate::addons::parse_manifest(label, text)
            .unwrap_or_else(|e| panic!("{label}: YAML does not parse: {e}"))
    }

    fn object_id(v: &serde_json::Value) -> String {
        format!(
            "{}/{}/{}",
            v["kind"].as_str().unwrap_or("?"),
            v["metadata"]["namespace"].as_str().unwrap_or(""),
            v["metadata"]["name"].as_str().unwrap_or("?")
        )
    }

    /// Every canal template holds the whole canal manifest: the port script once cut every canal
    /// template inside the canal DaemonSet, and Go's rendering of the same cut text agreed, so
    /// only the objects themselves can tell.
    #[test]
    fn every_canal_template_is_whole() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/addons-golden");
        let cases: Vec<serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap())
                .unwrap();
        let canal: Vec<&str> = crate::addons::gotemplate::embedded_names()
            .into_iter()
            .filter(|k| k.starts_with("canal-"))
            .collect();
        assert!(canal.len() >= 15, "{canal:?}");
        for key in canal {
            let case = cases
                .iter()
                .find(|c| c["name"] == format!("{key}.defaults"))
                .unwrap_or_else(|| panic!("{key}: no defaults case"));
            let objects = docs(
                key,
                &render_template(Catalog::embedded(), key, &case["vars"]).unwrap(),
            );
            let ids: Vec<String> = objects.iter().map(object_id).collect();
            for want in [
                "ServiceAccount/kube-system/canal",
                "DaemonSet/kube-system/canal",
                "Deployment/kube-system/calico-kube-controllers",
                "PodDisruptionBudget/kube-system/calico-kube-controllers",
            ] {
                assert!(
                    ids.iter().any(|id| id == want),
                    "{key}: no {want} in {ids:?}"
                );
            }
            let daemonset = &objects[ids
                .iter()
                .position(|id| id == "DaemonSet/kube-system/canal")
                .unwrap()];
            let containers: Vec<&str> = daemonset["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            assert_eq!(containers, ["calico-node", "kube-flannel"], "{key}");
        }
    }

    /// A template key no catalog selects and rkers does not bundle, standing in for a template KDM
    /// adds after rkers' release.
    const UNBUNDLED_CANAL: &str = "canal-v9.99.0";

    /// Every template the embedded catalog selects for a supported version and a supported addon
    /// (not ACI) is bundled: ported, or KDM's body embedded.
    #[test]
    fn every_selected_template_is_bundled() {
        let catalog = Catalog::embedded();
        let addons = [
            kdm::CALICO,
            kdm::CANAL,
            kdm::FLANNEL,
            kdm::WEAVE,
            kdm::COREDNS,
            kdm::KUBEDNS,
            kdm::METRICS_SERVER,
            kdm::NGINX_INGRESS,
            kdm::NODELOCAL,
        ];
        let mut missing = Vec::new();
        for version in catalog.supported_versions() {
            for addon in addons {
                let Some(key) = catalog.addon_template(addon, &version) else {
                    continue;
                };
                if !super::bundled(catalog, &key) {
                    missing.push(format!("{version} {addon}: {key}"));
                }
            }
        }
        assert!(missing.is_empty(), "selected but not bundled: {missing:#?}");
    }

    /// A config with defaults and network `plugin`, on the newest supported version whose
    /// template for it is bundled.
    fn config(plugin: &str) -> (RkeConfig, &'static Catalog) {
        let catalog = Catalog::embedded();
        let version = catalog
            .supported_versions()
            .into_iter()
            .rev()
            .find(|v| {
                catalog
                    .addon_template(plugin, v)
                    .is_some_and(|k| bundled(catalog, &k))
            })
            .unwrap_or_else(|| panic!("a supported version with {plugin} bundled"));
        let yml = format!(
            "kubernetes_version: {version}\nnetwork:\n  plugin: {plugin}\nnodes:\n  - address: 10.0.0.1\n    user: rancher\n    role: [controlplane, etcd, worker]\n"
        );
        let mut cfg = crate::config::load_str(&yml, "cluster.yml").unwrap().config;
        crate::config::apply_defaults(&mut cfg, catalog);
        (cfg, catalog)
    }

    /// The plans of `plugin` on a bundled version, with the network plugin's template swapped
    /// for `template`, a key rkers does not bundle (one KDM selects for newer versions, or one
    /// made up for the test).
    fn plans_needing(plugin: &str, template: &str) -> Vec<AddonPlan> {
        assert!(
            !bundled(Catalog::embedded(), template),
            "{template} is bundled"
        );
        let (cfg, catalog) = config(plugin);
        let mut plans = plan_addons(&cfg, catalog, &[]).unwrap();
        let vars = network_vars(&cfg, catalog).unwrap().unwrap().1;
        plans[0] = system_plan(catalog, resource::NETWORK, Some((template.into(), vars))).unwrap();
        plans
    }

    fn network(plans: &[AddonPlan]) -> &AddonPlan {
        plans
            .iter()
            .find(|p| p.resource == resource::NETWORK)
            .unwrap()
    }

    const DEPLOYED: &str = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: canal\n  namespace: kube-system\n";

    /// A metadata file that brings a body for a template (a KDM data.json at run time) is
    /// rendered from that body, not the embedded one.
    #[test]
    fn a_metadata_files_own_template_body_is_rendered() {
        let (cfg, embedded) = config("calico");
        let key = embedded
            .addon_template(kdm::CALICO, &cfg.kubernetes_version)
            .unwrap();
        let mut data = embedded.data().clone();
        data.template_bodies.insert(
            key.clone(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\n  namespace: kube-system\n\
             data:\n  cidr: {{ .ClusterCIDR | default \"none\" }}\n"
                .to_string(),
        );
        let catalog = Catalog::from_data(data, "test").unwrap();
        let plans = plan_addons(&cfg, &catalog, &[]).unwrap();
        assert_eq!(
            network(&plans).manifest.as_deref(),
            Some(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\n  namespace: kube-system\n\
                 data:\n  cidr: 10.42.0.0/16\n"
            )
        );
    }

    #[test]
    fn a_bundled_template_renders_and_keep_deployed_leaves_it_alone() {
        let (cfg, catalog) = config("canal");
        let plans = plan_addons(&cfg, catalog, &[]).unwrap();
        let net = network(&plans);
        let key = net.template.clone().unwrap();
        assert!(key.starts_with("canal-"), "{key}");
        assert!(!net.unbundled);
        let vars = network_vars(&cfg, catalog).unwrap().unwrap().1;
        let rendered = render_template(catalog, &key, &vars).unwrap();
        assert_eq!(net.manifest.as_deref(), Some(rendered.as_str()));
        assert!(rendered.contains("kind: DaemonSet"));
        // Nothing to keep: the same plans whatever the cluster holds, and no note.
        let mut stored = BTreeMap::new();
        stored.insert(resource::NETWORK.to_string(), DEPLOYED.to_string());
        for deployed in [Ok(&stored), Err(&ManifestsUnread::NewCluster)] {
            let (kept, notes) = keep_deployed(plans.clone(), deployed).unwrap();
            assert_eq!(kept, plans);
            assert!(notes.is_empty(), "{notes:?}");
        }
    }

    #[test]
    fn an_unbundled_template_keeps_the_deployed_manifest_with_a_note() {
        let plans = plans_needing("canal", UNBUNDLED_CANAL);
        let net = network(&plans);
        let key = net.template.clone().unwrap();
        assert_eq!(key, UNBUNDLED_CANAL);
        assert!(net.unbundled && net.manifest.is_none());
        let mut stored = BTreeMap::new();
        stored.insert(resource::NETWORK.to_string(), DEPLOYED.to_string());
        stored.insert(resource::COREDNS.to_string(), "not: kept".to_string());
        let (kept, notes) = keep_deployed(plans.clone(), Ok(&stored)).unwrap();
        assert_eq!(network(&kept).manifest.as_deref(), Some(DEPLOYED));
        assert_eq!(network(&kept).template.as_deref(), Some(key.as_str()));
        assert_eq!(
            notes,
            [format!(
                "canal: template {key} is not bundled with rkers; keeping the manifest deployed \
                 in ConfigMap kube-system/rke-network-plugin (unchanged)"
            )]
        );
        // Every other addon is rendered as always, whatever its ConfigMap holds.
        for (before, after) in plans.iter().zip(&kept) {
            if before.resource != resource::NETWORK {
                assert_eq!(before, after);
            }
        }
    }

    #[test]
    fn an_unbundled_template_the_cluster_does_not_run_is_refused_with_the_remedies() {
        // Every calico template KDM selects is bundled: a made-up newer one stands in.
        let plans = plans_needing("calico", "calico-v9.99.9");
        let key = network(&plans).template.clone().unwrap();
        let empty = BTreeMap::new();
        let mut blank = BTreeMap::new();
        blank.insert(resource::NETWORK.to_string(), "\n".to_string());
        let unreadable = ManifestsUnread::Kubeconfig {
            path: "/var/kube_config_cluster.yml".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        };
        for (deployed, why) in [
            (
                Ok(&empty),
                "no ConfigMap kube-system/rke-network-plugin holds a deployed manifest",
            ),
            (
                Ok(&blank),
                "no ConfigMap kube-system/rke-network-plugin holds a deployed manifest",
            ),
            (
                Err(&ManifestsUnread::NewCluster),
                "ConfigMap kube-system/rke-network-plugin could not be read (new cluster)",
            ),
            (
                Err(&unreadable),
                "ConfigMap kube-system/rke-network-plugin could not be read \
                 (/var/kube_config_cluster.yml: gone)",
            ),
        ] {
            let e = keep_deployed(plans.clone(), deployed)
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("calico: template {key} is not bundled")),
                "{e}"
            );
            assert!(e.contains(why), "{e}");
            for remedy in [
                "network.plugin",
                "kubernetes_version",
                "addons_include",
                "network.plugin: none",
            ] {
                assert!(e.contains(remedy), "{remedy}: {e}");
            }
        }
    }
}
