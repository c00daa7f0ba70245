//! A real cluster, nothing simulated: three sandbox hosts with no stand-in CNI, every image built
//! from its Go module by `scripts/sandbox images <version>` and pushed under the name rkers'
//! metadata gives it, and a cluster.yml that names only the Kubernetes version (no
//! `system_images`), RKE1's flannel (VXLAN between the hosts), CoreDNS and metrics-server.
//! For Kubernetes v1.24 and later kubelet reaches Docker through cri-dockerd, started inside the
//! kubelet container by the rke-tools entrypoint as RKE1's does.
//!
//! 1. `rkers up` brings up three nodes, Ready, each reporting the real kubelet version.
//! 2. A Deployment of three replicas, one per host (required anti-affinity), behind a Service:
//!    the Service answers from every host and from a pod on another host; a pod answers another
//!    pod across hosts (flannel); a DNS name resolves from a pod (CoreDNS).
//! 3. `kubectl top nodes` answers (metrics-server reaches every kubelet).
//! 4. `rkers doctor` reads real flannel's nat rules as healthy on every node; host2's
//!    `FLANNEL-POSTRTG` chain really deleted, flannel restores it by itself; deleted while
//!    flannel is frozen, doctor fails naming host2 and the fix, a pod on host2 no longer reaches
//!    outside the cluster; `rkers doctor --fix flannel-nat` (its dry run first, which changes
//!    nothing) brings both back.
//! 5. A second `up` plans no action and keeps every container.
//! 6. `remove --force` leaves no container and none of the cluster's files on any host.
//!
//! With `RKERS_REAL_E2E_NETWORK=canal` the network plugin is canal, RKE1's default: flannel for
//! the pod traffic and calico-node (felix, built from github.com/projectcalico/calico) for
//! network policy, its CNI plugin installed by calico-cni's `install`. Besides the steps above
//! (doctor's checks and fix reading canal's pods), a NetworkPolicy admitting only labelled
//! clients is enforced between pods on different hosts, and lifted again.
//!
//! The sandbox instance is `RKERS_REAL_E2E` (`KEY=VALUE` words, as `tests/e2e_local.rs` takes
//! `RKERS_LOCAL_E2E`); the version is `RKERS_REAL_E2E_VERSION` (default `v1.32.9-rancher1-1`,
//! the newest v1.32 KDM published whose modules the Go module proxy here serves in full); the
//! hosts' Docker is `RKERS_REAL_E2E_DOCKER` (`system`, Debian's 20.10, by default; `29` for
//! Docker 29 built from its Go modules, checked on every host before anything else).
//! The instance is started fresh and taken down when the test passes. scripts/test runs it
//! for v1.32; scripts/test-versions for the other versions.

mod support;

use std::collections::BTreeMap;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use support::docker_host::Instance;

const DEFAULT_VERSION: &str = "v1.32.9-rancher1-1";
const HOSTS: [&str; 3] = ["host1", "host2", "host3"];

struct Cluster {
    sb: Instance,
    rkers: PathBuf,
    kubectl: PathBuf,
    config: PathBuf,
    kubeconfig: PathBuf,
}

impl Cluster {
    fn rkers(&self, args: &[&str]) -> (bool, String) {
        self.sb.rkers(&self.rkers, &self.config, args)
    }

    fn kubectl(&self, args: &[&str]) -> (bool, String) {
        self.kubectl_stdin(args, None)
    }

    fn kubectl_stdin(&self, args: &[&str], stdin: Option<&str>) -> (bool, String) {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        support::outcome_with_stdin(cmd, stdin)
    }

    /// The body of `GET /` on `host:port`, asked from inside `pod` with busybox's nc (Debian's
    /// static busybox wget crashes), resolving `host` through the pod's DNS.
    fn http_from_pod(&self, pod: &str, host: &str, port: u16) -> (bool, String) {
        let (ok, text) = self.kubectl(&[
            "exec",
            pod,
            "--",
            "sh",
            "-c",
            &format!("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 {host} {port}"),
        ]);
        if !ok || !text.starts_with("HTTP/1.") {
            return (false, text);
        }
        (true, text.lines().last().unwrap_or_default().to_string())
    }

