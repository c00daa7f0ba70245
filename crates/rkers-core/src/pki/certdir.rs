//! The cert dir next to the config (`<name>_certs`, §6): loading custom certificates
//! (`--custom-certs`, §11.4) and writing CSRs (`cert generate-csr`, §2.8).

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions, Permissions};
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rcgen::{CertificateParams, ExtendedKeyUsagePurpose};
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension, X509CertificationRequest};

use super::certificate::{pkcs1_pem, rsa_key_pair_from_pem};
use super::generate::{
    cert_object, distinguished_name, new_rsa_key, normalize_cert_pem, normalize_key_pem,
    parallel_map, san_list,
};
use super::kubeconfig::kubeconfig_with_data;
use super::names::*;
use super::spec::AltNames;
use super::{Bundle, PkiError, PkiSpec};

/// Mode of files RKE1 writes into the cert dir, and of the dir itself.
const CERT_FILE_MODE: u32 = 0o640;
const CERT_DIR_MODE: u32 = 0o755;

/// A validated custom bundle and the warnings to show (e.g. the request-header CA fallback).
#[derive(Debug, Clone)]
pub struct CustomCerts {
    pub bundle: Bundle,
    pub warnings: Vec<String>,
}

/// Reads every `<name>.pem` (with `<name>-key.pem`) from `cert_dir` and checks the bundle is
/// complete and signed by the right CAs (§11.4). The admin kubeconfig is rebuilt.
pub fn load_custom_certs(cert_dir: &Path, spec: &PkiSpec) -> Result<CustomCerts, PkiError> {
    let fail = |reason: String| PkiError::CustomCerts {
        dir: cert_dir.to_path_buf(),
        reason,
    };
    let mut bundle = Bundle::new();
    let entries = match fs::read_dir(cert_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(fail("the directory does not exist".to_string()));
        }
        Err(source) => {
            return Err(PkiError::Io {
                path: cert_dir.to_path_buf(),
                source,
            });
        }
    };
    let mut file_names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| PkiError::Io {
            path: cert_dir.to_path_buf(),
            source,
        })?;
        file_names.push(entry.file_name().to_string_lossy().into_owned());
    }
    file_names.sort();
    for file_name in file_names {
        if !file_name.ends_with(".pem")
            || file_name.ends_with("-key.pem")
            || file_name.ends_with("-csr.pem")
        {
            continue;
        }
        let name = file_name.trim_end_matches(".pem").to_string();
        let cert_text = read_optional(&cert_dir.join(&file_name))?;
        let cert_pem = if cert_text.trim().is_empty() {
            String::new()
        } else {
            normalize_cert_pem(&name, &cert_text)
                .map_err(|e| fail(format!("failed to read certificate [{file_name}]: {e}")))?
        };
        let key_file = format!("{name}-key.pem");
        let key_text = read_optional(&cert_dir.join(&key_file))?;
        let key_pem = if key_text.trim().is_empty() {
            String::new()
        } else {
            normalize_key_pem(&name, &key_text).map_err(|e| {
                fail(format!(
                    "failed to read key [{key_file}], make sure it is not encrypted: {e}"
                ))
            })?
        };
        let (cn, ou) = bundle_names_for_dir_entry(&name);
        bundle.insert(
            name.clone(),
            cert_object(&name, Some(&cn), &ou, cert_pem, key_pem),
        );
    }

    let mut warnings = Vec::new();
    let has_cert = |b: &Bundle, name: &str| b.get(name).is_some_and(|c| c.has_certificate());
    let has_pair = |b: &Bundle, name: &str| {
        b.get(name)
            .is_some_and(|c| c.has_certificate() && c.has_key())
    };
    if !has_cert(&bundle, CA_CERT_NAME) {
        return Err(fail(
            "Failed to find master CA certificate (kube-ca.pem)".to_string(),
        ));
    }
    if !has_cert(&bundle, REQUEST_HEADER_CA_CERT_NAME) {
        warnings.push(
            "Failed to find RequestHeader CA certificate, using master CA certificate".to_string(),
        );
        let ca_pem = bundle[CA_CERT_NAME].certificate_pem.clone();
        bundle.insert(
            REQUEST_HEADER_CA_CERT_NAME.to_string(),
            cert_object(
                REQUEST_HEADER_CA_CERT_NAME,
                Some(REQUEST_HEADER_CA_CERT_NAME),
                "",
                ca_pem,
                String::new(),
            ),
        );
    }
    for name in [
        KUBE_API_CERT_NAME,
        KUBE_CONTROLLER_CERT_NAME,
        KUBE_SCHEDULER_CERT_NAME,
        KUBE_PROXY_CERT_NAME,
        KUBE_NODE_CERT_NAME,
        KUBE_ADMIN_CERT_NAME,
        API_PROXY_CLIENT_CERT_NAME,
    ] {
        if !has_pair(&bundle, name) {
            return Err(fail(format!("Failed to find [{name}] Certificate or Key")));
        }
    }
    let etcd_names: Vec<String> = spec
        .etcd_hosts()
        .map(|h| crt_name_for_host(h, ETCD_CERT_PREFIX))
        .collect();
    for name in &etcd_names {
        if !has_pair(&bundle, name) {
            return Err(fail(format!(
                "Failed to find etcd [{name}] Certificate or Key"
            )));
        }
    }

    if let Some(cp) = spec.controlplane_hosts().next() {
        let ca_pem = bundle[CA_CERT_NAME].certificate_pem.clone();
        let admin = bundle.get_mut(KUBE_ADMIN_CERT_NAME).expect("checked above");
        admin.config = kubeconfig_with_data(
            &format!("https://{}:6443", crate::config::url_host(&cp.address)),
            &spec.cluster_name,
            KUBE_ADMIN_CERT_NAME,
            &ca_pem,
            &admin.certificate_pem,
            &admin.key_pem,
        );
        admin.config_path = spec.admin_kubeconfig_path.clone();
    }

    let ca_cn = bundle[CA_CERT_NAME].info()?.subject_cn;
    let mut signed_by_ca = vec![
        KUBE_API_CERT_NAME.to_string(),
        KUBE_CONTROLLER_CERT_NAME.to_string(),
        KUBE_SCHEDULER_CERT_NAME.to_string(),
        KUBE_PROXY_CERT_NAME.to_string(),
        KUBE_NODE_CERT_NAME.to_string(),
        KUBE_ADMIN_CERT_NAME.to_string(),
    ];
    signed_by_ca.extend(etcd_names);
    for name in &signed_by_ca {
        if bundle[name].info()?.issuer_cn != ca_cn {
            return Err(fail(format!(
                "Component [{name}] is not signed by the custom CA certificate"
            )));
        }
    }
    let header_cn = bundle[REQUEST_HEADER_CA_CERT_NAME].info()?.subject_cn;
    if bundle[API_PROXY_CLIENT_CERT_NAME].info()?.issuer_cn != header_cn {
        return Err(fail(format!(
            "Component [{API_PROXY_CLIENT_CERT_NAME}] is not signed by the custom Request Header CA certificate"
        )));
    }
    Ok(CustomCerts { bundle, warnings })
}

