//! When a file on a host holds what the plan wants, by what the file means rather than by its
//! bytes.
//!
//! RKE1's tools rewrite the files they deploy, so a cluster RKE1 built holds files that differ
//! from the state's text in ways no reader notices. Comparing bytes would make `up` re-upload
//! every such file and restart every reader on adoption. One rule serves every place where a
//! file's content decides an action: `up`'s file diff, the restart of the readers of changed
//! files, wins' config, and `cert rotate`.
//!
//! - PEM files (certificates, keys): rke-tools' `cert-deployer` writes each value through
//!   `value=$(echo "$VAR"); echo "$value" > file`, which strips every trailing newline and adds
//!   exactly one; RKE1 releases before the state file wrote them with `echo -e`. Two PEM files
//!   are the same when their blocks decode to the same labels and DER.
//! - YAML and JSON files (kubeconfigs, admission, audit and encryption configs, wins' config):
//!   the same `cert-deployer` adds a newline to kubeconfigs, which the state keeps without one,
//!   and RKE1's `file-deployer` writes through `echo -e`. Two such files are the same when they
//!   differ only in trailing whitespace or parse to the same document.
//! - Anything else is compared byte for byte.

/// Whether `observed` holds what `desired` says, for a file at `path` (only its name matters).
pub fn same_file_content(path: &str, desired: &[u8], observed: &[u8]) -> bool {
    if desired == observed {
        return true;
    }
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("pem") => same_pem(desired, observed),
        Some("yaml" | "yml" | "json") => {
            trim_trailing_whitespace(desired) == trim_trailing_whitespace(observed)
                || same_yaml_document(desired, observed)
        }
        _ => false,
    }
}

/// The same PEM blocks: labels and DER contents equal, in the same order. A file that holds no
/// PEM block at all is compared by bytes (already done by the caller).
fn same_pem(a: &[u8], b: &[u8]) -> bool {
    let (Ok(a), Ok(b)) = (pem::parse_many(a), pem::parse_many(b)) else {
        return false;
    };
    !a.is_empty()
        && a.len() == b.len()
        && a.iter()
            .zip(&b)
            .all(|(x, y)| x.tag() == y.tag() && x.contents() == y.contents())
}

fn trim_trailing_whitespace(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &bytes[..end]
}

/// Both parse as a single YAML document (JSON included) and the documents are equal.
fn same_yaml_document(a: &[u8], b: &[u8]) -> bool {
    let parse = |bytes: &[u8]| -> Option<serde_json::Value> {
        let text = std::str::from_utf8(bytes).ok()?;
        serde_norway::from_str::<serde_json::Value>(text).ok()
    };
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &str =
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQk9Y\n-----END CERTIFICATE-----\n";

    /// What rke-tools' cert-deployer leaves: trailing newlines stripped, then exactly one added.
    fn cert_deployer(value: &str) -> Vec<u8> {
        format!("{}\n", value.trim_end_matches('\n')).into_bytes()
    }

    #[test]
    fn pem_with_other_trailing_newlines_is_the_same() {
        let doubled = format!("{CERT}\n");
        assert!(same_file_content(
            "ssl/kube-ca.pem",
            CERT.as_bytes(),
            doubled.as_bytes()
        ));
        assert!(same_file_content(
            "ssl/kube-ca.pem",
            doubled.as_bytes(),
            &cert_deployer(&doubled)
        ));
    }

    #[test]
    fn pem_with_other_der_differs() {
        let other = CERT.replace("Qk9Y", "Qk9Z");
        assert!(!same_file_content(
            "ssl/kube-ca.pem",
            CERT.as_bytes(),
            other.as_bytes()
        ));
    }

    #[test]
    fn pem_with_other_label_differs() {
        let key = CERT.replace("CERTIFICATE", "PRIVATE KEY");
        assert!(!same_file_content(
            "ssl/kube-ca-key.pem",
            CERT.as_bytes(),
            key.as_bytes()
        ));
    }

    #[test]
    fn kubeconfig_with_a_trailing_newline_is_the_same() {
        let state = "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: \"https://127.0.0.1:6443\"\n  name: local";
        assert!(same_file_content(
            "ssl/kubecfg-kube-node.yaml",
            state.as_bytes(),
            &cert_deployer(state)
        ));
    }

    #[test]
    fn yaml_with_the_same_meaning_is_the_same_and_other_values_differ() {
        let a = b"a: 1\nb: [x, y]\n";
        let b = b"b:\n- x\n- y\na: 1\n";
        assert!(same_file_content("admission.yaml", a, b));
        assert!(!same_file_content(
            "admission.yaml",
            a,
            b"a: 2\nb: [x, y]\n"
        ));
    }

    #[test]
    fn other_files_compare_by_bytes() {
        assert!(!same_file_content(
            "cloud-config",
            b"[Global]\n",
            b"[Global]\n\n"
        ));
        assert!(same_file_content(
            "cloud-config",
            b"[Global]\n",
            b"[Global]\n"
        ));
    }

    #[test]
    fn unparsable_files_compare_by_bytes() {
        assert!(!same_file_content("x.pem", b"not pem", b"not pem\n"));
        assert!(!same_file_content("x.yaml", b"a: [", b"a: [x"));
        assert!(same_file_content("x.yaml", b"a: [", b"a: [ \n"));
    }
}