    /// One field of a kube-system object, as kubectl's jsonpath prints it.
    fn kube_system_field(&self, kind: &str, name: &str, path: &str) -> String {
        self.must(&[
            "-n",
            "kube-system",
            "get",
            kind,
            name,
            "-o",
            &format!("jsonpath={{{path}}}"),
        ])
    }

    /// kubectl, failing the test when it fails.
    fn must(&self, args: &[&str]) -> String {
        let (ok, text) = self.kubectl(args);
        assert!(ok, "kubectl {args:?} failed:\n{text}");
        text
    }

    /// Retries `f` until it gives `Some`, or fails the test with the last answer.
    fn eventually<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut() -> Result<T, String>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            match f() {
                Ok(v) => return v,
                Err(last) => {
                    if Instant::now() > deadline {
                        let pods = self.kubectl(&["get", "pods", "-A", "-o", "wide"]).1;
                        let events = self
                            .kubectl(&["get", "events", "-A", "--sort-by=.lastTimestamp"])
                            .1;
                        let tail: Vec<&str> = events.lines().rev().take(40).collect();
                        panic!(
                            "{what}: not after {timeout:?}; last: {last}\npods:\n{pods}\nnewest events:\n{}",
                            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                        );
                    }
                    std::thread::sleep(Duration::from_secs(3));
                }
            }
        }
    }

    /// Every container on every host, as `host name id` lines.
    fn containers(&self) -> Vec<String> {
        let mut all = Vec::new();
        for host in HOSTS {
            let (ok, text) = self.sb.on_host(
                host,
                "docker ps -a --format '{{.Names}} {{.ID}} {{.State}}'",
            );
            assert!(ok, "{host}: docker ps: {text}");
            all.extend(text.lines().map(|l| format!("{host} {l}")));
        }
        all.sort();
        all
    }
}

/// `rkers --output json doctor`: whether it passed (else its failed findings, one per line) and
/// each node's `flannel-nat` finding.
fn flannel_nat(c: &Cluster) -> (Result<(), String>, BTreeMap<String, serde_json::Value>) {
    let (ok, out) = c.rkers(&["--output", "json", "doctor"]);
    let line = out
        .lines()
        .rev()
        .find(|l| l.contains("\"findings\""))
        .unwrap_or_else(|| panic!("rkers doctor printed no report:\n{out}"));
    let report: serde_json::Value = serde_json::from_str(line).unwrap();
    let findings = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "flannel-nat")
        .map(|f| {
            (
                f["node"].as_str().unwrap_or_default().to_string(),
                f.clone(),
            )
        })
        .collect();
    let failed: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "fail")
        .map(|f| {
            let evidence: Vec<&str> = f["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str())
                .collect();
            format!(
                "{} {}: {}\n    {}",
                f["check"],
                f["node"],
                f["summary"],
                evidence.join("\n    ")
            )
        })
        .collect();
    let passed = if ok { Ok(()) } else { Err(failed.join("\n")) };
    (passed, findings)
}

/// The sandbox registry from a pod on host2 (outside the pod network: the machine has no route
/// back to a pod address, so only flannel's masquerade gets an answer home).
fn outbound_from(c: &Cluster, pod: &str, registry: &str) -> (bool, String) {
    let (host, port) = registry
        .rsplit_once(':')
        .expect("the registry as host:port");
    c.http_from_pod(pod, host, port.parse().expect("a port"))
}

