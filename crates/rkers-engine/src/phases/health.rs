//! Health checks of components (§15): an HTTP(S) GET made *from the node*, through an SSH
//! `direct-tcpip` channel on the host's one connection, as RKE1 makes it. Unlike RKE1, a server
//! certificate signed by the cluster CA is verified against that CA; the self-signed serving
//! certificates of the scheduler and controller-manager (≥ 1.22) cannot be, so for those only
//! the HTTP status counts, as in RKE1.

use crate::hosts::HostLink;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::sync::Arc;
use std::time::Duration;

pub use rkers_core::health::TlsMaterial;

/// Why a health check failed. The texts are RKE1's where it had one (§9).
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("{method} {url}: no answer within {secs}s")]
    NoAnswer {
        method: http::Method,
        url: String,
        secs: u64,
    },
    /// The request could not be made or got no HTTP answer (the URL, the tunnel through the
    /// node, TLS, HTTP); the text names the step.
    #[error("{0}")]
    Request(String),
    /// The check answered something else than healthy until the time allowed ran out, or its
    /// container stopped or keeps crashing (`last`).
    #[error("{url} not healthy: {last}")]
    NotHealthy { url: String, last: String },
    /// A component on `host` failed its check; `log` is its last log lines, ` | `-joined.
    #[error("{name}: Failed to verify healthcheck: {source}, log: {log}")]
    Component {
        host: String,
        name: String,
        #[source]
        source: Box<HealthError>,
        log: String,
    },
}

impl crate::error::HostContext for HealthError {
    fn hosts(&self) -> Vec<&str> {
        match self {
            HealthError::Component { host, .. } => vec![host],
            HealthError::NoAnswer { .. }
            | HealthError::Request(_)
            | HealthError::NotHealthy { .. } => Vec::new(),
        }
    }
}

/// One GET of `url` through the node; returns the status and body.
pub async fn get(
    ssh: &dyn HostLink,
    url: &str,
    tls: Option<&TlsMaterial>,
    timeout: Duration,
) -> Result<(u16, String), HealthError> {
    request(ssh, http::Method::GET, url, None, tls, timeout).await
}

/// One POST of the JSON `body` to `url` through the node (etcd's JSON gateway, which answers
/// the same questions as `etcdctl` without a container exec); returns the status and body.
pub async fn post_json(
    ssh: &dyn HostLink,
    url: &str,
    body: &str,
    tls: Option<&TlsMaterial>,
    timeout: Duration,
) -> Result<(u16, String), HealthError> {
    request(ssh, http::Method::POST, url, Some(body), tls, timeout).await
}

async fn request(
    ssh: &dyn HostLink,
    method: http::Method,
    url: &str,
    json: Option<&str>,
    tls: Option<&TlsMaterial>,
    timeout: Duration,
) -> Result<(u16, String), HealthError> {
    let exchange = async {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("bad health URL {url}: {e}"))?;
        let https = uri.scheme_str() == Some("https");
        let host = uri.host().unwrap_or("localhost").to_string();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let stream = ssh
            .open_tcp(&host, port)
            .await
            .map_err(|e| format!("connect {host}:{port} from the node: {e}"))?;
        let path = uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .to_string();
        let mut request = http::Request::builder()
            .method(method.clone())
            .uri(&path)
            .header(http::header::HOST, format!("{host}:{port}"));
        if json.is_some() {
            request = request.header(http::header::CONTENT_TYPE, "application/json");
        }
        let request = request
            .body(Full::new(Bytes::from(json.unwrap_or_default().to_owned())))
            .map_err(|e| e.to_string())?;
        if https {
            let config = client_config(tls)?;
            let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
            let name = ServerName::try_from(host.clone())
                .map_err(|e| format!("server name {host}: {e}"))?;
            let tls_stream = connector
                .connect(name, stream)
                .await
                .map_err(|e| format!("TLS with {host}:{port}: {e}"))?;
            send(TokioIo::new(tls_stream), request).await
        } else {
            send(TokioIo::new(stream), request).await
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| HealthError::NoAnswer {
            method,
            url: url.to_string(),
            secs: timeout.as_secs(),
        })?
        .map_err(HealthError::Request)
}

async fn send<T>(io: T, request: http::Request<Full<Bytes>>) -> Result<(u16, String), String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("HTTP request: {e}"))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    Ok((status, body))
}

