//! Upgrades one minor at a time, with the removed-API check, on the sandbox's v1.20 cluster.
//!
//! The cluster gets what later minors stop serving: a PodSecurityPolicy (removed outright at
//! v1.25), an Ingress applied with `extensions/v1beta1` (removed at v1.22; its last-applied
//! configuration and the API server's request count show it) and a user addon with a
//! `batch/v1beta1` CronJob (removed at v1.25). The dry run of the move to a v1.21 version names
//! each as a warning (removed in a later minor) and goes ahead; the target's images are never
//! pulled (the sandbox has none). A v1.22 version is refused before anything is read, with the
//! path through v1.21. That the target minor's own removals refuse the run is checked by the
//! decision's unit tests (`src/diff/removed_apis.rs`): the sandbox can only run v1.20.

mod support;

use serde_json::Value;
use support::e2e::E2e;

const PSP: &str = "apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: rkers-e2e-legacy
spec:
  privileged: false
  seLinux: {rule: RunAsAny}
  runAsUser: {rule: RunAsAny}
  supplementalGroups: {rule: RunAsAny}
  fsGroup: {rule: RunAsAny}
  volumes: ['*']
";

const INGRESS: &str = "apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: rkers-e2e-legacy
  namespace: default
spec:
  backend:
    serviceName: nothing
    servicePort: 80
";

const USER_ADDON: &str = "addons: |-
  apiVersion: batch/v1beta1
  kind: CronJob
  metadata:
    name: rkers-e2e-tick
    namespace: default
  spec:
    schedule: '0 0 1 1 *'
    jobTemplate:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: tick
              image: busybox
";

#[tokio::test(flavor = "multi_thread")]
async fn a_minor_change_names_what_later_minors_remove() {
    let Some(e2e) = E2e::new() else { return };
    e2e.standard().await;
    let (v121, v122, env) = minor_versions(&e2e);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let current = current_version(&e2e);
    assert!(current.starts_with("v1.20."), "{current}");

    for (name, text) in [("psp.yml", PSP), ("ingress.yml", INGRESS)] {
        let path = e2e.dir.join(name);
        std::fs::write(&path, text).unwrap();
        let (ok, out) = e2e.kubectl(&["apply", "-f", path.to_str().unwrap()]);
        assert!(ok, "kubectl apply {name}: {out}");
    }
    e2e.edit(|t| {
        format!(
            "{}{USER_ADDON}",
            t.replace(
                &format!("kubernetes_version: {current}"),
                &format!("kubernetes_version: {v121}")
            )
        )
    });
    let before = e2e.env.container_ids(&support::e2e::HOSTS);

    // The dry run as text: one line per finding, each a warning, and the plan after them.
    let (ok, text) = e2e.rkers_env(&["up", "--dry-run"], &env);
    assert!(ok, "dry run of v1.20 → v1.21 failed:\n{text}");
    // Earlier tests on the shared cluster may have left more (the API server counts requests
    // since it started); v1.21 itself removes nothing.
    assert!(text.contains("removed APIs: v1.20 → v1.21: "), "{text}");
    assert!(
        text.contains(" finding(s), 0 refusing the upgrade"),
        "{text}"
    );
    let finding = |api: &str| {
        text.lines()
            .find(|l| l.contains(&format!("removed in a later minor: {api}")))
            .unwrap_or_else(|| panic!("no warning for {api}:\n{text}"))
            .to_string()
    };
    let ingress = finding("extensions/v1beta1 Ingress (removed in v1.22)");
    assert!(
        ingress.contains("Ingress default/rkers-e2e-legacy (its last-applied configuration)"),
        "{ingress}"
    );
    assert!(
        ingress.contains("requests to extensions/v1beta1 ingresses"),
        "{ingress}"
    );
    assert!(
        ingress.contains("fix: use networking.k8s.io/v1 Ingress"),
        "{ingress}"
    );
    let psp = finding("policy/v1beta1 PodSecurityPolicy (removed in v1.25)");
    assert!(psp.contains("PodSecurityPolicy rkers-e2e-legacy"), "{psp}");
    assert!(psp.contains("Pod Security Admission"), "{psp}");
    let cron = finding("batch/v1beta1 CronJob (removed in v1.25)");
    assert!(
        cron.contains("CronJob default/rkers-e2e-tick in addon rke-user-addon"),
        "{cron}"
    );
    assert!(cron.contains("fix: use batch/v1 CronJob"), "{cron}");

    // The same findings as JSON events, with their details.
    let (ok, json) = e2e.rkers_env(&["up", "--dry-run", "--output", "json"], &env);
    assert!(ok, "{json}");
    let findings: Vec<Value> = json
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["phase"] == "removed-apis" && v["status"] == "warning")
        .collect();
    assert!(findings.len() >= 3, "{json}");
    for f in &findings {
        assert_eq!(f["data"]["when"], "later", "{f}");
        assert!(text.contains(f["message"].as_str().unwrap()), "{f}");
    }
    let psp = findings
        .iter()
        .find(|f| f["data"]["removal"]["kind"] == "PodSecurityPolicy")
        .unwrap();
    assert_eq!(psp["data"]["uses"][0]["seen_in"], "object", "{psp}");
    assert_eq!(psp["data"]["removal"]["removed_in"], "v1.25", "{psp}");

    // Two minors ahead: refused before anything is read, with the path.
    e2e.edit(|t| {
        t.replace(
            &format!("kubernetes_version: {v121}"),
            &format!("kubernetes_version: {v122}"),
        )
    });
    for args in [&["up", "--dry-run"][..], &["up"][..]] {
        let (ok, out) = e2e.rkers_env(args, &env);
        assert!(!ok, "{args:?} to {v122} went ahead:\n{out}");
        assert!(
            out.contains(&format!("{current} → {v121} → {v122}")),
            "{out}"
        );
        assert!(out.contains("once per minor"), "{out}");
        assert!(!out.contains("removed APIs"), "{out}");
    }
    assert_eq!(current_version(&e2e), current, "the state changed");
    assert_eq!(
        e2e.env.container_ids(&support::e2e::HOSTS),
        before,
        "a container changed"
    );

    for name in ["psp.yml", "ingress.yml"] {
        let path = e2e.dir.join(name);
        let _ = e2e.kubectl(&["delete", "-f", path.to_str().unwrap()]);
    }
    e2e.reset_config(3);
}

