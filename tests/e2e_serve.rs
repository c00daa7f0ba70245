//! `rkers serve` end to end: two replicas of the real binary on one real PostgreSQL, driving two
//! one-host clusters on two sandbox instances through the HTTP API (curl as the client).
//!
//! One flow, the clusters reused from step to step: tokens refused; both clusters registered;
//! an `up` cancelled through the other replica, its state still loading; both clusters brought
//! up concurrently while their events stream (SSE) to the result; a request for a busy cluster
//! on the other replica answering 409 with the running operation's id; the states in the
//! database with their history, sealed; the kubeconfig kept sealed and working; one cluster
//! removed. Ends with both instances purged.
//!
//! Environment (the test skips, saying why, without them):
//! - `RKERS_TEST_POSTGRES_URL`: a PostgreSQL server (scripts/postgres prints one); the test
//!   makes its own database there.
//! - `RKERS_SERVE_E2E_INSTANCES`: the two sandbox instances, as
//!   `name:subnet_prefix:pod_prefix:registry_port` separated by commas, e.g.
//!   `r:10.77.10:10.73:5010,t:10.77.11:10.74:5011` (instance `r` lives in
//!   /var/lib/rkers-sandbox-r on bridge rkbrr). Their registries serve `SANDBOX_REGISTRY_STORAGE`
//!   (default: the main sandbox's store). The test starts each with one fresh host.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const TOKEN: &str = "e2e-serve-token-5c1d0b7e9a";

/// One sandbox instance, as scripts/sandbox reads it from the environment.
struct Instance {
    name: String,
    envs: Vec<(String, String)>,
    dir: PathBuf,
}

impl Instance {
    fn parse(spec: &str) -> Result<Instance, String> {
        let parts: Vec<&str> = spec.trim().split(':').collect();
        let [name, subnet, pods, port] = parts[..] else {
            return Err(format!(
                "RKERS_SERVE_E2E_INSTANCES: `{spec}` is not name:subnet_prefix:pod_prefix:registry_port"
            ));
        };
        let dir = PathBuf::from(format!("/var/lib/rkers-sandbox-{name}"));
        let mut envs = vec![
            ("SANDBOX_INSTANCE", name.to_string()),
            ("RKERS_SANDBOX_DIR", dir.display().to_string()),
            ("SANDBOX_BRIDGE", format!("rkbr{name}")),
            ("SANDBOX_SUBNET_PREFIX", subnet.to_string()),
            ("SANDBOX_POD_PREFIX", pods.to_string()),
            ("SANDBOX_REGISTRY_LOCAL", format!("127.0.0.1:{port}")),
        ];
        // The images live in the main sandbox's registry store, which every instance serves.
        let storage = std::env::var("SANDBOX_REGISTRY_STORAGE").unwrap_or_else(|_| {
            let main = std::env::var("RKERS_SANDBOX_DIR")
                .unwrap_or_else(|_| "/var/lib/rkers-sandbox".into());
            format!("{main}/registry/storage")
        });
        envs.push(("SANDBOX_REGISTRY_STORAGE", storage));
        Ok(Instance {
            name: name.to_string(),
            envs: envs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            dir,
        })
    }

