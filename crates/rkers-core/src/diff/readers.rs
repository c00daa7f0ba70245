//! Which containers read which file of a host's `/etc/kubernetes` (§22.2 step 6), so a changed
//! certificate or kubeconfig restarts exactly its readers: `up` and `cert rotate` decide their
//! restarts with it.

use crate::files::DesiredFile;
use crate::plan;
use std::collections::{BTreeMap, BTreeSet};

/// The containers that read a certificate file under /etc/kubernetes, as RKE1 restarts them
/// when a certificate changes (§22.2 step 6); kubeconfigs count as their component's files.
pub fn readers_of(relative_path: &str) -> Vec<&'static str> {
    let file = relative_path.trim_start_matches("ssl/");
    let name = file
        .trim_start_matches("kubecfg-")
        .trim_end_matches(".yaml")
        .trim_end_matches(".pem")
        .trim_end_matches("-key");
    match name {
        // etcd trusts it for peers and clients; every kubeconfig names it.
        "kube-ca" => vec![
            plan::ETCD,
            plan::KUBE_APISERVER,
            plan::KUBE_CONTROLLER_MANAGER,
            plan::KUBE_SCHEDULER,
            plan::KUBELET,
            plan::KUBE_PROXY,
        ],
        "kube-apiserver" | "kube-service-account-token" => {
            vec![plan::KUBE_APISERVER, plan::KUBE_CONTROLLER_MANAGER]
        }
        "kube-apiserver-requestheader-ca" | "kube-apiserver-proxy-client" => {
            vec![plan::KUBE_APISERVER]
        }
        "kube-controller-manager" => vec![plan::KUBE_CONTROLLER_MANAGER],
        // The provider file has no checksum variable: a new text restarts the apiserver (§23).
        "encryption" => vec![plan::KUBE_APISERVER],
        "kube-scheduler" => vec![plan::KUBE_SCHEDULER],
        "kube-proxy" => vec![plan::KUBE_PROXY],
        // kube-apiserver also uses kube-node as its etcd client certificate, but etcd's client
        // transport reads the file again on every handshake: no restart needed for it.
        "kube-node" => vec![plan::KUBELET],
        "kube-etcd-client" | "kube-etcd-client-ca" => vec![plan::KUBE_APISERVER],
        // Serving certificates (`generate_serving_certificate`): every node holds every node's,
        // only its own is read, but a rotation renews them all together with kube-node anyway.
        n if n.starts_with("kube-kubelet-") => vec![plan::KUBELET],
        n if n.starts_with("kube-etcd-") => vec![plan::ETCD],
        _ => Vec::new(),
    }
}

/// The containers to restart on one host after its certificates change: the readers of every
/// file whose new contents differ from what the running containers loaded. `loaded` is what the
/// containers were last started with (the files the current state describes), `on_disk` what
/// the host holds now; a file differing from either counts, so a run interrupted after writing
/// files but before restarting still restarts their readers next time.
pub fn containers_to_restart(
    desired: &[DesiredFile],
    loaded: &[DesiredFile],
    on_disk: &BTreeMap<String, Vec<u8>>,
) -> BTreeSet<&'static str> {
    restart_reasons_under("", desired, loaded, on_disk)
        .into_keys()
        .collect()
}

/// [`containers_to_restart`] for files kept relative to another directory than
/// `/etc/kubernetes`: only the files under `kubernetes_dir` (relative to that directory, as
/// a Windows worker keeps `etc/kubernetes/` under its drive root) have readers, named by their
/// path below it.
pub fn containers_to_restart_under(
    kubernetes_dir: &str,
    desired: &[DesiredFile],
    loaded: &[DesiredFile],
    on_disk: &BTreeMap<String, Vec<u8>>,
) -> BTreeSet<&'static str> {
    restart_reasons_under(kubernetes_dir, desired, loaded, on_disk)
        .into_keys()
        .collect()
}

