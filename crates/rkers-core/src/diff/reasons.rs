//! Why a change is needed when it comes from a default that newer RKE releases changed rather
//! than from cluster.yml (adoption-facts.md). A cluster an older RKE1 release built differs from
//! what rkers plans (newer RKE releases' defaults) in these known ways; the dry run and the
//! adoption summary name them, so an operator can tell a change the config asks for from one a
//! newer default asks for.
//!
//! A field change is explained only when every value it adds or removes is one of these;
//! anything else is left unexplained, which means it follows from cluster.yml and the version.

use super::FieldChange;

const ADMISSION: &str = "default of newer RKE releases: kube-apiserver reads an admission \
                         configuration file (/etc/kubernetes/admission.yaml)";
const AUDIT_BIND: &str = "default of newer RKE releases: the audit log bind has no SELinux \
                          relabel suffix (:z)";
const AUDIT_POLICY: &str = "default of newer RKE releases: the default audit policy";
const CHECKSUM_SHA256: &str = "default of newer RKE releases (v1.8.5 and later): configuration \
                               checksums are SHA-256 from Kubernetes v1.31.6, MD5 before";
const BR_NETFILTER: &str = "default of newer RKE releases (v1.8.0 and later): \
                            network.enable_br_netfilter is true unless cluster.yml sets it";

const CHECKSUM_ENVS: [&str; 3] = [
    "RKE_ADMISSION_CONFIG_CHECKSUM=",
    "RKE_AUDITLOG_CONFIG_CHECKSUM=",
    "RKE_CLOUD_CONFIG_CHECKSUM=",
];

/// Every value is a configuration checksum, and each one the container loses comes back in the
/// other hash's length (MD5's 32 hex digits, SHA-256's 64): only the algorithm changed, as far
/// as the values tell.
fn only_the_checksum_algorithm_changed(change: &FieldChange) -> bool {
    let split = |v: &String| {
        CHECKSUM_ENVS
            .iter()
            .find(|p| v.starts_with(*p))
            .map(|p| (*p, v.len() - p.len()))
    };
    let added: Vec<_> = change.added.iter().map(split).collect();
    let removed: Vec<_> = change.removed.iter().map(split).collect();
    if added.iter().chain(&removed).any(Option::is_none) || removed.is_empty() {
        return false;
    }
    removed
        .iter()
        .flatten()
        .all(|(name, len)| added.iter().flatten().any(|(n, l)| n == name && l != len))
}

/// The newer-default reason for one field change of `container`, if it is one.
pub fn newer_default_for_change(container: &str, change: &FieldChange) -> Option<&'static str> {
    let values = || change.added.iter().chain(&change.removed);
    let all = |pred: fn(&str) -> bool| values().all(|v| pred(v));
    if change.field == "env" && only_the_checksum_algorithm_changed(change) {
        return Some(CHECKSUM_SHA256);
    }
    if container == crate::plan::KUBE_PROXY {
        return match change.field {
            "env"
                if change.removed.is_empty()
                    && all(|v| v == "RKE_KUBE_PROXY_BR_NETFILTER=true") =>
            {
                Some(BR_NETFILTER)
            }
            _ => None,
        };
    }
    if container != crate::plan::KUBE_APISERVER {
        return None;
    }
    match change.field {
        "entrypoint"
            if all(|v| v == "--admission-control-config-file=/etc/kubernetes/admission.yaml") =>
        {
            Some(ADMISSION)
        }
        "env" if all(|v| v.starts_with("RKE_ADMISSION_CONFIG_CHECKSUM=")) => Some(ADMISSION),
        "env" if all(|v| v.starts_with("RKE_AUDITLOG_CONFIG_CHECKSUM=")) => Some(AUDIT_POLICY),
        "binds"
            if all(|v| {
                v.trim_end_matches(":z")
                    .ends_with("/var/log/kube-audit:/var/log/kube-audit")
            }) && change.removed.iter().any(|v| v.ends_with(":z")) =>
        {
            Some(AUDIT_BIND)
        }
        _ => None,
    }
}