    fn sandbox(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new("bash")
            .arg(support::Sandbox::script())
            .args(args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run scripts/sandbox");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// Fresh host1 (purged: no containers or state of an earlier run); returns its cluster.yml.
    fn fresh(&self) -> String {
        let _ = self.sandbox(&["down", "--purge"]);
        let (ok, out) = self.sandbox(&["up", "--hosts", "1", "--roles", "default"]);
        assert!(ok, "sandbox {} up: {out}", self.name);
        std::fs::read_to_string(self.dir.join("cluster.yml")).unwrap()
    }

    /// host1's address on this instance's bridge (what known_hosts records).
    fn host1_address(&self) -> String {
        let prefix = self
            .envs
            .iter()
            .find(|(k, _)| k == "SANDBOX_SUBNET_PREFIX")
            .map(|(_, v)| v.clone())
            .expect("an instance names its subnet");
        format!("{prefix}.11")
    }

    fn containers(&self) -> String {
        let (ok, out) = self.sandbox(&[
            "exec",
            "host1",
            "sh",
            "-c",
            "docker ps -a --format '{{.Names}}'",
        ]);
        assert!(ok, "{out}");
        out
    }
}

/// A `rkers serve` process, killed when dropped.
struct Replica {
    child: Child,
    base: String,
}

impl Replica {
    fn start(name: &str, database: &str, dir: &Path) -> Replica {
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args(["serve", "--listen", "127.0.0.1:0", "--replica-id", name])
            .arg("--database")
            .arg(database)
            .arg("--tokens-file")
            .arg(dir.join("tokens"))
            .arg("--secret-key-file")
            .arg(dir.join("key"))
            // One known_hosts for both replicas, as operators would share it.
            .arg("--known-hosts")
            .arg(dir.join("known_hosts"))
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start rkers serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| {
                panic!(
                    "rkers serve {name} did not start: {line}{}",
                    std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default()
                )
            })
            .to_string();
        Replica { child, base }
    }

    /// (HTTP status, JSON body) of one request; `token: None` sends no Authorization header.
    fn call(&self, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, Value) {
        let mut cmd = Command::new("curl");
        cmd.args([
            "-sS",
            "-X",
            method,
            "-w",
            "\n%{http_code}",
            "--data-binary",
            "@-",
        ])
        .arg(format!("{}{path}", self.base));
        if let Some(t) = token {
            cmd.args(["-H", &format!("Authorization: Bearer {t}")]);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), body.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (json, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        assert_no_secret(json);
        (
            code.trim().parse().unwrap_or(0),
            serde_json::from_str(json).unwrap_or(Value::String(json.to_string())),
        )
    }

    fn ok(&self, method: &str, path: &str, body: &str) -> Value {
        let (code, v) = self.call(method, path, Some(TOKEN), body);
        assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
        v
    }

    fn start_op(&self, cluster: &str, op: &str) -> String {
        let v = self.ok("POST", &format!("/v1/clusters/{cluster}/{op}"), "");
        v["operation_id"].as_str().unwrap().to_string()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sandbox registries' passwords (in the cluster.yml files), once read.
static PASSWORDS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Secrets the responses, events and logs must never carry.
fn assert_no_secret(text: &str) {
    let passwords = PASSWORDS.lock().unwrap().clone();
    for needle in ["PRIVATE KEY", "client-key-data", TOKEN]
        .into_iter()
        .chain(passwords.iter().map(String::as_str))
    {
        assert!(!text.contains(needle), "a secret ({needle}) in: {text}");
    }
}

/// An operation's SSE stream, followed by curl on a thread: (event name, data) pairs.
struct Stream {
    events: std::sync::mpsc::Receiver<(String, Value)>,
    child: Child,
}

impl Stream {
    fn open(replica: &Replica, id: &str) -> Stream {
        let mut child = Command::new("curl")
            .args(["-sS", "-N", "-H", &format!("Authorization: Bearer {TOKEN}")])
            .arg(format!("{}/v1/operations/{id}/events", replica.base))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut name = String::new();
            for line in out.lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("event:") {
                    name = n.trim().to_string();
                } else if let Some(d) = line.strip_prefix("data:") {
                    assert_no_secret(d);
                    let v: Value = serde_json::from_str(d.trim()).unwrap_or(Value::Null);
                    if tx.send((name.clone(), v)).is_err() {
                        return;
                    }
                }
            }
        });
        Stream { events: rx, child }
    }

    /// Events until the result event (returned last); panics after `timeout`.
    fn until_result(&mut self, timeout: Duration) -> Vec<(String, Value)> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(e) => {
                    let done = e.0 == "result";
                    seen.push(e);
                    if done {
                        return seen;
                    }
                }
                Err(e) => panic!("no result event ({e}); events so far: {seen:?}"),
            }
        }
    }

    fn next(&mut self, timeout: Duration) -> (String, Value) {
        self.events.recv_timeout(timeout).expect("an event")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Opens the kubeconfig the server stored sealed for `cluster` and asks its API server for its
/// version.
fn stored_kubeconfig_reaches_api(
    runtime: &tokio::runtime::Runtime,
    database: &str,
    key: &[u8; 32],
    cluster: &str,
) -> Result<String, String> {
    runtime.block_on(async {
        use sqlx::Row;
        let pool = sqlx::AnyPool::connect(database).await.unwrap();
        let sealed: String = sqlx::query("SELECT sealed FROM kubeconfigs WHERE cluster = $1")
            .bind(cluster)
            .fetch_one(&pool)
            .await
            .unwrap()
            .get("sealed");
        let kubeconfig = rkers::serve::SecretBox::new(key)
            .open_string(&format!("kubeconfig:{cluster}"), &sealed)
            .unwrap();
        let api = rkers::kubeapi::KubeApi::from_kubeconfig(&kubeconfig)
            .await
            .map_err(|e| e.to_string())?;
        api.server_version().await.map_err(|e| e.to_string())
    })
}

fn exit_code(events: &[(String, Value)]) -> i64 {
    events.last().unwrap().1["exit_code"].as_i64().unwrap_or(-1)
}

#[test]
fn serve_drives_two_clusters_from_two_replicas() {
    if let Err(reason) = support::require_root_and(&["curl", "ip", "nsenter"]) {
        return support::skip(&reason);
    }
    let (Ok(pg), Ok(specs)) = (
        std::env::var("RKERS_TEST_POSTGRES_URL"),
        std::env::var("RKERS_SERVE_E2E_INSTANCES"),
    ) else {
        return support::skip(
            "RKERS_TEST_POSTGRES_URL and RKERS_SERVE_E2E_INSTANCES are needed (see tests/e2e_serve.rs)",
        );
    };
    let instances: Vec<Instance> = specs
        .split(',')
        .map(|s| Instance::parse(s).unwrap())
        .collect();
    assert_eq!(
        instances.len(),
        2,
        "RKERS_SERVE_E2E_INSTANCES names two instances"
    );
    let started = Instant::now();
    let yamls: Vec<String> = std::thread::scope(|s| {
        let hs: Vec<_> = instances.iter().map(|i| s.spawn(|| i.fresh())).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    eprintln!("sandboxes fresh after {:?}", started.elapsed());

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let database = runtime
        .block_on(rkers::serve::db::create_postgres_database(&pg))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokens"), format!("# e2e\n{TOKEN}\n")).unwrap();
    let key: [u8; 32] = rand::random();
    std::fs::write(dir.path().join("key"), key).unwrap();
    for file in ["tokens", "key"] {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(dir.path().join(file), private).unwrap();
    }
    let a = Replica::start("replica-a", &database, dir.path());
    let b = Replica::start("replica-b", &database, dir.path());

    // 6. Without a token, or with a wrong one: refused, on both replicas.
    for replica in [&a, &b] {
        assert_eq!(replica.call("GET", "/v1/clusters", None, "").0, 401);
        let (code, body) = replica.call("GET", "/v1/clusters", Some("wrong-token-0123456789"), "");
        assert_eq!(code, 401, "{body}");
        assert_eq!(
            replica
                .call(
                    "POST",
                    "/v1/clusters/r/up",
                    Some("wrong-token-0123456789"),
                    ""
                )
                .0,
            401
        );
    }

    // Register both clusters, one through each replica.
    let names: Vec<String> = instances
        .iter()
        .map(|i| format!("serve-{}", i.name))
        .collect();
    let (n0, n1) = (names[0].as_str(), names[1].as_str());
    let (code, body) = a.call("PUT", &format!("/v1/clusters/{n0}"), Some(TOKEN), &yamls[0]);
    assert_eq!(code, 201, "{body}");
    let (code, body) = b.call("PUT", &format!("/v1/clusters/{n1}"), Some(TOKEN), &yamls[1]);
    assert_eq!(code, 201, "{body}");
    // Updating one is 200; the registry password never comes back.
    let (code, body) = a.call("PUT", &format!("/v1/clusters/{n1}"), Some(TOKEN), &yamls[1]);
    assert_eq!(code, 200, "{body}");
    for y in &yamls {
        let password = y
            .lines()
            .find_map(|l| l.trim().strip_prefix("password:"))
            .unwrap()
            .trim()
            .trim_matches('"');
        PASSWORDS.lock().unwrap().push(password.to_string());
    }
    // Every answer from now on is checked for them (and for keys and the token).
    a.ok("GET", "/v1/clusters", "");

    // The dry run of a cluster never brought up: every host has something to do.
    let plan = a.ok("GET", &format!("/v1/clusters/{n1}/plan"), "");
    assert!(
        plan["hosts"].as_array().is_some_and(|h| !h.is_empty()),
        "{plan}"
    );

    // 4. An `up` cancelled through the other replica: it ends "cancelled" and its state loads.
    let t1 = b.start_op(n1, "up");
    let mut stream = Stream::open(&a, &t1);
    let mut progress = 0;
    while progress < 6 {
        let (name, event) = stream.next(Duration::from_secs(120));
        assert_ne!(
            name, "result",
            "up ended before it could be cancelled: {event}"
        );
        progress += 1;
    }
    let cancel = a.ok("POST", &format!("/v1/operations/{t1}/cancel"), "");
    assert_eq!(cancel["status"], "cancelling", "{cancel}");
    let events = stream.until_result(Duration::from_secs(120));
    assert_eq!(exit_code(&events), 130, "{:?}", events.last());
    let op = b.ok("GET", &format!("/v1/operations/{t1}"), "");
    assert_eq!(op["status"], "cancelled", "{op}");
    let store = runtime.block_on(async {
        let db = rkers::serve::Db::connect(&database).await.unwrap();
        rkers::serve::store::DbStateStore::new(db, rkers::serve::SecretBox::new(&key), n1, None)
    });
    rkers::state::StateStore::load(&store).expect("the cancelled up's state loads");
    eprintln!("cancelled up checked after {:?}", started.elapsed());

    // 1 and 5. Both clusters up at once, from different replicas, streaming their events; a
    // request for a busy cluster on the other replica is 409 with the running operation's id.
    let r_up = a.start_op(n0, "up");
    let t_up = b.start_op(n1, "up");
    for (replica, cluster, running) in [(&b, n0, &r_up), (&a, n1, &t_up)] {
        let (code, body) = replica.call(
            "POST",
            &format!("/v1/clusters/{cluster}/up"),
            Some(TOKEN),
            "",
        );
        assert_eq!(code, 409, "{body}");
        assert_eq!(body["operation_id"], running.as_str(), "{body}");
    }
    let up_started = Instant::now();
    let (r_events, t_events) = std::thread::scope(|s| {
        let r = s.spawn(|| Stream::open(&b, &r_up).until_result(Duration::from_secs(900)));
        let t = s.spawn(|| Stream::open(&a, &t_up).until_result(Duration::from_secs(900)));
        (r.join().unwrap(), t.join().unwrap())
    });
    eprintln!("both ups took {:?}", up_started.elapsed());
    assert_eq!(exit_code(&r_events), 0, "{r_events:?}");
    assert_eq!(exit_code(&t_events), 0, "{t_events:?}");
    assert!(r_events.len() > 5 && t_events.len() > 5);
    let r_op = a.ok("GET", &format!("/v1/operations/{r_up}"), "");
    let t_op = a.ok("GET", &format!("/v1/operations/{t_up}"), "");
    assert_eq!(
        (r_op["status"].as_str(), t_op["status"].as_str()),
        (Some("succeeded"), Some("succeeded"))
    );
    // They ran at the same time: each started before the other ended.
    assert!(r_op["created_at"].as_str() < t_op["finished_at"].as_str());
    assert!(t_op["created_at"].as_str() < r_op["finished_at"].as_str());

    // 2. The states are in the database with their history (versions and times only).
    for (name, op) in [(n0, &r_op), (n1, &t_op)] {
        let history = b.ok("GET", &format!("/v1/clusters/{name}/states"), "");
        let versions = history["versions"].as_array().unwrap();
        assert!(!versions.is_empty(), "{history}");
        assert_eq!(
            versions.last().unwrap()["version"],
            op["state_version"],
            "{history} {op}"
        );
        assert!(
            versions
                .iter()
                .all(|v| v["saved_at"].as_str().is_some_and(|t| t.len() > 10))
        );
    }
    let list = b.ok("GET", "/v1/clusters", "");
    for c in list["clusters"].as_array().unwrap() {
        assert_eq!(c["last_operation"]["status"], "succeeded", "{list}");
        assert_eq!(c["last_operation"]["kind"], "up", "{list}");
    }
    // Sealed at rest: no private key in any stored state, yet the states load with their CA,
    // and the stored kubeconfig reaches the cluster.
    let raw_states = runtime.block_on(async {
        use sqlx::Row;
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&database).await.unwrap();
        let raw: Vec<String> = sqlx::query("SELECT sealed FROM states")
            .fetch_all(&pool)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<String, _>("sealed"))
            .collect();
        raw
    });
    assert!(raw_states.len() >= 2, "{}", raw_states.len());
    assert!(
        raw_states
            .iter()
            .all(|s| !s.contains("PRIVATE KEY") && !s.contains("certificatesBundle"))
    );
    let loaded = rkers::state::StateStore::load(&store).unwrap();
    assert!(
        loaded
            .state
            .unwrap()
            .current_state
            .certificates_bundle
            .contains_key("kube-ca"),
        "the state of {n1} has its CA"
    );
    let version = stored_kubeconfig_reaches_api(&runtime, &database, &key, n0);
    assert!(
        version.as_deref().is_ok_and(|v| v.contains("1.20")),
        "the kubeconfig {n0}'s up stored reaches its API: {version:?}"
    );

    // Every host's key was recorded in the replicas' shared known_hosts.
    let known = std::fs::read_to_string(dir.path().join("known_hosts")).unwrap_or_default();
    for i in &instances {
        let address = i.host1_address();
        assert!(
            known.contains(&address),
            "{address} in known_hosts: {known}"
        );
    }

    // The day-2 operations on the cluster that stays: a snapshot saved on its etcd host, then
    // its certificates rotated: a new state version whose kube-apiserver certificate differs,
    // and the stored kubeconfig (its admin certificate rotated too) still reaches the API.
    let cert_of = |name: &str| {
        let state = rkers::state::StateStore::load(&store)
            .unwrap()
            .state
            .unwrap();
        state
            .current_state
            .certificates_bundle
            .get(name)
            .map(|c| c.certificate_pem.clone())
            .unwrap_or_default()
    };
    let apiserver_before = cert_of("kube-apiserver");
    let versions_before = b.ok("GET", &format!("/v1/clusters/{n1}/states"), "")["versions"]
        .as_array()
        .unwrap()
        .len();
    let v = a.ok(
        "POST",
        &format!("/v1/clusters/{n1}/snapshot-save"),
        r#"{"name": "e2e-serve-snap"}"#,
    );
    let snap = v["operation_id"].as_str().unwrap().to_string();
    let events = Stream::open(&b, &snap).until_result(Duration::from_secs(600));
    assert_eq!(exit_code(&events), 0, "{events:?}");
    let (ok, listing) =
        instances[1].sandbox(&["exec", "host1", "sh", "-c", "ls /opt/rke/etcd-snapshots"]);
    assert!(ok && listing.contains("e2e-serve-snap"), "{listing}");
    let v = b.ok("POST", &format!("/v1/clusters/{n1}/cert-rotate"), "{}");
    let rotate = v["operation_id"].as_str().unwrap().to_string();
    let events = Stream::open(&a, &rotate).until_result(Duration::from_secs(900));
    assert_eq!(exit_code(&events), 0, "{events:?}");
    let apiserver_after = cert_of("kube-apiserver");
    assert!(apiserver_after.contains("BEGIN CERTIFICATE"));
    assert_ne!(
        apiserver_before, apiserver_after,
        "kube-apiserver's certificate rotated"
    );
    let history = b.ok("GET", &format!("/v1/clusters/{n1}/states"), "");
    assert!(
        history["versions"].as_array().unwrap().len() > versions_before,
        "cert-rotate saved a state version: {history}"
    );
    let version = stored_kubeconfig_reaches_api(&runtime, &database, &key, n1);
    assert!(
        version.as_deref().is_ok_and(|v| v.contains("1.20")),
        "after cert-rotate the stored kubeconfig of {n1} reaches its API: {version:?}"
    );

    // 3. Remove one cluster; its host is left without the cluster's containers.
    let remove = b.start_op(n0, "remove");
    let events = Stream::open(&a, &remove).until_result(Duration::from_secs(600));
    assert_eq!(exit_code(&events), 0, "{events:?}");
    let left = instances[0].containers();
    assert!(
        !left.contains("kube-apiserver") && !left.contains("etcd"),
        "{left}"
    );
    assert!(instances[1].containers().contains("kube-apiserver"));
    // Its history keeps the state the up saved and adds what remove left (an empty state).
    let history = a.ok("GET", &format!("/v1/clusters/{n0}/states"), "");
    let versions: Vec<i64> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    let remove_op = a.ok("GET", &format!("/v1/operations/{remove}"), "");
    assert!(versions.len() >= 2, "{history}");
    assert_eq!(
        versions.last().copied(),
        remove_op["state_version"].as_i64(),
        "{history} {remove_op}"
    );
    assert_eq!(
        versions,
        (1..=versions.len() as i64).collect::<Vec<_>>(),
        "{history}"
    );
    let list = a.ok("GET", "/v1/clusters", "");
    let removed = list["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == n0)
        .unwrap();
    assert_eq!(removed["last_operation"]["kind"], "remove", "{list}");
    assert_eq!(removed["last_operation"]["status"], "succeeded", "{list}");

    // The replicas' logs carry no secret either.
    drop((a, b));
    for name in ["replica-a", "replica-b"] {
        assert_no_secret(&std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap());
    }
    for i in &instances {
        let _ = i.sandbox(&["down", "--purge"]);
    }
    eprintln!("e2e_serve took {:?}", started.elapsed());
}

/// Bad setup files stop `rkers serve` before it listens: exit 2, naming the file and the remedy.
#[test]
fn serve_refuses_bad_key_and_tokens_files() {
    let dir = tempfile::tempdir().unwrap();
    let (tokens, key) = (dir.path().join("tokens"), dir.path().join("key"));
    std::fs::write(&tokens, format!("{TOKEN}\n")).unwrap();
    std::fs::write(&key, [7u8; 32]).unwrap();
    let mode = |path: &Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    mode(&tokens, 0o644);
    mode(&key, 0o600);
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args(["serve", "--listen", "127.0.0.1:0", "--database"])
            .arg(format!("sqlite://{}", dir.path().join("db").display()))
            .arg("--tokens-file")
            .arg(&tokens)
            .arg("--secret-key-file")
            .arg(&key)
            .output()
            .unwrap()
    };
    // Files other users may read are refused, whatever they hold.
    for (file, what) in [(&tokens, "tokens file"), (&key, "secret key file")] {
        mode(&tokens, 0o600);
        mode(&key, 0o600);
        mode(file, 0o640);
        let out = run();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "{}: the {what} is open to other users (mode 0640). Remedy: chmod 600",
                file.display()
            )),
            "{err}"
        );
    }
    mode(&tokens, 0o600);
    mode(&key, 0o600);
    std::fs::write(&key, [7u8; 16]).unwrap();
    let out = run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}: the secret key must be exactly 32 bytes",
            key.display()
        )),
        "{err}"
    );
    std::fs::write(&key, [7u8; 32]).unwrap();
    std::fs::write(&tokens, "# nobody\n").unwrap();
    let out = run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no token in the tokens file"), "{err}");
    assert!(
        !dir.path().join("db").exists(),
        "nothing was created before the checks"
    );

    // A database another key wrote: refused at start, where it said ok on /healthz and then
    // answered 500 to every cluster call.
    std::fs::write(&tokens, format!("{TOKEN}\n")).unwrap();
    let database = format!("sqlite://{}", dir.path().join("db").display());
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let db = rkers::serve::Db::connect(&database).await.unwrap();
        rkers::serve::check_key(&db, &rkers::serve::SecretBox::new(&[8u8; 32]))
            .await
            .unwrap();
    });
    let out = refused_within_10s(
        Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--database",
                &database,
                "--tokens-file",
            ])
            .arg(&tokens)
            .arg("--secret-key-file")
            .arg(&key),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("this --secret-key-file is not the key the database was written with"),
        "{err}"
    );

    // A TLS key others may read is refused like the other secrets; a certificate is required
    // with it.
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, tls_key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&tls_key, made.signing_key.serialize_pem()).unwrap();
    mode(&tls_key, 0o644);
    let out = refused_within_10s(
        Command::new(env!("CARGO_BIN_EXE_rkers"))
            .args(["serve", "--listen", "127.0.0.1:0", "--database", &database])
            .arg("--tokens-file")
            .arg(&tokens)
            .arg("--secret-key-file")
            .arg(&key)
            .arg("--tls-cert")
            .arg(&cert)
            .arg("--tls-key")
            .arg(&tls_key),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the TLS key is open to other users"), "{err}");
}

