//! The path rkers promises RKE1's users, on real components (issue 48, items 3 and 5): the
//! v1.32.9 cluster the real RKE v1.8.14 built is adopted (no container restarted), its hosts'
//! Docker goes to 29.7.1 in place, and rkers then upgrades it one minor at a time to the newest
//! Kubernetes it knows (every minor `rkers config --list-version --all` lists after v1.32),
//! one `rkers up` per minor, while a workload keeps answering.
//!
//! The workload: a Deployment of three replicas spread over the hosts with a
//! PodDisruptionBudget (`minAvailable: 2`), behind a NodePort Service. A prober in this process,
//! outside the cluster, asks the Service on host2's address every 200 ms through every step and
//! counts the requests that failed; the figures are printed per step (the test fails on none of
//! them: they are measurements, see docs/src/measurements.md).
//!
//! After each step, checked:
//! - every node Ready with the new kubelet version;
//! - etcd runs the image the metadata gives for that version (3.5 to 3.6 on the way), and a
//!   `rkers-pre-*` snapshot was taken on host1 before the change;
//! - the ConfigMaps written before the chain began still hold their data (etcd kept it);
//! - the API versions the new kube-apiserver stopped serving are the ones rkers' removed-API
//!   data lists for that minor, and none that it lists is still served;
//! - a no-op `rkers up --dry-run` plans nothing, and `rkers doctor` reports no failure.
//!
//! Issue 48's item 4 on the same real binaries:
//! - before the first step goes through, it is tried with a flag the new kube-apiserver refuses:
//!   the run fails naming the host, kube-apiserver and its log line, and the previous
//!   kube-apiserver is back and serving (the nodes still at the old kubelet); the step then
//!   goes on without the flag;
//! - after the last step, `rkers rollback --restore-snapshot` brings the previous minor back,
//!   etcd included (the snapshot the step took), with the data written before it; `rkers up`
//!   then goes to the newest minor again.
//!
//! Each step's cluster.yml is what `scripts/sandbox images <version>` writes for that version:
//! the same cluster with another `kubernetes_version` (and from v1.35, on this machine's cgroup
//! v1 kernel, kubelet's `fail-cgroupv1: "false"`, which rkers asks for before such a step).
//! It runs in `scripts/test-versions --chain [--until v1.NN]`, not in `scripts/test`: it takes
//! about half an hour. `RKERS_CHAIN_UNTIL=v1.NN` (`--until`) stops the chain at that minor.

mod support;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use support::rke1_real::{RkeCluster, VERSION, actions, assert_plans_nothing, assert_same};

/// The minors after v1.32 that rkers offers, oldest first: the chain's steps; up to the minor
/// `RKERS_CHAIN_UNTIL` names (`v1.34`), when set.
fn chain_versions(c: &RkeCluster) -> Vec<String> {
    let until = std::env::var("RKERS_CHAIN_UNTIL")
        .ok()
        .map(|v| minor(&v))
        .unwrap_or(u32::MAX);
    let out = std::process::Command::new(&c.rkers)
        .args(["config", "--list-version", "--all"])
        .output()
        .expect("rkers config --list-version --all");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let chain: Vec<String> = text
        .lines()
        .filter(|v| minor(v) > 32 && minor(v) <= until)
        .map(str::to_string)
        .collect();
    assert!(
        chain.len() >= 2,
        "fewer than two minors after v1.32 (RKERS_CHAIN_UNTIL: up to v1.{until}): {text}"
    );
    chain
}

/// `v1.35.8-rkers1` → 35.
fn minor(version: &str) -> u32 {
    version
        .trim_start_matches('v')
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

fn workload(registry: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: chain
  namespace: default
spec:
  replicas: 3
  selector:
    matchLabels: {{app: chain}}
  template:
    metadata:
      labels: {{app: chain}}
    spec:
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector:
                matchLabels: {{app: chain}}
              topologyKey: kubernetes.io/hostname
      tolerations:
      - operator: Exists
      containers:
      - name: web
        image: {registry}/rkers/testbox:1.35-rkers1
        command: ["sh", "-c", "mkdir -p /www && echo \"chain on $NODE\" >/www/index.html && exec httpd -f -p 8080 -h /www"]
        env:
        - name: NODE
          valueFrom: {{fieldRef: {{fieldPath: spec.nodeName}}}}
        ports:
        - containerPort: 8080
        readinessProbe:
          httpGet: {{path: /, port: 8080}}
          periodSeconds: 2
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: chain
  namespace: default
spec:
  minAvailable: 2
  selector:
    matchLabels: {{app: chain}}
---
apiVersion: v1
kind: Service
metadata:
  name: chain
  namespace: default
spec:
  type: NodePort
  selector: {{app: chain}}
  ports:
  - port: 80
    targetPort: 8080
    nodePort: 30480
"#
    )
}

