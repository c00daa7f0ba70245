//! `rkers cert rotate` decided (§25): from the rotated bundle and what was found on each host,
//! the stages that put the new certificates in place. Per host the certificate files that
//! changed are written, then the containers that read one restart, plane by plane (etcd, the
//! control plane, the workers), each checked healthy with the rotated certificates; then the
//! admin kubeconfig is rewritten, the state stored in its Secret and, after a CA rotation, the
//! system pods that cache the CA deleted (§25.2 step 5).
//!
//! RKE1 restarts every component whatever `--service` says (§33.13, a bug fixed here): only the
//! containers that read a changed file restart, so rotating the kubelet's certificates leaves
//! etcd and the control plane running.

use super::readers::containers_to_restart_under;
use super::{Action, HealthProbe, Sealed};
use crate::changeset::{CLUSTER, Changeset, LOCAL, Pace};
use crate::files::{self, DesiredFile, FileWrite};
use crate::health::TlsMaterial;
use crate::pki::{Bundle, names::CA_CERT_NAME};
use crate::plan::{self, ContainerSpec, HealthCheck};
use indexmap::IndexMap;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Labels of the system pods RKE1 deletes after a CA rotation so they pick up the new CA and
/// service-account tokens (§25.2 step 5). RKE1 deletes no token secrets: the controller
/// manager rewrites their `ca.crt` itself once it runs with the new CA.
pub const CA_CACHING_POD_LABELS: &[&str] = &[
    "k8s-app=flannel",
    "k8s-app=canal",
    "name=weave-net",
    "app=ingress-nginx",
    "k8s-app=metrics-server",
    "k8s-app=kube-dns",
    "k8s-app=kube-dns-autoscaler",
    "k8s-app=coredns-autoscaler",
    "app=kube-api-auth",
    "app=cattle-cluster-agent",
    "k8s-app=calico-node",
    "k8s-app=calico-kube-controllers",
];

/// The containers that restart together, in the order they restart: etcd first (its clients
/// need it), then the control plane, then the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plane {
    Etcd,
    Control,
    Worker,
}

impl Plane {
    pub const ORDER: [Plane; 3] = [Plane::Etcd, Plane::Control, Plane::Worker];

    /// Its containers, in the order they restart.
    pub fn containers(self) -> &'static [&'static str] {
        match self {
            Plane::Etcd => &[plan::ETCD],
            Plane::Control => &[
                plan::KUBE_APISERVER,
                plan::KUBE_CONTROLLER_MANAGER,
                plan::KUBE_SCHEDULER,
            ],
            Plane::Worker => &[plan::KUBELET, plan::KUBE_PROXY],
        }
    }
}

/// The stages of a certificate rotation, in the order they run; `Display` is the phase name
/// shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertStage {
    /// Each host's changed certificate files written, the hosts in parallel.
    Certificates,
    /// The plane's containers that read a changed file restarted and checked, the hosts in
    /// parallel.
    Restart(Plane),
    /// The admin kubeconfig, on the machine rkers runs on, with the new certificates.
    AdminKubeconfig,
    /// The state, with the new bundle as current, stored in its Secret.
    StateSecret,
    /// After a CA rotation: the system pods that cache the CA deleted.
    SystemPods,
}

impl fmt::Display for CertStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CertStage::Certificates => "certificates",
            CertStage::Restart(Plane::Etcd) => "restart etcd",
            CertStage::Restart(Plane::Control) => "restart control plane",
            CertStage::Restart(Plane::Worker) => "restart worker plane",
            CertStage::AdminKubeconfig => "admin kubeconfig",
            CertStage::StateSecret => "state secret",
            CertStage::SystemPods => "system pods",
        })
    }
}

/// A host as the rotation found it.
#[derive(Clone, Debug)]
pub struct CertHost {
    pub address: String,
    /// Where its files are kept: a Windows worker's relative to its drive root.
    pub platform: plan::Platform,
    /// The directory its files are written under: `<prefix>/etc/kubernetes`, or a Windows
    /// worker's drive root.
    pub dir: String,
    /// Its files (certificates, keys, kubeconfigs and the plan's), relative to `dir`, from
    /// the rotated bundle.
    pub desired: Vec<DesiredFile>,
    /// The same files from the bundle its containers were last started with.
    pub loaded: Vec<DesiredFile>,
    /// What it holds under `dir` now.
    pub on_disk: BTreeMap<String, Vec<u8>>,
    /// Its containers as the plan has them (which it starts, their health checks).
    pub containers: IndexMap<String, ContainerSpec>,
    /// Those of [`CertHost::readers_to_find`] that exist on the host, running or stopped.
    pub found: BTreeSet<String>,
}

