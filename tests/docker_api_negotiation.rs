//! rkers' own Docker client against daemons with the API ranges of Docker 20.10, 29 and a
//! release newer than bollard knows. Docker 29 cannot run here (the sandbox has 20.10), so the
//! daemon is a test double that answers `/version`, `/info` and `/_ping` and refuses any other
//! API version the way dockerd's version middleware does ("client version X is too old / too
//! new"). What is checked: the connection negotiates, every request it makes is one the daemon
//! accepts, the facts carry the daemon's own range, and the API check decides from it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rkers::hosts::docker::{DockerClient, StreamOpener};
use rkers::hosts::{HostFacts, docker_api_check};
use rkers::metadata::docker_api::{ApiVersion, RuntimeClient, Verdict};

/// A Docker daemon's version and API range, and every request path it was asked.
#[derive(Clone)]
struct FakeDocker {
    version: &'static str,
    min_api: ApiVersion,
    api: ApiVersion,
    seen: Arc<Mutex<Vec<(String, u16)>>>,
}

impl FakeDocker {
    fn new(version: &'static str, min: &str, max: &str) -> Self {
        FakeDocker {
            version,
            min_api: ApiVersion::parse(min).unwrap(),
            api: ApiVersion::parse(max).unwrap(),
            seen: Arc::default(),
        }
    }

    /// Docker's answer to one request: the version prefix checked first, as dockerd does.
    fn answer(&self, path: &str) -> (StatusCode, String) {
        let (version, rest) = match path.strip_prefix("/v").and_then(|p| p.split_once('/')) {
            Some((v, rest)) => match ApiVersion::parse(v) {
                Some(v) => (v, format!("/{rest}")),
                None => return (StatusCode::NOT_FOUND, "{}".into()),
            },
            None => (self.api, path.to_string()),
        };
        let message = |m: String| serde_json::json!({ "message": m }).to_string();
        if version < self.min_api {
            return (
                StatusCode::BAD_REQUEST,
                message(format!(
                    "client version {version} is too old. Minimum supported API version is {}, please upgrade your client to a newer version",
                    self.min_api
                )),
            );
        }
        if version > self.api {
            return (
                StatusCode::BAD_REQUEST,
                message(format!(
                    "client version {version} is too new. Maximum supported API version is {}",
                    self.api
                )),
            );
        }
        let route = rest.split('?').next().unwrap_or_default();
        let body = match route {
            "/_ping" => return (StatusCode::OK, "OK".into()),
            "/version" => serde_json::json!({
                "Version": self.version,
                "ApiVersion": self.api.to_string(),
                "MinAPIVersion": self.min_api.to_string(),
                "Os": "linux",
                "Arch": "amd64",
            }),
            "/info" => serde_json::json!({
                "ServerVersion": self.version,
                "OSType": "linux",
                "OperatingSystem": "Debian GNU/Linux 13 (trixie)",
                "Architecture": "x86_64",
                "CgroupDriver": "systemd",
                "CgroupVersion": "2",
                "DockerRootDir": "/var/lib/docker",
                "SecurityOptions": ["name=seccomp,profile=builtin"],
            }),
            _ => {
                return (
                    StatusCode::NOT_FOUND,
                    message(format!("page not found: {route}")),
                );
            }
        };
        (StatusCode::OK, body.to_string())
    }

    /// One stream per exchange, as rkers opens them: an in-memory pipe served by this double.
    fn opener(&self) -> StreamOpener {
        let daemon = self.clone();
        Arc::new(move || {
            let daemon = daemon.clone();
            Box::pin(async move {
                let (client, server) = tokio::io::duplex(64 * 1024);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let daemon = daemon.clone();
                        async move {
                            let path = req
                                .uri()
                                .path_and_query()
                                .map(|p| p.as_str().to_string())
                                .unwrap_or_default();
                            let (status, body) = daemon.answer(&path);
                            daemon.seen.lock().unwrap().push((path, status.as_u16()));
                            Response::builder()
                                .status(status)
                                .header("Content-Type", "application/json")
                                .header("Api-Version", daemon.api.to_string())
                                .body(Full::new(Bytes::from(body)))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(server), service)
                        .await;
                });
                Ok(Box::new(client) as rkers::hosts::ssh::BoxedStream)
            })
        })
    }

    fn refused(&self) -> Vec<(String, u16)> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, status)| *status != 200)
            .cloned()
            .collect()
    }
}

