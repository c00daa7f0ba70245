//! Creating the bundle of a new cluster (§11.2) and bringing an existing bundle in line with the
//! config on later runs (§11.3). Key generation, the slow part, runs on every core.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, PKCS_RSA_SHA256, RsaKeySize,
    SanType, SerialNumber,
};
use time::{Duration, OffsetDateTime};

use super::certificate::{CertificatePki, pkcs1_pem, rsa_key_pair_from_pem};
use super::kubeconfig::{kubeconfig_with_data, node_kubeconfig};
use super::names::*;
use super::spec::AltNames;
use super::{Bundle, PkiError, PkiSpec};

/// RKE1's `duration365d * 10`.
const VALIDITY: Duration = Duration::days(3650);

/// Which certificates a reconcile created, re-signed or removed; callers use it to decide which
/// containers need their certificates redeployed and a restart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// New entries and entries whose certificate, key or kubeconfig text changed.
    pub changed: BTreeSet<String>,
    /// Entries dropped from the bundle (removed nodes, serving certificates turned off).
    pub removed: BTreeSet<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.removed.is_empty()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.changed.contains(name) || self.removed.contains(name)
    }

    /// Whether anything other than `kube-admin` (re-signed on every run, never deployed to
    /// nodes) changed.
    pub fn affects_nodes(&self) -> bool {
        self.changed.iter().any(|n| n != KUBE_ADMIN_CERT_NAME) || !self.removed.is_empty()
    }

    pub(crate) fn between(old: &Bundle, new: &Bundle) -> Changes {
        let mut changes = Changes::default();
        for (name, entry) in new {
            match old.get(name) {
                Some(previous)
                    if previous.certificate_pem == entry.certificate_pem
                        && previous.key_pem == entry.key_pem
                        && previous.config == entry.config => {}
                _ => {
                    changes.changed.insert(name.clone());
                }
            }
        }
        for name in old.keys() {
            if !new.contains_key(name) {
                changes.removed.insert(name.clone());
            }
        }
        changes
    }
}

/// The full bundle of a new cluster: both CAs, then every component certificate.
pub fn generate_bundle(spec: &PkiSpec) -> Result<Bundle, PkiError> {
    let cas = parallel_map(vec![CA_CERT_NAME, REQUEST_HEADER_CA_CERT_NAME], |name| {
        new_ca_entry(name).map(|entry| (name, entry))
    });
    let mut bundle = Bundle::new();
    for ca in cas {
        let (name, entry) = ca?;
        bundle.insert(name.to_string(), entry);
    }
    let (bundle, _) = reconcile_bundle(bundle, spec)?;
    Ok(bundle)
}

/// Applies §11.3 to the bundle of an existing cluster (no rotation):
/// - `kube-apiserver` is re-signed with its key only when its SANs differ from the config;
/// - each `kube-etcd-<node>` is created when missing or re-signed with its key when the etcd
///   SANs differ; those of removed etcd nodes are deleted;
/// - kubelet serving certificates are created for new nodes and deleted for removed ones (all of
///   them when serving certificates are off);
/// - `kube-admin` is always re-signed with its key and its kubeconfig rebuilt;
/// - every other certificate is only created when missing (reusing a key already present).
///
/// A missing request-header CA (clusters older than RKE 0.2) is generated.
pub fn reconcile_bundle(bundle: Bundle, spec: &PkiSpec) -> Result<(Bundle, Changes), PkiError> {
    let old = bundle;
    let mut certs = old.clone();

    check_signing_ca(&certs)?;
    let ca = certs[CA_CERT_NAME].clone();
    let header_ca_present = certs
        .get(REQUEST_HEADER_CA_CERT_NAME)
        .is_some_and(|c| c.has_certificate() && c.has_key());
    if !header_ca_present {
        let (cert, key) = new_ca(REQUEST_HEADER_CA_CERT_NAME)?;
        certs.insert(
            REQUEST_HEADER_CA_CERT_NAME.to_string(),
            cert_object(REQUEST_HEADER_CA_CERT_NAME, None, "", cert, key),
        );
    }
    let header_ca = certs[REQUEST_HEADER_CA_CERT_NAME].clone();

    let plans = plan_leaves(&certs, spec)?;
    remove_stale(&mut certs, spec);

    let kube_ca = SigningCa::load(&ca)?;
    let request_header_ca = SigningCa::load(&header_ca)?;
    let signed = parallel_map(plans, |plan| {
        let ca = match plan.signer {
            Signer::KubeCa => &kube_ca,
            Signer::RequestHeaderCa => &request_header_ca,
        };
        sign_leaf(&plan, ca).map(|(cert, key)| (plan, cert, key))
    });
    for result in signed {
        let (plan, cert, key) = result?;
        let mut entry = cert_object(
            &plan.name,
            plan.bundle_cn.as_deref(),
            &plan.bundle_ou,
            cert,
            key,
        );
        // Fields of a newer RKE stay with the entry when it is re-signed.
        if let Some(previous) = certs.get(&plan.name) {
            entry.extra = previous.extra.clone();
        }
        certs.insert(plan.name.clone(), entry);
    }

    set_admin_kubeconfig(&mut certs, spec)?;
    if let Some(external) = &spec.external_etcd {
        add_external_etcd(&mut certs, external)?;
    }

    let changes = Changes::between(&old, &certs);
    Ok((certs, changes))
}