/// The newer-default reason for uploading a file RKE1's older releases wrote differently or
/// not at all, if it is one.
pub fn newer_default_for_file(path: &str, new: bool) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match (name, new) {
        ("admission.yaml", true) => Some(ADMISSION),
        ("audit-policy.yaml", false) => Some(AUDIT_POLICY),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(field: &'static str, added: &[&str], removed: &[&str]) -> FieldChange {
        FieldChange {
            field,
            added: added.iter().map(|s| s.to_string()).collect(),
            removed: removed.iter().map(|s| s.to_string()).collect(),
            why: None,
        }
    }

    #[test]
    fn a_checksum_that_only_changed_its_hash_is_named_and_a_changed_file_is_not() {
        let md5 = "a".repeat(32);
        let sha = "b".repeat(64);
        let sha2 = "c".repeat(64);
        let algo = change(
            "env",
            &[
                &format!("RKE_ADMISSION_CONFIG_CHECKSUM={sha}"),
                &format!("RKE_AUDITLOG_CONFIG_CHECKSUM={sha2}"),
            ],
            &[
                &format!("RKE_ADMISSION_CONFIG_CHECKSUM={md5}"),
                &format!("RKE_AUDITLOG_CONFIG_CHECKSUM={md5}"),
            ],
        );
        assert_eq!(
            newer_default_for_change(crate::plan::KUBE_APISERVER, &algo),
            Some(CHECKSUM_SHA256)
        );
        // The same hash, another value: the file changed, which cluster.yml asked for.
        let content = change(
            "env",
            &[&format!("RKE_AUDITLOG_CONFIG_CHECKSUM={sha}")],
            &[&format!("RKE_AUDITLOG_CONFIG_CHECKSUM={sha2}")],
        );
        assert_ne!(
            newer_default_for_change(crate::plan::KUBE_APISERVER, &content),
            Some(CHECKSUM_SHA256)
        );
    }

    #[test]
    fn br_netfilter_on_kube_proxy_is_named_only_when_added() {
        let added = change("env", &["RKE_KUBE_PROXY_BR_NETFILTER=true"], &[]);
        assert_eq!(
            newer_default_for_change(crate::plan::KUBE_PROXY, &added),
            Some(BR_NETFILTER)
        );
        let removed = change("env", &[], &["RKE_KUBE_PROXY_BR_NETFILTER=true"]);
        assert_eq!(
            newer_default_for_change(crate::plan::KUBE_PROXY, &removed),
            None
        );
        assert_eq!(
            newer_default_for_change(crate::plan::KUBE_APISERVER, &added),
            None
        );
    }

    #[test]
    fn the_admission_configuration_of_newer_releases_is_named() {
        let c = change(
            "entrypoint",
            &["--admission-control-config-file=/etc/kubernetes/admission.yaml"],
            &[],
        );
        assert_eq!(
            newer_default_for_change("kube-apiserver", &c),
            Some(ADMISSION)
        );
        assert_eq!(newer_default_for_change("kubelet", &c), None);
        let env = change("env", &["RKE_ADMISSION_CONFIG_CHECKSUM=abc"], &[]);
        assert_eq!(
            newer_default_for_change("kube-apiserver", &env),
            Some(ADMISSION)
        );
    }

    #[test]
    fn a_change_mixed_with_a_config_change_is_not_explained() {
        let c = change(
            "entrypoint",
            &[
                "--admission-control-config-file=/etc/kubernetes/admission.yaml",
                "--v=4",
            ],
            &["--v=2"],
        );
        assert_eq!(newer_default_for_change("kube-apiserver", &c), None);
    }

    #[test]
    fn the_audit_bind_without_relabel_is_named() {
        let c = change(
            "binds",
            &["/var/log/kube-audit:/var/log/kube-audit"],
            &["/var/log/kube-audit:/var/log/kube-audit:z"],
        );
        assert_eq!(
            newer_default_for_change("kube-apiserver", &c),
            Some(AUDIT_BIND)
        );
        let other = change("binds", &["/data:/data"], &[]);
        assert_eq!(newer_default_for_change("kube-apiserver", &other), None);
    }

    #[test]
    fn files_of_newer_defaults() {
        assert_eq!(
            newer_default_for_file("/etc/kubernetes/admission.yaml", true),
            Some(ADMISSION)
        );
        assert_eq!(
            newer_default_for_file("/etc/kubernetes/audit-policy.yaml", false),
            Some(AUDIT_POLICY)
        );
        assert_eq!(
            newer_default_for_file("/etc/kubernetes/ssl/kube-node.pem", true),
            None
        );
    }
}
