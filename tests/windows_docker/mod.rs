//! A Docker Engine API double that answers like dockerd on Windows Server 2019 for the calls the
//! Windows phases make, on a Unix socket that a real local sshd forwards to. It records every
//! request, refuses what a Windows daemon refuses (privileged, host network or PID mode, Unix
//! bind sources), and "runs" a privileged-step container by decoding its launcher script:
//! the host script wins would start is extracted and recorded, and the container's logs are
//! what the test scripted for that container name (plus the completion marker when the script
//! ends with it, as PowerShell would print it).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};

/// One API call as the daemon saw it (version prefix stripped).
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
}

impl Call {
    pub fn short(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// What a step container's host process does, as scripted by the test.
#[derive(Clone, Debug)]
pub enum StepOutcome {
    /// The host script runs to its end and prints `output` first.
    Runs { output: String },
    /// wins refuses to start the process: the client prints `error` and exits 1.
    WinsFails { error: String },
}

#[derive(Clone, Debug)]
pub struct FakeContainer {
    pub create_body: Value,
    pub running: bool,
    pub exit_code: i64,
    pub logs: String,
    /// The PowerShell wins was asked to run on the host, decoded.
    pub host_script: Option<String>,
    /// The `wins cli prc run` line of the launcher, decoded.
    pub wins_command: Option<String>,
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    containers: BTreeMap<String, FakeContainer>,
    outcomes: BTreeMap<String, StepOutcome>,
    /// Containers removed, with what they were when removed (inspect history for assertions).
    removed: Vec<(String, FakeContainer)>,
    /// Files images carry, by (image, path as the archive API names it).
    image_files: BTreeMap<(String, String), Vec<u8>>,
    /// Images the daemon holds (pulled).
    images: std::collections::BTreeSet<String>,
}

pub struct FakeWindowsDocker {
    pub socket: PathBuf,
    _dir: tempfile::TempDir,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeWindowsDocker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeWindowsDocker {
    pub async fn start() -> FakeWindowsDocker {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("docker_engine.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let state: Arc<Mutex<State>> = Arc::default();
        let st = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let st = st.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(st.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .with_upgrades()
                        .await;
                });
            }
        });
        FakeWindowsDocker {
            socket,
            _dir: dir,
            state,
            task,
        }
    }

    pub fn socket_str(&self) -> String {
        self.socket.display().to_string()
    }

    /// Scripts what the host process of step container `name` does.
    pub fn on_step(&self, name: &str, outcome: StepOutcome) {
        self.state
            .lock()
            .unwrap()
            .outcomes
            .insert(name.into(), outcome);
    }

    /// Adds a running container (as `up` would have left it).
    pub fn add_running(&self, name: &str) {
        self.state.lock().unwrap().containers.insert(
            name.into(),
            FakeContainer {
                create_body: json!({"Image": "rancher/rke-tools:v0.1.89-windows"}),
                running: true,
                exit_code: 0,
                logs: String::new(),
                host_script: None,
                wins_command: None,
            },
        );
    }

    /// Puts a file into `image`, served by the archive API of containers created from it.
    pub fn add_image_file(&self, image: &str, path: &str, contents: &[u8]) {
        self.state
            .lock()
            .unwrap()
            .image_files
            .insert((image.into(), path.into()), contents.to_vec());
    }

    /// The container `name` as the daemon holds it now.
    pub fn container(&self, name: &str) -> Option<FakeContainer> {
        self.state.lock().unwrap().containers.get(name).cloned()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    /// The calls from the `from`-th on that are not read-only (every method but GET).
    pub fn writes_since(&self, from: usize) -> Vec<Call> {
        self.calls()
            .into_iter()
            .skip(from)
            .filter(|c| c.method != "GET")
            .collect()
    }

    /// Method and path of every call that changes or runs containers (no version probes).
    pub fn container_calls(&self) -> Vec<String> {
        self.calls()
            .iter()
            .filter(|c| c.path.starts_with("/containers"))
            .map(Call::short)
            .collect()
    }

    pub fn container_names(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .containers
            .keys()
            .cloned()
            .collect()
    }

    /// The containers removed so far, last state included, in removal order.
    pub fn removed(&self) -> Vec<(String, FakeContainer)> {
        self.state.lock().unwrap().removed.clone()
    }
}

/// A whole Windows host double: the shell double behind a real local sshd that authorizes
/// `key`, and this Docker double. The shell keeps its C: drive, wins service and agent log in
/// `state`.
pub struct WindowsHostDouble {
    pub dir: tempfile::TempDir,
    pub state: PathBuf,
    pub sshd: crate::support::LocalSshd,
    pub key: PathBuf,
    pub docker: FakeWindowsDocker,
}

impl WindowsHostDouble {
    pub async fn start() -> WindowsHostDouble {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("windows");
        let key = crate::support::keygen(dir.path(), "id_ed25519", "ed25519", "");
        let sshd = crate::support::windows_shell_sshd(&state);
        sshd.authorize(&key);
        WindowsHostDouble {
            docker: FakeWindowsDocker::start().await,
            dir,
            state,
            sshd,
            key,
        }
    }