async fn connect(daemon: &FakeDocker) -> (DockerClient, HostFacts) {
    let client = DockerClient::connect_with(
        "fake",
        "fake-docker",
        daemon.opener(),
        Duration::from_secs(5),
    )
    .await
    .unwrap_or_else(|e| panic!("Docker {}: {e}", daemon.version));
    let facts = HostFacts::gather(&client)
        .await
        .unwrap_or_else(|e| panic!("Docker {}: {e}", daemon.version));
    (client, facts)
}

fn runtime(k8s: &str, cri_dockerd: bool, tools: &str) -> RuntimeClient {
    RuntimeClient {
        kubernetes_version: k8s.into(),
        cri_dockerd,
        tools_image: format!("rancher/rke-tools:{tools}"),
    }
}

#[tokio::test]
async fn docker_29_is_driven_and_checked_from_its_own_range() {
    let daemon = FakeDocker::new("29.0.1", "1.44", "1.52");
    let (client, facts) = connect(&daemon).await;
    assert_eq!(client.api_version(), "1.52");
    assert!(daemon.refused().is_empty(), "{:?}", daemon.refused());
    assert!(!daemon.seen.lock().unwrap().is_empty());
    assert_eq!(facts.docker_version, "29.0.1");
    assert_eq!(facts.engine_api_version, "1.52");
    assert_eq!(facts.engine_min_api_version, "1.44");
    client.ping().await.unwrap();
    assert!(daemon.refused().is_empty(), "{:?}", daemon.refused());

    // cri-dockerd 0.3.16 (rke-tools v0.1.108) speaks 1.44: works.
    let (check, refusal) = docker_api_check(
        "fake",
        &facts,
        &runtime("v1.31.14-rancher1-1", true, "v0.1.108"),
        false,
    );
    assert!(refusal.is_none(), "{check:?}");
    assert_eq!(check.spoken_api, ApiVersion::parse("1.44"));
    // kubelet v1.23's dockershim speaks 1.41: refused, with the reason and the remedy.
    let (check, refusal) = docker_api_check(
        "fake",
        &facts,
        &runtime("v1.23.16-rancher2-3", false, "v0.1.89"),
        false,
    );
    let error = refusal.expect("refused").to_string();
    assert!(
        error.starts_with(
            "host fake: Docker 29.0.1 accepts Engine API ≥ 1.44; kubelet v1.23's dockershim speaks ≤ 1.41: "
        ) && error.contains("min-api-version"),
        "{error}"
    );
    assert!(matches!(check.verdict, Verdict::Refused { .. }));
}

#[tokio::test]
async fn docker_20_10_and_a_docker_newer_than_bollard() {
    let old = FakeDocker::new("20.10.24", "1.12", "1.41");
    let (client, facts) = connect(&old).await;
    assert_eq!(client.api_version(), "1.41");
    assert!(old.refused().is_empty(), "{:?}", old.refused());
    assert_eq!(facts.engine_min_api_version, "1.12");

    let newer = FakeDocker::new("31.0.0", "1.44", "1.60");
    let (client, facts) = connect(&newer).await;
    // bollard keeps its own newest version when the daemon's is newer still.
    let spoken = ApiVersion::parse(client.api_version()).unwrap();
    assert!(spoken >= ApiVersion::new(1, 44) && spoken <= ApiVersion::new(1, 60));
    assert!(newer.refused().is_empty(), "{:?}", newer.refused());
    assert_eq!(facts.engine_api_version, "1.60");
}
