use super::*;
use crate::config::Node;

fn roles(etcd: bool, controlplane: bool, worker: bool) -> Roles {
    Roles {
        etcd,
        controlplane,
        worker,
    }
}

fn images() -> CleanerImages {
    CleanerImages {
        linux: "alpine".into(),
        windows: "sidekick".into(),
    }
}

fn linux(address: &str, containers: &[&str], directories: &[&str], image: bool) -> FoundHost {
    FoundHost {
        address: address.into(),
        kind: HostKind::Linux {
            roles: roles(true, true, true),
            prefix: "/".into(),
        },
        containers: containers.iter().map(|c| c.to_string()).collect(),
        pod_containers: Vec::new(),
        directories: directories.iter().map(|d| d.to_string()).collect(),
        has_cleaner_image: image,
        shell_is_root: false,
    }
}

fn shown(actions: &[Action]) -> Vec<String> {
    actions.iter().map(|a| a.to_string()).collect()
}

#[test]
fn every_host_gets_rke1s_directory_list_with_its_prefix() {
    assert_eq!(
        directories_to_clean("/", false),
        [
            "/etc/kubernetes",
            "/etc/cni",
            "/opt/cni",
            "/var/run/calico",
            "/etc/kubernetes/.tmp",
            "/var/lib/cni",
            "/var/lib/cri-dockerd",
            "/var/lib/etcd"
        ]
    );
    let external = directories_to_clean("/opt/rke", true);
    assert_eq!(
        external,
        [
            "/opt/rke/etc/kubernetes",
            "/etc/cni",
            "/opt/cni",
            "/var/run/calico",
            "/opt/rke/etc/kubernetes/.tmp",
            "/opt/rke/var/lib/cni",
            "/opt/rke/var/lib/cri-dockerd"
        ]
    );
    // Never user data: kubelet's and rancher's directories are not in the list (§24.1).
    for d in &external {
        assert!(!d.contains("/var/lib/kubelet") && !d.contains("/var/lib/rancher"));
    }
}

#[test]
fn containers_follow_the_roles_in_rke1s_plane_order() {
    assert_eq!(
        containers_to_remove(roles(false, false, true), false),
        ["kubelet", "kube-proxy", "nginx-proxy", "service-sidekick"]
    );
    assert_eq!(
        containers_to_remove(roles(false, true, false), false),
        [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kubelet",
            "kube-proxy",
            "service-sidekick"
        ]
    );
    let all = containers_to_remove(roles(true, true, true), false);
    assert_eq!(
        all,
        [
            "kubelet",
            "kube-proxy",
            "nginx-proxy",
            "service-sidekick",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "etcd",
            "etcd-rolling-snapshots"
        ]
    );
    // External etcd: the etcd plane is not RKE's to remove.
    assert_eq!(
        containers_to_remove(roles(true, false, false), true),
        Vec::<&str>::new()
    );
}

#[test]
fn roles_come_from_the_node_entry_and_a_repeated_address_is_one_host() {
    let r = Roles::of(&["worker".into(), "etcd".into()]);
    assert_eq!(r, roles(true, false, true));
    let node = |address: &str, role: &str| Node {
        address: address.into(),
        role: vec![role.into()],
        ..Default::default()
    };
    let config = RkeConfig {
        nodes: vec![node("b", "etcd"), node("a", "worker"), node("b", "worker")],
        ..Default::default()
    };
    assert_eq!(
        hosts_to_clean(&config),
        [
            ("b".to_string(), roles(true, false, true)),
            ("a".to_string(), roles(false, false, true))
        ]
    );
}

#[test]
fn a_linux_host_is_searched_for_its_containers_with_their_old_copies_and_the_log_dir() {
    let kind = HostKind::Linux {
        roles: roles(false, false, true),
        prefix: "/opt/rke".into(),
    };
    assert_eq!(
        containers_to_find(&kind, false)[..4],
        ["kubelet", "old-kubelet", "kube-proxy", "old-kube-proxy"]
    );
    let dirs = directories_to_find(&kind, true);
    assert_eq!(
        dirs.first().map(String::as_str),
        Some("/opt/rke/etc/kubernetes")
    );
    assert_eq!(dirs.last().map(String::as_str), Some(RKE_LOG_DIR));
    assert!(directories_to_find(&HostKind::Windows, false).is_empty());
}

