//! The removed-API check on real binaries (issue 48): a minor that stops serving an API version
//! the cluster still uses is refused before anything changes, and goes on once the object is
//! migrated.
//!
//! No API version is removed between v1.32 and v1.37 (the upgrade chain checks that the servers
//! stop serving nothing its data does not list), so the refusal is shown where Kubernetes last
//! removed one that clusters really used: v1.25 stopped serving `policy/v1beta1`
//! (PodSecurityPolicy, removed outright). A one-host cluster at v1.24.17 (kubelet through
//! cri-dockerd, RKE1's flannel, every image built from its Go module by `scripts/sandbox
//! images`) gets a PodSecurityPolicy; then:
//! 1. `rkers up --dry-run` to v1.25 exits non-zero naming the object, as the run will;
//! 2. `rkers up` to v1.25 is refused naming the PodSecurityPolicy, its API version and the
//!    fix; no container changed and kube-apiserver still answers as v1.24.17;
//! 3. with the object deleted, `rkers up` moves the cluster to v1.25, whose API server no
//!    longer serves `policy/v1beta1`, and the next dry run plans nothing.
//!
//! RKE1's flannel addon before v1.25 makes a PodSecurityPolicy of its own
//! (`psp.flannel.unprivileged`), which v1.25's leaves out. It refuses nothing: both dry runs
//! say it is deleted before the control plane changes, the run deletes it while
//! `policy/v1beta1` is still served, and etcd holds no PodSecurityPolicy afterwards (the first
//! run of this test found the step refused for it, with no way on but deleting rkers' own
//! object by hand).
//!
//! The sandbox instance is `RKERS_REAL_E2E` (as for `tests/e2e_real_cluster.rs`); it runs in
//! `scripts/test-versions --removed-apis`, not in `scripts/test`.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use support::docker_host::Instance;

const FROM: &str = "v1.24.17-rancher1-1";
/// v1.25.6, not the newest v1.25 patch: the Go module proxy here serves no
/// k8s.io/kube-controller-manager (and other staging modules) for v1.25.7–v1.25.9 or
/// v1.25.11–v1.25.16.
const TO: &str = "v1.25.6-rancher4-1";

const PSP: &str = r#"apiVersion: policy/v1beta1
kind: PodSecurityPolicy
metadata:
  name: rkers-legacy-restricted
spec:
  privileged: false
  seLinux: {rule: RunAsAny}
  runAsUser: {rule: MustRunAsNonRoot}
  supplementalGroups: {rule: RunAsAny}
  fsGroup: {rule: RunAsAny}
  volumes: ["configMap", "secret"]
"#;

struct Cluster {
    sb: Instance,
    rkers: PathBuf,
    config: PathBuf,
    kubeconfig: PathBuf,
}

impl Cluster {
    fn rkers(&self, args: &[&str]) -> (bool, String) {
        self.sb.rkers(&self.rkers, &self.config, args)
    }

    /// kubectl of `version`'s module build, with `stdin`.
    fn kubectl(&self, version: &str, args: &[&str], stdin: Option<&str>) -> (bool, String) {
        let mut cmd = Command::new(kubectl_for(version));
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        support::outcome_with_stdin(cmd, stdin)
    }

    /// Every container on the host, as `name id` lines.
    fn containers(&self) -> Vec<String> {
        let (ok, text) = self
            .sb
            .on_host("host1", "docker ps -a --format '{{.Names}} {{.ID}}'");
        assert!(ok, "docker ps: {text}");
        let mut all: Vec<String> = text.lines().map(str::to_string).collect();
        all.sort();
        all
    }