/// The version the state says the cluster runs.
fn current_version(e2e: &E2e) -> String {
    e2e.state()["currentState"]["rkeConfig"]["kubernetesVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The newest v1.21 and v1.22 versions rkers knows, and the environment that makes it know
/// them: none when its metadata has them; otherwise a metadata file (`RKERS_METADATA_FILE`)
/// that gives each the v1.20 data, which is all a dry run on the sandbox's own images reads.
fn minor_versions(e2e: &E2e) -> (String, String, Vec<(String, String)>) {
    let catalog = rkers::metadata::Catalog::embedded();
    let newest = |minor: u64| {
        catalog
            .supported_versions()
            .iter()
            .filter_map(|v| rkers::metadata::K8sVersion::parse(v).ok())
            .filter(|v| v.major() == 1 && v.minor() == minor)
            .max()
            .map(|v| v.to_string())
    };
    if let (Some(a), Some(b)) = (newest(21), newest(22)) {
        return (a, b, Vec::new());
    }
    let (v121, v122) = ("v1.21.14-rancher1-1", "v1.22.17-rancher1-2");
    let mut data: Value = serde_json::from_str(include_str!("../data/versions.json")).unwrap();
    for (version, minor) in [(v121, "1.21"), (v122, "1.22")] {
        let images = data["system_images"]["v1.20.15-rancher2-2"].clone();
        data["system_images"][version] = images;
        for key in ["service_options", "windows_service_options", "version_info"] {
            let v120 = data[key]["v1.20"].clone();
            data[key][format!("v{minor}")] = v120;
        }
        let docker = data["docker_versions"]["1.20"].clone();
        data["docker_versions"][minor] = docker;
    }
    let path = e2e.dir.join("metadata-v1.21-v1.22.json");
    std::fs::write(&path, serde_json::to_string(&data).unwrap()).unwrap();
    (
        v121.to_string(),
        v122.to_string(),
        vec![(
            "RKERS_METADATA_FILE".to_string(),
            path.to_string_lossy().into_owned(),
        )],
    )
}
