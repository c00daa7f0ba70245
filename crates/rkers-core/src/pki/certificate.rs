//! One entry of the certificate bundle (`certificatesBundle` in the state file, §7) and the PEM
//! conversions around it.

use std::fmt;
use std::net::IpAddr;

use rcgen::{KeyPair, PKCS_RSA_SHA256};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use super::PkiError;

/// A certificate, its key and (for most components) a node-side kubeconfig, exactly as RKE1 keeps
/// them in `certificatesBundle`. Every field is always serialized, in RKE1's order; fields a
/// newer RKE might add are kept in `extra` so a round trip loses nothing.
///
/// The PEM strings are the source of truth; parsed forms are produced on demand
/// ([`CertificatePki::info`], [`CertificatePki::key_pair`]).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertificatePki {
    #[serde(rename = "certificatePEM", default)]
    pub certificate_pem: String,
    #[serde(rename = "keyPEM", default)]
    pub key_pem: String,
    #[serde(default)]
    pub config: String,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "commonName", default)]
    pub common_name: String,
    #[serde(rename = "ouName", default)]
    pub ou_name: String,
    #[serde(rename = "envName", default)]
    pub env_name: String,
    #[serde(default)]
    pub path: String,
    #[serde(rename = "keyEnvName", default)]
    pub key_env_name: String,
    #[serde(rename = "keyPath", default)]
    pub key_path: String,
    #[serde(rename = "configEnvName", default)]
    pub config_env_name: String,
    #[serde(rename = "configPath", default)]
    pub config_path: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The parts of an X.509 certificate rkers looks at (SAN comparison, issuer checks, `cert list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    pub subject_cn: String,
    pub subject_o: Vec<String>,
    pub issuer_cn: String,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    pub not_before: ::time::OffsetDateTime,
    pub not_after: ::time::OffsetDateTime,
    pub is_ca: bool,
    pub serial_hex: String,
}

impl CertificatePki {
    pub fn has_certificate(&self) -> bool {
        !self.certificate_pem.trim().is_empty()
    }

    pub fn has_key(&self) -> bool {
        !self.key_pem.trim().is_empty()
    }

    /// DER of the first `CERTIFICATE` block (RKE1 also only looks at the first one).
    pub fn certificate_der(&self) -> Result<Vec<u8>, PkiError> {
        first_certificate_der(&self.certificate_pem).map_err(|reason| {
            PkiError::InvalidCertificate {
                name: self.name.clone(),
                reason: reason.to_string(),
            }
        })
    }

    pub fn info(&self) -> Result<CertInfo, PkiError> {
        let der = self.certificate_der()?;
        cert_info_from_der(&der).map_err(|reason| PkiError::InvalidCertificate {
            name: self.name.clone(),
            reason: reason.to_string(),
        })
    }

    /// The private key as an rcgen key pair (PKCS#1 or PKCS#8 PEM, RSA only).
    pub fn key_pair(&self) -> Result<KeyPair, PkiError> {
        rsa_key_pair_from_pem(&self.key_pem).map_err(|reason| PkiError::InvalidKey {
            name: self.name.clone(),
            reason: reason.to_string(),
        })
    }
}

// Key PEMs and kubeconfigs (the admin one embeds the key) must never reach logs.
impl fmt::Debug for CertificatePki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertificatePki")
            .field("name", &self.name)
            .field("common_name", &self.common_name)
            .field("ou_name", &self.ou_name)
            .field("has_certificate", &self.has_certificate())
            .field("has_key", &self.has_key())
            .field("has_config", &!self.config.is_empty())
            .field("path", &self.path)
            .field("key_path", &self.key_path)
            .field("config_path", &self.config_path)
            .field("extra_fields", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Why a PEM text or DER certificate could not be read, or a key not encoded. The
/// [`PkiError`] that names the certificate or key carries its text. Never holds key material.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PemError {
    #[error("not valid PEM: {0}")]
    NotPem(#[source] pem::PemError),
    #[error("no CERTIFICATE block found")]
    NoCertificate,
    #[error("not a valid X.509 certificate: {0}")]
    NotX509(#[source] x509_parser::nom::Err<x509_parser::error::X509Error>),
    #[error("the key is encrypted; keys must be unencrypted")]
    EncryptedKey,
    #[error("unsupported PEM block `{0}`, expected an RSA key")]
    NotAKey(String),
    #[error("not a usable RSA private key ({0})")]
    NotRsa(#[source] rcgen::Error),
    // pkcs8's error is not a `std::error::Error` (the crate is built without `std`).
    #[error("cannot decode generated PKCS#8 key: {0}")]
    Pkcs8(pkcs8::Error),
}

pub(crate) fn first_certificate_der(pem_text: &str) -> Result<Vec<u8>, PemError> {
    let blocks = pem::parse_many(pem_text).map_err(PemError::NotPem)?;
    blocks
        .into_iter()
        .find(|b| b.tag() == "CERTIFICATE")
        .map(|b| b.into_contents())
        .ok_or(PemError::NoCertificate)
}

pub(crate) fn cert_info_from_der(der: &[u8]) -> Result<CertInfo, PemError> {
    let (_, cert) = X509Certificate::from_der(der).map_err(PemError::NotX509)?;
    let subject_cn = first_attr(cert.subject().iter_common_name());
    let subject_o = cert
        .subject()
        .iter_organization()
        .filter_map(|a| a.as_str().ok().map(str::to_string))
        .collect();
    let issuer_cn = first_attr(cert.issuer().iter_common_name());
    let mut dns_names = Vec::new();
    let mut ip_addresses = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => dns_names.push(d.to_string()),
                GeneralName::IPAddress(bytes) => {
                    if let Some(ip) = ip_from_bytes(bytes) {
                        ip_addresses.push(ip);
                    }
                }
                _ => {}
            }
        }
    }
    let is_ca = cert
        .basic_constraints()
        .ok()
        .flatten()
        .is_some_and(|bc| bc.value.ca);
    Ok(CertInfo {
        subject_cn,
        subject_o,
        issuer_cn,
        dns_names,
        ip_addresses,
        not_before: cert.validity().not_before.to_datetime(),
        not_after: cert.validity().not_after.to_datetime(),
        is_ca,
        serial_hex: cert.raw_serial_as_string(),
    })
}

fn first_attr<'a>(
    mut it: impl Iterator<Item = &'a x509_parser::x509::AttributeTypeAndValue<'a>>,
) -> String {
    it.next()
        .and_then(|a| a.as_str().ok())
        .unwrap_or_default()
        .to_string()
}

fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?).to_canonical()),
        _ => None,
    }
}

/// Loads an unencrypted RSA private key from PKCS#1 (`RSA PRIVATE KEY`) or PKCS#8
/// (`PRIVATE KEY`) PEM. The error never contains key material.
pub(crate) fn rsa_key_pair_from_pem(pem_text: &str) -> Result<KeyPair, PemError> {
    let block = pem::parse(pem_text).map_err(PemError::NotPem)?;
    match block.tag() {
        "RSA PRIVATE KEY" | "PRIVATE KEY" => {}
        "ENCRYPTED PRIVATE KEY" => return Err(PemError::EncryptedKey),
        other => return Err(PemError::NotAKey(other.to_string())),
    }
    KeyPair::from_pem_and_sign_algo(pem_text, &PKCS_RSA_SHA256).map_err(PemError::NotRsa)
}

/// PEM of a key pair in RKE1's format: PKCS#1 `RSA PRIVATE KEY`, 64-column lines, LF.
pub(crate) fn pkcs1_pem(key: &KeyPair) -> Result<String, PemError> {
    let pkcs8 = key.serialize_der();
    let info = pkcs8::PrivateKeyInfo::try_from(pkcs8.as_slice()).map_err(PemError::Pkcs8)?;
    Ok(encode_pem("RSA PRIVATE KEY", info.private_key.to_vec()))
}

pub(crate) fn encode_pem(tag: &str, der: Vec<u8>) -> String {
    pem::encode_config(
        &pem::Pem::new(tag, der),
        pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_errors_keep_their_texts() {
        let text = |e: PemError| e.to_string();
        assert!(text(rsa_key_pair_from_pem("junk").err().unwrap()).starts_with("not valid PEM: "));
        let encrypted = encode_pem("ENCRYPTED PRIVATE KEY", vec![1, 2, 3]);
        assert_eq!(
            text(rsa_key_pair_from_pem(&encrypted).err().unwrap()),
            "the key is encrypted; keys must be unencrypted"
        );
        let cert = encode_pem("CERTIFICATE", vec![1, 2, 3]);
        assert_eq!(
            text(rsa_key_pair_from_pem(&cert).err().unwrap()),
            "unsupported PEM block `CERTIFICATE`, expected an RSA key"
        );
        let key = encode_pem("RSA PRIVATE KEY", vec![1, 2, 3]);
        assert!(
            text(rsa_key_pair_from_pem(&key).err().unwrap())
                .starts_with("not a usable RSA private key (")
        );
        assert_eq!(
            text(first_certificate_der(&key).unwrap_err()),
            "no CERTIFICATE block found"
        );
        assert!(
            text(cert_info_from_der(&[1, 2, 3]).unwrap_err())
                .starts_with("not a valid X.509 certificate: ")
        );
    }
}
