//! The server on a real socket (issue 50, item 7): slow clients cut off at the header and body
//! deadlines, connections beyond the cap kept waiting, its own TLS with a certificate replaced
//! while it runs; and, through the router, the checks a server facing a network needs (a wrong
//! secret key, a SQLite file others may read, a PUT on a busy cluster).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::tests::{CLUSTER_YML, TOKEN, app, call, databases};
use super::*;

/// A server on a free loopback port; stopped when the token is dropped.
async fn start(
    limits: listen::Limits,
    tls: Option<Arc<tls::Tls>>,
) -> (
    std::net::SocketAddr,
    tokio_util::sync::DropGuard,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("serve.db").display());
    let app = app(&url, "a").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(listen::serve(
        listener,
        router(app),
        limits,
        tls,
        stop.clone(),
    ));
    (addr, stop.drop_guard(), dir)
}

/// Reads until the server closes the connection (or `limit` passes); what it sent and when.
async fn read_until_closed(
    stream: &mut (impl AsyncReadExt + Unpin),
    limit: Duration,
) -> (String, Option<Duration>) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            stream.read(&mut buf),
        )
        .await
        {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    String::from_utf8_lossy(&got).into(),
                    Some(started.elapsed()),
                );
            }
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into(), None),
        }
    }
}

fn limits(header: u64, body: u64, max: usize) -> listen::Limits {
    listen::Limits {
        max_connections: max,
        header_timeout: Duration::from_millis(header),
        body_timeout: Duration::from_millis(body),
    }
}

/// One header line every 200 ms: before, such a client held its connection as long as it
/// liked (still open after 45 s); now it is closed at the header deadline.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_sending_headers_slowly_is_cut_off_at_the_header_deadline() {
    let (addr, _stop, _dir) = start(limits(1000, 10_000, 8), None).await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let trickle = tokio::spawn(async move {
        write.write_all(b"GET /healthz HTTP/1.1\r\n").await?;
        for i in 0..50 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            write
                .write_all(format!("x-slow-{i}: a\r\n").as_bytes())
                .await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let (text, closed) = read_until_closed(&mut read, Duration::from_secs(6)).await;
    trickle.abort();
    let closed = closed.expect("the connection is still open 6 s after the 1 s header deadline");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}");
    assert!(!text.contains("200 OK"), "{text}");

    // A client that connects and sends nothing holds no slot for longer either.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let (_, closed) = read_until_closed(&mut silent, Duration::from_secs(6)).await;
    let closed = closed.expect("a silent connection is still open 6 s after the deadline");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}");
}

/// A body announced as 100000 bytes, sent a byte every 200 ms: a per-read timeout never
/// trips; the body deadline ends the request and the connection.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_sending_a_body_slowly_is_cut_off_at_the_body_deadline() {
    let (addr, _stop, _dir) = start(limits(10_000, 1000, 8), None).await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let trickle = tokio::spawn(async move {
        let head = format!(
            "PUT /v1/clusters/slow HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\n\
             content-length: 100000\r\n\r\n"
        );
        write.write_all(head.as_bytes()).await?;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            write.write_all(b"a").await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let (text, closed) = read_until_closed(&mut read, Duration::from_secs(6)).await;
    trickle.abort();
    let closed = closed.expect("the connection is still open 6 s after the 1 s body deadline");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}");
    assert!(text.starts_with("HTTP/1.1 4"), "{text}");
}

/// With a cap of 2, a third connection is not served while two are open, and is once one
/// of them closes.
#[tokio::test(flavor = "multi_thread")]
async fn a_connection_beyond_the_cap_waits_until_one_closes() {
    let (addr, _stop, _dir) = start(limits(10_000, 10_000, 2), None).await;
    let first = TcpStream::connect(addr).await.unwrap();
    let _second = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = TcpStream::connect(addr).await.unwrap();
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let waited = tokio::time::timeout(Duration::from_millis(700), third.read(&mut buf)).await;
    assert!(waited.is_err(), "served beyond the cap: {waited:?}");
    drop(first);
    let (text, closed) = read_until_closed(&mut third, Duration::from_secs(5)).await;
    assert!(closed.is_some(), "not served after a slot freed: {text}");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

fn write_pair(
    dir: &std::path::Path,
    name: &str,
) -> (std::path::PathBuf, std::path::PathBuf, Vec<u8>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key, made.cert.der().to_vec())
}

