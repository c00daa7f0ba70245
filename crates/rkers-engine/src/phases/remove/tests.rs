use super::apply::waves;
use crate::diff::Action;

#[test]
fn a_hosts_containers_go_together_then_its_directories_and_log_links() {
    let remove = |name: &str| Action::RemoveContainer {
        name: name.into(),
        reason: "remove the cluster".into(),
    };
    let actions = [
        remove("kubelet"),
        remove("etcd"),
        Action::PullImage {
            image: "alpine".into(),
        },
        Action::CleanDirectories {
            paths: vec!["/etc/cni".into()],
        },
        Action::CleanLogLinks {
            dir: "/var/lib/rancher/rke/log".into(),
            image: "alpine".into(),
        },
        Action::DeleteLocalFile { path: "a".into() },
        Action::DeleteLocalFile { path: "b".into() },
    ];
    let sizes: Vec<usize> = waves(&actions).iter().map(|w| w.len()).collect();
    // Actions of no wave run alone, each after the one before.
    assert_eq!(sizes, [3, 2, 1, 1]);
}

#[test]
fn the_pods_containers_go_together_after_the_rke_containers() {
    use rkers_core::diff::removal::{CleanerImages, FoundHost, HostKind, Roles, host_teardown};
    let host = FoundHost {
        address: "h1".into(),
        kind: HostKind::Linux {
            roles: Roles::of(&["worker".into()]),
            prefix: "/".into(),
        },
        containers: vec!["kubelet".into(), "kube-proxy".into()],
        pod_containers: vec!["k8s_POD_a".into(), "k8s_a".into(), "k8s_POD_b".into()],
        directories: vec!["/etc/cni".into()],
        has_cleaner_image: false,
        shell_is_root: true,
    };
    let images = CleanerImages {
        linux: "alpine".into(),
        windows: "sidekick".into(),
    };
    let actions = host_teardown(&host, &images);
    let sizes: Vec<usize> = waves(&actions).iter().map(|w| w.len()).collect();
    assert_eq!(sizes, [2, 3, 1]);
}
