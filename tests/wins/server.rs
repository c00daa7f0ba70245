//! A fake rancher/wins server: the gRPC protocol of tests/wins/wins.proto over HTTP/2 on a Unix
//! socket (tonic's codec and framing, served with hyper), with the server semantics documented
//! in windows-wins.md §1.3 applied to a directory that stands for the Windows host's disk:
//! whitelist check on `Start` (exact, case-insensitive, cleaned path; empty list allows all),
//! SHA1 of the host file against the client's checksum, the binary *moved* to
//! `rancher-wins-<exe>` ("Access is denied" while a process of that name still runs),
//! ActiveStore firewall rules `<name>-<PROTO>-<port>`, `Wait` streaming the process output, and
//! `KeepAlive` end = kill + rule removal.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use sha1::{Digest, Sha1};
use tokio::net::UnixListener;
use tokio_stream::StreamExt;
use tonic::server::Grpc;
use tonic::{Request, Response, Status, Streaming};
use tonic_prost::ProstCodec;

use super::proto::*;

/// A process the fake "started" on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostProcess {
    pub name: String,
    pub path: String,
    pub args: Vec<String>,
    pub envs: Vec<String>,
    pub dir: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Started(HostProcess),
    Killed(String),
    WaitOpened(String),
    KeepAliveOpened(String),
    FirewallRuleAdded(String),
}

#[derive(Default)]
pub struct State {
    /// Stands for `C:\` etc.: `c:\etc\x` is `<root>/c/etc/x`.
    pub root: PathBuf,
    /// `white_list.processPaths` as the server loaded it (lower-cased, cleaned).
    pub whitelist: Vec<String>,
    /// Processes started by this server instance, by name.
    pub pool: BTreeMap<String, HostProcess>,
    /// Names of `rancher-wins-*` processes still running from an earlier server instance.
    pub orphans: BTreeSet<String>,
    pub firewall_rules: BTreeSet<String>,
    /// HNS networks by name (the message itself has no name field).
    pub networks: Vec<(String, HnsNetwork)>,
    pub events: Vec<Event>,
}

pub type Shared = Arc<Mutex<State>>;

/// Windows `filepath.Clean` for the absolute paths wins gets: `/` → `\`, repeated separators,
/// `.` and `..` resolved.
pub fn clean_windows(path: &str) -> String {
    let unified = path.replace('/', "\\");
    let (drive, rest) = match unified.split_once(':') {
        Some((d, r)) if d.len() == 1 => (format!("{d}:"), r.to_string()),
        _ => (String::new(), unified.clone()),
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('\\') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("{drive}\\{}", parts.join("\\"))
}

/// The local file standing for a Windows path.
pub fn host_file(root: &Path, windows_path: &str) -> PathBuf {
    let clean = clean_windows(windows_path).to_lowercase();
    let (drive, rest) = clean.split_once(":\\").unwrap_or(("c", clean.as_str()));
    let mut path = root.join(drive);
    for part in rest.split('\\').filter(|p| !p.is_empty()) {
        path.push(part);
    }
    path
}

pub fn sha1_hex(bytes: &[u8]) -> String {
    hex::encode(Sha1::digest(bytes))
}

/// wins' process identity: `rancher-wins-` + the file name, trailing `.`/`e`/`x` trimmed.
fn process_name(file_name: &str) -> String {
    format!("rancher-wins-{file_name}")
        .trim_end_matches(['.', 'e', 'x'])
        .to_string()
}

/// Loads `white_list.processPaths` from a wins config text the way wins ≥ v0.1.2 does: JSON field
/// names through YAML, `white_list` matched case-insensitively, `processPaths` likewise. Keys
/// wins does not know (e.g. Rancher's `whiteList`) are ignored, which leaves the list empty.
pub fn whitelist_from_config(text: &str) -> Vec<String> {
    let value: serde_json::Value = serde_saphyr::from_str(text).unwrap_or_default();
    let get_ci = |v: &serde_json::Value, key: &str| -> Option<serde_json::Value> {
        v.as_object()?
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.clone())
    };
    get_ci(&value, "white_list")
        .and_then(|w| get_ci(&w, "processPaths"))
        .and_then(|p| p.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.as_str().map(|s| clean_windows(s).to_lowercase()))
        .collect()
}