fn read_optional(path: &Path) -> Result<String, PkiError> {
    match crate::bounded::read_to_string(path, crate::bounded::CERTIFICATE) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(PkiError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// What `generate_csrs` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CsrReport {
    /// Certificates whose CSR (and key, when there was none) was written.
    pub written: Vec<String>,
    /// Certificates whose existing CSR still matches and was left alone.
    pub kept: Vec<String>,
    pub cert_dir: PathBuf,
}

struct CsrPlan {
    name: String,
    subject_cn: String,
    subject_o: Option<&'static str>,
    alt_names: AltNames,
    server: bool,
}

fn csr_plans(spec: &PkiSpec) -> Vec<CsrPlan> {
    let plan =
        |name: &str, cn: &str, o: Option<&'static str>, alt: AltNames, server: bool| CsrPlan {
            name: name.to_string(),
            subject_cn: cn.to_string(),
            subject_o: o,
            alt_names: alt,
            server,
        };
    let mut plans = vec![
        plan(
            KUBE_API_CERT_NAME,
            KUBE_API_CERT_NAME,
            None,
            spec.kube_api_alt_names(),
            true,
        ),
        plan(
            KUBE_CONTROLLER_CERT_NAME,
            &default_common_name(KUBE_CONTROLLER_CERT_NAME),
            None,
            AltNames::default(),
            false,
        ),
        plan(
            KUBE_SCHEDULER_CERT_NAME,
            &default_common_name(KUBE_SCHEDULER_CERT_NAME),
            None,
            AltNames::default(),
            false,
        ),
        plan(
            KUBE_PROXY_CERT_NAME,
            &default_common_name(KUBE_PROXY_CERT_NAME),
            None,
            AltNames::default(),
            false,
        ),
        plan(
            KUBE_NODE_CERT_NAME,
            KUBE_NODE_COMMON_NAME,
            Some(KUBE_NODE_ORGANIZATION),
            AltNames::default(),
            false,
        ),
        plan(
            KUBE_ADMIN_CERT_NAME,
            KUBE_ADMIN_CERT_NAME,
            Some(KUBE_ADMIN_ORGANIZATION),
            AltNames::default(),
            false,
        ),
        plan(
            API_PROXY_CLIENT_CERT_NAME,
            API_PROXY_CLIENT_CERT_NAME,
            None,
            AltNames::default(),
            true,
        ),
    ];
    let mut seen = BTreeSet::new();
    let etcd_names = spec.etcd_alt_names();
    for host in spec.etcd_hosts() {
        let name = crt_name_for_host(host, ETCD_CERT_PREFIX);
        if seen.insert(name.clone()) {
            plans.push(plan(
                &name,
                ETCD_CERT_PREFIX,
                None,
                etcd_names.clone(),
                true,
            ));
        }
    }
    if spec.kubelet_serving_certs {
        for host in &spec.hosts {
            let name = crt_name_for_host(host, KUBELET_CERT_PREFIX);
            if seen.insert(name.clone()) {
                plans.push(plan(&name, &name, None, AltNames::for_host(host), true));
            }
        }
    }
    plans
}