impl CertHost {
    /// The containers that read a changed file and that the plan starts: the ones to look
    /// for on the host. A reader that exists but is stopped (a run interrupted between its
    /// stop and its start) restarts the same way.
    pub fn readers_to_find(&self) -> Vec<&'static str> {
        containers_to_restart_under(
            self.platform.kubernetes_dir(),
            &self.desired,
            &self.loaded,
            &self.on_disk,
        )
        .into_iter()
        .filter(|name| self.containers.get(*name).is_some_and(|c| c.start))
        .collect()
    }

    fn restarts(&self) -> BTreeSet<&'static str> {
        self.readers_to_find()
            .into_iter()
            .filter(|name| self.found.contains(*name))
            .collect()
    }

    fn changed_files(&self) -> Vec<FileWrite> {
        files::changed(&self.desired, &self.on_disk)
            .into_iter()
            .map(|f| FileWrite {
                path: f.relative_path.clone(),
                mode: f.mode,
                reason: if self.on_disk.contains_key(&f.relative_path) {
                    "changed".into()
                } else {
                    "new".into()
                },
                contents: f.contents.clone(),
            })
            .collect()
    }
}

/// The admin kubeconfig as the rotation rewrites it.
pub struct AdminKubeconfig {
    pub path: String,
    pub contents: Vec<u8>,
}

/// The rotation's changeset, from the rotated `bundle` and the hosts as found.
pub fn rotate_certs(
    hosts: &[CertHost],
    bundle: &Bundle,
    kubeconfig: AdminKubeconfig,
    rotate_ca: bool,
) -> Changeset<CertStage> {
    let mut changes = Changeset::default();
    changes.stage(CertStage::Certificates, Pace::Parallel);
    for plane in Plane::ORDER {
        changes.stage(CertStage::Restart(plane), Pace::Parallel);
    }
    for host in hosts {
        let files = host.changed_files();
        if !files.is_empty() {
            let write = Action::WriteFileSet {
                dir: host.dir.clone(),
                files,
            };
            changes.push(
                CertStage::Certificates,
                Pace::Parallel,
                &host.address,
                write,
            );
        }
        let restarts = host.restarts();
        for plane in Plane::ORDER {
            for name in plane.containers().iter().filter(|n| restarts.contains(*n)) {
                let check = host
                    .containers
                    .get(*name)
                    .and_then(|c| c.health_check.as_ref())
                    .map(|check| probe(check, bundle));
                let restart = Action::RestartAndCheck {
                    name: name.to_string(),
                    health_url: check.as_ref().map(|c| c.url.clone()),
                    check: check.map(Box::new),
                };
                changes.push(
                    CertStage::Restart(plane),
                    Pace::Parallel,
                    &host.address,
                    restart,
                );
            }
        }
    }
    let write_kubeconfig = Action::WriteKubeconfig {
        path: kubeconfig.path,
        contents: Sealed::new(kubeconfig.contents),
    };
    changes.push(
        CertStage::AdminKubeconfig,
        Pace::OneAtATime,
        LOCAL,
        write_kubeconfig,
    );
    let save = Action::SaveStateSecret {
        reason: "the rotated certificates".into(),
    };
    changes.push(CertStage::StateSecret, Pace::OneAtATime, CLUSTER, save);
    if rotate_ca {
        let delete = Action::DeletePods {
            labels: CA_CACHING_POD_LABELS
                .iter()
                .map(|l| l.to_string())
                .collect(),
        };
        changes.push(CertStage::SystemPods, Pace::OneAtATime, CLUSTER, delete);
    }
    changes
}