/// Real flannel v0.27 puts its nat rules back every 5 s (its iptables resync), so an operator's
/// lost chain heals by itself there; RKE1's older flannel lost it for good when its pod
/// restarted (doctor warns about those images). To hold the lost state long enough to look at
/// it, host2's flannel container is frozen (`docker pause`, this test's own device); the chain
/// is then really deleted in host2's network namespace. doctor must name host2 and the fix, pod
/// traffic from host2 to outside the cluster must stop, and `rkers doctor --fix flannel-nat`,
/// run while the container is still frozen (an old flannel that never restores its rules),
/// must bring it back.
fn flannel_nat_lost_and_fixed(c: &Cluster, pod: &str, registry: &str, cni_daemonset: &str) {
    let (passed, before) = flannel_nat(c);
    if let Err(failed) = passed {
        panic!("doctor failed on a healthy cluster:\n{failed}");
    }
    assert_eq!(before.len(), 3, "{before:#?}");
    for (node, f) in &before {
        assert_eq!(f["status"], "ok", "{node}: {f:#}");
    }
    let (ok, answer) = outbound_from(c, pod, registry);
    assert!(ok, "a pod on host2 reaches the registry before: {answer}");

    // Older flannel (v0.15, v1.24's) keeps its masquerade rules in POSTROUTING itself, without
    // a comment: its outbound one (it spares multicast, 224.0.0.0/4) goes too.
    let delete_chain = "for ipt in iptables-nft iptables-legacy; do \
        $ipt -t nat -D POSTROUTING -m comment --comment 'flanneld masq' -j FLANNEL-POSTRTG 2>/dev/null; \
        $ipt -t nat -F FLANNEL-POSTRTG 2>/dev/null; $ipt -t nat -X FLANNEL-POSTRTG 2>/dev/null; \
        $ipt-save -t nat 2>/dev/null | grep -E '^-A POSTROUTING .*(flanneld masq|224[.]0[.]0[.]0/4)' | sed 's/^-A /-D /' | \
        while read -r rule; do eval \"$ipt -t nat $rule\"; done; done; \
        iptables-nft-save -t nat 2>/dev/null | grep -c FLANNEL-POSTRTG; \
        iptables-legacy-save -t nat 2>/dev/null | grep -c FLANNEL-POSTRTG; true";
    // Unfrozen, real flannel restores the chain by itself.
    let t = Instant::now();
    let (ok, text) = c.sb.on_host("host2", delete_chain);
    assert!(ok, "{text}");
    c.eventually(
        "flannel restores its chain",
        Duration::from_secs(90),
        || {
            let (_, now) = flannel_nat(c);
            (now["host2"]["status"] == "ok")
                .then_some(())
                .ok_or(format!("{:#}", now["host2"]))
        },
    );
    eprintln!(
        "real flannel restored FLANNEL-POSTRTG on host2 within {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let flannel_container = "docker ps -q --filter name=k8s_kube-flannel_ --filter status=running";
    let (ok, id) = c.sb.on_host("host2", flannel_container);
    assert!(
        ok && id.lines().count() == 1,
        "host2's flannel container: {id}"
    );
    let id = id.trim().to_string();
    let (ok, text) = c.sb.on_host("host2", &format!("docker pause {id}"));
    assert!(ok, "{text}");
    let (ok, text) = c.sb.on_host("host2", delete_chain);
    assert!(ok, "{text}");
    let (passed, after) = flannel_nat(c);
    let f = &after["host2"];
    assert!(
        passed.is_err(),
        "doctor passed with host2's nat chain gone: {f:#}"
    );
    assert_eq!(f["status"], "fail", "{f:#}");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("no FLANNEL-POSTRTG chain"),
        "{f:#}"
    );
    for node in ["host1", "host3"] {
        assert_eq!(after[node]["status"], "ok", "{node}: {:#}", after[node]);
    }
    let (ok, answer) = outbound_from(c, pod, registry);
    assert!(
        !ok,
        "a pod on host2 still reaches outside without NAT: {answer}"
    );

    // The fix doctor prints: `rkers doctor --fix flannel-nat --host <host2>`, or by hand,
    // delete host2's flannel pod (its successor re-creates the rules).
    assert!(
        f["fix"][0]
            .as_str()
            .unwrap()
            .starts_with("rkers doctor --fix flannel-nat --host "),
        "{f:#}"
    );
    let by_hand = f["fix"][1].as_str().unwrap();
    assert!(
        by_hand.starts_with(&format!(
            "kubectl -n kube-system delete pod {cni_daemonset}-"
        )),
        "{by_hand}"
    );
    let pod_name = by_hand.split_whitespace().nth(5).unwrap().to_string();
    // Its dry run names host2's pod alone and changes nothing: the container is still frozen.
    let (ok, out) = c.rkers(&["doctor", "--fix", "flannel-nat", "--dry-run"]);
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!(
            "delete pod kube-system/{pod_name} on node host2 (outbound NAT is broken"
        )),
        "{out}"
    );
    assert_eq!(out.matches("delete pod ").count(), 1, "{out}");
    let (_, still) = flannel_nat(c);
    assert_eq!(
        still["host2"]["status"], "fail",
        "the dry run changed nothing: {:#}",
        still["host2"]
    );
    // The fix runs with host2's flannel still frozen, as an old flannel that never restores
    // its rules: Docker thaws a paused container to stop it, so the pod's deletion goes through.
    let t = Instant::now();
    let (ok, out) = c.rkers(&["doctor", "--fix", "flannel-nat"]);
    assert!(ok, "rkers doctor --fix flannel-nat failed:\n{out}");
    assert!(
        out.contains(&format!(
            "host2: running: kubectl -n kube-system delete pod {pod_name}"
        )),
        "{out}"
    );
    assert!(out.contains("host2: fixed in "), "{out}");
    let (passed, now) = flannel_nat(c);
    assert!(
        passed.is_ok() && now["host2"]["status"] == "ok",
        "doctor after the fix: {:#}",
        now["host2"]
    );
    c.eventually(
        "a pod on host2 reaches outside again",
        Duration::from_secs(60),
        || {
            let (ok, text) = outbound_from(c, pod, registry);
            if ok { Ok(()) } else { Err(text) }
        },
    );
    eprintln!(
        "rkers doctor --fix flannel-nat: host2's NAT and pod traffic back {:.1}s after it started",
        t.elapsed().as_secs_f64()
    );
}