fn start(state: &Shared, req: ProcessStartRequest) -> Result<ProcessStartResponse, Status> {
    let mut st = state.lock().unwrap();
    let path = clean_windows(&req.path);
    if !st.whitelist.is_empty() && !st.whitelist.contains(&path.to_lowercase()) {
        return Err(Status::invalid_argument("invalid path"));
    }
    let file = host_file(&st.root, &path);
    let bytes = std::fs::read(&file).map_err(|e| {
        Status::not_found(format!(
            "could not found binary: could not get checksum of {path}: {e}"
        ))
    })?;
    let actual = sha1_hex(&bytes);
    if !actual.eq_ignore_ascii_case(&req.checksum) {
        return Err(Status::not_found(format!(
            "could not found binary: could not match (expect checksum {}, actual {actual})",
            req.checksum
        )));
    }
    let (dir, file_name) = path.rsplit_once('\\').unwrap_or(("", path.as_str()));
    let name = process_name(file_name);
    let target_path = format!("{dir}\\rancher-wins-{file_name}");
    let target = host_file(&st.root, &target_path);
    if target.exists() {
        if st.pool.contains_key(&name) || st.orphans.contains(&name) {
            return Err(Status::internal(format!(
                "could not rename binary: could not remove existing target file {target_path}: \
                 Access is denied."
            )));
        }
        std::fs::remove_file(&target).map_err(|e| Status::internal(e.to_string()))?;
    }
    std::fs::rename(&file, &target)
        .map_err(|e| Status::internal(format!("could not rename binary: {e}")))?;
    if st.pool.contains_key(&name) {
        return Err(Status::unknown(format!("panic: duplicate process {name}")));
    }
    st.orphans.remove(&name);
    for expose in &req.exposes {
        if expose.port == 0 {
            continue;
        }
        let proto = match RunExposeProtocol::try_from(expose.protocol) {
            Ok(RunExposeProtocol::Udp) => "UDP",
            _ => "TCP",
        };
        let rule = format!("{name}-{proto}-{}", expose.port);
        st.firewall_rules.insert(rule.clone());
        st.events.push(Event::FirewallRuleAdded(rule));
    }
    let process = HostProcess {
        name: name.clone(),
        path: path.clone(),
        args: req.args.clone(),
        envs: req.envs.clone(),
        dir: if req.dir.is_empty() {
            dir.to_string()
        } else {
            req.dir.clone()
        },
    };
    st.pool.insert(name.clone(), process.clone());
    st.events.push(Event::Started(process));
    Ok(ProcessStartResponse {
        data: Some(ProcessName { value: name }),
    })
}

type WaitStream =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<ProcessWaitResponse, Status>> + Send>>;

/// The fake process prints its argv (one per line) on stdout and one line on stderr, then exits.
fn wait(state: &Shared, req: ProcessWaitRequest) -> Result<WaitStream, Status> {
    let name = req.data.map(|d| d.value).unwrap_or_default();
    let mut st = state.lock().unwrap();
    let process = st
        .pool
        .get(&name)
        .cloned()
        .ok_or_else(|| Status::not_found(format!("could not find process {name}")))?;
    st.events.push(Event::WaitOpened(name.clone()));
    use process_wait_response::Options;
    let mut out = Vec::new();
    for arg in &process.args {
        out.push(Ok(ProcessWaitResponse {
            options: Some(Options::StdOut(format!("{arg}\n").into_bytes())),
        }));
    }
    out.push(Ok(ProcessWaitResponse {
        options: Some(Options::StdErr(format!("{name} exited\n").into_bytes())),
    }));
    Ok(Box::pin(tokio_stream::iter(out)))
}

async fn keep_alive(
    state: Shared,
    mut stream: Streaming<ProcessKeepAliveRequest>,
) -> Result<Void, Status> {
    let mut name = String::new();
    while let Some(msg) = stream.next().await {
        match msg {
            Ok(m) => {
                name = m.data.map(|d| d.value).unwrap_or_default();
                state
                    .lock()
                    .unwrap()
                    .events
                    .push(Event::KeepAliveOpened(name.clone()));
            }
            Err(_) => break,
        }
    }
    if name.is_empty() {
        return Err(Status::invalid_argument("could not find the process name"));
    }
    let mut st = state.lock().unwrap();
    let prefix = format!("{name}-");
    st.firewall_rules.retain(|r| !r.starts_with(&prefix));
    st.pool.remove(&name);
    st.events.push(Event::Killed(name));
    Ok(Void {})
}

fn get_network(state: &Shared, req: HnsGetNetworkRequest) -> Result<HnsGetNetworkResponse, Status> {
    use hns_get_network_request::Options;
    let st = state.lock().unwrap();
    let found = st
        .networks
        .iter()
        .find(|(network_name, n)| match &req.options {
            Some(Options::Name(name)) => network_name == name,
            Some(Options::Address(cidr)) => n.subnets.iter().any(|s| &s.address_cidr == cidr),
            None => false,
        });
    found
        .map(|(_, n)| HnsGetNetworkResponse {
            data: Some(n.clone()),
        })
        .ok_or_else(|| Status::not_found("could not get HNS network"))
}

