//! The plan for one Kubernetes version of every minor RKE1 offered from v1.20 to v1.32, built
//! with the compiled-in metadata (data/versions.json): a Linux and Windows mixed cluster whose
//! images and flags per host are snapshotted, so a change of the data shows up as a reviewable
//! diff. Addon manifests are not part of the plan, so no template is rendered here.

mod wins;

use rkers::metadata::Catalog;
use rkers::plan::ClusterPlan;
use serde_json::{Value, json};
use wins::support::*;

/// The newest version with public images of each minor (v1.31.11+ and v1.32.7+ are RKE
/// Extended Life builds).
const ONE_PER_MINOR: [&str; 13] = [
    "v1.20.15-rancher2-2",
    "v1.21.14-rancher1-1",
    "v1.22.17-rancher1-2",
    "v1.23.16-rancher2-3",
    "v1.24.17-rancher1-1",
    "v1.25.16-rancher2-3",
    "v1.26.15-rancher1-1",
    "v1.27.16-rancher1-1",
    "v1.28.15-rancher1-1",
    "v1.29.15-rancher1-1",
    "v1.30.14-rancher1-1",
    "v1.31.10-rancher1-1",
    "v1.32.6-rancher1-1",
];

fn mixed_cluster(version: &str) -> rkers::config::RkeConfig {
    let text = fixture("cluster-mixed-v120.yml").replace(
        "kubernetes_version: v1.20.15-rancher2-2",
        &format!("kubernetes_version: {version}"),
    );
    let cfg = load(&text);
    assert_eq!(cfg.kubernetes_version, version);
    cfg
}

/// What depends on the version: each Linux container's image, command and environment, and
/// each Windows process's binary and arguments.
fn summary(plan: &ClusterPlan) -> Value {
    let mut hosts = serde_json::Map::new();
    for host in &plan.hosts {
        let mut containers = serde_json::Map::new();
        for (name, spec) in &host.containers {
            let mut entry = json!({ "image": spec.image });
            if !plan.windows.contains_key(&host.address) {
                entry["cmd"] = json!(spec.cmd);
                entry["env"] = json!(spec.env);
            }
            containers.insert(name.clone(), entry);
        }
        let mut value = json!({ "containers": containers });
        if let Some(setup) = plan.windows.get(&host.address) {
            value["processes"] = json!(
                setup
                    .processes
                    .iter()
                    .map(|p| json!({ "path": p.path, "args": p.args }))
                    .collect::<Vec<_>>()
            );
        }
        hosts.insert(host.address.clone(), value);
    }
    Value::Object(hosts)
}

#[test]
fn one_version_of_every_minor_plans_linux_and_windows_hosts() {
    let catalog = Catalog::embedded();
    for version in ONE_PER_MINOR {
        assert!(catalog.is_supported(version), "{version}");
        let cfg = mixed_cluster(version);
        let images = catalog.system_images(version).unwrap();
        let win = windows_options(&cfg);
        let plan = build(&cfg, &facts(&cfg, &[WINDOWS_HOST]), Some(&win))
            .unwrap_or_else(|e| panic!("{version}: {e}"));

        // The data, not the fixture, decides the images and the default flags.
        let linux = plan
            .hosts
            .iter()
            .find(|h| h.address == "10.77.0.11")
            .unwrap();
        assert_eq!(
            linux.containers["kube-apiserver"].image,
            images["kubernetes"]
        );
        assert_eq!(linux.containers["etcd"].image, images["etcd"]);
        let win_kubelet = plan.windows[WINDOWS_HOST]
            .processes
            .iter()
            .find(|p| p.container == "kubelet")
            .unwrap();
        assert!(
            win_kubelet.args.iter().any(|a| a == "--max-pods=60"),
            "{version}: win_extra_args reach the Windows kubelet"
        );

        let name = format!("versions_plan_{}", version.replace(['.', '-'], "_"));
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| insta::assert_yaml_snapshot!(name, summary(&plan)));
    }
}
