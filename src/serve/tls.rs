//! `rkers serve`'s own TLS (`--tls-cert`, `--tls-key`): the PEM certificate chain and private
//! key read with a bound, served through rustls, and replaced while the server runs when either
//! file changes (certificates renewed by an ACME client or cert-manager are picked up without a
//! restart, and without dropping the connections open).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Why a certificate and key cannot be served; each names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: cannot read the TLS {what}: {cause}")]
    Read {
        path: String,
        what: &'static str,
        cause: String,
    },
    #[error("{path}: {problem}")]
    File { path: String, problem: String },
    #[error("{cert} and {key}: the key is not one rustls can serve with this certificate: {cause}")]
    Pair {
        cert: String,
        key: String,
        cause: String,
    },
    #[error("TLS: {0}")]
    Config(String),
}

/// How often the certificate and key files are compared with what is served.
pub const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// The served certificate and where it came from.
pub struct Tls {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    resolver: Arc<Resolver>,
    /// The files' bytes the served key was made of: a reload that reads the same is no change.
    loaded: std::sync::Mutex<(Vec<u8>, Vec<u8>)>,
    acceptor: tokio_rustls::TlsAcceptor,
}

/// Hands every handshake the certificate served now; a reload swaps it.
#[derive(Debug)]
struct Resolver(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|p| p.into_inner()).clone())
    }
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("cert", &self.cert_path)
            .field("key", &self.key_path)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, TlsError> {
    rkers_core::bounded::read(path, rkers_core::bounded::CERTIFICATE).map_err(|e| TlsError::Read {
        path: path.display().to_string(),
        what,
        cause: e.to_string(),
    })
}

fn file_problem(path: &Path, problem: String) -> TlsError {
    TlsError::File {
        path: path.display().to_string(),
        problem,
    }
}

/// The key pair of two PEM files; the error names the file and what is wrong with it (never
/// the key's bytes).
fn certified_key(
    cert_path: &Path,
    cert_pem: &[u8],
    key_path: &Path,
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_problem(cert_path, format!("not a PEM certificate chain: {e}")))?;
    if chain.is_empty() {
        return Err(file_problem(
            cert_path,
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
        file_problem(
            key_path,
            format!("no PEM private key (PKCS#8, PKCS#1 or SEC1) in it: {e}"),
        )
    })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| TlsError::Pair {
        cert: cert_path.display().to_string(),
        key: key_path.display().to_string(),
        cause: e.to_string(),
    })
}

impl Tls {
    /// Reads both files and makes the acceptor; the error names the file and the cause.
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<Tls, TlsError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let (cert_pem, key_pem) = (read(cert_path, "certificate")?, read(key_path, "key")?);
        let key = certified_key(cert_path, &cert_pem, key_path, &key_pem, &provider)?;
        let resolver = Arc::new(Resolver(RwLock::new(Arc::new(key))));
        let mut config = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(resolver.clone());
        // The server speaks HTTP/1.1 only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls {
            cert_path: cert_path.to_path_buf(),
            key_path: key_path.to_path_buf(),
            provider,
            resolver,
            loaded: std::sync::Mutex::new((cert_pem, key_pem)),
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        })
    }

    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        self.acceptor.clone()
    }

    /// Reads both files again and serves what they hold from the next handshake on; `Ok(true)`
    /// when that changed. A pair that does not load (a renewal caught half-written, a key that
    /// is not the certificate's) keeps the one served, and says why.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let cert_pem = read(&self.cert_path, "certificate")?;
        let key_pem = read(&self.key_path, "key")?;
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if loaded.0 == cert_pem && loaded.1 == key_pem {
            return Ok(false);
        }
        let key = certified_key(
            &self.cert_path,
            &cert_pem,
            &self.key_path,
            &key_pem,
            &self.provider,
        )?;
        *self.resolver.0.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(key);
        *loaded = (cert_pem, key_pem);
        Ok(true)
    }

    /// Looks at the files every `every` until the task is aborted.
    pub fn watch(self: Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            // The last refusal, said once until it changes: a file being replaced is retried.
            let mut refused: Option<TlsError> = None;
            loop {
                tick.tick().await;
                match self.reload() {
                    Ok(true) => {
                        refused = None;
                        tracing::info!(cert = %self.cert_path.display(), "TLS certificate reloaded");
                    }
                    Ok(false) => refused = None,
                    Err(e) => {
                        if refused.as_ref() != Some(&e) {
                            tracing::warn!("{e}; still serving the certificate loaded before");
                        }
                        refused = Some(e);
                    }
                }
            }
        })
    }
}