fn client_config(tls: Option<&TlsMaterial>) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match tls.and_then(|t| t.ca_pem.as_deref()) {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in pem_certs(ca)? {
                roots.add(cert).map_err(|e| format!("cluster CA: {e}"))?;
            }
            builder.with_root_certificates(roots)
        }
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServer(provider))),
    };
    match tls.and_then(|t| Some((t.client_cert_pem.as_deref()?, t.client_key_pem.as_deref()?))) {
        Some((cert, key)) => {
            use rustls::pki_types::pem::PemObject;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                .map_err(|e| format!("client key: {e}"))?;
            builder
                .with_client_auth_cert(pem_certs(cert)?, key)
                .map_err(|e| format!("client certificate: {e}"))
        }
        None => Ok(builder.with_no_client_auth()),
    }
}

fn pem_certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("certificate PEM: {e}"))
}

/// For self-signed component serving certificates, which no CA vouches for.
#[derive(Debug)]
struct AcceptAnyServer(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Retries a check until it answers 200 (and `accept` agrees with the body), as RKE1 does
/// (10 × 5 s for components, 18 × 5 s for etcd). `attempts` sets the time allowed, as long as
/// that many attempts took before (1 s apart for the first 5, then 5 s), but the check is asked
/// far more often (`next_pause`): a component that turns healthy is seen within a tenth of a
/// second of it at first, not up to 5 s later.
pub async fn wait_healthy(
    ssh: &dyn HostLink,
    url: &str,
    tls: Option<&TlsMaterial>,
    attempts: u32,
    accept: impl Fn(&str) -> bool,
) -> Result<(), HealthError> {
    wait_healthy_watching(ssh, url, tls, attempts, accept, None).await
}

/// [`wait_healthy`], and when `container` names the container that serves the check, a look
/// at it after each unanswered request: a container that stopped for good or keeps crashing is
/// reported at once, with its exit code, instead of after the whole wait.
async fn wait_healthy_watching(
    ssh: &dyn HostLink,
    url: &str,
    tls: Option<&TlsMaterial>,
    attempts: u32,
    accept: impl Fn(&str) -> bool,
    container: Option<(&crate::hosts::DockerClient, &str)>,
) -> Result<(), HealthError> {
    let attempts = attempts.max(1);
    let allowed = Duration::from_secs(u64::from(attempts.min(5) + 5 * attempts.saturating_sub(5)));
    let started = tokio::time::Instant::now();
    let mut pause = Duration::ZERO;
    let mut restarts_before: Option<i64> = None;
    let mut last;
    loop {
        match get(ssh, url, tls, Duration::from_secs(10)).await {
            Ok((200, body)) if accept(&body) => return Ok(()),
            Ok((status, body)) => {
                last = format!(
                    "HTTP {status}: {}",
                    body.trim().chars().take(200).collect::<String>()
                )
            }
            Err(e) => last = e.to_string(),
        }
        if let Some((docker, name)) = container {
            // A Docker API call that fails says nothing about the container: keep polling.
            if let Ok(seen) = docker.inspect_container(name).await {
                let baseline = *restarts_before
                    .get_or_insert_with(|| seen.as_ref().map_or(0, |c| c.restart_count));
                if let Some(crash) = crashed(seen.as_ref(), baseline) {
                    return Err(HealthError::NotHealthy {
                        url: url.to_string(),
                        last: crash,
                    });
                }
            }
        }
        let waited = started.elapsed();
        if waited >= allowed {
            break;
        }
        pause = next_pause(pause, waited);
        tokio::time::sleep(pause).await;
    }
    Err(HealthError::NotHealthy {
        url: url.to_string(),
        last,
    })
}

/// Restarts by Docker's restart policy, seen during one wait, that make a crash loop: the
/// policy's own back-off (0.1 s, doubling) lets a container that exits at once reach this in
/// a few seconds, while one that exits once on its way up (waiting for a peer) does not.
const CRASH_LOOP_RESTARTS: i64 = 3;

/// Why the container a health check waits on will not answer, when that is already certain:
/// it is gone, it stopped and Docker will not start it again, or it keeps crashing
/// (`restarts_before`: its restart count when the wait began).
fn crashed(
    container: Option<&crate::hosts::ObservedContainer>,
    restarts_before: i64,
) -> Option<String> {
    let Some(c) = container else {
        return Some("its container is gone".into());
    };
    let exit = c.exit_code.map_or_else(
        || "no exit code".to_string(),
        |code| format!("exit code {code}"),
    );
    let stopped = !c.running && !c.restarting && matches!(c.status.as_str(), "exited" | "dead");
    if stopped {
        return Some(format!("its container stopped ({exit})"));
    }
    let restarts = c.restart_count - restarts_before;
    (restarts >= CRASH_LOOP_RESTARTS)
        .then(|| format!("its container keeps crashing ({restarts} restarts, last {exit})"))
}

/// The pause before the next health request, after a pause of `previous`, `waited` into the
/// wait: 100 ms at first, half as long again each time, at most 0.5 s up to 30 s into the wait
/// (most components answer within seconds, and the next step of a new cluster waits for each
/// answer: kube-apiserver's, for one, lets RBAC in, which kubelets are backing off to register
/// through), then 5 s as RKE1 (a component that slow is usually failing, and 30 hosts asking
/// often would load the machine).
fn next_pause(previous: Duration, waited: Duration) -> Duration {
    const FIRST: Duration = Duration::from_millis(100);
    if waited >= Duration::from_secs(30) {
        return Duration::from_secs(5);
    }
    previous
        .mul_f32(1.5)
        .max(FIRST)
        .min(Duration::from_millis(500))
}

/// etcd's `/health` answers `{"health":"true"}` (older releases `{"health": "true"}`).
pub fn etcd_body_healthy(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("health").cloned())
        .is_some_and(|h| h == "true" || h == true)
}