    /// Where the double keeps a Windows path (`c:/etc/x` or `c:\etc\x`, any case).
    pub fn on_drive(&self, windows_path: &str) -> PathBuf {
        let path = windows_path.replace('\\', "/").to_lowercase();
        let rest = path.strip_prefix("c:/").expect("a c:/ path");
        self.state.join("drive/c").join(rest)
    }

    /// The rancher-wins service as the shell double keeps it (`Null` before any change).
    pub fn service(&self) -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(self.state.join("wins-service.json")).unwrap_or_default(),
        )
        .unwrap_or(Value::Null)
    }

    /// The host agent's runs so far, one JSON summary each.
    pub fn agent_runs(&self) -> Vec<Value> {
        std::fs::read_to_string(self.state.join("invocations.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn respond(status: StatusCode, body: Value) -> Response<Full<Bytes>> {
    let text = if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        String::new()
    } else {
        body.to_string()
    };
    let mut r = Response::new(Full::new(Bytes::from(text)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    r.headers_mut()
        .insert("api-version", "1.41".parse().unwrap());
    r.headers_mut().insert("ostype", "windows".parse().unwrap());
    r
}

fn message(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    respond(status, json!({ "message": text }))
}

/// Docker's multiplexed log stream: 8-byte header (stream 1 = stdout, 2 = stderr) per frame.
fn multiplexed(stdout: &str) -> Response<Full<Bytes>> {
    let mut out = Vec::new();
    for line in stdout.split_inclusive('\n') {
        out.push(1u8);
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&(line.len() as u32).to_be_bytes());
        out.extend_from_slice(line.as_bytes());
    }
    let mut r = Response::new(Full::new(Bytes::from(out)));
    r.headers_mut().insert(
        "content-type",
        "application/vnd.docker.multiplexed-stream".parse().unwrap(),
    );
    r
}

fn strip_version(path: &str) -> String {
    if let Some(rest) = path.strip_prefix("/v")
        && let Some(i) = rest.find('/')
        && rest[..i].chars().all(|c| c.is_ascii_digit() || c == '.')
    {
        return rest[i..].to_string();
    }
    path.to_string()
}

fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| percent_decode(v))
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A tar archive holding one file, as the archive API answers for a file path.
fn tar_of(name: &str, contents: &[u8]) -> Response<Full<Bytes>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(contents.len() as u64);
    header.set_mode(0o755);
    header.set_cksum();
    builder.append_data(&mut header, name, contents).unwrap();
    let body = builder.into_inner().unwrap();
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut()
        .insert("content-type", "application/x-tar".parse().unwrap());
    r
}

/// Decodes `pwsh ... -EncodedCommand <base64 UTF-16LE>`.
pub fn decode_encoded_command(b64: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], *c.get(1).unwrap_or(&0)]))
        .collect();
    String::from_utf16(&units).ok()
}

/// The `wins cli prc run` line of a launcher and the host script inside its `--args`.
fn decode_step(entrypoint: &[String]) -> (Option<String>, Option<String>) {
    let Some(launcher) = entrypoint.last().and_then(|b| decode_encoded_command(b)) else {
        return (None, None);
    };
    let Some(line) = launcher
        .lines()
        .find(|l| l.contains(" cli prc run "))
        .map(str::to_owned)
    else {
        return (None, None);
    };
    let script = line
        .split("-EncodedCommand ")
        .nth(1)
        .map(|rest| rest.trim_end_matches('\''))
        .and_then(decode_encoded_command);
    (Some(line), script)
}

/// The container config part of a create request, as inspect returns it.
fn container_config(create_body: &Value) -> Value {
    let mut config = create_body.clone();
    if let Some(map) = config.as_object_mut() {
        map.remove("HostConfig");
        map.remove("NetworkingConfig");
    }
    config
}

