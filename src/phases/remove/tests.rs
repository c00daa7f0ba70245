use super::*;

fn roles(etcd: bool, controlplane: bool, worker: bool) -> Roles {
    Roles {
        etcd,
        controlplane,
        worker,
    }
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
            "/opt/rke/var/lib/cni"
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
fn roles_come_from_the_node_entry() {
    let r = Roles::of(&["worker".into(), "etcd".into()]);
    assert_eq!(r, roles(true, false, true));
}