/// Waits until a component answers its health check, as RKE1 checks each one it starts (§9):
/// etcd has fewer tries and must report itself healthy in the body. Its container is watched
/// meanwhile, so a crash fails at once. A failure carries the component's last log lines, the
/// first thing an operator needs.
pub async fn wait_component(
    host: &crate::hosts::Host,
    name: &str,
    url: &str,
    tls: Option<&TlsMaterial>,
) -> Result<(), HealthError> {
    let etcd = name == crate::plan::ETCD;
    let attempts = if etcd { 18 } else { 24 };
    let accept = |body: &str| !etcd || etcd_body_healthy(body);
    let watched = Some((host.docker(), name));
    if let Err(e) =
        wait_healthy_watching(host.link().as_ref(), url, tls, attempts, accept, watched).await
    {
        let logs = host.docker().logs(name, 5).await.unwrap_or_default();
        let last: Vec<&str> = logs
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        return Err(HealthError::Component {
            host: host.name().to_string(),
            name: name.to_string(),
            source: Box::new(e),
            log: last[last.len().saturating_sub(3)..].join(" | "),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::ObservedContainer;

    #[test]
    fn etcd_health_bodies() {
        assert!(etcd_body_healthy(r#"{"health":"true"}"#));
        assert!(etcd_body_healthy(r#"{"health": "true", "reason": ""}"#));
        assert!(!etcd_body_healthy(
            r#"{"health":"false","reason":"RAFT NO LEADER"}"#
        ));
        assert!(!etcd_body_healthy("ok"));
    }

    #[test]
    fn health_is_asked_often_first_then_backs_off() {
        let mut pause = Duration::ZERO;
        let mut pauses = Vec::new();
        for _ in 0..10 {
            pause = next_pause(pause, Duration::from_secs(2));
            pauses.push(pause.as_millis());
        }
        assert_eq!(pauses[..4], [100, 150, 225, 337]);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]), "{pauses:?}");
        assert_eq!(*pauses.last().unwrap(), 500);
        assert_eq!(
            next_pause(Duration::from_millis(100), Duration::from_secs(31)),
            Duration::from_secs(5)
        );
    }

    fn container(
        status: &str,
        running: bool,
        restarting: bool,
        restarts: i64,
    ) -> ObservedContainer {
        ObservedContainer {
            status: status.into(),
            running,
            restarting,
            restart_count: restarts,
            exit_code: Some(1),
            ..Default::default()
        }
    }

    #[test]
    fn a_crashed_container_is_reported_before_the_wait_ends() {
        let exited = container("exited", false, false, 0);
        assert_eq!(
            crashed(Some(&exited), 0).as_deref(),
            Some("its container stopped (exit code 1)")
        );
        assert_eq!(crashed(None, 0).as_deref(), Some("its container is gone"));
        let looping = container("restarting", false, true, 7);
        assert_eq!(
            crashed(Some(&looping), 4).as_deref(),
            Some("its container keeps crashing (3 restarts, last exit code 1)")
        );
    }

    #[test]
    fn a_container_on_its_way_up_is_waited_for() {
        assert_eq!(
            crashed(Some(&container("running", true, false, 0)), 0),
            None
        );
        // Restarted before the wait began, or once or twice on its way up.
        assert_eq!(
            crashed(Some(&container("running", true, false, 9)), 9),
            None
        );
        assert_eq!(
            crashed(Some(&container("restarting", false, true, 2)), 0),
            None
        );
        // Created, not started yet.
        assert_eq!(
            crashed(Some(&container("created", false, false, 0)), 0),
            None
        );
    }
}