    /// Waits until the node is Ready with kubelet `version`'s Kubernetes version.
    fn node_ready_at(&self, version: &str) {
        let k8s = version.split('-').next().unwrap();
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let (ok, text) = self.kubectl(
                version,
                &[
                    "get",
                    "nodes",
                    "-o",
                    "jsonpath={range .items[*]}{.status.nodeInfo.kubeletVersion} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
                ],
                None,
            );
            if ok && text.trim() == format!("{k8s} True") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the node is not Ready at {k8s} after 300 s: {text}"
            );
            std::thread::sleep(Duration::from_secs(3));
        }
    }

    fn server_version(&self, version: &str) -> String {
        let (ok, out) = self.kubectl(version, &["version", "-o", "json"], None);
        assert!(ok, "kubectl version: {out}");
        let v: serde_json::Value =
            serde_json::from_str(out.get(out.find('{').unwrap_or(0)..).unwrap_or_default())
                .unwrap_or_else(|e| panic!("{e}: {out}"));
        v["serverVersion"]["gitVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// The PodSecurityPolicies etcd holds, by key, whatever the API server still serves.
fn psps_in_etcd(c: &Cluster) -> Vec<String> {
    let (ok, out) = c.sb.on_host(
        "host1",
        "docker exec etcd etcdctl get --prefix /registry/podsecuritypolicy --keys-only",
    );
    assert!(ok, "etcdctl: {out}");
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The kubectl of the same module build as `version` (scripts/build-modules' cache).
fn kubectl_for(version: &str) -> PathBuf {
    let k8s = version.split('-').next().unwrap();
    let cache = std::env::var("RKERS_CACHE").unwrap_or_else(|_| "/var/cache/rkers".into());
    PathBuf::from(format!("{cache}/modules/kubernetes/{k8s}/bin/kubectl"))
}

/// `scripts/sandbox images <version>`: builds what is missing, pushes it and returns the
/// cluster.yml it wrote for that version.
fn images(sb: &Instance, version: &str) -> String {
    let out = sb.sandbox(&["images", version]);
    let path = out
        .lines()
        .last()
        .expect("scripts/sandbox images prints a path");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains(&format!("kubernetes_version: {version}\n")),
        "{text}"
    );
    text
}

#[test]
fn a_minor_that_removes_an_api_in_use_is_refused_until_the_object_is_migrated() {
    let Some(sb) = Instance::fresh_with(
        "RKERS_REAL_E2E",
        &["--hosts", "1", "--roles", "default", "--cni", "none"],
    ) else {
        return;
    };
    let t = Instant::now();
    let from_yml = images(&sb, FROM);
    let to_yml = images(&sb, TO);
    eprintln!(
        "scripts/sandbox images {FROM} {TO}: {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let work = sb.dir.join("e2e-removed-apis");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let c = Cluster {
        rkers: PathBuf::from(env!("CARGO_BIN_EXE_rkers")),
        config: work.join("cluster.yml"),
        kubeconfig: work.join("kube_config_cluster.yml"),
        sb,
    };

    std::fs::write(&c.config, &from_yml).unwrap();
    let (ok, out) = c.rkers(&["up"]);
    assert!(ok, "rkers up {FROM} failed:\n{out}");
    c.node_ready_at(FROM);
    let (ok, out) = c.kubectl(FROM, &["apply", "-f", "-"], Some(PSP));
    assert!(ok, "kubectl apply of the PodSecurityPolicy: {out}");
    let served = c.kubectl(FROM, &["api-versions"], None).1;
    assert!(served.lines().any(|l| l == "policy/v1beta1"), "{served}");
    let stored = psps_in_etcd(&c);
    assert!(
        stored.contains(&"/registry/podsecuritypolicy/psp.flannel.unprivileged".to_string())
            && stored.contains(&"/registry/podsecuritypolicy/rkers-legacy-restricted".to_string()),
        "{stored:?}"
    );

    // 1 and 2: the step to v1.25 is refused, in the dry run as in the run, before anything.
    std::fs::write(&c.config, &to_yml).unwrap();
    let before = c.containers();
    let (ok, dry) = c.rkers(&["up", "--dry-run"]);
    assert!(!ok, "the dry run to {TO} succeeded:\n{dry}");
    let (ok, out) = c.rkers(&["up"]);
    assert!(!ok, "up to {TO} with a PodSecurityPolicy succeeded:\n{out}");
    for text in [&dry, &out] {
        for needed in [
            "policy/v1beta1 PodSecurityPolicy",
            "PodSecurityPolicy rkers-legacy-restricted",
            "removed by the target minor",
            "deleted before the control plane changes",
        ] {
            assert!(text.contains(needed), "`{needed}` not in:\n{text}");
        }
        // rkers' own addon's object is not what refuses the step.
        let refusal = text
            .split("refusing to upgrade")
            .nth(1)
            .unwrap_or_else(|| panic!("no refusal in:\n{text}"));
        assert!(
            !refusal.contains("psp.flannel.unprivileged"),
            "the refusal names flannel's own PodSecurityPolicy:\n{text}"
        );
    }
    let refusal = out
        .lines()
        .find(|l| l.contains("PodSecurityPolicy rkers-legacy-restricted"))
        .unwrap_or_default();
    eprintln!("refused: {refusal}");
    assert_eq!(
        c.containers(),
        before,
        "the refused step changed containers"
    );
    let k8s_from = FROM.split('-').next().unwrap();
    assert_eq!(c.server_version(FROM), k8s_from);

    // 3. Migrated (PodSecurityPolicy has no successor: deleted), the step goes through.
    let (ok, out) = c.kubectl(
        FROM,
        &["delete", "podsecuritypolicy", "rkers-legacy-restricted"],
        None,
    );
    assert!(ok, "{out}");
    let (ok, dry) = c.rkers(&["up", "--dry-run"]);
    assert!(ok, "the dry run to {TO} after the migration failed:\n{dry}");
    let deletion = "delete PodSecurityPolicy psp.flannel.unprivileged (policy/v1beta1)";
    assert!(dry.contains(deletion), "`{deletion}` not in:\n{dry}");
    let t = Instant::now();
    let (ok, out) = c.rkers(&["up"]);
    assert!(ok, "up to {TO} after the migration failed:\n{out}");
    assert!(
        psps_in_etcd(&c).is_empty(),
        "PodSecurityPolicies left in etcd: {:?}",
        psps_in_etcd(&c)
    );
    eprintln!("rkers up {FROM} -> {TO}: {:.1}s", t.elapsed().as_secs_f64());
    c.node_ready_at(TO);
    assert_eq!(c.server_version(TO), TO.split('-').next().unwrap());
    let served = c.kubectl(TO, &["api-versions"], None).1;
    assert!(
        !served.lines().any(|l| l == "policy/v1beta1"),
        "v1.25 still serves policy/v1beta1:\n{served}"
    );
    let (ok, dry) = c.rkers(&["up", "--dry-run"]);
    assert!(ok, "{dry}");
    support::rke1_real::assert_plans_nothing(&dry, &format!("after the step to {TO}, rkers"));
    c.sb.sandbox(&["down", "--purge"]);
}
