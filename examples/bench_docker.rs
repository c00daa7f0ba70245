//! Benchmark of node access: connect to every host, make N Docker calls per host over the
//! one SSH connection each, and print calls/s, SSH connections per host (counted from the
//! sockets this process holds) and this process's peak RSS.
//!
//! Usage: bench_docker --key KEY [--known-hosts FILE] [--user root] [--socket PATH]
//!                     [--calls 100] [--concurrency 30] HOST[:PORT]...
//! scripts/bench-hosts runs it against the sandbox and against local sshd instances.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rkers::hosts::{HostKeyPolicy, HostPool, SshAuth, SshOptions, SshTarget};

struct Args {
    key: PathBuf,
    known_hosts: Option<PathBuf>,
    user: String,
    socket: String,
    calls: usize,
    concurrency: usize,
    hosts: Vec<(String, u16)>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        key: PathBuf::new(),
        known_hosts: None,
        user: "root".into(),
        socket: "/var/run/docker.sock".into(),
        calls: 100,
        concurrency: 30,
        hosts: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--key" => a.key = val("--key")?.into(),
            "--known-hosts" => a.known_hosts = Some(val("--known-hosts")?.into()),
            "--user" => a.user = val("--user")?,
            "--socket" => a.socket = val("--socket")?,
            "--calls" => {
                a.calls = val("--calls")?
                    .parse()
                    .map_err(|e| format!("--calls: {e}"))?
            }
            "--concurrency" => {
                a.concurrency = val("--concurrency")?
                    .parse()
                    .map_err(|e| format!("--concurrency: {e}"))?
            }
            h if !h.starts_with("--") => {
                let (host, port) = match h.rsplit_once(':') {
                    Some((h, p)) => (
                        h.to_owned(),
                        p.parse().map_err(|e| format!("{h}: port: {e}"))?,
                    ),
                    None => (h.to_owned(), 22),
                };
                a.hosts.push((host, port));
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.hosts.is_empty() || a.key.as_os_str().is_empty() {
        return Err("usage: bench_docker --key KEY [--known-hosts FILE] [--user U] [--socket PATH] [--calls N] [--concurrency N] HOST[:PORT]...".into());
    }
    Ok(a)
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Established TCP connections of this process, by remote `addr:port`.
fn connections_by_peer() -> BTreeMap<String, usize> {
    let out = std::process::Command::new("ss")
        .args(["-tnpH", "state", "established"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let me = format!("pid={},", std::process::id());
    let mut map = BTreeMap::new();
    for l in out.lines().filter(|l| l.contains(&me)) {
        if let Some(peer) = l.split_whitespace().nth(3) {
            *map.entry(peer.to_owned()).or_insert(0) += 1;
        }
    }
    map
}

#[tokio::main]
async fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let tmp_known_hosts =
        std::env::temp_dir().join(format!("bench-known-hosts-{}", std::process::id()));
    let opts = SshOptions {
        known_hosts_path: Some(args.known_hosts.clone().unwrap_or(tmp_known_hosts.clone())),
        host_key_policy: if args.known_hosts.is_some() {
            HostKeyPolicy::Strict
        } else {
            HostKeyPolicy::AcceptNew
        },
        concurrency: args.concurrency,
        ssh_config_enabled: false,
        connect_timeout: Duration::from_secs(20),
        ..Default::default()
    };
    let targets: Vec<SshTarget> = args
        .hosts
        .iter()
        .map(|(h, p)| SshTarget {
            name: format!("{h}:{p}"),
            address: h.clone(),
            port: Some(*p),
            user: args.user.clone(),
            auth: SshAuth {
                ssh_key_path: Some(args.key.clone()),
                ..Default::default()
            },
            docker_socket: args.socket.clone(),
            bastion: None,
        })
        .collect();
    let t0 = Instant::now();
    let pool = match HostPool::connect(&targets, &opts).await {
        Ok(p) => p,
        Err(problems) => {
            eprintln!("{problems}");
            std::process::exit(1);
        }
    };
    let connect = t0.elapsed();
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    let calls = args.calls;
    let t1 = Instant::now();
    let results = pool
        .for_each(&names, |h| async move {
            let futs = (0..calls).map(|_| {
                let d = h.docker().clone();
                async move { d.version().await.map(|_| ()) }
            });
            for r in futures::future::join_all(futs).await {
                r?;
            }
            Ok(())
        })
        .await;
    let elapsed = t1.elapsed();
    let mut failed = 0;
    for (n, r) in &results {
        if let Err(e) = r {
            eprintln!("{n}: {e}");
            failed += 1;
        }
    }
    let conns = connections_by_peer();
    let per_host: Vec<usize> = args
        .hosts
        .iter()
        .map(|(h, p)| conns.get(&format!("{h}:{p}")).copied().unwrap_or(0))
        .collect();
    let total = calls * targets.len();
    println!("hosts:                 {}", targets.len());
    println!("connect (all hosts):   {:.2} s", connect.as_secs_f64());
    println!("docker calls:          {total} ({calls} per host, GET /version)");
    println!("elapsed:               {:.2} s", elapsed.as_secs_f64());
    println!(
        "calls/s:               {:.0}",
        total as f64 / elapsed.as_secs_f64()
    );
    println!(
        "SSH connections/host:  min {} max {}",
        per_host.iter().min().unwrap_or(&0),
        per_host.iter().max().unwrap_or(&0)
    );
    println!(
        "peak RSS:              {:.1} MiB",
        peak_rss_kib() as f64 / 1024.0
    );
    pool.close().await;
    let _ = std::fs::remove_file(tmp_known_hosts);
    if failed > 0 {
        std::process::exit(1);
    }
}
