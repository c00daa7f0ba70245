//! The plan for one Kubernetes version of every minor RKE1 offered from v1.20 to v1.32, built
//! with the compiled-in metadata (data/versions.json): a Linux and Windows mixed cluster whose
//! images and flags per host are snapshotted, so a change of the data shows up as a reviewable
//! diff. Addon manifests are not part of the plan, so no template is rendered here. rkers' own
//! minors after v1.32 (data/versions-next.json) are planned the same way, and their removed
//! flags, listing and upgrade path checked against that data.

mod wins;

use rkers::metadata::Catalog;
use rkers::metadata::next::{NextData, step_reasons};
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

/// rkers' own version of each minor after RKE1's last (data/versions-next.json).
const NEXT_PER_MINOR: [&str; 5] = [
    "v1.33.5-rkers1",
    "v1.34.10-rkers1",
    "v1.35.8-rkers1",
    "v1.36.3-rkers1",
    "v1.37.2-rkers1",
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
    for version in ONE_PER_MINOR.into_iter().chain(NEXT_PER_MINOR) {
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

/// The container that runs a service options component on a Linux host.
fn container_of(component: &str) -> &'static str {
    match component {
        "etcd" => "etcd",
        "kubeapi" => "kube-apiserver",
        "kube_controller" => "kube-controller-manager",
        "scheduler" => "kube-scheduler",
        "kubelet" => "kubelet",
        "kubeproxy" => "kube-proxy",
        other => panic!("unknown component {other}"),
    }
}

/// The `--flag=` arguments of `container` on every host of the plan (Linux containers and
/// Windows processes).
fn flag_args<'a>(plan: &'a ClusterPlan, container: &'a str, flag: &'a str) -> Vec<&'a String> {
    let prefix = format!("--{flag}=");
    let linux = plan
        .hosts
        .iter()
        .filter_map(move |h| h.containers.get(container))
        .flat_map(|spec| spec.entrypoint.iter().chain(&spec.cmd));
    let windows = plan
        .windows
        .values()
        .flat_map(|setup| &setup.processes)
        .filter(move |p| p.container == container)
        .flat_map(|p| &p.args);
    linux
        .chain(windows)
        .filter(|a| a.starts_with(&prefix))
        .collect()
}

fn plan_of(version: &str) -> ClusterPlan {
    let cfg = mixed_cluster(version);
    let win = windows_options(&cfg);
    build(&cfg, &facts(&cfg, &[WINDOWS_HOST]), Some(&win))
        .unwrap_or_else(|e| panic!("{version}: {e}"))
}

#[test]
fn each_next_minor_drops_the_flags_it_removes_and_passes_the_ones_it_requires() {
    let next = NextData::embedded();
    assert_eq!(next.minors.len(), NEXT_PER_MINOR.len());
    for (entry, version) in next.minors.iter().zip(NEXT_PER_MINOR) {
        assert_eq!(entry.version, version);
        let plan = plan_of(version);
        for (component, flag) in entry.removed_flags() {
            let found = flag_args(&plan, container_of(component), flag);
            assert!(
                found.is_empty(),
                "{version}: --{flag} is removed: {found:?}"
            );
        }
        for (component, flag) in entry.required_flags() {
            let found = flag_args(&plan, container_of(component), flag);
            assert!(!found.is_empty(), "{version}: --{flag} is required");
        }
    }
    // The check can fail: v1.34's kubelets (Linux and Windows) still have the flag v1.35 removes.
    let v134 = plan_of("v1.34.10-rkers1");
    assert!(!flag_args(&v134, "kubelet", "pod-infra-container-image").is_empty());
}

#[test]
fn a_minor_without_flag_changes_plans_the_previous_minors_flags() {
    // CHANGELOG-1.36 and CHANGELOG-1.37 remove no flag RKE passes: each minor's hosts get the
    // previous minor's commands, with only the Kubernetes and etcd images changed, and from
    // v1.36 on, the Linux kubelets (cri-dockerd) ExtendWebSocketsToKubelet=false (plan/containers/node.rs).
    let next = NextData::embedded();
    let catalog = Catalog::embedded();
    for (old, new, minor) in [
        ("v1.35.8-rkers1", "v1.36.3-rkers1", 36),
        ("v1.36.3-rkers1", "v1.37.2-rkers1", 37),
    ] {
        let entry = next.minor(1, minor).unwrap();
        assert!(entry.flag_changes.is_empty(), "{:?}", entry.flag_changes);
        let (old_images, new_images) = (
            catalog.system_images(old).unwrap(),
            catalog.system_images(new).unwrap(),
        );
        let old_commands = commands(&plan_of(old));
        let mut expected = old_commands.to_string();
        for key in ["kubernetes", "etcd"] {
            assert_ne!(old_images[key], new_images[key], "{new}: {key}");
            expected = expected.replace(&old_images[key], &new_images[key]);
        }
        let mut actual = commands(&plan_of(new)).to_string();
        if minor == 36 {
            // Each Linux kubelet (two hosts) gains the gate; nothing else changes.
            let gate = "\"--feature-gates=ExtendWebSocketsToKubelet=false\",";
            assert_eq!(actual.matches(gate).count(), 2, "{actual}");
            actual = actual.replace(gate, "");
        }
        assert!(actual.contains("--v=2"), "{actual}");
        assert_eq!(actual, expected, "{new}");
    }
}

