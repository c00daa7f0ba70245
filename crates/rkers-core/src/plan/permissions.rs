//! Which files under `/etc/kubernetes` are private keys, and the mode and owner each must have
//! on a host (issue 21: least privilege).
//!
//! Every private key is `0600 root:root`. Where `services.etcd.uid`/`gid` run etcd as another
//! user, the files etcd reads are that user's, as RKE1's cert-deployer chowns them (§12):
//! `kube-etcd-*` certificates and keys stay `0600` but belong to the etcd user, and `kube-ca.pem`
//! is `0644` so etcd can read it. Public certificates are otherwise left as they are.

/// Mode and owner a file must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permissions {
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
}

/// Whether a file (by its path relative to `/etc/kubernetes`) is a private key RKE deploys.
pub fn is_private_key(relative_path: &str) -> bool {
    relative_path
        .strip_prefix("ssl/")
        .is_some_and(|name| name.starts_with("kube-") && name.ends_with("-key.pem"))
}

/// The etcd container's user (`uid:gid`), when it does not run as root.
pub fn etcd_user(etcd_container_user: Option<&str>) -> Option<(u64, u64)> {
    let (uid, gid) = etcd_container_user?.split_once(':')?;
    let (uid, gid) = (uid.parse().ok()?, gid.parse().ok()?);
    (uid != 0 || gid != 0).then_some((uid, gid))
}

/// The permissions a file must have, or `None` when rkers leaves its mode to the writer.
pub fn required(relative_path: &str, etcd_user: Option<(u64, u64)>) -> Option<Permissions> {
    let etcd_file = relative_path
        .strip_prefix("ssl/kube-etcd-")
        .is_some_and(|rest| !rest.starts_with("client"));
    match etcd_user {
        Some((uid, gid)) if etcd_file => Some(Permissions {
            mode: 0o600,
            uid,
            gid,
        }),
        Some(_) if relative_path == "ssl/kube-ca.pem" => Some(Permissions {
            mode: 0o644,
            uid: 0,
            gid: 0,
        }),
        _ if is_private_key(relative_path) => Some(Permissions {
            mode: 0o600,
            uid: 0,
            gid: 0,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_keys_are_root_only() {
        for key in [
            "ssl/kube-node-key.pem",
            "ssl/kube-ca-key.pem",
            "ssl/kube-service-account-token-key.pem",
            "ssl/kube-kubelet-10-0-0-1-key.pem",
        ] {
            assert!(is_private_key(key), "{key}");
            assert_eq!(
                required(key, None),
                Some(Permissions {
                    mode: 0o600,
                    uid: 0,
                    gid: 0
                })
            );
        }
        assert!(!is_private_key("ssl/kube-node.pem"));
        assert!(!is_private_key("ssl/kubecfg-kube-node.yaml"));
        assert_eq!(required("ssl/kube-node.pem", None), None);
    }

    #[test]
    fn a_custom_etcd_user_owns_what_etcd_reads() {
        let user = etcd_user(Some("1001:1002"));
        assert_eq!(user, Some((1001, 1002)));
        assert_eq!(
            required("ssl/kube-etcd-10-0-0-1-key.pem", user),
            Some(Permissions {
                mode: 0o600,
                uid: 1001,
                gid: 1002
            })
        );
        assert_eq!(
            required("ssl/kube-etcd-10-0-0-1.pem", user).unwrap().uid,
            1001
        );
        assert_eq!(required("ssl/kube-ca.pem", user).unwrap().mode, 0o644);
        // The external etcd client pair is kube-apiserver's, not etcd's.
        assert_eq!(
            required("ssl/kube-etcd-client-key.pem", user).unwrap().uid,
            0
        );
        assert_eq!(etcd_user(None), None);
        assert_eq!(etcd_user(Some("0:0")), None);
    }
}