/// An HTTPS request trusting only `der`; the status line and the certificate served.
async fn https_get(addr: std::net::SocketAddr, der: &[u8]) -> Result<(String, Vec<u8>), String> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from(der.to_vec()))
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let served = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    tls.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let (text, _) = read_until_closed(&mut tls, Duration::from_secs(5)).await;
    Ok((text.lines().next().unwrap_or("").to_string(), served))
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_is_served_refuses_plain_http_and_a_replaced_certificate_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, first) = write_pair(dir.path(), "one");
    let tls = Arc::new(tls::Tls::load(&cert, &key).unwrap());
    let _watch = tls.clone().watch(Duration::from_millis(100));
    let (addr, _stop, _db) = start(limits(2000, 2000, 8), Some(tls)).await;

    let (status, served) = https_get(addr, &first).await.unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(served, first);

    // Plain HTTP to the TLS port gets no answer of the API.
    let mut plain = TcpStream::connect(addr).await.unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let (text, closed) = read_until_closed(&mut plain, Duration::from_secs(5)).await;
    assert!(closed.is_some(), "plain HTTP left open");
    assert!(!text.contains("HTTP/1.1"), "{text}");

    // The files replaced (as a renewal does): the new certificate from the next handshake on.
    let (new_cert, new_key, second) = write_pair(dir.path(), "two");
    std::fs::rename(&new_key, &key).unwrap();
    std::fs::rename(&new_cert, &cert).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match https_get(addr, &second).await {
            Ok((status, served)) => {
                assert_eq!(status, "HTTP/1.1 200 OK");
                assert_eq!(served, second);
                break;
            }
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the replaced certificate is not served: {e}"),
        }
    }
    assert!(
        https_get(addr, &first).await.is_err(),
        "the old certificate is still served"
    );
}

#[test]
fn tls_files_that_do_not_load_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, _) = write_pair(dir.path(), "one");
    let (_, other_key, _) = write_pair(dir.path(), "two");
    let err = tls::Tls::load(&cert, &other_key).unwrap_err().to_string();
    assert!(err.contains("two.key") && err.contains("one.crt"), "{err}");
    std::fs::write(dir.path().join("junk"), "not pem").unwrap();
    let err = tls::Tls::load(&dir.path().join("junk"), &key)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("junk") && err.contains("no PEM certificate"),
        "{err}"
    );
    let err = tls::Tls::load(&cert, &dir.path().join("junk"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("junk") && err.contains("private key"), "{err}");
    let err = tls::Tls::load(&cert, std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/dev/zero"), "{err}");
}

/// A replica started with another `--secret-key-file` said ok, then answered 500 to every
/// cluster call; now `/healthz` says why it cannot serve, also on a database with no cluster
/// yet (the key check row).
#[tokio::test(flavor = "multi_thread")]
async fn healthz_fails_when_the_secret_key_cannot_open_the_database() {
    for (url, _keep) in databases().await {
        let right = app(&url, "a").await;
        let (status, body) = call(&right, "GET", "/healthz", None, "").await;
        assert_eq!(status, StatusCode::OK, "{url}: {body}");
        let mut wrong = app(&url, "b").await;
        wrong.secrets = SecretBox::new(&[7; 32]);
        let (status, body) = call(&wrong, "GET", "/healthz", None, "").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{url}: {body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("--secret-key-file"),
            "{body}"
        );
        assert!(check_key(&wrong.db, &wrong.secrets).await.is_err());
        assert!(check_key(&right.db, &right.secrets).await.is_ok());
    }
    // A database from before the key check: its clusters' configs are what is checked.
    for (url, _keep) in databases().await {
        let right = app(&url, "a").await;
        let (status, body) = call(&right, "PUT", "/v1/clusters/c", Some(TOKEN), CLUSTER_YML).await;
        assert!(status.is_success(), "{body}");
        sqlx::query("DELETE FROM key_check")
            .execute(&right.db.pool)
            .await
            .unwrap();
        let mut wrong = app(&url, "b").await;
        wrong.secrets = SecretBox::new(&[7; 32]);
        let err = check_key(&wrong.db, &wrong.secrets)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("config of cluster c"), "{err}");
    }
}

/// A SQLite file others may read (made by hand, or by an older rkers) is made 0600.
#[tokio::test(flavor = "multi_thread")]
async fn an_existing_sqlite_file_others_may_read_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.db");
    let url = format!("sqlite://{}", path.display());
    Db::connect(&url).await.unwrap().pool.close().await;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    Db::connect(&url).await.unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

/// `PUT` while an operation holds the cluster answered 200 and replaced the config the
/// operation was running with; now it is 409, as a second operation is, and the config stays.
#[tokio::test(flavor = "multi_thread")]
async fn a_put_on_a_busy_cluster_is_409_and_keeps_the_config() {
    for (url, _keep) in databases().await {
        let app = app(&url, "a").await;
        let (status, body) = call(&app, "PUT", "/v1/clusters/c", Some(TOKEN), CLUSTER_YML).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        app.db.try_lock("c", "op-1", "a").await.unwrap();
        let changed = CLUSTER_YML.replace("127.0.0.1", "127.0.0.2");
        let (status, body) = call(&app, "PUT", "/v1/clusters/c", Some(TOKEN), &changed).await;
        assert_eq!(status, StatusCode::CONFLICT, "{url}: {body}");
        assert_eq!(body["operation_id"], "op-1", "{body}");
        let stored = app.db.cluster_config("c").await.unwrap().unwrap();
        let stored = app.secrets.open_string("config:c", &stored).unwrap();
        assert_eq!(stored, CLUSTER_YML);
        app.db.release_lock("c", "op-1").await.unwrap();
        let (status, body) = call(&app, "PUT", "/v1/clusters/c", Some(TOKEN), &changed).await;
        assert_eq!(status, StatusCode::OK, "{url}: {body}");
    }
}
