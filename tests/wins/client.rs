//! A client of the wins protocol that behaves like `wins cli prc run` (windows-wins.md §2.1):
//! resolves `--path` in the container's file system and sends its SHA1, splits `--args` and
//! `--envs` the way the wins CLI does, opens KeepAlive with the process name, streams Wait, and
//! closes KeepAlive when the process output ends.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};
use tonic_prost::ProstCodec;

use super::proto::*;
use super::server::{host_file, sha1_hex};

#[derive(Debug)]
pub enum RunError {
    /// The CLI refuses before any RPC (bad flags, missing binary in the container).
    Cli(String),
    Rpc(Status),
}

impl From<Status> for RunError {
    fn from(s: Status) -> Self {
        RunError::Rpc(s)
    }
}

/// What `prc run` saw: the request it sent and the process output.
#[derive(Debug)]
pub struct RunOutcome {
    pub request: ProcessStartRequest,
    pub name: String,
    pub stdout: String,
    pub stderr: String,
}

/// wins' list splitting (v0.1+): split on spaces outside double quotes; the quote characters
/// stay in the element.
pub fn split_wins_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ' ' if !quoted => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `--exposes` elements: `TCP:80` or `UDP:4789-4790`.
pub fn parse_exposes(text: &str) -> Result<Vec<ProcessExpose>, String> {
    let mut out = Vec::new();
    for item in split_wins_list(text) {
        let (proto, ports) = item
            .split_once(':')
            .ok_or_else(|| format!("invalid expose {item}"))?;
        let protocol = match proto {
            "UDP" => RunExposeProtocol::Udp,
            _ => RunExposeProtocol::Tcp,
        } as i32;
        let (lo, hi) = match ports.split_once('-') {
            Some((lo, hi)) => (lo, hi),
            None => (ports, ports),
        };
        let lo: i32 = lo.parse().map_err(|_| format!("invalid port in {item}"))?;
        let hi: i32 = hi.parse().map_err(|_| format!("invalid port in {item}"))?;
        for port in lo..=hi {
            out.push(ProcessExpose { port, protocol });
        }
    }
    Ok(out)
}

pub struct WinsClient {
    channel: Channel,
}

impl WinsClient {
    pub async fn connect(socket: &Path) -> Self {
        let socket: PathBuf = socket.to_path_buf();
        let channel =
            Endpoint::try_from("http://rancher-wins.invalid")
                .expect("static uri")
                .connect_with_connector(tower::service_fn(move |_| {
                    let socket = socket.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?))
                    }
                }))
                .await
                .expect("connect to the fake wins server");
        WinsClient { channel }
    }

    fn grpc(&self) -> tonic::client::Grpc<Channel> {
        tonic::client::Grpc::new(self.channel.clone())
    }

    pub async fn hns_network_by_name(&self, name: &str) -> Result<HnsNetwork, Status> {
        let mut grpc = self.grpc();
        grpc.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let response = grpc
            .unary(
                Request::new(HnsGetNetworkRequest {
                    options: Some(hns_get_network_request::Options::Name(name.into())),
                }),
                PathAndQuery::from_static("/wins.HnsService/GetNetwork"),
                ProstCodec::<HnsGetNetworkRequest, HnsGetNetworkResponse>::default(),
            )
            .await?;
        response
            .into_inner()
            .data
            .ok_or_else(|| Status::not_found("empty response"))
    }

    pub async fn app_info(&self) -> Result<ApplicationInfo, Status> {
        let mut grpc = self.grpc();
        grpc.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let response = grpc
            .unary(
                Request::new(Void {}),
                PathAndQuery::from_static("/wins.ApplicationService/Info"),
                ProstCodec::<Void, ApplicationInfoResponse>::default(),
            )
            .await?;
        Ok(response.into_inner().info.unwrap_or_default())
    }

    /// Runs `args` (everything after `wins.exe`, starting with `cli prc run`) with the
    /// container's file system at `container_root`.
    pub async fn prc_run(
        &self,
        args: &[String],
        container_root: &Path,
    ) -> Result<RunOutcome, RunError> {
        if args.len() < 3 || args[..3] != ["cli", "prc", "run"] {
            return Err(RunError::Cli(format!("not a prc run command: {args:?}")));
        }
        let mut path = None;
        let mut request = ProcessStartRequest::default();
        let mut rest = args[3..].iter();
        while let Some(flag) = rest.next() {
            let value = rest
                .next()
                .ok_or_else(|| RunError::Cli(format!("flag {flag} needs a value")))?;
            match flag.as_str() {
                "--path" => path = Some(value.clone()),
                "--args" => request.args = split_wins_list(value),
                "--envs" => request.envs = split_wins_list(value),
                "--exposes" => request.exposes = parse_exposes(value).map_err(RunError::Cli)?,
                "--dir" => request.dir = value.clone(),
                other => {
                    return Err(RunError::Cli(format!(
                        "flag provided but not defined: {other}"
                    )));
                }
            }
        }
        let path = path.ok_or_else(|| RunError::Cli("--path is required".into()))?;
        let bytes = std::fs::read(host_file(container_root, &path))
            .map_err(|_| RunError::Cli("--path is invalid".into()))?;
        request.checksum = sha1_hex(&bytes);
        request.path = path;

        let mut grpc = self.grpc();
        grpc.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let started = grpc
            .unary(
                Request::new(request.clone()),
                PathAndQuery::from_static("/wins.ProcessService/Start"),
                ProstCodec::<ProcessStartRequest, ProcessStartResponse>::default(),
            )
            .await?
            .into_inner();
        let name = started.data.map(|d| d.value).unwrap_or_default();

        let (keep_alive_tx, keep_alive_rx) = tokio::sync::mpsc::channel(4);
        keep_alive_tx
            .send(ProcessKeepAliveRequest {
                data: Some(ProcessName {
                    value: name.clone(),
                }),
            })
            .await
            .expect("keepalive channel open");
        let mut keep_alive_grpc = self.grpc();
        keep_alive_grpc
            .ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let keep_alive = tokio::spawn(async move {
            keep_alive_grpc
                .client_streaming(
                    Request::new(ReceiverStream::new(keep_alive_rx)),
                    PathAndQuery::from_static("/wins.ProcessService/KeepAlive"),
                    ProstCodec::<ProcessKeepAliveRequest, Void>::default(),
                )
                .await
        });
        // The real client sends the name before waiting; give the stream a moment to open.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;

        grpc.ready()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let mut output = grpc
            .server_streaming(
                Request::new(ProcessWaitRequest {
                    data: Some(ProcessName {
                        value: name.clone(),
                    }),
                }),
                PathAndQuery::from_static("/wins.ProcessService/Wait"),
                ProstCodec::<ProcessWaitRequest, ProcessWaitResponse>::default(),
            )
            .await?
            .into_inner();
        let (mut stdout, mut stderr) = (String::new(), String::new());
        while let Some(chunk) = output.next().await {
            match chunk?.options {
                Some(process_wait_response::Options::StdOut(b)) => {
                    stdout.push_str(&String::from_utf8_lossy(&b))
                }
                Some(process_wait_response::Options::StdErr(b)) => {
                    stderr.push_str(&String::from_utf8_lossy(&b))
                }
                None => {}
            }
        }
        // Process ended: closing KeepAlive tells the server to kill it and drop its rules.
        drop(keep_alive_tx);
        keep_alive
            .await
            .map_err(|e| RunError::Cli(e.to_string()))??;
        Ok(RunOutcome {
            request,
            name,
            stdout,
            stderr,
        })
    }
}
