//! rkers' own Docker client against real daemons: Debian's dockerd 20.10 and Docker 29 built from
//! its Go modules (scripts/build-modules docker), each started here on a socket of its own (no
//! network set up, no container run); Docker 29 once with the minimum API version of 29.0–29.2
//! (1.44, given as `DOCKER_MIN_API_VERSION`, which dockerd 29 reads) and once with its own
//! (1.40, from 29.3). What is checked: the connection negotiates, the facts carry the daemon's
//! own range, and the API check decides from it: the runtime each Kubernetes version speaks is
//! accepted or refused with the reason and the remedy.
//!
//! A Docker newer than bollard knows does not exist yet: that one daemon is a test double that
//! answers `/version`, `/info` and `/_ping` and refuses any other API version the way dockerd's
//! version middleware does ("client version X is too old / too new").

mod support;

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

/// The API check of kubelet v1.23's dockershim (Engine API ≤ 1.41) on the daemon of `facts`.
fn dockershim_v1_23(
    facts: &HostFacts,
) -> (
    rkers::metadata::docker_api::DockerApiCheck,
    Option<rkers::hosts::HostError>,
) {
    docker_api_check(
        "local",
        facts,
        &runtime("v1.23.16-rancher2-3", false, "v0.1.89"),
        false,
    )
}