/// [`containers_to_restart_under`] with why each restarts, in the operator's terms: the files
/// it reads that changed since it started (the state's copy differs) or that the host holds
/// otherwise, named by their path so a dry run says which file asked for the restart.
pub fn restart_reasons_under(
    kubernetes_dir: &str,
    desired: &[DesiredFile],
    loaded: &[DesiredFile],
    on_disk: &BTreeMap<String, Vec<u8>>,
) -> BTreeMap<&'static str, String> {
    let loaded: BTreeMap<&str, &[u8]> = loaded
        .iter()
        .map(|f| (f.relative_path.as_str(), f.contents.as_slice()))
        .collect();
    // By meaning, not bytes: a file RKE1's deployer wrote with another trailing newline was
    // loaded as it is meant, and restarting its readers would only interrupt them.
    let differs = |f: &DesiredFile, other: &[u8]| {
        !crate::diff::same_file_content(&f.relative_path, &f.contents, other)
    };
    let mut why: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for (f, path) in desired
        .iter()
        .filter_map(|f| Some((f, f.relative_path.strip_prefix(kubernetes_dir)?)))
    {
        let since_start = loaded
            .get(f.relative_path.as_str())
            .is_some_and(|c| differs(f, c));
        let on_host = on_disk.get(&f.relative_path).is_some_and(|c| differs(f, c));
        let cause = match (since_start, on_host) {
            (false, false) => continue,
            (true, false) => format!("{path} changed since it started"),
            (false, true) => format!("{path} on the host is not the cluster's"),
            (true, true) => format!("{path} changed since it started, on the host too"),
        };
        for reader in readers_of(path) {
            why.entry(reader).or_default().push(cause.clone());
        }
    }
    why.into_iter()
        .map(|(reader, causes)| (reader, causes.join("; ")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, contents: &str) -> DesiredFile {
        DesiredFile {
            relative_path: path.into(),
            contents: contents.as_bytes().to_vec(),
            mode: 0o600,
        }
    }

    #[test]
    fn certificate_files_map_to_the_containers_that_read_them() {
        assert_eq!(
            readers_of("ssl/kube-apiserver.pem"),
            [plan::KUBE_APISERVER, plan::KUBE_CONTROLLER_MANAGER]
        );
        assert_eq!(
            readers_of("ssl/kube-apiserver-key.pem"),
            [plan::KUBE_APISERVER, plan::KUBE_CONTROLLER_MANAGER]
        );
        assert_eq!(readers_of("ssl/kubecfg-kube-node.yaml"), [plan::KUBELET]);
        assert_eq!(readers_of("ssl/kube-etcd-10-77-0-11.pem"), [plan::ETCD]);
        assert_eq!(
            readers_of("ssl/kube-etcd-client-key.pem"),
            [plan::KUBE_APISERVER]
        );
        assert_eq!(
            readers_of("ssl/kube-kubelet-10-77-0-12-key.pem"),
            [plan::KUBELET]
        );
        assert_eq!(
            readers_of("ssl/kube-apiserver-proxy-client-key.pem"),
            [plan::KUBE_APISERVER]
        );
        assert!(
            readers_of("admission.yaml").is_empty(),
            "checksum env vars cover config files"
        );
    }

    #[test]
    fn only_readers_of_changed_certificates_restart() {
        let desired = [
            file("ssl/kube-node.pem", "new"),
            file("ssl/kube-proxy.pem", "same"),
        ];
        let loaded = [
            file("ssl/kube-node.pem", "old"),
            file("ssl/kube-proxy.pem", "same"),
        ];
        let on_disk: BTreeMap<String, Vec<u8>> = [
            ("ssl/kube-node.pem".to_string(), b"old".to_vec()),
            ("ssl/kube-proxy.pem".to_string(), b"same".to_vec()),
        ]
        .into();
        assert_eq!(
            containers_to_restart(&desired, &loaded, &on_disk),
            BTreeSet::from([plan::KUBELET])
        );
    }

    #[test]
    fn files_written_by_an_interrupted_run_still_restart_their_readers() {
        // The files already hold the new certificate, but the state says the containers were
        // started with the old one.
        let desired = [file("ssl/kube-etcd-10-0-0-1.pem", "new")];
        let loaded = [file("ssl/kube-etcd-10-0-0-1.pem", "old")];
        let on_disk: BTreeMap<String, Vec<u8>> =
            [("ssl/kube-etcd-10-0-0-1.pem".to_string(), b"new".to_vec())].into();
        assert_eq!(
            containers_to_restart(&desired, &loaded, &on_disk),
            BTreeSet::from([plan::ETCD])
        );
        // Nothing differs anywhere: nothing restarts.
        assert!(containers_to_restart(&desired, &desired, &on_disk).is_empty());
    }

    #[test]
    fn a_host_that_differs_from_the_state_restarts_too() {
        // State already current (e.g. a host restored from an old backup): the disk decides.
        let desired = [file("ssl/kube-scheduler.pem", "new")];
        let on_disk: BTreeMap<String, Vec<u8>> =
            [("ssl/kube-scheduler.pem".to_string(), b"stale".to_vec())].into();
        assert_eq!(
            containers_to_restart(&desired, &desired, &on_disk),
            BTreeSet::from([plan::KUBE_SCHEDULER])
        );
    }

    #[test]
    fn files_rke1_rewrote_with_other_trailing_newlines_restart_nothing() {
        // rke-tools' cert-deployer adds a newline to the kubeconfig the state keeps without one.
        let kubeconfig = "apiVersion: v1\nkind: Config\ncurrent-context: local";
        let desired = [file("ssl/kubecfg-kube-node.yaml", kubeconfig)];
        let on_disk: BTreeMap<String, Vec<u8>> = [(
            "ssl/kubecfg-kube-node.yaml".to_string(),
            format!("{kubeconfig}\n").into_bytes(),
        )]
        .into();
        assert!(containers_to_restart(&desired, &desired, &on_disk).is_empty());
        let changed: BTreeMap<String, Vec<u8>> = [(
            "ssl/kubecfg-kube-node.yaml".to_string(),
            b"apiVersion: v1\nkind: Config\ncurrent-context: other\n".to_vec(),
        )]
        .into();
        assert_eq!(
            containers_to_restart(&desired, &desired, &changed),
            BTreeSet::from([plan::KUBELET])
        );
    }

    #[test]
    fn files_under_a_windows_root_are_read_by_their_path_below_it() {
        let desired = [
            file("etc/kubernetes/ssl/kube-node.pem", "new"),
            file("etc/kubernetes/ssl/kube-proxy.pem", "same"),
            // Outside etc/kubernetes: no reader, even changed.
            file("etc/cni/net.d/10-flannel.conflist", "new"),
        ];
        let loaded = [
            file("etc/kubernetes/ssl/kube-node.pem", "old"),
            file("etc/kubernetes/ssl/kube-proxy.pem", "same"),
            file("etc/cni/net.d/10-flannel.conflist", "old"),
        ];
        let none = BTreeMap::new();
        assert_eq!(
            containers_to_restart_under("etc/kubernetes/", &desired, &loaded, &none),
            BTreeSet::from([plan::KUBELET])
        );
        assert!(containers_to_restart(&desired, &loaded, &none).is_empty());
    }

    #[test]
    fn each_restart_names_the_files_and_the_side_that_asked_for_it() {
        let desired = [
            file("ssl/kube-scheduler.pem", "new"),
            file("ssl/kubecfg-kube-scheduler.yaml", "same"),
            file("ssl/kube-proxy.pem", "new"),
        ];
        let loaded = [
            file("ssl/kube-scheduler.pem", "old"),
            file("ssl/kubecfg-kube-scheduler.yaml", "same"),
            file("ssl/kube-proxy.pem", "new"),
        ];
        let on_disk: BTreeMap<String, Vec<u8>> = [
            ("ssl/kube-scheduler.pem".to_string(), b"new".to_vec()),
            (
                "ssl/kubecfg-kube-scheduler.yaml".to_string(),
                b"stale".to_vec(),
            ),
            ("ssl/kube-proxy.pem".to_string(), b"stale".to_vec()),
        ]
        .into();
        let reasons = restart_reasons_under("", &desired, &loaded, &on_disk);
        assert_eq!(
            reasons.get(plan::KUBE_SCHEDULER).map(String::as_str),
            Some(
                "ssl/kube-scheduler.pem changed since it started; \
                 ssl/kubecfg-kube-scheduler.yaml on the host is not the cluster's"
            )
        );
        assert_eq!(
            reasons.get(plan::KUBE_PROXY).map(String::as_str),
            Some("ssl/kube-proxy.pem on the host is not the cluster's")
        );
        assert_eq!(reasons.len(), 2, "{reasons:?}");
    }
}