/// Writes `<name>-csr.pem` and `<name>-key.pem` (mode 0640) for every certificate the cluster
/// needs into `cert_dir` (created with mode 0755). Existing keys are reused; an existing CSR is
/// kept unless its SANs no longer match the config.
pub fn generate_csrs(spec: &PkiSpec, cert_dir: &Path) -> Result<CsrReport, PkiError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PkiError::Io {
            path: path.clone(),
            source,
        }
    };
    if !cert_dir.exists() {
        fs::create_dir_all(cert_dir).map_err(io_err(cert_dir))?;
        fs::set_permissions(cert_dir, Permissions::from_mode(CERT_DIR_MODE))
            .map_err(io_err(cert_dir))?;
    }

    let results = parallel_map(csr_plans(spec), |plan| csr_for(&plan, cert_dir));
    let mut report = CsrReport {
        cert_dir: cert_dir.to_path_buf(),
        ..Default::default()
    };
    for result in results {
        let (name, outcome) = result?;
        match outcome {
            CsrOutcome::Kept => report.kept.push(name),
            CsrOutcome::New { csr_pem, key_pem } => {
                if let Some(key_pem) = key_pem {
                    let path = cert_dir.join(format!("{name}-key.pem"));
                    write_cert_file(&path, &key_pem).map_err(io_err(&path))?;
                }
                let path = cert_dir.join(format!("{name}-csr.pem"));
                write_cert_file(&path, &csr_pem).map_err(io_err(&path))?;
                report.written.push(name);
            }
        }
    }
    Ok(report)
}