/// Runs a server start that must be refused: a server that started instead is killed after
/// 10 s and fails the test, rather than holding it until nextest's limit.
fn refused_within_10s(cmd: &mut Command) -> std::process::Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("rkers serve started instead of refusing");
        }
    }
}

/// Defect: SIGTERM ended `rkers serve` with its operations "running" for ever and their event
/// streams without a result. Now it stops accepting, interrupts them (recorded `interrupted`,
/// lease released, a final result event) and exits 0; after a restart the record and the
/// stream say how the operation ended, and the cluster takes a new operation at once. SQLite,
/// one cluster whose host accepts TCP and never speaks (the `up` waits in its connect phase).
#[test]
fn serve_on_sigterm_interrupts_its_operations_and_ends_their_events() {
    if !support::have("ssh-keygen") || !support::have("curl") {
        return support::skip("needs ssh-keygen and curl");
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tokens"), format!("{TOKEN}\n")).unwrap();
    std::fs::write(dir.path().join("key"), [5u8; 32]).unwrap();
    for file in ["tokens", "key"] {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(dir.path().join(file), private).unwrap();
    }
    let key = support::keygen(dir.path(), "id_ed25519", "ed25519", "");
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in silent.incoming().flatten() {
            held.push(conn);
        }
    });
    let yml = format!(
        "nodes:\n  - address: 127.0.0.1\n    port: {port}\n    user: root\n    role: [controlplane, etcd, worker]\nssh_key_path: {}\n",
        key.display()
    );
    let database = format!("sqlite://{}", dir.path().join("serve.db").display());

    let mut first = Replica::start("first", &database, dir.path());
    first.ok("PUT", "/v1/clusters/quiet", &yml);
    let id = first.start_op("quiet", "up");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        first.ok("GET", &format!("/v1/operations/{id}"), "")["status"],
        "running"
    );
    let mut stream = Stream::open(&first, &id);
    // Connected and streaming before the signal.
    let _ = stream.next(Duration::from_secs(10));
    // SAFETY: a signal to our own child process.
    unsafe { libc::kill(first.child.id() as libc::pid_t, libc::SIGTERM) };
    let started = Instant::now();
    let status = loop {
        if let Some(s) = first.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "serve did not stop"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(0));
    // The stream open during the stop ended with the result.
    let seen = stream.until_result(Duration::from_secs(5));
    let (_, result) = seen.last().unwrap();
    assert_eq!(result["status"], "interrupted", "{seen:?}");
    assert_eq!(result["exit_code"], 130, "{seen:?}");

    let second = Replica::start("second", &database, dir.path());
    let op = second.ok("GET", &format!("/v1/operations/{id}"), "");
    assert_eq!(op["status"], "interrupted", "{op}");
    assert!(
        op["error"]
            .as_str()
            .unwrap_or_default()
            .contains("(replica first) stopped"),
        "{op}"
    );
    let mut replay = Stream::open(&second, &id);
    let seen = replay.until_result(Duration::from_secs(10));
    assert_eq!(seen.last().unwrap().1["status"], "interrupted", "{seen:?}");
    // The lease went with the operation: the cluster is free at once.
    let next = second.start_op("quiet", "up");
    second.ok("POST", &format!("/v1/operations/{next}/cancel"), "");
}
