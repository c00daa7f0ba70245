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