/// Every container's image, entrypoint, command and environment and every Windows process's
/// arguments, host by host.
fn commands(plan: &ClusterPlan) -> Value {
    let hosts: Vec<Value> = plan
        .hosts
        .iter()
        .map(|host| {
            let containers: Vec<Value> = host
                .containers
                .iter()
                .map(|(name, spec)| json!([name, spec.image, spec.entrypoint, spec.cmd, spec.env]))
                .collect();
            let processes: Vec<Value> = plan
                .windows
                .get(&host.address)
                .map(|setup| {
                    setup
                        .processes
                        .iter()
                        .map(|p| json!([p.path, p.args]))
                        .collect()
                })
                .unwrap_or_default();
            json!([host.address, containers, processes])
        })
        .collect();
    Value::Array(hosts)
}

#[test]
fn next_minors_are_accepted_listed_and_carry_their_etcd() {
    let catalog = Catalog::embedded();
    let offered = catalog.current_versions();
    let next = NextData::embedded();
    for entry in &next.minors {
        assert!(catalog.is_supported(&entry.version), "{}", entry.version);
        assert!(offered.contains(&entry.version), "{offered:?}");
        let images = catalog.system_images(&entry.version).unwrap();
        assert_eq!(
            images["kubernetes"],
            format!("rkers/hyperkube:{}", entry.version)
        );
        assert!(images["etcd"].ends_with(&format!(":{}", entry.etcd)));
        // The addon templates of RKE1's newest v1.32 still apply (KDM's newest ranges are
        // open-ended).
        for addon in [
            "calico",
            "canal",
            "flannel",
            "coreDNS",
            "metricsServer",
            "nginxIngress",
        ] {
            assert_eq!(
                catalog.addon_template(addon, &entry.version),
                catalog.addon_template(addon, "v1.32.13-rancher1-3"),
                "{addon} at {}",
                entry.version
            );
        }
    }
    // RKE1's default stays.
    assert_eq!(catalog.default_version(), "v1.32.6-rancher1-1");
}

#[test]
fn upgrade_path_goes_one_minor_at_a_time_with_reasons() {
    use rkers::diff::minor::{MinorStep, MinorStepError, minor_step};
    use rkers::metadata::K8sVersion;
    let catalog = Catalog::embedded();
    let known = catalog.supported_versions();
    let next = NextData::embedded();
    let mut from = K8sVersion::parse("v1.32.6-rancher1-1").unwrap();
    for version in NEXT_PER_MINOR {
        let to = K8sVersion::parse(version).unwrap();
        let step = minor_step(&from, &to, &known).unwrap();
        let MinorStep::Next { from: a, to: b } = step else {
            panic!("{version}: {step:?}")
        };
        let reasons = step_reasons(next, a, b);
        let entry = next.minor(b.0, b.1).unwrap();
        for (component, flag) in entry.removed_flags() {
            let line = format!("removed in {}: {component} --{flag}", entry.minor);
            assert!(reasons.iter().any(|r| r.starts_with(&line)), "{reasons:?}");
        }
        assert!(
            reasons.iter().any(|r| r.contains("etcd")),
            "{version}: the etcd release or step is named: {reasons:?}"
        );
        from = to;
    }
    // A two-minor jump is refused with the path through rkers' own versions.
    let err = minor_step(
        &K8sVersion::parse("v1.32.6-rancher1-1").unwrap(),
        &K8sVersion::parse("v1.34.10-rkers1").unwrap(),
        &known,
    )
    .unwrap_err();
    assert!(matches!(err, MinorStepError::Skip { .. }));
    assert!(
        err.to_string()
            .contains("v1.32.6-rancher1-1 → v1.33.5-rkers1 → v1.34.10-rkers1"),
        "{err}"
    );
}
