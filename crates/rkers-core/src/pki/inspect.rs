//! Read-only views of a bundle for `cert list` and expiry warnings.

use std::net::IpAddr;

use super::{Bundle, PkiError};

/// What `cert list` shows for one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertSummary {
    pub name: String,
    pub subject_cn: String,
    pub subject_o: Vec<String>,
    pub issuer_cn: String,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    pub not_before: time::OffsetDateTime,
    pub not_after: time::OffsetDateTime,
    pub is_ca: bool,
    pub has_key: bool,
}

/// One summary per entry that holds a certificate, in name order. An entry whose certificate
/// cannot be parsed is an error naming it.
pub fn inspect_bundle(bundle: &Bundle) -> Result<Vec<CertSummary>, PkiError> {
    bundle
        .iter()
        .filter(|(_, entry)| entry.has_certificate())
        .map(|(name, entry)| {
            let info = entry.info()?;
            Ok(CertSummary {
                name: name.clone(),
                subject_cn: info.subject_cn,
                subject_o: info.subject_o,
                issuer_cn: info.issuer_cn,
                dns_names: info.dns_names,
                ip_addresses: info.ip_addresses,
                not_before: info.not_before,
                not_after: info.not_after,
                is_ca: info.is_ca,
                has_key: entry.has_key(),
            })
        })
        .collect()
}