/// A dockerd of its own: its data, exec root and socket in a temporary directory, no bridge and
/// no iptables rules; stopped when dropped.
struct RealDocker {
    child: std::process::Child,
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl RealDocker {
    /// `dockerd` from `bin` (with the containerd and runc beside it first on its PATH), with
    /// `env`; `None` (the test skipped) when not root.
    fn start(bin: &std::path::Path, env: &[(&str, &str)]) -> Option<RealDocker> {
        if !support::is_root() {
            support::skip("starting a dockerd needs root");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("rkers-dockerd-")
            .tempdir_in("/tmp")
            .unwrap();
        let socket = dir.path().join("docker.sock");
        let log = std::fs::File::create(dir.path().join("dockerd.log")).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = std::process::Command::new(bin.join("dockerd"))
            .arg("--data-root")
            .arg(dir.path().join("data"))
            .arg("--exec-root")
            .arg(dir.path().join("exec"))
            .arg("--pidfile")
            .arg(dir.path().join("dockerd.pid"))
            .arg("--host")
            .arg(format!("unix://{}", socket.display()))
            .args(["--bridge=none", "--iptables=false", "--ip6tables=false"])
            .env("PATH", path)
            .envs(env.iter().copied())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start dockerd");
        let daemon = RealDocker {
            child,
            socket,
            _dir: dir,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !daemon.socket.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "dockerd ({}) made no socket in 60 s: {}",
                bin.display(),
                std::fs::read_to_string(daemon._dir.path().join("dockerd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(daemon)
    }

    fn opener(&self) -> StreamOpener {
        let socket = self.socket.clone();
        Arc::new(move || {
            let socket = socket.clone();
            Box::pin(async move {
                let stream = tokio::net::UnixStream::connect(&socket).await?;
                Ok(Box::new(stream) as rkers::hosts::ssh::BoxedStream)
            })
        })
    }

    /// The client and facts once the daemon answers (it may still be starting).
    async fn connect(&self) -> (DockerClient, HostFacts) {
        let mut last = String::new();
        for _ in 0..60 {
            match DockerClient::connect_with(
                "local",
                "dockerd",
                self.opener(),
                Duration::from_secs(5),
            )
            .await
            {
                Ok(client) => {
                    let facts = HostFacts::gather(&client).await.expect("host facts");
                    return (client, facts);
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        panic!(
            "dockerd at {} never answered: {last}",
            self.socket.display()
        );
    }
}

impl Drop for RealDocker {
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions; the PID is our own child's.
        unsafe {
            libc_kill(self.child.id() as i32, 15);
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, signal: i32) -> i32;
}

/// The bin directory of the Docker 29 release the sandbox builds (`scripts/sandbox
/// docker-version 29`), built from its modules when missing (a cache hit under scripts/test).
fn docker_29() -> (String, std::path::PathBuf) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/sandbox");
    let out = std::process::Command::new("bash")
        .arg(script)
        .args(["docker-version", "29"])
        .output()
        .expect("scripts/sandbox docker-version");
    assert!(out.status.success(), "{out:?}");
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let bin = support::rke1_real::build_module("docker", &version);
    (version, bin)
}

#[tokio::test(flavor = "multi_thread")]
async fn docker_29_with_the_floor_of_29_0_to_29_2_refuses_dockershim_and_takes_cri_dockerd() {
    let (release, bin) = docker_29();
    let Some(daemon) = RealDocker::start(&bin, &[("DOCKER_MIN_API_VERSION", "1.44")]) else {
        return;
    };
    let (client, facts) = daemon.connect().await;
    let docker = release.trim_start_matches('v');
    assert_eq!(facts.docker_version, docker);
    assert_eq!(facts.engine_min_api_version, "1.44");
    let api = ApiVersion::parse(&facts.engine_api_version).unwrap();
    assert!(api >= ApiVersion::new(1, 52), "{api}");
    // rkers speaks the daemon's newest version bollard knows, and every request it makes now
    // is accepted.
    let spoken = ApiVersion::parse(client.api_version()).unwrap();
    assert!(
        spoken >= ApiVersion::new(1, 44) && spoken <= api,
        "{spoken}"
    );
    client.ping().await.unwrap();

    // cri-dockerd 0.3.16 (rke-tools v0.1.108) speaks 1.44: works.
    let (check, refusal) = docker_api_check(
        "local",
        &facts,
        &runtime("v1.31.14-rancher1-1", true, "v0.1.108"),
        false,
    );
    assert!(refusal.is_none(), "{check:?}");
    assert_eq!(check.spoken_api, ApiVersion::parse("1.44"));
    // kubelet v1.23's dockershim speaks 1.41: refused, with the reason and the remedy.
    let (check, refusal) = dockershim_v1_23(&facts);
    let error = refusal.expect("refused").to_string();
    assert!(
        error.starts_with(&format!(
            "host local: Docker {docker} accepts Engine API ≥ 1.44; kubelet v1.23's dockershim speaks ≤ 1.41: "
        )) && error.contains("min-api-version"),
        "{error}"
    );
    assert!(matches!(check.verdict, Verdict::Refused { .. }));
    // What the refusal tells the operator to do works: dockerd 29 accepts the API of v1.23's
    // dockershim once its minimum is lowered.
    drop(client);
    drop(daemon);
    let Some(lowered) = RealDocker::start(&bin, &[("DOCKER_MIN_API_VERSION", "1.41")]) else {
        return;
    };
    let (_, facts) = lowered.connect().await;
    assert_eq!(facts.engine_min_api_version, "1.41");
    let (check, refusal) = dockershim_v1_23(&facts);
    assert!(refusal.is_none(), "{check:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn docker_29_from_29_3_takes_dockershim_too() {
    let (release, bin) = docker_29();
    let Some(daemon) = RealDocker::start(&bin, &[]) else {
        return;
    };
    let (_, facts) = daemon.connect().await;
    assert_eq!(facts.docker_version, release.trim_start_matches('v'));
    assert_eq!(facts.engine_min_api_version, "1.40");
    let (check, refusal) = dockershim_v1_23(&facts);
    assert!(refusal.is_none(), "{check:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn debians_docker_20_10() {
    let Some(daemon) = RealDocker::start(std::path::Path::new("/usr/sbin"), &[]) else {
        return;
    };
    let (client, facts) = daemon.connect().await;
    assert_eq!(client.api_version(), "1.41");
    assert!(
        facts.docker_version.starts_with("20.10."),
        "{}",
        facts.docker_version
    );
    assert_eq!(facts.engine_api_version, "1.41");
    assert_eq!(facts.engine_min_api_version, "1.12");
    let (check, refusal) = docker_api_check(
        "local",
        &facts,
        &runtime("v1.20.15-rancher2-2", false, "v0.1.72"),
        false,
    );
    assert!(refusal.is_none(), "{check:?}");
}

#[tokio::test]
async fn a_docker_newer_than_bollard() {
    let newer = FakeDocker::new("31.0.0", "1.44", "1.60");
    let (client, facts) = connect(&newer).await;
    // bollard keeps its own newest version when the daemon's is newer still.
    let spoken = ApiVersion::parse(client.api_version()).unwrap();
    assert!(spoken >= ApiVersion::new(1, 44) && spoken <= ApiVersion::new(1, 60));
    assert!(newer.refused().is_empty(), "{:?}", newer.refused());
    assert_eq!(facts.engine_api_version, "1.60");
}
