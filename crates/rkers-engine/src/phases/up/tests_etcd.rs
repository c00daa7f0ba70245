//! The etcd steps of `up`'s plan: data directories fixed, members joined as learners and
//! promoted, in the order the run applies them.

use super::host_actions::*;
use super::run::*;
use super::tests::{linux_observed, linux_worker};
use crate::diff::Action;
use crate::plan;

#[test]
fn a_new_etcd_gets_its_data_directory_fixed_first_and_a_running_one_does_not() {
    let mut h = linux_worker();
    h.roles.etcd = true;
    h.prefix_path = "/opt/rke".into();
    h.containers.insert(
        plan::ETCD.into(),
        plan::ContainerSpec {
            image: "rancher/etcd:v3".into(),
            start: true,
            ..Default::default()
        },
    );
    let shown: Vec<String> = host_actions(&h, &linux_observed(&[]), &[], &[])
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(
        shown,
        [
            "pull image rancher/etcd:v3",
            "create /opt/rke/var/lib/etcd and make it private to its owner (etcd-fix-perm)",
            "create and start container etcd (rancher/etcd:v3)",
        ]
    );
    let mut obs = linux_observed(&[]);
    obs.images
        .insert("rancher/etcd:v3".into(), Some(Vec::new()));
    obs.containers.insert(
        plan::ETCD.into(),
        crate::hosts::ObservedContainer {
            image: "rancher/etcd:v3".into(),
            running: true,
            ..Default::default()
        },
    );
    assert!(host_actions(&h, &obs, &[], &[]).is_empty());
}

/// The dry run lists each host's actions in the order `up` applies them: files, calico's
/// directories and images first, etcd membership after them, and on a new cluster the
/// kubelet before etcd (the early worker plane), every other action keeping its place.
#[test]
fn actions_are_listed_in_the_order_the_run_applies_them() {
    let create = |name: &str| Action::CreateContainer {
        name: name.into(),
        image: "img".into(),
        start: true,
        spec: Box::default(),
    };
    let upload = |path: &str| Action::UploadFile {
        path: path.into(),
        reason: "new".into(),
        file: Box::new(crate::phases::files::DesiredFile {
            relative_path: path.into(),
            contents: Vec::new(),
            mode: 0o644,
        }),
    };
    let listed = vec![
        Action::AddEtcdMember {
            member: "etcd-h1".into(),
            peer_url: "https://10.0.0.1:2380".into(),
        },
        upload("/etc/kubernetes/ssl/a.pem"),
        Action::PullImage {
            image: "img".into(),
        },
        upload("/etc/kubernetes/ssl/b.pem"),
        Action::FixEtcdPermissions {
            path: "/var/lib/etcd".into(),
            empty_first: false,
            in_host_shell: false,
        },
        create("etcd"),
        create("service-sidekick"),
        create("kube-apiserver"),
        create("kubelet"),
        create("kube-proxy"),
        Action::RestartContainer {
            name: "etcd".into(),
            reason: "a file it reads changed".into(),
        },
    ];
    let texts = |l: &[Action]| l.iter().map(|a| a.to_string()).collect::<Vec<_>>();

    let mut existing = listed.clone();
    let planes = [ETCD_PLANE, CONTROL_PLANE, WORKER_PLANE];
    in_run_order(&mut existing, false, &planes);
    assert_eq!(
        texts(&existing),
        texts(&[
            upload("/etc/kubernetes/ssl/a.pem"),
            upload("/etc/kubernetes/ssl/b.pem"),
            Action::PullImage {
                image: "img".into()
            },
            listed[0].clone(),
            listed[4].clone(),
            create("etcd"),
            listed[10].clone(),
            create("service-sidekick"),
            create("kube-apiserver"),
            create("kubelet"),
            create("kube-proxy"),
        ])
    );

    let mut new_cluster = listed.clone();
    in_run_order(&mut new_cluster, true, &planes);
    assert_eq!(
        texts(&new_cluster[3..]),
        texts(&[
            create("service-sidekick"),
            create("kubelet"),
            listed[0].clone(),
            listed[4].clone(),
            create("etcd"),
            listed[10].clone(),
            create("kube-apiserver"),
            create("kube-proxy"),
        ])
    );
}