#[derive(Debug, Clone, Copy)]
enum Signer {
    KubeCa,
    RequestHeaderCa,
}

/// One leaf certificate to sign.
struct LeafPlan {
    name: String,
    subject_cn: String,
    subject_o: Option<&'static str>,
    alt_names: AltNames,
    server: bool,
    signer: Signer,
    /// PEM of a key to keep; `None` generates a new one.
    reuse_key: Option<String>,
    /// `commonName` recorded in the bundle entry (`None`: RKE1's `system:<name>` default).
    bundle_cn: Option<String>,
    bundle_ou: String,
}

impl LeafPlan {
    fn client(name: &str, subject_cn: &str, existing: Option<&CertificatePki>) -> LeafPlan {
        LeafPlan {
            name: name.to_string(),
            subject_cn: subject_cn.to_string(),
            subject_o: None,
            alt_names: AltNames::default(),
            server: false,
            signer: Signer::KubeCa,
            reuse_key: existing.filter(|c| c.has_key()).map(|c| c.key_pem.clone()),
            bundle_cn: None,
            bundle_ou: String::new(),
        }
    }
}

fn plan_leaves(certs: &Bundle, spec: &PkiSpec) -> Result<Vec<LeafPlan>, PkiError> {
    let mut plans = Vec::new();
    let missing = |name: &str| !certs.get(name).is_some_and(|c| c.has_certificate());

    // kube-apiserver: only when the SANs differ (compared as sets; RKE1 compares ordered lists,
    // which can only cause a needless re-sign).
    let api_names = spec.kube_api_alt_names();
    let api = certs.get(KUBE_API_CERT_NAME);
    if !sans_match(api, &api_names)? {
        let mut plan = LeafPlan::client(KUBE_API_CERT_NAME, KUBE_API_CERT_NAME, api);
        plan.alt_names = api_names;
        plan.server = true;
        plans.push(plan);
    }

    // The service account key signs every token, so an existing one is never replaced. A
    // cluster from before RKE 0.2 signed its tokens with the API server key: keep using it.
    // (RKE1 also copies the API server pair into a new cluster's entry; rkers gives a new
    // cluster its own key, as the entry's name and the §11.1 table intend.)
    if missing(SERVICE_ACCOUNT_TOKEN_KEY_NAME) {
        let sa = certs
            .get(SERVICE_ACCOUNT_TOKEN_KEY_NAME)
            .filter(|c| c.has_key());
        let legacy_api = api.filter(|c| c.has_key());
        let mut plan = LeafPlan::client(
            SERVICE_ACCOUNT_TOKEN_KEY_NAME,
            SERVICE_ACCOUNT_TOKEN_KEY_NAME,
            sa.or(legacy_api),
        );
        plan.bundle_cn = Some(SERVICE_ACCOUNT_TOKEN_KEY_NAME.to_string());
        plans.push(plan);
    }

    for name in [
        KUBE_CONTROLLER_CERT_NAME,
        KUBE_SCHEDULER_CERT_NAME,
        KUBE_PROXY_CERT_NAME,
    ] {
        if missing(name) {
            plans.push(LeafPlan::client(
                name,
                &default_common_name(name),
                certs.get(name),
            ));
        }
    }

    // RKE1 signs a new kube-node certificate with the kube-proxy key (§33.3); rkers gives it its
    // own key. Existing bundles keep whatever key they have.
    if missing(KUBE_NODE_CERT_NAME) {
        let mut plan = LeafPlan::client(
            KUBE_NODE_CERT_NAME,
            KUBE_NODE_COMMON_NAME,
            certs.get(KUBE_NODE_CERT_NAME),
        );
        plan.subject_o = Some(KUBE_NODE_ORGANIZATION);
        plan.bundle_cn = Some(KUBE_NODE_COMMON_NAME.to_string());
        plan.bundle_ou = KUBE_NODE_ORGANIZATION.to_string();
        plans.push(plan);
    }

    let mut admin = LeafPlan::client(
        KUBE_ADMIN_CERT_NAME,
        KUBE_ADMIN_CERT_NAME,
        certs.get(KUBE_ADMIN_CERT_NAME),
    );
    admin.subject_o = Some(KUBE_ADMIN_ORGANIZATION);
    admin.bundle_cn = Some(KUBE_ADMIN_CERT_NAME.to_string());
    admin.bundle_ou = KUBE_ADMIN_ORGANIZATION.to_string();
    plans.push(admin);

    if missing(API_PROXY_CLIENT_CERT_NAME) {
        let mut plan = LeafPlan::client(
            API_PROXY_CLIENT_CERT_NAME,
            API_PROXY_CLIENT_CERT_NAME,
            certs.get(API_PROXY_CLIENT_CERT_NAME),
        );
        plan.server = true;
        plan.signer = Signer::RequestHeaderCa;
        plans.push(plan);
    }

    let etcd_names = spec.etcd_alt_names();
    let mut seen = BTreeSet::new();
    for host in spec.etcd_hosts() {
        let name = crt_name_for_host(host, ETCD_CERT_PREFIX);
        if !seen.insert(name.clone()) {
            continue;
        }
        let existing = certs.get(&name);
        if sans_match(existing, &etcd_names)? {
            continue;
        }
        let mut plan = LeafPlan::client(&name, ETCD_CERT_PREFIX, existing);
        plan.alt_names = etcd_names.clone();
        plan.server = true;
        plans.push(plan);
    }

    if spec.kubelet_serving_certs {
        let mut seen = BTreeSet::new();
        for host in &spec.hosts {
            let name = crt_name_for_host(host, KUBELET_CERT_PREFIX);
            if !seen.insert(name.clone()) || !missing(&name) {
                continue;
            }
            let mut plan = LeafPlan::client(&name, &name, certs.get(&name));
            plan.alt_names = AltNames::for_host(host);
            plan.server = true;
            plans.push(plan);
        }
    }
    Ok(plans)
}