/// Canal's felix enforces a NetworkPolicy between pods on different hosts: `client` (on host1)
/// reaches the web pod at `far` (on host3) before; with a policy admitting only pods labelled
/// `web-client=yes` it no longer does, while felix's chains are on every host; labelled, it does
/// again; without the policy, an unlabelled pod does again too.
fn network_policy_enforced(c: &Cluster, client: &str, far: &str) {
    for host in HOSTS {
        let (ok, chains) = c.sb.on_host(
            host,
            "{ iptables-nft-save; iptables-legacy-save; } 2>/dev/null | grep -c '^:cali-' || true",
        );
        assert!(ok, "{host}: {chains}");
        let n: u32 = chains.trim().parse().unwrap_or(0);
        assert!(n > 0, "{host} has no felix chain (cali-*): {chains}");
        eprintln!("{host}: {n} felix chains");
    }
    let policy = r#"apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-from-clients
  namespace: default
spec:
  podSelector:
    matchLabels: {app: web}
  policyTypes: [Ingress]
  ingress:
  - from:
    - podSelector:
        matchLabels: {web-client: "yes"}
    ports:
    - port: 8080
"#;
    let (ok, text) = c.kubectl_stdin(&["apply", "-f", "-"], Some(policy));
    assert!(ok, "{text}");
    let t = Instant::now();
    c.eventually(
        "the policy refuses an unlabelled client on another host",
        Duration::from_secs(60),
        || match c.http_from_pod(client, far, 8080) {
            (false, _) => Ok(()),
            (true, answer) => Err(format!("still answered: {answer}")),
        },
    );
    eprintln!(
        "NetworkPolicy enforced across hosts {:.1}s after it was applied",
        t.elapsed().as_secs_f64()
    );
    c.must(&["label", "pod", client, "web-client=yes"]);
    let answer = c.eventually(
        "the policy admits the labelled client",
        Duration::from_secs(60),
        || {
            let (ok, text) = c.http_from_pod(client, far, 8080);
            if ok { Ok(text) } else { Err(text) }
        },
    );
    assert_eq!(answer.trim(), "web on host3");
    c.must(&["label", "pod", client, "web-client-"]);
    c.must(&["delete", "networkpolicy", "web-from-clients"]);
    c.eventually(
        "an unlabelled client again once the policy is gone",
        Duration::from_secs(60),
        || {
            let (ok, text) = c.http_from_pod(client, far, 8080);
            if ok { Ok(()) } else { Err(text) }
        },
    );
}