/// Asks `GET /` every 200 ms until stopped; counts the requests sent and those that failed (no
/// connection, no answer within a second, or not a 200), and keeps each failure's time and
/// cause so that a step's failures can be laid beside what the step restarted.
struct Prober {
    sent: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<(SystemTime, String)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Prober {
    fn start(target: SocketAddr) -> Prober {
        let sent = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, f, halt) = (sent.clone(), failures.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut next = Instant::now();
            while !halt.load(Ordering::Relaxed) {
                s.fetch_add(1, Ordering::Relaxed);
                let at = SystemTime::now();
                if let Err(why) = answer(target) {
                    f.lock().unwrap().push((at, why));
                }
                next += Duration::from_millis(200);
                if let Some(wait) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                } else {
                    next = Instant::now();
                }
            }
        });
        Prober {
            sent,
            failures,
            stop,
            thread: Some(thread),
        }
    }

    /// (sent, failed) so far.
    fn counts(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.failures.lock().unwrap().len() as u64,
        )
    }

    /// The failures after the first `skip`, as `time: cause` lines.
    fn failures_after(&self, skip: u64) -> Vec<String> {
        self.failures
            .lock()
            .unwrap()
            .iter()
            .skip(skip as usize)
            .map(|(at, why)| format!("{}: {why}", humantime::format_rfc3339_millis(*at)))
            .collect()
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn answers(target: SocketAddr) -> bool {
    answer(target).is_ok()
}

/// One request; the cause when it did not get a 200.
fn answer(target: SocketAddr) -> Result<(), String> {
    let second = Duration::from_secs(1);
    let mut stream =
        TcpStream::connect_timeout(&target, second).map_err(|e| format!("connect: {e}"))?;
    let _ = stream.set_read_timeout(Some(second));
    let _ = stream.set_write_timeout(Some(second));
    stream
        .write_all(b"GET / HTTP/1.0\r\n\r\n")
        .map_err(|e| format!("send: {e}"))?;
    let mut head = [0u8; 12];
    stream
        .read_exact(&mut head)
        .map_err(|e| format!("read: {e}"))?;
    if head.starts_with(b"HTTP/1.") && head[8..].starts_with(b" 200") {
        Ok(())
    } else {
        Err(format!("answered {:?}", String::from_utf8_lossy(&head)))
    }
}

/// What a step with failed requests printed beside them: each failure's time and cause, the
/// lines of the step's `rkers` output about its image pulls (timestamped, with their
/// durations), and every container on every host that started or stopped since `since` (the
/// step's start), so that they can be read side by side.
fn failure_report(
    c: &RkeCluster,
    prober: &Prober,
    failed_before: u64,
    since: SystemTime,
    rkers_output: &str,
) -> String {
    let failures = prober.failures_after(failed_before);
    if failures.is_empty() {
        return String::new();
    }
    let since = humantime::format_rfc3339_millis(since).to_string();
    let mut out = format!("  failed requests:\n    {}\n", failures.join("\n    "));
    let pulls: Vec<&str> = rkers_output
        .lines()
        .filter(|l| l.contains("[images]"))
        .collect();
    out.push_str(&format!(
        "  rkers' image pulls:\n    {}\n",
        pulls.join("\n    ")
    ));
    out.push_str(&format!("  containers started or stopped since {since}:\n"));
    for host in ["host1", "host2", "host3"] {
        let (ok, text) = c.sb.on_host(
            host,
            "docker ps -aq | xargs -r docker inspect --format '{{.State.StartedAt}} {{.State.FinishedAt}} {{.Name}}'",
        );
        if !ok {
            out.push_str(&format!("    {host}: docker inspect failed: {text}\n"));
            continue;
        }
        let mut lines: Vec<String> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (started, finished, name) = (f.next()?, f.next()?, f.next()?);
                let started_now = started >= since.as_str();
                let finished_now = finished >= since.as_str() && !finished.starts_with("0001");
                (started_now || finished_now)
                    .then(|| format!("    {host} {name}: started {started}, finished {finished}"))
            })
            .collect();
        lines.sort();
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// The API versions the cluster serves (`kubectl api-versions`).
fn served(c: &RkeCluster) -> BTreeSet<String> {
    let (ok, out) = c.kubectl(&["api-versions"]);
    assert!(ok, "kubectl api-versions: {out}");
    out.lines().map(str::to_string).collect()
}

/// `group/version` of each removal rkers' data lists for `minor` (data/removed-apis.json).
fn listed_removals(of_minor: u32) -> BTreeSet<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/removed-apis.json");
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    data["removals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| minor(r["removed_in"].as_str().unwrap_or_default()) == of_minor)
        .map(|r| {
            format!(
                "{}/{}",
                r["group"].as_str().unwrap_or_default(),
                r["version"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn snapshots(c: &RkeCluster) -> BTreeSet<String> {
    let (ok, out) =
        c.sb.on_host("host1", "ls /opt/rke/etcd-snapshots 2>/dev/null || true");
    assert!(ok, "{out}");
    out.lines().map(str::to_string).collect()
}

/// Retries `f` until it gives `Ok`, or fails the test with the last answer.
fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match f() {
            Ok(t) => return t,
            Err(last) => assert!(
                Instant::now() < deadline,
                "{what}: not within {timeout:?}; last:\n{last}"
            ),
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// The API server's version (`v1.33.5`), as it answers now.
fn server_version(c: &RkeCluster) -> Result<String, String> {
    let (ok, out) = c.kubectl(&["version", "-o", "json"]);
    if !ok {
        return Err(out);
    }
    let v: serde_json::Value = serde_json::from_str(&out).map_err(|e| format!("{e}: {out}"))?;
    v["serverVersion"]["gitVersion"]
        .as_str()
        .map(str::to_string)
        .ok_or(out)
}

/// Waits until the three nodes are Ready with kubelet `k8s`; returns their lines.
fn nodes_at(c: &RkeCluster, k8s: &str) -> String {
    eventually(
        &format!("three Ready {k8s} nodes"),
        Duration::from_secs(300),
        || {
            let (ok, text) = c.kubectl(&[
                "get",
                "nodes",
                "-o",
                "jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
            ]);
            let lines: Vec<&str> = text.lines().collect();
            let all = ok
                && lines.len() == 3
                && lines.iter().all(|l| l.ends_with(&format!(" {k8s} True")));
            all.then(|| text.clone()).ok_or(text)
        },
    )
}

/// Fails unless every ConfigMap of `data` still holds its value.
fn assert_data(c: &RkeCluster, data: &[(String, String)], when: &str) {
    for (name, value) in data {
        let (ok, out) = c.kubectl(&["get", "configmap", name, "-o", "jsonpath={.data.value}"]);
        assert!(ok && out == *value, "{name} {when}: {out}");
    }
}

#[test]
fn from_rke_v1_8_to_the_newest_minor_one_minor_at_a_time_while_the_workload_answers() {
    let Some(sb) = support::rke1_real::fresh_instance() else {
        return;
    };
    let started = Instant::now();
    let mut c = RkeCluster::prepare(&sb, PathBuf::from(env!("CARGO_BIN_EXE_rkers")));
    let chain = chain_versions(&c);

    // Every step's images and cluster.yml first (built from their modules, cached), so that the
    // steps time rkers alone.
    let t = Instant::now();
    let configs: Vec<String> = chain
        .iter()
        .map(|v| {
            let out = sb.sandbox(&["images", v]);
            let path = out.lines().last().expect("a cluster.yml path").to_string();
            let text = std::fs::read_to_string(path).unwrap();
            assert!(
                text.contains(&format!("kubernetes_version: {v}\n")),
                "{text}"
            );
            format!("{text}addon_job_timeout: 300\n")
        })
        .collect();
    eprintln!(
        "images of {}: {:.1}s",
        chain.join(", "),
        t.elapsed().as_secs_f64()
    );

    // RKE builds the cluster, rkers adopts it without a restart, Docker goes to 29.7.1.
    c.rke_up();
    c.wait_settled("rke up");
    let before = c.containers();
    let (ok, out) = c.rkers(&["up", "--yes"]);
    assert!(ok, "rkers up (adoption) failed:\n{out}");
    assert_same(
        &before,
        &c.containers(),
        "the adoption restarted a container",
    );
    c.docker_29_everywhere();

    // The workload, the data, the prober.
    let text = std::fs::read_to_string(&c.config).unwrap();
    let registry = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("- url: "))
        .expect("the cluster.yml names the sandbox registry")
        .to_string();
    let manifest = c.work.join("chain.yaml");
    std::fs::write(&manifest, workload(&registry)).unwrap();
    let (ok, out) = c.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);
    assert!(ok, "{out}");
    let (ok, out) = c.kubectl(&["rollout", "status", "deployment/chain", "--timeout=300s"]);
    assert!(ok, "{out}");
    let data: Vec<(String, String)> = (0..20)
        .map(|i| (format!("chain-{i}"), format!("written at v1.32, key {i}")))
        .collect();
    for (name, value) in &data {
        let (ok, out) = c.kubectl(&[
            "create",
            "configmap",
            name,
            &format!("--from-literal=value={value}"),
        ]);
        assert!(ok, "{out}");
    }
    let (ok, host1_address) = c.kubectl(&[
        "get",
        "node",
        "host1",
        "-o",
        "jsonpath={.status.addresses[?(@.type==\"InternalIP\")].address}",
    ]);
    assert!(ok, "{host1_address}");
    let host1_address = host1_address.trim().to_string();
    let (ok, host2) = c.kubectl(&[
        "get",
        "node",
        "host2",
        "-o",
        "jsonpath={.status.addresses[?(@.type==\"InternalIP\")].address}",
    ]);
    assert!(ok, "{host2}");
    let target: SocketAddr = format!("{}:30480", host2.trim()).parse().unwrap();
    eventually(
        "the Service answers on host2",
        Duration::from_secs(120),
        || {
            answers(target)
                .then_some(())
                .ok_or_else(|| "no answer".into())
        },
    );
    let prober = Prober::start(target);

    let mut figures = Vec::new();

    // Item 4: the first step with a flag its kube-apiserver refuses fails and undoes itself.
    let before_version = server_version(&c).expect("the API server answers");
    let refused = configs[0].replace(
        "services:\n",
        "services:\n  kube-api:\n    extra_args:\n      rkers-chain-no-such-flag: \"1\"\n",
    );
    assert!(
        refused != configs[0] && !configs[0].contains("  kube-api:"),
        "{}",
        configs[0]
    );
    std::fs::write(&c.config, &refused).unwrap();
    let (sent0, failed0) = prober.counts();
    let since = SystemTime::now();
    let t = Instant::now();
    let (ok, out) = c.rkers(&["up", "--yes"]);
    let took = t.elapsed().as_secs_f64();
    assert!(
        !ok,
        "up to {} with a refused flag succeeded:\n{out}",
        chain[0]
    );
    for needed in [
        "the new kube-apiserver failed its health check",
        "unknown flag: --rkers-chain-no-such-flag",
        "the previous kube-apiserver runs again under its name",
        host1_address.as_str(),
    ] {
        assert!(out.contains(needed), "`{needed}` not in:\n{out}");
    }
    let back = eventually(
        "the previous kube-apiserver serving",
        Duration::from_secs(120),
        || server_version(&c),
    );
    assert_eq!(back, before_version, "after the failed step");
    nodes_at(&c, before_version.as_str());
    c.wait_settled("the failed step");
    assert_data(&c, &data, "after the failed step");
    let (sent1, failed1) = prober.counts();
    figures.push(format!(
        "{} with a refused kube-apiserver flag: failed and undone in {took:.1}s, {} requests, \
         {} failed; {before_version} serving again",
        chain[0],
        sent1 - sent0,
        failed1 - failed0
    ));
    eprintln!(
        "{}\n{}",
        figures[0],
        failure_report(&c, &prober, failed0, since, &out)
    );

    let mut serving = served(&c);
    for (version, config) in chain.iter().zip(&configs) {
        let k8s = version.split('-').next().unwrap();
        std::fs::write(&c.config, config).unwrap();
        let (ok, dry) = c.rkers(&["up", "--dry-run"]);
        assert!(ok, "rkers up --dry-run to {version} failed:\n{dry}");
        let planned = actions(&dry).len();
        let snapshots_before = snapshots(&c);
        let (sent0, failed0) = prober.counts();
        let since = SystemTime::now();
        let t = Instant::now();
        let (ok, out) = c.rkers(&["up", "--yes"]);
        let took = t.elapsed().as_secs_f64();
        assert!(ok, "rkers up to {version} failed after {took:.1}s:\n{out}");
        // kubectl of the cluster's own version from here on (kubectl is supported one minor
        // either side of the API server).
        c.kubectl = support::rke1_real::build_module("kubernetes", k8s).join("kubectl");

        // Nodes Ready with the new kubelet.
        let nodes = nodes_at(&c, k8s);
        c.wait_settled(&format!("rkers up to {version}"));
        let (sent1, failed1) = prober.counts();

        // etcd: the metadata's image, a snapshot before the change, the data still there.
        let (ok, want) = {
            let out = std::process::Command::new(&c.rkers)
                .args(["config", "--system-images", "--version", version])
                .output()
                .unwrap();
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        assert!(ok, "{want}");
        let etcd_image = want
            .lines()
            .find(|l| l.contains("etcd:"))
            .expect("the metadata names an etcd image")
            .trim()
            .to_string();
        let (ok, running) = sb.on_host("host1", "docker inspect --format '{{.Config.Image}}' etcd");
        assert!(ok, "{running}");
        assert!(
            running.trim().ends_with(&etcd_image),
            "etcd runs {running} at {version}, the metadata gives {etcd_image}"
        );
        let new_snapshots: Vec<String> = snapshots(&c)
            .difference(&snapshots_before)
            .cloned()
            .collect();
        assert!(
            new_snapshots.iter().any(|s| s.starts_with("rkers-pre-")),
            "no snapshot before the change to {version}: {new_snapshots:?}"
        );
        assert_data(&c, &data, &format!("at {version}"));

        // What the new API server stopped serving is what rkers' data says.
        let now_serving = served(&c);
        let stopped: BTreeSet<String> = serving.difference(&now_serving).cloned().collect();
        let listed = listed_removals(minor(version));
        let unlisted: Vec<&String> = stopped.difference(&listed).collect();
        assert!(
            unlisted.is_empty(),
            "kube-apiserver {k8s} stopped serving {unlisted:?}, which rkers' removed-API data \
             does not list for v1.{}",
            minor(version)
        );
        let still: Vec<&String> = listed.intersection(&now_serving).collect();
        assert!(
            still.is_empty(),
            "rkers' removed-API data says v1.{} removes {still:?}, still served",
            minor(version)
        );
        serving = now_serving;

        // Nothing left to do, nothing wrong.
        let (ok, dry) = c.rkers(&["up", "--dry-run"]);
        assert!(ok, "{dry}");
        assert_plans_nothing(&dry, &format!("after the step to {version}, rkers"));
        let (ok, report) = c.rkers(&["doctor"]);
        assert!(ok, "rkers doctor after the step to {version}:\n{report}");

        let line = format!(
            "{version}: {planned} actions planned, up {took:.1}s, {} requests, {} failed, \
             etcd {}, stopped serving {:?}",
            sent1 - sent0,
            failed1 - failed0,
            etcd_image.rsplit(':').next().unwrap_or_default(),
            stopped
        );
        eprintln!(
            "{line}\n{nodes}\n{}",
            failure_report(&c, &prober, failed0, since, &out)
        );
        figures.push(line);
    }
    // Item 4: `rollback` over the last minor, etcd restored from the snapshot that step took,
    // then the last step again.
    let (last, previous) = (&chain[chain.len() - 1], &chain[chain.len() - 2]);
    let previous_k8s = previous.split('-').next().unwrap();
    let last_k8s = last.split('-').next().unwrap();
    let (sent0, failed0) = prober.counts();
    let since = SystemTime::now();
    let t = Instant::now();
    let (ok, out) = c.rkers(&["rollback", "--restore-snapshot"]);
    let took = t.elapsed().as_secs_f64();
    assert!(
        ok,
        "rkers rollback --restore-snapshot from {last} failed:\n{out}"
    );
    c.kubectl = support::rke1_real::build_module("kubernetes", previous_k8s).join("kubectl");
    let back = eventually(
        "the previous minor's kube-apiserver serving",
        Duration::from_secs(300),
        || server_version(&c),
    );
    assert_eq!(back, previous_k8s, "after the rollback");
    nodes_at(&c, previous_k8s);
    c.wait_settled("the rollback");
    assert_data(&c, &data, "after the rollback");
    let (sent1, failed1) = prober.counts();
    let line = format!(
        "rollback {last} -> {previous} (etcd restored): {took:.1}s, {} requests, {} failed",
        sent1 - sent0,
        failed1 - failed0
    );
    eprintln!(
        "{line}\n{}",
        failure_report(&c, &prober, failed0, since, &out)
    );
    figures.push(line);
    std::fs::write(&c.config, &configs[configs.len() - 1]).unwrap();
    let (ok, out) = c.rkers(&["up", "--yes"]);
    assert!(
        ok,
        "rkers up to {last} again after the rollback failed:\n{out}"
    );
    c.kubectl = support::rke1_real::build_module("kubernetes", last_k8s).join("kubectl");
    nodes_at(&c, last_k8s);
    c.wait_settled(&format!("{last} again"));
    assert_data(&c, &data, &format!("at {last} again"));

    let (sent, failed) = prober.counts();
    drop(prober);
    eprintln!(
        "\nthe chain from {VERSION} (RKE v1.8.14, Docker 29.7.1), {:.0}s in all; {sent} requests, \
         {failed} failed:\n{}",
        started.elapsed().as_secs_f64(),
        figures.join("\n")
    );
    let _ = sb.sandbox(&["down", "--purge"]);
}
