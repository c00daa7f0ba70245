//! The deliberate timeouts of an SSH connect, and how a silent server is told apart from a slow
//! one.
//!
//! A connect goes through three stages, each with its own bound and its own message:
//! 1. TCP (or the bastion's channel) until connected: `connect_timeout` (15 s by default);
//!    a timeout here is retried, the host may still be booting.
//! 2. The server's identification line (`SSH-2.0-...`): [`BANNER_TIMEOUT`] after the TCP
//!    connect. A server that accepts TCP and says nothing is not sshd, or a hung one: reported
//!    at once as "no SSH banner", never retried.
//! 3. Key exchange and authentication: until `connect_timeout` after the TCP connect. A server
//!    that sent its banner and then stalls is reported with that banner, never retried.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::error::HostError;

/// How long after the TCP connect the server must have sent its identification line. OpenSSH
/// sends it at once; 10 s leaves room for a loaded host and a slow link.
pub const BANNER_TIMEOUT: Duration = Duration::from_secs(10);

/// The first bytes the server sent are kept (at most this many) to show its banner.
const KEEP: usize = 256;

/// What a connect attempt got so far, shared by the stream and the watchdog.
#[derive(Default)]
pub(crate) struct Progress {
    connected_at: Option<Instant>,
    received: Vec<u8>,
}

pub(crate) type SharedProgress = Arc<Mutex<Progress>>;

pub(crate) fn mark_connected(p: &SharedProgress) {
    lock(p).connected_at = Some(Instant::now());
}

fn lock(p: &SharedProgress) -> std::sync::MutexGuard<'_, Progress> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bounds of one attempt, for [`watch`].
pub(crate) struct Bounds<'a> {
    pub host: &'a str,
    pub addr: &'a str,
    pub port: u16,
    pub connect_timeout: Duration,
    pub banner_timeout: Duration,
}

/// Resolves with the error of the first bound that is exceeded; never resolves while the
/// attempt is within its bounds (the caller races it against the attempt).
pub(crate) async fn watch(progress: SharedProgress, b: Bounds<'_>) -> HostError {
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let p = lock(&progress);
        match p.connected_at {
            None if started.elapsed() >= b.connect_timeout => {
                return HostError::ConnectTimeout {
                    host: b.host.to_owned(),
                    addr: b.addr.to_owned(),
                    port: b.port,
                    secs: b.connect_timeout.as_secs().max(1),
                };
            }
            None => {}
            Some(at) if p.received.is_empty() && at.elapsed() >= b.banner_timeout => {
                return HostError::NoBanner {
                    host: b.host.to_owned(),
                    addr: b.addr.to_owned(),
                    secs: b.banner_timeout.as_secs().max(1),
                };
            }
            Some(at) if !p.received.is_empty() && at.elapsed() >= b.connect_timeout => {
                return HostError::Stalled {
                    host: b.host.to_owned(),
                    addr: b.addr.to_owned(),
                    banner: banner_text(&p.received),
                    secs: b.connect_timeout.as_secs().max(1),
                };
            }
            Some(_) => {}
        }
    }
}

/// The first line the server sent, printable and short, for a message.
fn banner_text(received: &[u8]) -> String {
    let line = received.split(|b| *b == b'\n').next().unwrap_or_default();
    let text: String = String::from_utf8_lossy(line)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(80)
        .collect();
    text.trim_end_matches('?').to_owned()
}

/// A stream that records the first bytes read from it.
pub(crate) struct Watched<S> {
    inner: S,
    progress: SharedProgress,
}

impl<S> Watched<S> {
    pub(crate) fn new(inner: S, progress: SharedProgress) -> Self {
        Watched { inner, progress }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &r {
            let new = &buf.filled()[before..];
            let mut p = lock(&self.progress);
            let room = KEEP.saturating_sub(p.received.len());
            p.received.extend_from_slice(&new[..new.len().min(room)]);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_is_its_first_line_made_printable() {
        assert_eq!(
            banner_text(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n\x00\x00\x01"),
            "SSH-2.0-OpenSSH_9.2p1 Debian-2"
        );
        assert_eq!(banner_text(b"HTTP/1.1 400\x1b[31m"), "HTTP/1.1 400?[31m");
    }
}