/// The kubectl of the same module build as the cluster (scripts/build-modules' cache).
fn kubectl_for(version: &str) -> PathBuf {
    let k8s = version.split('-').next().unwrap();
    let cache = std::env::var("RKERS_CACHE").unwrap_or_else(|_| "/var/cache/rkers".into());
    PathBuf::from(format!("{cache}/modules/kubernetes/{k8s}/bin/kubectl"))
}

fn workload(pods: usize, registry: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: {pods}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {{app: web}}
            topologyKey: kubernetes.io/hostname
      tolerations:
      - operator: Exists
      containers:
      - name: web
        image: {registry}/rkers/testbox:1.35-rkers1
        command: ["sh", "-c", "mkdir -p /www && echo \"web on $NODE\" >/www/index.html && exec httpd -f -p 8080 -h /www"]
        env:
        - name: NODE
          valueFrom: {{fieldRef: {{fieldPath: spec.nodeName}}}}
        ports:
        - containerPort: 8080
        readinessProbe:
          httpGet: {{path: /, port: 8080}}
          periodSeconds: 2
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  selector: {{app: web}}
  ports:
  - port: 80
    targetPort: 8080
"#
    )
}

#[test]
fn a_real_cluster_from_go_modules_serves_pods_services_dns_and_metrics() {
    let version =
        std::env::var("RKERS_REAL_E2E_VERSION").unwrap_or_else(|_| DEFAULT_VERSION.to_string());
    // `system` (the machine's packaged Docker, 20.10 on Debian 12) or `29` (Docker 29 built from
    // its Go modules by scripts/build-modules docker).
    let docker = std::env::var("RKERS_REAL_E2E_DOCKER").unwrap_or_else(|_| "system".to_string());
    let network = std::env::var("RKERS_REAL_E2E_NETWORK").unwrap_or_else(|_| "flannel".to_string());
    let cni_daemonset = match network.as_str() {
        "flannel" => "kube-flannel",
        "canal" => "canal",
        other => panic!("RKERS_REAL_E2E_NETWORK is flannel or canal, not {other}"),
    };
    let Some(sb) = Instance::fresh_with(
        "RKERS_REAL_E2E",
        &[
            "--hosts", "3", "--roles", "default", "--cni", "none", "--docker", &docker,
        ],
    ) else {
        return;
    };
    for host in HOSTS {
        let (ok, server) = sb.on_host(host, "docker version --format '{{.Server.Version}}'");
        assert!(ok, "{host}: docker version failed: {server}");
        let want = if docker == "system" { "20.10." } else { "29." };
        assert!(
            server.trim().starts_with(want),
            "{host} runs Docker {server}, the test asked for {docker}"
        );
        eprintln!("{host}: Docker {}", server.trim());
    }
    let started = Instant::now();
    // Builds what is missing (a cache hit when scripts/test built it before) and pushes.
    let yml = sb.sandbox(&["images", &version, "--network", &network]);
    let yml = PathBuf::from(
        yml.lines()
            .last()
            .expect("scripts/sandbox images prints a path"),
    );
    eprintln!(
        "scripts/sandbox images {version} --network {network}: {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let text = std::fs::read_to_string(&yml).unwrap();
    assert!(
        !text.contains("system_images"),
        "the cluster.yml names images: {text}"
    );
    assert!(
        text.contains(&format!("kubernetes_version: {version}")),
        "{text}"
    );
    assert!(text.contains(&format!("plugin: {network}")), "{text}");

    // Beside the instance (kept after a failure for a look, gone with its purge).
    let work = sb.dir.join("e2e-real");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let config = work.join("cluster.yml");
    std::fs::write(&config, &text).unwrap();
    let kubectl = kubectl_for(&version);
    assert!(
        kubectl.exists(),
        "{} is missing: scripts/sandbox images builds it",
        kubectl.display()
    );
    let c = Cluster {
        rkers: PathBuf::from(env!("CARGO_BIN_EXE_rkers")),
        kubeconfig: work.join("kube_config_cluster.yml"),
        config,
        kubectl,
        sb,
    };

    // 1. up: three Ready nodes with the real kubelet version.
    let t = Instant::now();
    let (ok, out) = c.rkers(&["up"]);
    assert!(ok, "rkers up {version} failed:\n{out}");
    eprintln!("rkers up {version}: {:.1}s", t.elapsed().as_secs_f64());
    let k8s = version.split('-').next().unwrap().to_string();
    let nodes = c.eventually("three Ready nodes", Duration::from_secs(300), || {
        let (ok, text) = c.kubectl(&[
            "get",
            "nodes",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} {.status.conditions[?(@.type==\"Ready\")].status} {.status.nodeInfo.containerRuntimeVersion}{\"\\n\"}{end}",
        ]);
        let lines: Vec<&str> = text.lines().collect();
        if ok && lines.len() == 3 && lines.iter().all(|l| l.split(' ').nth(2) == Some("True")) {
            Ok(text.clone())
        } else {
            Err(text)
        }
    });
    eprintln!(
        "nodes Ready {:.1}s after up began:\n{nodes}",
        t.elapsed().as_secs_f64()
    );
    for line in nodes.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        assert!(HOSTS.contains(&f[0]), "{line}");
        assert_eq!(f[1], k8s, "kubelet version of {}: {line}", f[0]);
        assert!(f[3].starts_with("docker://"), "runtime of {}: {line}", f[0]);
    }
    let version_json = c.must(&["version", "-o", "json"]);
    assert!(
        version_json.contains(&format!("\"gitVersion\": \"{k8s}\"")),
        "/version: {version_json}"
    );
    // Every node runs the network plugin's pod, Ready (canal's calico-node is when felix is);
    // CoreDNS and metrics-server are available.
    c.eventually(
        &format!("{cni_daemonset} on every node"),
        Duration::from_secs(300),
        || {
            let text = c.kube_system_field("daemonset", cni_daemonset, ".status.numberReady");
            (text.trim() == "3").then_some(()).ok_or(text)
        },
    );
    for deploy in ["coredns", "metrics-server"] {
        c.eventually(
            &format!("{deploy} available"),
            Duration::from_secs(300),
            || {
                let text = c.kube_system_field("deployment", deploy, ".status.availableReplicas");
                (text.trim().parse::<u32>().unwrap_or(0) >= 1)
                    .then_some(())
                    .ok_or(text)
            },
        );
    }

    // 2. A Deployment spread over all hosts, behind a Service.
    let registry = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("- url: "))
        .expect("the cluster.yml names the sandbox registry")
        .to_string();
    let (ok, text) = c.kubectl_stdin(&["apply", "-f", "-"], Some(&workload(3, &registry)));
    assert!(ok, "{text}");
    let pods = c.eventually("three web pods Ready, one per host", Duration::from_secs(300), || {
        let text = c.must(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.podIP} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}",
        ]);
        let rows: Vec<Vec<String>> = text
            .lines()
            .map(|l| l.split(' ').map(str::to_string).collect())
            .collect();
        let mut hosts: Vec<&str> = rows.iter().map(|r| r[1].as_str()).collect();
        hosts.sort();
        if rows.len() == 3 && rows.iter().all(|r| r.len() == 4 && r[3] == "True") && hosts == HOSTS {
            Ok(rows)
        } else {
            Err(text)
        }
    });
    let cluster_ip = c
        .must(&["get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"])
        .trim()
        .to_string();
    // From every host, through kube-proxy's rules, every backend in turn.
    for host in HOSTS {
        let answers = c.eventually(
            &format!("the Service from {host}"),
            Duration::from_secs(120),
            || {
                let mut seen = std::collections::BTreeSet::new();
                for _ in 0..15 {
                    let (ok, text) =
                        c.sb.on_host(host, &format!("curl -sS --max-time 3 http://{cluster_ip}/"));
                    if !ok {
                        return Err(text);
                    }
                    seen.insert(text.trim().to_string());
                }
                Ok(seen)
            },
        );
        eprintln!("{host} -> {cluster_ip}: {answers:?}");
        assert!(
            answers.iter().all(|a| a.starts_with("web on host")),
            "{answers:?}"
        );
    }
    // From a pod on host1: the pod on host3 directly (flannel's VXLAN), and the Service by name.
    let client = pods.iter().find(|r| r[1] == "host1").unwrap()[0].clone();
    let far = pods.iter().find(|r| r[1] == "host3").unwrap()[2].clone();
    let direct = c.eventually(
        "a pod on host3 from a pod on host1",
        Duration::from_secs(60),
        || {
            let (ok, text) = c.http_from_pod(&client, &far, 8080);
            if ok { Ok(text) } else { Err(text) }
        },
    );
    assert_eq!(direct.trim(), "web on host3");
    let by_name = c.eventually(
        "the Service by its DNS name from a pod",
        Duration::from_secs(120),
        || {
            let (ok, text) = c.http_from_pod(&client, "web.default.svc.cluster.local", 80);
            if ok { Ok(text) } else { Err(text) }
        },
    );
    assert!(by_name.trim().starts_with("web on host"), "{by_name}");
    let lookup = c.must(&[
        "exec",
        &client,
        "--",
        "nslookup",
        "kubernetes.default.svc.cluster.local",
    ]);
    assert!(lookup.contains("10.43.0.1"), "{lookup}");
    if network == "canal" {
        let far_pod = pods.iter().find(|r| r[1] == "host3").unwrap()[2].clone();
        network_policy_enforced(&c, &client, &far_pod);
    }

    // 3. Metrics from every kubelet.
    let top = c.eventually("kubectl top nodes", Duration::from_secs(240), || {
        let (ok, text) = c.kubectl(&["top", "nodes", "--no-headers"]);
        if ok && text.lines().count() == 3 {
            Ok(text)
        } else {
            Err(text)
        }
    });
    eprintln!("kubectl top nodes:\n{top}");

    // 4. The seed incident "FLANNEL-POSTRTG lost" on real flannel (docs/src/doctor.md).
    let on_host2 = pods.iter().find(|r| r[1] == "host2").unwrap()[0].clone();
    flannel_nat_lost_and_fixed(&c, &on_host2, &registry, cni_daemonset);

    // 5. A second up changes nothing.
    let before = c.containers();
    let (ok, plan) = c.rkers(&["up", "--dry-run"]);
    assert!(ok, "{plan}");
    assert!(
        plan.contains("0 actions on 3 host"),
        "a second up would act:\n{plan}"
    );
    let (ok, out) = c.rkers(&["up"]);
    assert!(ok, "the second up failed:\n{out}");
    let after = c.containers();
    let ids = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|l| !l.contains(" k8s_"))
            .map(|l| l.rsplit_once(' ').unwrap().0.to_string())
            .collect()
    };
    assert_eq!(ids(&before), ids(&after), "a no-op up changed containers");

    // 6. remove leaves the hosts clean.
    let (ok, out) = c.rkers(&["remove", "--force"]);
    assert!(ok, "rkers remove failed:\n{out}");
    let left = c.containers();
    assert!(left.is_empty(), "containers left after remove: {left:?}");
    for host in HOSTS {
        let (_, files) = c.sb.on_host(
            host,
            "ls -A /etc/kubernetes /var/lib/etcd /etc/cni/net.d /var/lib/cri-dockerd /var/run/calico 2>/dev/null | grep -v ':$' | grep -v '^$' || true",
        );
        assert!(files.trim().is_empty(), "{host} keeps: {files}");
    }
    eprintln!("the whole test: {:.1}s", started.elapsed().as_secs_f64());
    let _ = c.sb.sandbox(&["down", "--purge"]);
}
