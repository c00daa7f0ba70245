//! What a health check of a component needs to trust its server and prove itself: the PEMs
//! the plan gives the check and the root package's engine uses to make the request.

/// TLS material for a check: the CA that signed the server, and an optional client certificate.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsMaterial {
    pub ca_pem: Option<String>,
    pub client_cert_pem: Option<String>,
    pub client_key_pem: Option<String>,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("ca", &self.ca_pem.is_some())
            .field("client_cert", &self.client_cert_pem.is_some())
            .finish()
    }
}