/// What a Windows daemon refuses at create time.
fn windows_refusal(body: &Value) -> Option<String> {
    let hc = &body["HostConfig"];
    if hc["Privileged"].as_bool() == Some(true) {
        return Some("Windows does not support privileged mode".into());
    }
    if hc["NetworkMode"].as_str() == Some("host") {
        return Some("container cannot be attached to the host network on Windows".into());
    }
    if hc["PidMode"].as_str().is_some_and(|m| !m.is_empty()) {
        return Some("Windows does not support PID modes".into());
    }
    for bind in hc["Binds"].as_array().into_iter().flatten() {
        let b = bind.as_str().unwrap_or_default();
        let windows_source = b.len() > 2 && b.as_bytes()[1] == b':'
            || b.starts_with("//./pipe/")
            || b.starts_with(r"\\.\pipe\");
        if !windows_source {
            return Some(format!("invalid volume specification: '{b}'"));
        }
    }
    None
}

async fn handle(
    state: Arc<Mutex<State>>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().to_string();
    let path = strip_version(req.uri().path());
    let query = req.uri().query().unwrap_or_default().to_string();
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let mut st = state.lock().unwrap();
    st.calls.push(Call {
        method: method.clone(),
        path: path.clone(),
        query: query.clone(),
        body: body.clone(),
    });
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let r = match (method.as_str(), parts.as_slice()) {
        ("GET", ["_ping"]) => respond(StatusCode::OK, json!("OK")),
        ("GET", ["version"]) => respond(
            StatusCode::OK,
            json!({
                "Version": "20.10.9", "ApiVersion": "1.41", "MinAPIVersion": "1.24",
                "Os": "windows", "Arch": "amd64",
                "KernelVersion": "10.0 17763 (17763.1.amd64fre.rs5_release.180914-1434)"
            }),
        ),
        ("GET", ["info"]) => respond(
            StatusCode::OK,
            json!({
                "OSType": "windows",
                "OperatingSystem": "Windows Server 2019 Datacenter Version 1809 (OS Build 17763.2928)",
                "KernelVersion": "10.0 17763 (17763.1.amd64fre.rs5_release.180914-1434)",
                "Architecture": "x86_64",
                "ServerVersion": "20.10.9",
                "DockerRootDir": "C:\\ProgramData\\docker",
                "SecurityOptions": [],
                "Isolation": "process"
            }),
        ),
        ("POST", ["containers", "create"]) => {
            let name = query_value(&query, "name").unwrap_or_default();
            if st.containers.contains_key(&name) {
                message(
                    StatusCode::CONFLICT,
                    &format!("Conflict. The container name \"/{name}\" is already in use"),
                )
            } else if let Some(refusal) = windows_refusal(&body) {
                message(StatusCode::BAD_REQUEST, &refusal)
            } else {
                let entrypoint: Vec<String> = body["Entrypoint"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect();
                let (wins_command, host_script) = decode_step(&entrypoint);
                st.containers.insert(
                    name.clone(),
                    FakeContainer {
                        create_body: body.clone(),
                        running: false,
                        exit_code: 0,
                        logs: String::new(),
                        host_script,
                        wins_command,
                    },
                );
                respond(
                    StatusCode::CREATED,
                    json!({"Id": format!("id-{name}"), "Warnings": []}),
                )
            }
        }
        ("POST", ["containers", name, "start"]) => {
            let name = name.to_string();
            let outcome = st.outcomes.get(&name).cloned();
            match st.containers.get_mut(&name) {
                None => message(StatusCode::NOT_FOUND, &format!("No such container: {name}")),
                Some(c) => {
                    // A step container runs to completion at once.
                    match outcome {
                        Some(StepOutcome::Runs { output }) => {
                            let mut logs = output.replace('\n', "\r\n");
                            if !logs.is_empty() && !logs.ends_with('\n') {
                                logs.push_str("\r\n");
                            }
                            if let Some(s) = &c.host_script
                                && let Some(marker) = s
                                    .lines()
                                    .last()
                                    .and_then(|l| l.strip_prefix("Write-Output '"))
                            {
                                logs.push_str(marker.trim_end_matches('\''));
                                logs.push_str("\r\n");
                            }
                            c.logs = logs;
                            c.exit_code = 0;
                            c.running = false;
                        }
                        Some(StepOutcome::WinsFails { error }) => {
                            c.logs = format!("{error}\r\n");
                            c.exit_code = 1;
                            c.running = false;
                        }
                        None => c.running = true,
                    }
                    respond(StatusCode::NO_CONTENT, Value::Null)
                }
            }
        }
        ("POST", ["containers", name, "stop"]) => match st.containers.get_mut(*name) {
            None => message(StatusCode::NOT_FOUND, &format!("No such container: {name}")),
            Some(c) if !c.running => respond(StatusCode::NOT_MODIFIED, Value::Null),
            Some(c) => {
                c.running = false;
                respond(StatusCode::NO_CONTENT, Value::Null)
            }
        },
        ("POST", ["containers", name, "rename"]) => {
            let new_name = query_value(&query, "name").unwrap_or_default();
            if st.containers.contains_key(&new_name) {
                message(
                    StatusCode::CONFLICT,
                    &format!("Conflict. The container name \"/{new_name}\" is already in use"),
                )
            } else {
                match st.containers.remove(*name) {
                    None => message(StatusCode::NOT_FOUND, &format!("No such container: {name}")),
                    Some(c) => {
                        st.containers.insert(new_name, c);
                        respond(StatusCode::NO_CONTENT, Value::Null)
                    }
                }
            }
        }
        ("GET", ["containers", name, "json"]) => match st.containers.get(*name) {
            None => message(StatusCode::NOT_FOUND, &format!("No such container: {name}")),
            Some(c) => respond(
                StatusCode::OK,
                json!({
                    "Id": format!("id-{name}"),
                    "Name": format!("/{name}"),
                    "Image": "sha256:0123",
                    "State": {
                        "Running": c.running,
                        "Status": if c.running { "running" } else { "exited" },
                        "ExitCode": c.exit_code
                    },
                    // dockerd answers with the create request's container config.
                    "Config": container_config(&c.create_body),
                    "HostConfig": c.create_body["HostConfig"]
                }),
            ),
        },
        ("GET", ["images", image @ .., "json"]) if !image.is_empty() => {
            let image = image.join("/");
            if st.images.contains(&image) {
                respond(
                    StatusCode::OK,
                    json!({"Id": format!("sha256:{}", image.len()), "RepoTags": [image], "Os": "windows", "Config": {"Env": []}}),
                )
            } else {
                message(StatusCode::NOT_FOUND, &format!("No such image: {image}"))
            }
        }
        ("POST", ["images", "create"]) => {
            let repo = query_value(&query, "fromImage").unwrap_or_default();
            let image = match query_value(&query, "tag") {
                Some(tag) if !tag.is_empty() => format!("{repo}:{tag}"),
                _ => repo,
            };
            st.images.insert(image.clone());
            let lines = [
                json!({"status": format!("Pulling from {image}")}),
                json!({"status": format!("Status: Downloaded newer image for {image}")}),
            ];
            let body: String = lines.iter().map(|l| format!("{l}\r\n")).collect();
            let mut r = Response::new(Full::new(Bytes::from(body)));
            r.headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            r
        }
        ("GET", ["containers", name, "archive"]) => {
            let wanted = query_value(&query, "path").unwrap_or_default();
            match st.containers.get(*name) {
                None => message(StatusCode::NOT_FOUND, &format!("No such container: {name}")),
                Some(c) if c.running => message(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "filesystem operations against a running Hyper-V container are not supported",
                ),
                Some(c) => {
                    let image = c.create_body["Image"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    match st.image_files.get(&(image, wanted.clone())) {
                        Some(contents) => {
                            let file = wanted.rsplit(['\\', '/']).next().unwrap_or("file");
                            tar_of(file, contents)
                        }
                        None => message(
                            StatusCode::NOT_FOUND,
                            &format!("Could not find the file {wanted} in container {name}"),
                        ),
                    }
                }
            }
        }
        ("GET", ["containers", name, "logs"]) => match st.containers.get(*name) {
            None => message(StatusCode::NOT_FOUND, &format!("No such container: {name}")),
            Some(c) => multiplexed(&c.logs),
        },
        ("DELETE", ["containers", name]) => {
            let name = name.to_string();
            match st.containers.remove(&name) {
                None => message(StatusCode::NOT_FOUND, &format!("No such container: {name}")),
                Some(c) => {
                    st.removed.push((name, c));
                    respond(StatusCode::NO_CONTENT, Value::Null)
                }
            }
        }
        _ => message(
            StatusCode::NOT_IMPLEMENTED,
            &format!("the Windows Docker double does not serve {method} {path}"),
        ),
    };
    Ok(r)
}
