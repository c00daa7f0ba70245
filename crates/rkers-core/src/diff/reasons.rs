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

/// The newer-default reason for one field change of `container`, if it is one.
pub fn newer_default_for_change(container: &str, change: &FieldChange) -> Option<&'static str> {
    if container != crate::plan::KUBE_APISERVER {
        return None;
    }
    let values = || change.added.iter().chain(&change.removed);
    let all = |pred: fn(&str) -> bool| values().all(|v| pred(v));
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
