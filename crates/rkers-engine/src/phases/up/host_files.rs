//! The files a host gets (certificates, keys, kubeconfigs and the plan's files) and the paths
//! they are kept under on Linux and Windows hosts; shared with `cert rotate`.

use crate::phases::files::DesiredFile;
use crate::pki::{self, Bundle};
use crate::plan::{self, HostPlan, Platform};
use std::collections::BTreeMap;

/// The certificates, keys and kubeconfigs a host gets (§11.1, §12), plus the plan's files,
/// by path relative to the platform's files root ([`Platform::files_root`]). On a Windows worker the plan's own kubeconfigs (Windows
/// certificate paths) replace the ones the PKI renders for Linux.
pub(crate) fn host_files(
    h: &HostPlan,
    bundle: &Bundle,
    spec: &pki::PkiSpec,
    platform: Platform,
) -> Vec<DesiredFile> {
    let mut out: Vec<DesiredFile> = Vec::new();
    let rel = |p: &str| platform.relative_path(h, p).map(str::to_string);
    let mut add = |file: DesiredFile| match out
        .iter_mut()
        .find(|f| f.relative_path == file.relative_path)
    {
        Some(existing) => *existing = file,
        None => out.push(file),
    };
    if let Some(pki_host) = spec.hosts.iter().find(|p| p.address == h.address) {
        for cert in pki::certs_for_host(bundle, spec, pki_host) {
            for (path, contents) in [
                (&cert.path, &cert.certificate_pem),
                (&cert.key_path, &cert.key_pem),
                (&cert.config_path, &cert.config),
            ] {
                if let (Some(rel), false) = (rel(path), contents.is_empty()) {
                    add(DesiredFile {
                        relative_path: rel,
                        contents: contents.as_bytes().to_vec(),
                        mode: 0o600,
                    });
                }
            }
        }
    }
    for f in &h.files {
        if f.remove_when_empty && f.contents.is_empty() {
            continue;
        }
        if let Some(rel) = rel(&f.container_path) {
            add(DesiredFile {
                relative_path: rel,
                contents: f.contents.as_bytes().to_vec(),
                mode: f.mode,
            });
        }
    }
    out
}

/// A host's files as Linux keeps them (relative to `etc/kubernetes`,
/// [`Platform::kubernetes_path`]), for the rules keyed on those paths: certificate expiry.
pub(crate) fn kubernetes_view_map(
    platform: Platform,
    files: &BTreeMap<String, Vec<u8>>,
) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .filter_map(|(rel, c)| Some((platform.kubernetes_path(rel)?.to_string(), c.clone())))
        .collect()
}

pub(crate) fn etc_kubernetes(h: &HostPlan) -> String {
    plan::join_path(&[&h.prefix_path, "/etc/kubernetes"])
}