/// Whether an existing certificate carries exactly these SANs (false when there is none).
fn sans_match(existing: Option<&CertificatePki>, wanted: &AltNames) -> Result<bool, PkiError> {
    match existing.filter(|c| c.has_certificate()) {
        None => Ok(false),
        Some(cert) => {
            let info = cert.info()?;
            Ok(wanted.same_set(&info.dns_names, &info.ip_addresses))
        }
    }
}

/// Drops etcd certificates of nodes that lost the etcd role and kubelet serving certificates of
/// removed nodes (or all of them when serving certificates are off), plus the external etcd
/// client pair when external etcd is no longer configured.
fn remove_stale(certs: &mut Bundle, spec: &PkiSpec) {
    let etcd: BTreeSet<String> = spec
        .etcd_hosts()
        .map(|h| crt_name_for_host(h, ETCD_CERT_PREFIX))
        .collect();
    let kubelet: BTreeSet<String> = if spec.kubelet_serving_certs {
        spec.hosts
            .iter()
            .map(|h| crt_name_for_host(h, KUBELET_CERT_PREFIX))
            .collect()
    } else {
        BTreeSet::new()
    };
    certs.retain(|name, _| {
        if name == ETCD_CLIENT_CERT_NAME || name == ETCD_CLIENT_CA_CERT_NAME {
            spec.external_etcd.is_some()
        } else if name.starts_with(ETCD_CERT_PREFIX) {
            etcd.contains(name)
        } else if name.starts_with(KUBELET_CERT_PREFIX) {
            kubelet.contains(name)
        } else {
            true
        }
    });
}