/// A restarted component's health check, made with the rotated certificates, as the
/// component now has them.
fn probe(check: &HealthCheck, bundle: &Bundle) -> HealthProbe {
    HealthProbe {
        url: check.url.clone(),
        tls: check.client_certificate.as_ref().map(|c| TlsMaterial {
            ca_pem: bundle
                .get(CA_CERT_NAME)
                .map(|ca| ca.certificate_pem.clone()),
            client_cert_pem: bundle.get(c).map(|c| c.certificate_pem.clone()),
            client_key_pem: bundle.get(c).map(|c| c.key_pem.clone()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::CertificatePki;

    fn file(path: &str, contents: &str) -> DesiredFile {
        DesiredFile {
            relative_path: path.into(),
            contents: contents.as_bytes().to_vec(),
            mode: 0o600,
        }
    }

    fn started(name: &str, check: Option<(&str, Option<&str>)>) -> (String, ContainerSpec) {
        let spec = ContainerSpec {
            name: name.into(),
            start: true,
            health_check: check.map(|(url, client)| HealthCheck {
                url: url.into(),
                client_certificate: client.map(str::to_string),
            }),
            ..Default::default()
        };
        (name.to_string(), spec)
    }

    /// A Linux etcd and controlplane host whose CA changed: every reader restarts.
    fn controlplane() -> CertHost {
        CertHost {
            address: "h1".into(),
            platform: plan::Platform::Linux,
            dir: "/etc/kubernetes".into(),
            desired: vec![
                file("ssl/kube-ca.pem", "new ca"),
                file("ssl/kube-node.pem", "node"),
                file("audit-policy.yaml", "policy"),
            ],
            loaded: vec![
                file("ssl/kube-ca.pem", "old ca"),
                file("ssl/kube-node.pem", "node"),
                file("audit-policy.yaml", "policy"),
            ],
            on_disk: [
                ("ssl/kube-ca.pem".to_string(), b"old ca".to_vec()),
                ("ssl/kube-node.pem".to_string(), b"node".to_vec()),
                ("audit-policy.yaml".to_string(), b"policy".to_vec()),
            ]
            .into(),
            containers: [
                started("etcd", Some(("https://h1:2379/health", Some("kube-node")))),
                started(
                    plan::KUBE_APISERVER,
                    Some(("https://localhost:6443/healthz", None)),
                ),
                started(plan::KUBE_CONTROLLER_MANAGER, None),
                started(plan::KUBE_SCHEDULER, None),
                started(
                    plan::KUBELET,
                    Some(("http://localhost:10248/healthz", None)),
                ),
                started(plan::KUBE_PROXY, None),
                (
                    "service-sidekick".to_string(),
                    ContainerSpec {
                        start: false,
                        ..Default::default()
                    },
                ),
            ]
            .into_iter()
            .collect(),
            found: BTreeSet::new(),
        }
    }

    /// A Windows worker whose kubelet certificate is new (not on its disk yet); its kubelet
    /// was never created (an interrupted join), so nothing restarts there.
    fn windows_worker() -> CertHost {
        CertHost {
            address: "w1".into(),
            platform: plan::Platform::Windows,
            dir: "c:/".into(),
            desired: vec![file("etc/kubernetes/ssl/kube-node.pem", "new node")],
            loaded: vec![file("etc/kubernetes/ssl/kube-node.pem", "old node")],
            on_disk: BTreeMap::new(),
            containers: [started(plan::KUBELET, None)].into_iter().collect(),
            found: BTreeSet::new(),
        }
    }

    fn bundle() -> Bundle {
        let cert = |name: &str| {
            let pki = CertificatePki {
                certificate_pem: format!("{name} cert"),
                key_pem: format!("{name} key"),
                ..Default::default()
            };
            (name.to_string(), pki)
        };
        [cert(CA_CERT_NAME), cert("kube-node")].into()
    }

    fn kubeconfig() -> AdminKubeconfig {
        AdminKubeconfig {
            path: "/cluster/kube_config_cluster.yml".into(),
            contents: b"apiVersion: v1".to_vec(),
        }
    }

    fn with_found(mut host: CertHost) -> CertHost {
        host.found = host
            .readers_to_find()
            .into_iter()
            .map(str::to_string)
            .collect();
        host
    }

    #[test]
    fn every_container_that_reads_a_certificate_restarts_in_its_plane_in_order() {
        let order: Vec<&str> = Plane::ORDER
            .iter()
            .flat_map(|p| p.containers().iter().copied())
            .collect();
        assert_eq!(
            order,
            [
                plan::ETCD,
                plan::KUBE_APISERVER,
                plan::KUBE_CONTROLLER_MANAGER,
                plan::KUBE_SCHEDULER,
                plan::KUBELET,
                plan::KUBE_PROXY
            ]
        );
        for file in [
            "ssl/kube-ca.pem",
            "ssl/kube-apiserver.pem",
            "ssl/kube-node.pem",
            "ssl/kube-proxy.pem",
            "ssl/kube-scheduler.pem",
            "ssl/kube-controller-manager.pem",
            "ssl/kube-etcd-10-0-0-1.pem",
            "ssl/kube-kubelet-10-0-0-1.pem",
            "ssl/kube-apiserver-proxy-client.pem",
        ] {
            for reader in crate::diff::readers::readers_of(file) {
                assert!(order.contains(&reader), "{reader} of {file}");
            }
        }
    }

    #[test]
    fn the_readers_to_find_are_those_of_changed_files_the_plan_starts() {
        let cp = controlplane();
        assert_eq!(
            cp.readers_to_find(),
            [
                plan::ETCD,
                plan::KUBE_APISERVER,
                plan::KUBE_CONTROLLER_MANAGER,
                plan::KUBE_PROXY,
                plan::KUBE_SCHEDULER,
                plan::KUBELET,
            ]
        );
        // On Windows the files are read by their path below etc/kubernetes.
        assert_eq!(windows_worker().readers_to_find(), [plan::KUBELET]);
    }

    #[test]
    fn stages_write_then_restart_plane_by_plane_then_kubeconfig_state_and_pods() {
        let hosts = [with_found(controlplane()), windows_worker()];
        let changes = rotate_certs(&hosts, &bundle(), kubeconfig(), true);
        let names: Vec<String> = changes.stages.iter().map(|s| s.phase.to_string()).collect();
        assert_eq!(
            names,
            [
                "certificates",
                "restart etcd",
                "restart control plane",
                "restart worker plane",
                "admin kubeconfig",
                "state secret",
                "system pods",
            ]
        );
        let paces: Vec<Pace> = changes.stages.iter().map(|s| s.pace).collect();
        assert_eq!(paces[..4], [Pace::Parallel; 4]);
        assert_eq!(paces[4..], [Pace::OneAtATime; 3]);
        let planned = crate::diff::render_dry_run(&changes.planned());
        assert_eq!(
            planned,
            "h1:\n\
             \x20 - write under /etc/kubernetes:\n\
             \x20     ssl/kube-ca.pem mode 0600 (changed)\n\
             \x20 - restart container etcd and wait until https://h1:2379/health is healthy\n\
             \x20 - restart container kube-apiserver and wait until https://localhost:6443/healthz is healthy\n\
             \x20 - restart container kube-controller-manager\n\
             \x20 - restart container kube-scheduler\n\
             \x20 - restart container kubelet and wait until http://localhost:10248/healthz is healthy\n\
             \x20 - restart container kube-proxy\n\
             w1:\n\
             \x20 - write under c:/:\n\
             \x20     etc/kubernetes/ssl/kube-node.pem mode 0600 (new)\n\
             local:\n\
             \x20 - write the admin kubeconfig /cluster/kube_config_cluster.yml\n\
             cluster:\n\
             \x20 - save the state in Secret kube-system/full-cluster-state (the rotated certificates)\n\
             \x20 - delete the pods labelled k8s-app=flannel, k8s-app=canal, name=weave-net, app=ingress-nginx, k8s-app=metrics-server, k8s-app=kube-dns, k8s-app=kube-dns-autoscaler, k8s-app=coredns-autoscaler, app=kube-api-auth, app=cattle-cluster-agent, k8s-app=calico-node, k8s-app=calico-kube-controllers in every namespace\n\
             11 actions on 4 hosts\n"
        );
    }

    #[test]
    fn only_found_readers_restart_and_checks_use_the_rotated_certificates() {
        let mut cp = controlplane();
        cp.found = ["etcd".to_string(), plan::KUBELET.to_string()].into();
        let changes = rotate_certs(&[cp], &bundle(), kubeconfig(), false);
        let restarts: Vec<(String, &Action)> = changes
            .stages
            .iter()
            .filter(|s| matches!(s.phase, CertStage::Restart(_)))
            .flat_map(|s| s.hosts.iter().flat_map(|h| &h.actions))
            .map(|a| (a.to_string(), a))
            .collect();
        assert_eq!(restarts.len(), 2, "{restarts:?}");
        let Action::RestartAndCheck {
            name,
            check: Some(check),
            ..
        } = restarts[0].1
        else {
            panic!("etcd restarts behind its check: {restarts:?}");
        };
        assert_eq!(name, plan::ETCD);
        let tls = check.tls.as_ref().expect("etcd's check presents kube-node");
        assert_eq!(tls.ca_pem.as_deref(), Some("kube-ca cert"));
        assert_eq!(tls.client_cert_pem.as_deref(), Some("kube-node cert"));
        assert_eq!(tls.client_key_pem.as_deref(), Some("kube-node key"));
        assert!(restarts[1].0.starts_with("restart container kubelet"));
        // Without --rotate-ca no pods are deleted.
        assert!(
            changes
                .stages
                .iter()
                .all(|s| s.phase != CertStage::SystemPods)
        );
    }

    #[test]
    fn unchanged_hosts_get_no_write_and_no_restart() {
        let mut cp = controlplane();
        cp.desired = cp.loaded.clone();
        let cp = with_found(cp);
        let changes = rotate_certs(&[cp], &bundle(), kubeconfig(), false);
        let planned = changes.planned();
        let hosts: Vec<&str> = planned.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(hosts, [LOCAL, CLUSTER]);
    }
}
