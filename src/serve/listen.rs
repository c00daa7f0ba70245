//! Accepting `rkers serve`'s connections, so that it can face a network and not only a
//! proxy: at most `max_connections` open at once (the next one waits in the listen backlog
//! until one closes), a deadline for a request's headers (hyper's header read timeout, also
//! for the TLS handshake) and one for its whole body (tower-http's deadline, which a body
//! sent a byte a second cannot stretch the way it stretches a per-read timeout), TLS when
//! `--tls-cert` is given, and a graceful end that lets the requests in flight finish.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::Layer;

use super::tls::Tls;

/// The bounds on every connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; the next one is accepted once one closes.
    pub max_connections: usize,
    /// From the connection (or the end of the previous response) to the request's last header
    /// line; the TLS handshake has as long.
    pub header_timeout: Duration,
    /// From the request's headers to the last byte of its body.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 256,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
        }
    }
}

/// A pause after an accept that failed (out of file descriptors): a loop retrying at once
/// would spin on the error.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `stop` is cancelled; then accepts nothing more, asks
/// every connection to close after its request in flight and waits for them.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: Limits,
    tls: Option<Arc<Tls>>,
    stop: CancellationToken,
) {
    let service =
        tower_http::timeout::RequestBodyDeadlineLayer::new(limits.body_timeout).layer(router);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    loop {
        // A slot first: past the cap, connections wait unaccepted in the kernel's backlog.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            _ = stop.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            _ = stop.cancelled() => break,
        };
        let service = TowerToHyperService::new(service.clone());
        let watcher = graceful.watcher();
        let tls = tls.as_ref().map(|t| t.acceptor());
        tokio::spawn(async move {
            let _slot = slot;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let served = match tls {
                None => {
                    watcher
                        .watch(http.serve_connection(TokioIo::new(stream), service))
                        .await
                }
                Some(acceptor) => {
                    let stream =
                        match tokio::time::timeout(limits.header_timeout, acceptor.accept(stream))
                            .await
                        {
                            Ok(Ok(stream)) => stream,
                            Ok(Err(e)) => return debug(peer, "TLS handshake", &e),
                            Err(_) => return debug(peer, "TLS handshake", &"timed out"),
                        };
                    watcher
                        .watch(http.serve_connection(TokioIo::new(stream), service))
                        .await
                }
            };
            if let Err(e) = served {
                debug(peer, "connection", &e);
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// A connection that ended badly is the client's business (a timeout, a reset, a client that
/// spoke plain HTTP to the TLS port): logged for debugging, not as the server's error.
fn debug(peer: SocketAddr, what: &str, e: &dyn std::fmt::Display) {
    tracing::debug!(%peer, "{what}: {e}");
}