#[test]
fn the_cleaner_image_is_pulled_only_when_missing_and_only_for_something_to_clean() {
    let host = linux("h1", &["kubelet"], &["/etc/kubernetes", RKE_LOG_DIR], false);
    assert_eq!(
        shown(&host_teardown(&host, &images())),
        [
            "remove container kubelet (remove the cluster)",
            "pull image alpine",
            "clean /etc/kubernetes",
            "remove the dangling log links under /var/lib/rancher/rke/log (alpine)"
        ]
    );
    let has_image = linux("h1", &[], &["/etc/cni"], true);
    assert_eq!(
        shown(&host_teardown(&has_image, &images())),
        ["clean /etc/cni"]
    );
    // Nothing on the host: nothing to do, no image pulled.
    assert!(host_teardown(&linux("h1", &[], &[], false), &images()).is_empty());
    // Only log links: the image still comes, for the log cleaner.
    assert_eq!(
        host_teardown(&linux("h1", &[], &[RKE_LOG_DIR], false), &images()).len(),
        2
    );
}

#[test]
fn a_host_whose_ssh_user_is_root_is_cleaned_by_its_shell_with_no_image() {
    let as_root = |directories: &[&str]| FoundHost {
        shell_is_root: true,
        ..linux("h1", &["kubelet"], directories, false)
    };
    assert_eq!(
        shown(&host_teardown(
            &as_root(&["/etc/kubernetes", "/var/lib/etcd", RKE_LOG_DIR]),
            &images()
        )),
        [
            "remove container kubelet (remove the cluster)",
            "clean /etc/kubernetes, /var/lib/etcd and remove the dangling log links under \
             /var/lib/rancher/rke/log (as root, in the host's shell)"
        ]
    );
    assert_eq!(
        shown(&host_teardown(&as_root(&["/etc/cni"]), &images())),
        [
            "remove container kubelet (remove the cluster)",
            "clean /etc/cni (as root, in the host's shell)"
        ]
    );
    assert_eq!(
        host_teardown(&as_root(&[RKE_LOG_DIR]), &images())[1],
        Action::CleanAsRoot {
            paths: Vec::new(),
            log_dir: Some(RKE_LOG_DIR.into())
        }
    );
    assert_eq!(host_teardown(&as_root(&[]), &images()).len(), 1);
}

#[test]
fn a_windows_worker_is_torn_down_through_wins_in_the_sidekick_image() {
    let host = FoundHost {
        address: "w1".into(),
        kind: HostKind::Windows,
        containers: vec!["kubelet".into()],
        pod_containers: Vec::new(),
        directories: Vec::new(),
        has_cleaner_image: false,
        shell_is_root: true,
    };
    let actions = host_teardown(&host, &images());
    assert_eq!(actions.len(), 2);
    match &actions[1] {
        Action::CleanWindowsHost {
            unregister_wins,
            image,
            ..
        } => assert!(*unregister_wins && image == "sidekick"),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn local_files_go_last_and_only_when_every_host_was_reached() {
    let hosts = [
        linux("h1", &["etcd"], &[], true),
        linux("h2", &[], &[], true),
    ];
    let files = [
        "kube_config_cluster.yml".to_string(),
        "cluster.rkestate".to_string(),
    ];
    let all = remove_cluster(&hosts, &images(), true, &files);
    let stages: Vec<String> = all.stages.iter().map(|s| s.phase.to_string()).collect();
    assert_eq!(stages, ["remove", "remove local files"]);
    assert_eq!(all.stages[0].pace, Pace::Parallel);
    // A host with nothing to remove is not in the stage.
    assert_eq!(all.stages[0].hosts.len(), 1);
    assert_eq!(all.stages[1].pace, Pace::OneAtATime);
    assert_eq!(
        shown(&all.stages[1].hosts[0].actions),
        ["delete kube_config_cluster.yml", "delete cluster.rkestate"]
    );
    let some = remove_cluster(&hosts, &images(), false, &files);
    assert_eq!(some.stages.len(), 1);
    assert_eq!(some.stages[0].phase, RemovalStage::Hosts);
}

#[test]
fn pods_containers_go_after_the_rke_containers_and_before_the_files() {
    let host = FoundHost {
        pod_containers: vec![
            "k8s_POD_web-1_default_u_0".into(),
            "k8s_web_web-1_default_u_0".into(),
        ],
        shell_is_root: true,
        ..linux("h1", &["kubelet", "kube-proxy"], &["/etc/cni"], false)
    };
    let actions = host_teardown(&host, &images());
    assert_eq!(
        shown(&actions),
        [
            "remove container kubelet (remove the cluster)",
            "remove container kube-proxy (remove the cluster)",
            "remove container k8s_POD_web-1_default_u_0 (remove the cluster: a pod's container, left by the removed kubelet)",
            "remove container k8s_web_web-1_default_u_0 (remove the cluster: a pod's container, left by the removed kubelet)",
            "clean /etc/cni (as root, in the host's shell)"
        ]
    );
    let pods: Vec<bool> = actions.iter().map(is_pod_container_removal).collect();
    assert_eq!(pods, [false, false, true, true, false]);
}