enum CsrOutcome {
    Kept,
    /// `key_pem` is `Some` when the key is new and must be written.
    New {
        csr_pem: String,
        key_pem: Option<String>,
    },
}

fn csr_for(plan: &CsrPlan, cert_dir: &Path) -> Result<(String, CsrOutcome), PkiError> {
    let key_file = cert_dir.join(format!("{}-key.pem", plan.name));
    let csr_file = cert_dir.join(format!("{}-csr.pem", plan.name));
    let key_text = read_optional(&key_file)?;
    let csr_text = read_optional(&csr_file)?;

    if !key_text.trim().is_empty() && !csr_text.trim().is_empty() {
        let sans = csr_sans(&csr_text).map_err(|reason| PkiError::CustomCerts {
            dir: cert_dir.to_path_buf(),
            reason: format!("failed to read csr [{}]: {reason}", csr_file.display()),
        })?;
        if plan.alt_names.same_set(&sans.0, &sans.1) {
            return Ok((plan.name.clone(), CsrOutcome::Kept));
        }
    }

    let (key, new_key_pem) = if key_text.trim().is_empty() {
        let key = new_rsa_key().map_err(|e| PkiError::Generate {
            name: plan.name.clone(),
            reason: e.to_string(),
        })?;
        let pem = pkcs1_pem(&key).map_err(|reason| PkiError::Generate {
            name: plan.name.clone(),
            reason: reason.to_string(),
        })?;
        (key, Some(pem))
    } else {
        let key = rsa_key_pair_from_pem(&key_text).map_err(|reason| PkiError::CustomCerts {
            dir: cert_dir.to_path_buf(),
            reason: format!(
                "failed to read key [{}], make sure it is not encrypted: {reason}",
                key_file.display()
            ),
        })?;
        (key, None)
    };

    let mut params = CertificateParams::default();
    params.distinguished_name = distinguished_name(&plan.subject_cn, plan.subject_o);
    params.subject_alt_names = san_list(&plan.alt_names, &plan.name)?;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    if plan.server {
        params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
    }
    let csr = params
        .serialize_request(&key)
        .and_then(|csr| csr.pem())
        .map_err(|e| PkiError::Generate {
            name: plan.name.clone(),
            reason: e.to_string(),
        })?;
    Ok((
        plan.name.clone(),
        CsrOutcome::New {
            csr_pem: csr,
            key_pem: new_key_pem,
        },
    ))
}

/// DNS and IP SANs requested by a PEM CSR.
fn csr_sans(text: &str) -> Result<(Vec<String>, Vec<IpAddr>), String> {
    let block = pem::parse(text).map_err(|e| format!("not valid PEM: {e}"))?;
    let (_, csr) = X509CertificationRequest::from_der(block.contents())
        .map_err(|e| format!("not a valid certificate request: {e}"))?;
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    if let Some(extensions) = csr.requested_extensions() {
        for ext in extensions {
            if let ParsedExtension::SubjectAlternativeName(san) = ext {
                for name in &san.general_names {
                    match name {
                        GeneralName::DNSName(d) => dns.push(d.to_string()),
                        GeneralName::IPAddress(b) if b.len() == 4 => {
                            ips.push(IpAddr::from(<[u8; 4]>::try_from(*b).expect("len 4")))
                        }
                        GeneralName::IPAddress(b) if b.len() == 16 => ips.push(
                            IpAddr::from(<[u8; 16]>::try_from(*b).expect("len 16")).to_canonical(),
                        ),
                        _ => {}
                    }
                }
            }
        }
    }
    Ok((dns, ips))
}

fn write_cert_file(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(CERT_FILE_MODE)
        .open(path)?;
    file.write_all(contents.as_bytes())?;
    // `mode` only applies to new files; an existing file keeps RKE1's 0640 too.
    file.set_permissions(Permissions::from_mode(CERT_FILE_MODE))?;
    file.sync_all()
}
