//! Which certificates each node receives (§11.1 "which nodes receive which certs", §12).

use std::collections::BTreeSet;

use super::names::*;
use super::{Bundle, CertificatePki, PkiHost, PkiSpec};

/// Names of the certificates a host needs, by role (union over its roles): only what its own
/// containers read.
///
/// RKE1 gives every node every node's kubelet serving pair and every etcd node every member's
/// pair (§11.1), so one compromised worker could impersonate every kubelet. rkers deploys a
/// host's own pairs only. Nothing on a host reads another host's pair: etcd verifies its peers
/// through `kube-ca`, kube-apiserver verifies kubelets through `kube-ca`, and the rke-tools
/// helpers RKE1 runs on a node (`etcd-rolling-snapshots`, `etcd-snapshot-once`, the restore
/// and its `serve`/download pair, §26) use that node's `kube-node` or own `kube-etcd-<node>`
/// pair. rkers' state recovery from the hosts reads every host and takes each pair from the
/// host that holds it (the root package's `phases::recover_state`).
pub fn cert_names_for_host(spec: &PkiSpec, host: &PkiHost) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = [CA_CERT_NAME, KUBE_PROXY_CERT_NAME, KUBE_NODE_CERT_NAME]
        .into_iter()
        .map(str::to_string)
        .collect();
    if spec.kubelet_serving_certs {
        names.insert(crt_name_for_host(host, KUBELET_CERT_PREFIX));
    }
    if host.roles.etcd {
        names.insert(crt_name_for_host(host, ETCD_CERT_PREFIX));
    }
    if host.roles.controlplane {
        // Every control plane pair is read by a control plane container, with one exception
        // kept on purpose: the request-header CA's key, which nothing on the host reads. The
        // controlplane hosts' copies are its only copies outside the state file, and
        // `util get-state-file` rebuilds a lost state from them; without the key it would have
        // to issue a new request-header CA and restart kube-apiserver. (`kube-ca-key.pem` is
        // read: kube-controller-manager signs with it.)
        names.extend(
            [
                KUBE_API_CERT_NAME,
                SERVICE_ACCOUNT_TOKEN_KEY_NAME,
                KUBE_CONTROLLER_CERT_NAME,
                KUBE_SCHEDULER_CERT_NAME,
                ETCD_CLIENT_CERT_NAME,
                ETCD_CLIENT_CA_CERT_NAME,
                REQUEST_HEADER_CA_CERT_NAME,
                API_PROXY_CLIENT_CERT_NAME,
            ]
            .into_iter()
            .map(str::to_string),
        );
    }
    names
}

/// The entries to deploy on `host`, sorted by name. Names missing from the bundle (e.g. the
/// external etcd pair when etcd is not external) are skipped. Hosts without the controlplane
/// role get `kube-ca` without its private key.
pub fn certs_for_host(bundle: &Bundle, spec: &PkiSpec, host: &PkiHost) -> Vec<CertificatePki> {
    cert_names_for_host(spec, host)
        .into_iter()
        .filter_map(|name| bundle.get(&name).cloned())
        .map(|mut entry| {
            if entry.name == CA_CERT_NAME && !host.roles.controlplane {
                entry.key_pem.clear();
                entry.key_env_name.clear();
                entry.key_path.clear();
            }
            entry
        })
        .collect()
}

impl CertificatePki {
    /// The cert-deployer environment of this entry (§12): `<ENV>_KEY=<key>`, `<ENV>=<cert>`,
    /// `KUBECFG_<ENV>=<kubeconfig>`, each only when present.
    pub fn deploy_env(&self) -> Vec<(String, String)> {
        let mut env = Vec::with_capacity(3);
        if self.has_key() && !self.key_env_name.is_empty() {
            env.push((self.key_env_name.clone(), self.key_pem.clone()));
        }
        if self.has_certificate() {
            env.push((self.env_name.clone(), self.certificate_pem.clone()));
        }
        if !self.config.is_empty() && !self.config_env_name.is_empty() {
            env.push((self.config_env_name.clone(), self.config.clone()));
        }
        env
    }
}