/// A joining member: added as a learner before its etcd is created, promoted right after that
/// etcd (and before the rest of the etcd plane), its logs linked last.
#[test]
fn a_learner_is_promoted_right_after_its_etcd_starts() {
    let create = |name: &str| Action::CreateContainer {
        name: name.into(),
        image: "img".into(),
        start: true,
        spec: Box::default(),
    };
    // As the plan step lists them: membership first, the promotion pushed last.
    let mut list = vec![
        Action::AddEtcdLearner {
            member: "etcd-h2".into(),
            peer_url: "https://10.0.0.2:2380".into(),
            rollback: "undone".into(),
        },
        Action::FixEtcdPermissions {
            path: "/var/lib/etcd".into(),
            empty_first: false,
            in_host_shell: false,
        },
        create("etcd"),
        create("etcd-rolling-snapshots"),
        create("kubelet"),
        Action::PromoteEtcdMember {
            member: "etcd-h2".into(),
            peer_url: "https://10.0.0.2:2380".into(),
        },
        Action::LinkLogs {
            containers: vec!["etcd".into()],
            docker_root: "/var/lib/docker".into(),
        },
    ];
    in_run_order(&mut list, false, &[ETCD_PLANE, WORKER_PLANE]);
    let texts: Vec<String> = list.iter().map(|a| a.to_string()).collect();
    assert_eq!(
        texts,
        [
            "add etcd member etcd-h2 (https://10.0.0.2:2380) as a learner; if it does not join: undone",
            "create /var/lib/etcd and make it private to its owner (etcd-fix-perm)",
            "create and start container etcd (img)",
            "promote etcd learner etcd-h2 to a voting member once it has caught up",
            "create and start container etcd-rolling-snapshots (img)",
            "create and start container kubelet (img)",
            "link the logs of etcd",
        ]
    );
}

/// A joining member's etcd is the join's own container (the members up to it), whatever the
/// diff had for it, on a data directory emptied first: both are actions the dry run lists.
#[test]
fn a_joining_member_creates_the_joins_etcd_on_an_emptied_directory() {
    let mut joining = plan::ContainerSpec {
        image: "etcd:v3.5".into(),
        ..Default::default()
    };
    joining.entrypoint.push(
        "--initial-cluster=etcd-h1=https://10.0.0.1:2380,etcd-h2=https://10.0.0.2:2380".into(),
    );
    let mut list = vec![
        Action::PullImage {
            image: "etcd:v3.5".into(),
        },
        Action::StartContainer {
            name: plan::ETCD.into(),
        },
        Action::FixEtcdPermissions {
            path: "/var/lib/etcd".into(),
            empty_first: false,
            in_host_shell: false,
        },
        Action::CreateContainer {
            name: "kubelet".into(),
            image: "img".into(),
            start: true,
            spec: Box::default(),
        },
    ];
    super::etcd_members::join_with(&mut list, "/", &joining, false);
    let etcd: Vec<&Action> = list
        .iter()
        .filter(|a| {
            matches!(a, Action::FixEtcdPermissions { .. })
                || a.to_string().contains("container etcd")
        })
        .collect();
    assert_eq!(etcd.len(), 2, "{list:#?}");
    assert!(
        matches!(etcd[0], Action::FixEtcdPermissions { empty_first: true, path, .. } if path == "/var/lib/etcd"),
        "{:?}",
        etcd[0]
    );
    match etcd[1] {
        Action::CreateContainer { name, spec, .. } => {
            assert_eq!(name, plan::ETCD);
            assert_eq!(**spec, joining);
        }
        other => panic!("not the join's create: {other:?}"),
    }
    assert!(
        etcd[0]
            .to_string()
            .starts_with("remove the etcd container an earlier run left"),
        "{}",
        etcd[0]
    );
    assert_eq!(list.len(), 4, "the pull and the kubelet stay: {list:#?}");
}
