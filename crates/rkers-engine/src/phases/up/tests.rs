use super::host_actions::*;
use super::run::*;
use super::*;
use crate::diff::Action;
use crate::phases::files::{self, DesiredFile};
use crate::pki::{self, Bundle};
use crate::plan::{self, HostPlan};
use std::collections::BTreeMap;

use crate::phases::windows::WindowsObserved;
use crate::plan::Platform;
use crate::plan::WinsStatus;

/// Fault 13 of scripts/faults: a first `up` killed after it started containers is finished
/// by the next `up`, since the hosts hold the CA its state holds; other CAs stay refused.
#[test]
fn a_first_up_stopped_midway_is_finished_but_a_foreign_cluster_is_refused() {
    use super::observe::guard_existing_cluster;
    let mut state = crate::state::StateFile::default();
    state.desired_state.certificates_bundle.insert(
        "kube-ca".into(),
        crate::pki::CertificatePki {
            certificate_pem: "-----BEGIN CERTIFICATE-----\nOURS\n-----END CERTIFICATE-----\n"
                .into(),
            ..Default::default()
        },
    );
    let host = |ca: &str| {
        let mut o = Observed::default();
        o.containers.insert(
            plan::KUBELET.into(),
            crate::hosts::ObservedContainer::default(),
        );
        o.files.insert(
            "ssl/kube-ca.pem".into(),
            format!("-----BEGIN CERTIFICATE-----\n{ca}\n-----END CERTIFICATE-----").into_bytes(),
        );
        o
    };
    let path = std::path::Path::new("cluster.rkestate");
    let ours = BTreeMap::from([("10.0.0.1".to_string(), host("OURS"))]);
    assert!(guard_existing_cluster(Some(&state), &ours, false, path).is_ok());
    let foreign = BTreeMap::from([
        ("10.0.0.1".to_string(), host("OURS")),
        ("10.0.0.2".to_string(), host("THEIRS")),
    ]);
    let Err(err) = guard_existing_cluster(Some(&state), &foreign, false, path) else {
        panic!("a host with another CA is refused");
    };
    assert!(err.to_string().contains("10.0.0.2 (kubelet)"), "{err}");
    assert!(!err.to_string().contains("10.0.0.1"), "{err}");
    assert!(guard_existing_cluster(None, &ours, false, path).is_err());
}

pub(super) fn windows_worker() -> HostPlan {
    let sidekick = plan::ContainerSpec {
        name: plan::SERVICE_SIDEKICK.into(),
        image: "rancher/rke-tools:v0.1.89-windows".into(),
        start: true,
        ..Default::default()
    };
    HostPlan {
        address: "10.0.0.9".into(),
        internal_address: "10.0.0.9".into(),
        hostname: "win1".into(),
        roles: plan::Roles {
            worker: true,
            ..Default::default()
        },
        prefix_path: "c:/".into(),
        containers: [(plan::SERVICE_SIDEKICK.to_string(), sidekick)]
            .into_iter()
            .collect(),
        files: Vec::new(),
        certificate_names: Vec::new(),
        port_checks: Vec::new(),
    }
}

pub(super) fn file(rel: &str, contents: &str) -> DesiredFile {
    DesiredFile {
        relative_path: rel.into(),
        contents: contents.as_bytes().to_vec(),
        mode: 0o600,
    }
}

pub(super) fn running_wins() -> WinsStatus {
    WinsStatus {
        exe_present: true,
        service: "running".into(),
        pipe: true,
    }
}

pub(super) fn observed(files: &[DesiredFile], missing: &[&str], wins: WinsStatus) -> Observed {
    let on_disk: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|f| (f.relative_path.clone(), f.contents.clone()))
        .collect();
    Observed {
        platform: Platform::Windows,
        files: on_disk.clone(),
        windows: Some(WindowsObserved {
            files: on_disk,
            missing_directories: missing.iter().map(|d| d.to_string()).collect(),
            wins,
        }),
        ..Default::default()
    }
}

pub(super) fn desired() -> Vec<DesiredFile> {
    vec![
        file("etc/kubernetes/ssl/kube-node.pem", "cert"),
        file("etc/rancher/wins/config", "white_list: {}\n"),
    ]
}

pub(super) fn linux_worker() -> HostPlan {
    HostPlan {
        address: "10.0.0.2".into(),
        internal_address: "10.0.0.2".into(),
        hostname: "w2".into(),
        roles: plan::Roles {
            worker: true,
            ..Default::default()
        },
        prefix_path: "/".into(),
        containers: Default::default(),
        files: Vec::new(),
        certificate_names: Vec::new(),
        port_checks: Vec::new(),
    }
}