async fn route(
    state: Shared,
    req: http::Request<Incoming>,
) -> Result<http::Response<tonic::body::Body>, Infallible> {
    let path = req.uri().path().to_string();
    let st = state.clone();
    let response = match path.as_str() {
        "/wins.ProcessService/Start" => {
            let svc = tower::service_fn(move |r: Request<ProcessStartRequest>| {
                let st = st.clone();
                async move { start(&st, r.into_inner()).map(Response::new) }
            });
            Grpc::new(ProstCodec::<ProcessStartResponse, ProcessStartRequest>::default())
                .unary(svc, req)
                .await
        }
        "/wins.ProcessService/Wait" => {
            let svc = tower::service_fn(move |r: Request<ProcessWaitRequest>| {
                let st = st.clone();
                async move { wait(&st, r.into_inner()).map(Response::new) }
            });
            Grpc::new(ProstCodec::<ProcessWaitResponse, ProcessWaitRequest>::default())
                .server_streaming(svc, req)
                .await
        }
        "/wins.ProcessService/KeepAlive" => {
            let svc = tower::service_fn(move |r: Request<Streaming<ProcessKeepAliveRequest>>| {
                let st = st.clone();
                async move { keep_alive(st, r.into_inner()).await.map(Response::new) }
            });
            Grpc::new(ProstCodec::<Void, ProcessKeepAliveRequest>::default())
                .client_streaming(svc, req)
                .await
        }
        "/wins.HnsService/GetNetwork" => {
            let svc = tower::service_fn(move |r: Request<HnsGetNetworkRequest>| {
                let st = st.clone();
                async move { get_network(&st, r.into_inner()).map(Response::new) }
            });
            Grpc::new(ProstCodec::<HnsGetNetworkResponse, HnsGetNetworkRequest>::default())
                .unary(svc, req)
                .await
        }
        "/wins.ApplicationService/Info" => {
            let svc = tower::service_fn(move |_: Request<Void>| async move {
                Ok::<_, Status>(Response::new(ApplicationInfoResponse {
                    info: Some(ApplicationInfo {
                        checksum: sha1_hex(b"fake wins"),
                        version: "v0.4.11-fake".into(),
                        commit: "0000000".into(),
                    }),
                }))
            });
            Grpc::new(ProstCodec::<ApplicationInfoResponse, Void>::default())
                .unary(svc, req)
                .await
        }
        "/wins.HostService/GetVersion" => {
            let svc = tower::service_fn(move |_: Request<Void>| async move {
                Ok::<_, Status>(Response::new(HostGetVersionResponse {
                    data: Some(HostVersion {
                        current_major_version_number: "10".into(),
                        current_minor_version_number: "0".into(),
                        current_build_number: "17763".into(),
                        ubr: "1".into(),
                        release_id: "1809".into(),
                        build_lab_ex: "fake".into(),
                        current_build: "17763".into(),
                    }),
                }))
            });
            Grpc::new(ProstCodec::<HostGetVersionResponse, Void>::default())
                .unary(svc, req)
                .await
        }
        "/wins.NetworkService/Get" => {
            let svc = tower::service_fn(move |_: Request<NetworkGetRequest>| async move {
                Ok::<_, Status>(Response::new(NetworkGetResponse {
                    data: Some(NetworkAdapter {
                        interface_index: "4".into(),
                        gateway_address: "10.77.0.1".into(),
                        subnet_cidr: "10.77.0.0/24".into(),
                        host_name: "win1".into(),
                        address_cidr: "10.77.0.21/32".into(),
                    }),
                }))
            });
            Grpc::new(ProstCodec::<NetworkGetResponse, NetworkGetRequest>::default())
                .unary(svc, req)
                .await
        }
        "/wins.RouteService/Add" => {
            let svc = tower::service_fn(move |r: Request<RouteAddRequest>| async move {
                if r.get_ref().addresses.iter().all(|a| a.contains('/')) {
                    Ok(Response::new(Void {}))
                } else {
                    Err(Status::invalid_argument("addresses must be CIDR"))
                }
            });
            Grpc::new(ProstCodec::<Void, RouteAddRequest>::default())
                .unary(svc, req)
                .await
        }
        other => Status::unimplemented(format!("unknown method {other}")).into_http(),
    };
    Ok(response)
}

/// Serves the fake on `socket` until the returned task is aborted.
pub fn serve(socket: &Path, state: Shared) -> tokio::task::JoinHandle<()> {
    let listener = UnixListener::bind(socket).expect("bind the fake wins socket");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let state = state.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| route(state.clone(), req));
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}