fn set_admin_kubeconfig(certs: &mut Bundle, spec: &PkiSpec) -> Result<(), PkiError> {
    let ca_pem = certs[CA_CERT_NAME].certificate_pem.clone();
    let Some(admin) = certs.get_mut(KUBE_ADMIN_CERT_NAME) else {
        return Ok(());
    };
    match spec.controlplane_hosts().next() {
        Some(cp) => {
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
        None => admin.config = String::new(),
    }
    Ok(())
}

fn add_external_etcd(certs: &mut Bundle, external: &super::ExternalEtcd) -> Result<(), PkiError> {
    let cert = normalize_cert_pem(ETCD_CLIENT_CERT_NAME, &external.cert)?;
    let key = normalize_key_pem(ETCD_CLIENT_CERT_NAME, &external.key)?;
    certs.insert(
        ETCD_CLIENT_CERT_NAME.to_string(),
        cert_object(ETCD_CLIENT_CERT_NAME, None, "", cert, key),
    );
    let ca = normalize_cert_pem(ETCD_CLIENT_CA_CERT_NAME, &external.ca_cert)?;
    certs.insert(
        ETCD_CLIENT_CA_CERT_NAME.to_string(),
        cert_object(ETCD_CLIENT_CA_CERT_NAME, None, "", ca, String::new()),
    );
    Ok(())
}

/// The first certificate of a PEM text, re-encoded the way RKE1 stores it.
pub(crate) fn normalize_cert_pem(name: &str, text: &str) -> Result<String, PkiError> {
    let der = super::certificate::first_certificate_der(text).map_err(|reason| {
        PkiError::InvalidCertificate {
            name: name.to_string(),
            reason: reason.to_string(),
        }
    })?;
    super::certificate::cert_info_from_der(&der).map_err(|reason| {
        PkiError::InvalidCertificate {
            name: name.to_string(),
            reason: reason.to_string(),
        }
    })?;
    Ok(super::certificate::encode_pem("CERTIFICATE", der))
}

/// Any unencrypted RSA key PEM, re-encoded as PKCS#1 (what RKE1 stores).
pub(crate) fn normalize_key_pem(name: &str, text: &str) -> Result<String, PkiError> {
    let invalid = |reason| PkiError::InvalidKey {
        name: name.to_string(),
        reason,
    };
    rsa_key_pair_from_pem(text).map_err(|e| invalid(e.to_string()))?;
    let block = pem::parse(text).map_err(|e| invalid(format!("not valid PEM: {e}")))?;
    if block.tag() == "RSA PRIVATE KEY" {
        return Ok(super::certificate::encode_pem(
            "RSA PRIVATE KEY",
            block.into_contents(),
        ));
    }
    let info = pkcs8::PrivateKeyInfo::try_from(block.contents())
        .map_err(|e| invalid(format!("not a PKCS#8 key: {e}")))?;
    Ok(super::certificate::encode_pem(
        "RSA PRIVATE KEY",
        info.private_key.to_vec(),
    ))
}

/// RKE1's `ToCertObject`: the bundle entry with env names, node paths and, for components that
/// have one, the node-side kubeconfig.
pub fn cert_object(
    name: &str,
    bundle_cn: Option<&str>,
    bundle_ou: &str,
    certificate_pem: String,
    key_pem: String,
) -> CertificatePki {
    let (config, config_path, config_env) = if has_node_kubeconfig(name) {
        (
            node_kubeconfig(name),
            config_path(name),
            config_env_name(name),
        )
    } else {
        (String::new(), String::new(), String::new())
    };
    CertificatePki {
        certificate_pem,
        key_pem,
        config,
        name: name.to_string(),
        common_name: bundle_cn
            .map(str::to_string)
            .unwrap_or_else(|| default_common_name(name)),
        ou_name: bundle_ou.to_string(),
        env_name: env_name(name),
        path: cert_path(name),
        key_env_name: key_env_name(name),
        key_path: key_path(name),
        config_env_name: config_env,
        config_path,
        extra: Default::default(),
    }
}

/// The check `up` makes of the bundle's `kube-ca` before it signs anything with it: present
/// with certificate and key, both parseable, usable as an issuer. Commands that only hand the CA
/// on (`util get-kubeconfig`) make the same check so they never pass on a CA `up` rejects.
pub fn check_signing_ca(bundle: &Bundle) -> Result<(), PkiError> {
    let ca = ca_certificate(bundle)?;
    if !ca.has_key() {
        return Err(PkiError::MissingCa {
            name: CA_CERT_NAME.to_string(),
        });
    }
    check_ca_certificate(bundle)?;
    SigningCa::load(ca)?;
    // Leaves signed with a key that is not the certificate's would never verify.
    let der = ca.certificate_der()?;
    let (_, cert) =
        x509_parser::parse_x509_certificate(&der).map_err(|e| PkiError::InvalidCertificate {
            name: ca.name.clone(),
            reason: e.to_string(),
        })?;
    let key = ca.key_pair()?;
    if cert.tbs_certificate.subject_pki.raw != rcgen::PublicKeyData::subject_public_key_info(&key) {
        return Err(PkiError::InvalidKey {
            name: ca.name.clone(),
            reason: "it is not the key of the CA certificate".into(),
        });
    }
    Ok(())
}

/// The bundle's `kube-ca` entry, when it holds a certificate.
pub(crate) fn ca_certificate(bundle: &Bundle) -> Result<&CertificatePki, PkiError> {
    bundle
        .get(CA_CERT_NAME)
        .filter(|c| c.has_certificate())
        .ok_or_else(|| PkiError::MissingCa {
            name: CA_CERT_NAME.to_string(),
        })
}

/// The bundle's `kube-ca` certificate is present, parses and is a CA (its key is not looked at).
pub fn check_ca_certificate(bundle: &Bundle) -> Result<(), PkiError> {
    let ca = ca_certificate(bundle)?;
    if !ca.info()?.is_ca {
        return Err(PkiError::InvalidCertificate {
            name: ca.name.clone(),
            reason: "it is not a CA certificate".into(),
        });
    }
    Ok(())
}

/// A CA ready to sign: its key and the validity start every leaf copies (as RKE1 does).
struct SigningCa {
    issuer: Issuer<'static, KeyPair>,
    not_before: OffsetDateTime,
}

impl SigningCa {
    fn load(ca: &CertificatePki) -> Result<SigningCa, PkiError> {
        let key = ca.key_pair()?;
        let info = ca.info()?;
        let issuer = Issuer::from_ca_cert_pem(&ca.certificate_pem, key).map_err(|e| {
            PkiError::InvalidCertificate {
                name: ca.name.clone(),
                reason: format!("cannot be used as an issuer: {e}"),
            }
        })?;
        Ok(SigningCa {
            issuer,
            not_before: info.not_before,
        })
    }
}

pub(crate) fn new_rsa_key() -> Result<KeyPair, rcgen::Error> {
    KeyPair::generate_rsa_for(&PKCS_RSA_SHA256, RsaKeySize::_2048)
}

/// Go encodes subject strings as PrintableString whenever it can; do the same so issuer names
/// match RKE1-made certificates byte for byte.
pub(crate) fn dn_value(text: &str) -> DnValue {
    match rcgen::string::PrintableString::try_from(text) {
        Ok(s) => DnValue::PrintableString(s),
        Err(_) => DnValue::Utf8String(text.to_string()),
    }
}

pub(crate) fn distinguished_name(cn: &str, o: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    // Go writes O before CN.
    if let Some(o) = o {
        dn.push(DnType::OrganizationName, dn_value(o));
    }
    dn.push(DnType::CommonName, dn_value(cn));
    dn
}

pub(crate) fn san_list(names: &AltNames, cert_name: &str) -> Result<Vec<SanType>, PkiError> {
    let mut sans = Vec::with_capacity(names.dns_names.len() + names.ips.len());
    for dns in &names.dns_names {
        let ia5 = dns.as_str().try_into().map_err(|e| PkiError::Generate {
            name: cert_name.to_string(),
            reason: format!("invalid DNS name [{dns}] in SANs: {e}"),
        })?;
        sans.push(SanType::DnsName(ia5));
    }
    sans.extend(names.ips.iter().map(|ip| SanType::IpAddress(*ip)));
    Ok(sans)
}

/// A new self-signed CA as a bundle entry.
pub(crate) fn new_ca_entry(name: &str) -> Result<CertificatePki, PkiError> {
    let (cert, key) = new_ca(name)?;
    Ok(cert_object(name, None, "", cert, key))
}

fn new_ca(name: &str) -> Result<(String, String), PkiError> {
    let fail = |e: rcgen::Error| PkiError::Generate {
        name: name.to_string(),
        reason: e.to_string(),
    };
    let key = new_rsa_key().map_err(fail)?;
    let now = OffsetDateTime::now_utc();
    let mut params = CertificateParams::default();
    params.distinguished_name = distinguished_name(name, None);
    params.serial_number = Some(SerialNumber::from_slice(&[0]));
    params.not_before = now;
    params.not_after = now + VALIDITY;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
    ];
    let cert = params.self_signed(&key).map_err(fail)?;
    let key_pem = pkcs1_pem(&key).map_err(|reason| PkiError::Generate {
        name: name.to_string(),
        reason: reason.to_string(),
    })?;
    Ok((cert.pem(), key_pem))
}