pub(super) fn linux_observed(files: &[(&str, &str, u32)]) -> Observed {
    Observed {
        files: files
            .iter()
            .map(|(p, c, _)| (p.to_string(), c.as_bytes().to_vec()))
            .collect(),
        file_meta: files
            .iter()
            .map(|(p, _, mode)| {
                let meta = files::FileMeta {
                    mode: *mode,
                    uid: 0,
                    gid: 0,
                };
                (p.to_string(), meta)
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
pub(super) fn keys_a_host_does_not_read_are_removed_and_key_modes_fixed_without_restarts() {
    let h = linux_worker();
    let desired = vec![
        file("ssl/kube-node.pem", "cert"),
        file("ssl/kube-node-key.pem", "key"),
    ];
    let obs = linux_observed(&[
        ("ssl/kube-node.pem", "cert", 0o644),
        ("ssl/kube-node-key.pem", "key", 0o644),
        // RKE1's full set: another node's kubelet serving pair and an etcd member's key.
        ("ssl/kube-kubelet-10-0-0-3.pem", "cert", 0o644),
        ("ssl/kube-kubelet-10-0-0-3-key.pem", "key", 0o644),
        ("ssl/kube-etcd-10-0-0-1-key.pem", "key", 0o600),
    ]);
    let shown: Vec<String> = host_actions(&h, &obs, &desired, &desired)
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(
        shown,
        [
            "remove /etc/kubernetes/ssl/kube-etcd-10-0-0-1-key.pem (private key no container \
             on this host reads)",
            "remove /etc/kubernetes/ssl/kube-kubelet-10-0-0-3-key.pem (private key no \
             container on this host reads)",
            "set /etc/kubernetes/ssl/kube-node-key.pem to mode 0600 owner 0:0 (was 0644 0:0)",
        ]
    );
}

#[test]
pub(super) fn a_key_some_container_flag_names_stays() {
    let mut h = linux_worker();
    h.containers.insert(
        plan::KUBELET.into(),
        plan::ContainerSpec {
            entrypoint: vec!["--tls-private-key-file=/etc/kubernetes/ssl/my-kube-x-key.pem".into()],
            ..Default::default()
        },
    );
    let obs = linux_observed(&[("ssl/kube-x-key.pem", "key", 0o600)]);
    let mut h2 = h.clone();
    h2.containers.get_mut(plan::KUBELET).unwrap().entrypoint =
        vec!["--tls-private-key-file=/etc/kubernetes/ssl/kube-x-key.pem".into()];
    let removes = |h: &HostPlan| {
        host_actions(h, &obs, &[], &[])
            .iter()
            .filter(|a| matches!(a, Action::RemoveFile { .. }))
            .count()
    };
    assert_eq!(removes(&h), 1);
    assert_eq!(removes(&h2), 0);
}

#[test]
pub(super) fn an_uploaded_key_for_a_custom_etcd_user_is_chowned_after_the_upload() {
    let mut h = linux_worker();
    h.roles.etcd = true;
    h.containers.insert(
        plan::ETCD.into(),
        plan::ContainerSpec {
            user: Some("1001:1001".into()),
            ..Default::default()
        },
    );
    let desired = vec![file("ssl/kube-etcd-10-0-0-2-key.pem", "key")];
    let shown: Vec<String> = host_actions(&h, &linux_observed(&[]), &desired, &[])
        .iter()
        .filter(|a| {
            !matches!(
                a,
                Action::CreateContainer { .. }
                    | Action::PullImage { .. }
                    | Action::FixEtcdPermissions { .. }
            )
        })
        .map(|a| a.to_string())
        .collect();
    assert_eq!(
        shown,
        [
            "upload /etc/kubernetes/ssl/kube-etcd-10-0-0-2-key.pem (new)",
            "set /etc/kubernetes/ssl/kube-etcd-10-0-0-2-key.pem to mode 0600 owner \
             1001:1001 (was 0600 0:0)",
        ]
    );
}

#[test]
pub(super) fn a_fresh_windows_worker_gets_directories_files_and_wins() {
    let h = windows_worker();
    let obs = observed(
        &[],
        &["c:/etc/kubernetes/ssl", "c:/run"],
        WinsStatus::default(),
    );
    let actions = host_actions(&h, &obs, &desired(), &[]);
    let shown: Vec<String> = actions.iter().map(|a| a.to_string()).collect();
    assert_eq!(
        shown[..6],
        [
            "create directories c:/etc/kubernetes/ssl, c:/run",
            "upload c:/etc/kubernetes/ssl/kube-node.pem (new)",
            "upload c:/etc/rancher/wins/config (new)",
            // wins comes out of the sidekick's image, pulled first.
            "pull image rancher/rke-tools:v0.1.89-windows",
            "install wins at c:/etc/rancher/wins/wins.exe (copied from rancher/rke-tools:v0.1.89-windows)",
            "register and start the rancher-wins service (not registered yet)",
        ],
        "{shown:#?}"
    );
}

#[test]
pub(super) fn a_windows_worker_in_its_planned_state_needs_no_host_step() {
    let h = windows_worker();
    let obs = observed(&desired(), &[], running_wins());
    let actions = host_actions(&h, &obs, &desired(), &desired());
    assert!(
        !actions.iter().any(|a| matches!(
            a,
            Action::CreateDirectories { .. }
                | Action::UploadFile { .. }
                | Action::InstallWins { .. }
                | Action::StartWins { .. }
        )),
        "{actions:?}"
    );
}

/// The orphan sweep comes after wins and before the first container wins starts, and only
/// when the worker plane changes.
#[test]
pub(super) fn a_windows_worker_sweeps_orphans_before_its_worker_plane_changes() {
    let h = windows_worker();
    let obs = observed(&desired(), &[], running_wins());
    let mut actions = host_actions(&h, &obs, &desired(), &desired());
    in_run_order(&mut actions, false, &[WORKER_PLANE]);
    let shown: Vec<String> = actions.iter().map(|a| a.to_string()).collect();
    assert_eq!(
        shown[shown.len() - 2..],
        [
            "through wins: stop the rancher-wins-* processes that outlived their wins server \
             (rancher/rke-tools:v0.1.89-windows)",
            "create and start container service-sidekick (rancher/rke-tools:v0.1.89-windows)",
        ],
        "{shown:#?}"
    );
    // Its sidekick runs as planned: nothing for wins to start, nothing to sweep.
    let mut obs = observed(&desired(), &[], running_wins());
    let sidekick = &h.containers[plan::SERVICE_SIDEKICK];
    obs.containers.insert(
        plan::SERVICE_SIDEKICK.into(),
        crate::hosts::ObservedContainer {
            running: true,
            image: sidekick.image.clone(),
            ..Default::default()
        },
    );
    obs.images.insert(sidekick.image.clone(), Some(Vec::new()));
    let actions = host_actions(&h, &obs, &desired(), &desired());
    assert_eq!(actions, [], "{actions:?}");
}

#[test]
pub(super) fn wins_restarts_only_for_a_config_change_and_starts_when_stopped() {
    let h = windows_worker();
    let mut old = desired();
    old[1].contents = b"white_list: {old}\n".to_vec();
    let obs = observed(&old, &[], running_wins());
    let actions = wins_actions(&h, obs.windows.as_ref().unwrap(), &desired(), &obs.files);
    assert_eq!(
        actions,
        [Action::StartWins {
            register: false,
            restart: true,
            reason: "its config changes".into(),
            containers: h.containers.keys().cloned().collect(),
            replaced: Vec::new(),
            sweep_image: h.containers[plan::SERVICE_SIDEKICK].image.clone(),
        }]
    );
    // A changed certificate alone does not touch wins.
    let mut old = desired();
    old[0].contents = b"old cert".to_vec();
    let obs = observed(&old, &[], running_wins());
    assert!(wins_actions(&h, obs.windows.as_ref().unwrap(), &desired(), &obs.files).is_empty());

    let stopped = WinsStatus {
        service: "stopped".into(),
        pipe: false,
        ..running_wins()
    };
    let obs = observed(&desired(), &[], stopped);
    assert_eq!(
        wins_actions(&h, obs.windows.as_ref().unwrap(), &desired(), &obs.files),
        [Action::StartWins {
            register: false,
            restart: false,
            reason: "it is stopped".into(),
            containers: h.containers.keys().cloned().collect(),
            replaced: Vec::new(),
            sweep_image: h.containers[plan::SERVICE_SIDEKICK].image.clone(),
        }]
    );
}

#[test]
pub(super) fn windows_files_are_kept_from_the_drive_root_and_linux_files_under_etc_kubernetes() {
    let mut h = windows_worker();
    h.files.push(plan::FileSpec {
        path: "c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml".into(),
        container_path: "c:/etc/kubernetes/ssl/kubecfg-kube-node.yaml".into(),
        contents: "windows kubeconfig".into(),
        mode: 0o600,
        checksum_env: None,
        remove_when_empty: true,
    });
    h.files.push(plan::FileSpec {
        path: "c:/etc/rancher/wins/config".into(),
        container_path: "c:/etc/rancher/wins/config".into(),
        contents: "wins".into(),
        mode: 0o600,
        checksum_env: None,
        remove_when_empty: true,
    });
    let files = host_files(
        &h,
        &Bundle::default(),
        &pki::PkiSpec::default(),
        Platform::Windows,
    );
    let rels: Vec<&str> = files.iter().map(|f| f.relative_path.as_str()).collect();
    assert_eq!(
        rels,
        [
            "etc/kubernetes/ssl/kubecfg-kube-node.yaml",
            "etc/rancher/wins/config"
        ]
    );
    assert_eq!(Platform::Windows.files_root(&h), "c:/");
    // Restart rules and expiry read the Linux-relative view.
    let view: Vec<&str> = files
        .iter()
        .filter_map(|f| Platform::Windows.kubernetes_path(&f.relative_path))
        .collect();
    assert_eq!(view, ["ssl/kubecfg-kube-node.yaml"]);
    // The same plan read as Linux keeps nothing outside /etc/kubernetes.
    assert!(
        host_files(
            &h,
            &Bundle::default(),
            &pki::PkiSpec::default(),
            Platform::Linux
        )
        .is_empty()
    );
}