fn sign_leaf(plan: &LeafPlan, ca: &SigningCa) -> Result<(String, String), PkiError> {
    let fail = |reason: String| PkiError::Generate {
        name: plan.name.clone(),
        reason,
    };
    let (key, key_pem) = match &plan.reuse_key {
        Some(pem) => {
            let key = rsa_key_pair_from_pem(pem).map_err(|reason| PkiError::InvalidKey {
                name: plan.name.clone(),
                reason: reason.to_string(),
            })?;
            (key, pem.clone())
        }
        None => {
            let key = new_rsa_key().map_err(|e| fail(e.to_string()))?;
            let pem = pkcs1_pem(&key).map_err(|e| fail(e.to_string()))?;
            (key, pem)
        }
    };
    let mut params = CertificateParams::default();
    params.distinguished_name = distinguished_name(&plan.subject_cn, plan.subject_o);
    params.subject_alt_names = san_list(&plan.alt_names, &plan.name)?;
    params.serial_number = Some(SerialNumber::from(random_serial()));
    params.not_before = ca.not_before;
    params.not_after = OffsetDateTime::now_utc() + VALIDITY;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    if plan.server {
        params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
    }
    params.use_authority_key_identifier_extension = true;
    let cert = params
        .signed_by(&key, &ca.issuer)
        .map_err(|e| fail(e.to_string()))?;
    Ok((cert.pem(), key_pem))
}

/// A positive serial below 2^63, like Go's `rand.Int(rand.Reader, MaxInt64)`.
fn random_serial() -> u64 {
    loop {
        let serial = rand::random::<u64>() >> 1;
        if serial != 0 {
            return serial;
        }
    }
}

/// Maps `f` over `items` on all cores (RSA key generation dominates), keeping the input order.
pub(crate) fn parallel_map<T, R, F>(items: Vec<T>, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let count = items.len();
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(count.max(1));
    let queue = Mutex::new(items.into_iter().enumerate());
    let results = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some((index, item)) = next else { break };
                    let result = f(item);
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(index, result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_values()
        .collect()
}
