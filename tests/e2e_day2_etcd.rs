//! etcd snapshots end to end on the sandbox with the real etcd and Kubernetes v1.20 binaries,
//! on a cluster whose three hosts are all etcd members:
//! - `rkers etcd snapshot-save` writes RKE1's archive (`<name>.zip` holding `backup/<name>` and
//!   `etc/kubernetes/<name>.rkestate`, mode 0600) on every etcd host;
//! - a ConfigMap deleted after the snapshot is back after `snapshot-restore`, with all three
//!   members and every node Ready; each host restored the first host's copy;
//! - restoring a missing or a corrupted snapshot fails, names the cause, and leaves every
//!   container as it was;
//! - S3 against a real S3 server (s3rver from npm, scripts/s3-server): save with `--s3`, remove
//!   the local archives, restore from the bucket; the secret key appears in no output;
//! - a host powered off during `snapshot-save` is named, the others still save, the state loads;
//! - `etcd-rolling-snapshots` runs with `backup_config`'s interval and retention, and its command
//!   line, run with an interval of seconds, takes `<time>_etcd` snapshots and prunes old ones.
//!
//! It ends by bringing the standard cluster (one etcd member) back with one `up`.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use support::e2e::{E2e, HOSTS, etcd_members, wait_nodes_ready};

const SNAPSHOTS: &str = "/opt/rke/etcd-snapshots";

fn snapshot_files(cluster: &E2e, host: &str) -> Vec<String> {
    cluster
        .env
        .on_host(host, &format!("mkdir -p {SNAPSHOTS}; ls {SNAPSHOTS}"))
        .lines()
        .map(str::to_owned)
        .collect()
}

fn configmap_exists(cluster: &E2e, name: &str) -> bool {
    let (ok, out) = cluster.kubectl(&["get", "configmap", name, "-o", "name"]);
    assert!(ok || out.contains("NotFound"), "{out}");
    ok
}

fn create_configmap(cluster: &E2e, name: &str) {
    let (ok, out) = cluster.kubectl(&[
        "create",
        "configmap",
        name,
        "--from-literal=marker=before-snapshot",
    ]);
    assert!(ok, "{out}");
}

fn delete_configmap(cluster: &E2e, name: &str) {
    let (ok, out) = cluster.kubectl(&["delete", "configmap", name]);
    assert!(ok, "{out}");
    assert!(!configmap_exists(cluster, name));
}

/// The rkers run, timed and printed, with its success and output.
fn timed(cluster: &E2e, what: &str, args: &[&str]) -> (bool, String) {
    let started = Instant::now();
    let (ok, out) = cluster.rkers(args);
    eprintln!(
        "{what}: {:.1}s, {}",
        started.elapsed().as_secs_f64(),
        if ok { "ok" } else { "failed" }
    );
    (ok, out)
}

/// The S3 server of this sandbox instance: `KEY=value` lines of `scripts/s3-server start`.
struct S3 {
    endpoint: String,
    ca: String,
    bucket: String,
    access_key: String,
    secret_key: String,
    data: PathBuf,
}

fn s3_server(action: &str) -> Option<S3> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/s3-server");
    let out = Command::new("bash")
        .arg(script)
        .arg(action)
        .output()
        .expect("run scripts/s3-server");
    assert!(
        out.status.success(),
        "scripts/s3-server {action}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(str::to_owned)
    };
    Some(S3 {
        endpoint: get("S3_ENDPOINT")?,
        ca: get("S3_ENDPOINT_CA")?,
        bucket: get("S3_BUCKET")?,
        access_key: get("S3_ACCESS_KEY")?,
        secret_key: get("S3_SECRET_KEY")?,
        data: PathBuf::from(get("S3_DATA")?),
    })
}

/// Object keys stored by s3rver under `bucket` (it keeps each object as `<key>._S3rver_object`).
fn s3_objects(s3: &S3) -> Vec<String> {
    let root = s3.data.join(&s3.bucket);
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(key) = p
                .strip_prefix(&root)
                .ok()
                .and_then(|k| k.to_str())
                .and_then(|k| k.strip_suffix("._S3rver_object"))
            {
                out.push(key.to_string());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn etcd_snapshots_save_restore_s3_and_rolling() {
    let Some(cluster) = E2e::new() else { return };
    let sb = cluster.env.clone();
    let api = cluster.standard().await;
    let started = Instant::now();

    // 1. Three etcd members.
    cluster.edit(|t| t.replace("role: [worker]", "role: [etcd, worker]"));
    cluster.up();
    assert_eq!(
        etcd_members(&sb, "host1").len(),
        3,
        "{:?}",
        etcd_members(&sb, "host1")
    );
    for h in HOSTS {
        let _ = sb.on_host(h, &format!("rm -rf {SNAPSHOTS}/e2e-*"));
    }

    // 2. snapshot-save: RKE1's archive on every etcd host.
    create_configmap(&cluster, "rkers-e2e-snap");
    let (ok, out) = timed(
        &cluster,
        "snapshot-save",
        &["etcd", "snapshot-save", "--name", "e2e-one"],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("Finished saving snapshot [e2e-one] on 3 of 3 etcd hosts"),
        "{out}"
    );
    for h in HOSTS {
        let listing = sb.on_host(
            h,
            &format!(
                "stat -c '%a' {SNAPSHOTS}/e2e-one.zip; python3 -m zipfile -l {SNAPSHOTS}/e2e-one.zip"
            ),
        );
        assert!(listing.starts_with("600\n"), "{h}: {listing}");
        assert!(listing.contains("backup/e2e-one "), "{h}: {listing}");
        assert!(
            listing.contains("etc/kubernetes/e2e-one.rkestate "),
            "{h}: {listing}"
        );
        assert!(
            !snapshot_files(&cluster, h).contains(&"e2e-one".to_string()),
            "{h}: the unpacked snapshot is deleted once zipped"
        );
    }

    // 3. Delete the ConfigMap, restore, find it again.
    delete_configmap(&cluster, "rkers-e2e-snap");
    let (ok, out) = timed(
        &cluster,
        "snapshot-restore --dry-run",
        &["etcd", "snapshot-restore", "--name", "e2e-one", "--dry-run"],
    );
    // The one dry-run format: per host the snapshot restored into the scratch directory, the
    // replaced containers and the data moved in, then `up` for the cluster.
    assert!(
        ok && out.contains("restore snapshot e2e-one into /opt/rke/etcd-snapshots-restore")
            && out.contains("remove container kube-apiserver")
            && out.contains("cluster:\n  - run `rkers up`"),
        "{out}"
    );
    assert!(
        !configmap_exists(&cluster, "rkers-e2e-snap"),
        "dry run changed nothing"
    );
    let (ok, out) = timed(
        &cluster,
        "snapshot-restore",
        &["etcd", "snapshot-restore", "--name", "e2e-one"],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("using the snapshot [e2e-one] of host"),
        "the first host's copy is shared: {out}"
    );
    assert!(
        out.contains("Finished restoring snapshot [e2e-one] on all etcd hosts"),
        "{out}"
    );
    let api = {
        drop(api);
        cluster.api().await
    };
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(240)).await;
    assert!(configmap_exists(&cluster, "rkers-e2e-snap"), "restored");
    assert_eq!(etcd_members(&sb, "host1").len(), 3);
    for h in HOSTS {
        let health = sb.on_host(h, "docker exec etcd etcdctl endpoint health 2>&1");
        assert!(health.contains("is healthy"), "{h}: {health}");
    }

    // 4. A missing and a corrupted snapshot: clear errors, every container untouched.
    let before = sb.container_ids(&HOSTS);
    let (ok, out) = timed(
        &cluster,
        "restore missing",
        &["etcd", "snapshot-restore", "--name", "e2e-missing"],
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains("snapshot e2e-missing is on no etcd host")
            && out.contains("the cluster was left as it was"),
        "{out}"
    );
    for h in HOSTS {
        sb.on_host(
            h,
            &format!(
                "head -c 300000 {SNAPSHOTS}/e2e-one.zip > {SNAPSHOTS}/e2e-cut.zip; \
                 head -c 200000 /dev/urandom > {SNAPSHOTS}/e2e-noise"
            ),
        );
    }
    let (ok, out) = timed(
        &cluster,
        "restore truncated",
        &["etcd", "snapshot-restore", "--name", "e2e-cut"],
    );
    assert!(!ok, "{out}");
    assert!(out.contains("the cluster was left as it was"), "{out}");
    assert!(out.contains("zip"), "the cause names the archive: {out}");
    let (ok, out) = timed(
        &cluster,
        "restore noise",
        &["etcd", "snapshot-restore", "--name", "e2e-noise"],
    );
    assert!(!ok, "{out}");
    assert!(out.contains("the cluster was left as it was"), "{out}");
    assert!(out.contains("container etcd-restore: exited with"), "{out}");
    assert_eq!(sb.container_ids(&HOSTS), before, "no container changed");
    assert!(configmap_exists(&cluster, "rkers-e2e-snap"));
    for h in HOSTS {
        let (scratch, _) = sb.try_on_host(h, "test -e /opt/rke/etcd-snapshots-restore");
        assert!(!scratch, "{h}: the restore scratch directory is removed");
    }

    // 5. S3: save and upload, drop the local copies, restore from the bucket.
    let s3 = s3_server("start").expect("scripts/s3-server start prints its settings");
    let s3_args = |verb: &str, name: &str| -> Vec<String> {
        [
            "etcd",
            verb,
            "--name",
            name,
            "--s3",
            "--s3-endpoint",
            &s3.endpoint,
            "--s3-endpoint-ca",
            &s3.ca,
            "--bucket-name",
            &s3.bucket,
            "--access-key",
            &s3.access_key,
            "--secret-key",
            &s3.secret_key,
            "--folder",
            "e2e",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    create_configmap(&cluster, "rkers-e2e-s3");
    let args = s3_args("snapshot-save", "e2e-s3");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out) = timed(&cluster, "snapshot-save --s3", &args);
    assert!(ok, "{out}");
    assert!(
        out.contains("Finished saving/uploading snapshot [e2e-s3] on 3 of 3"),
        "{out}"
    );
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(&s3.secret_key);
    assert!(
        !out.contains(&s3.secret_key) && !out.contains(&encoded),
        "the secret key is printed: {out}"
    );
    assert!(
        s3_objects(&s3).contains(&"e2e/e2e-s3.zip".to_string()),
        "{:?}",
        s3_objects(&s3)
    );
    for h in HOSTS {
        sb.on_host(h, &format!("rm -f {SNAPSHOTS}/e2e-s3*"));
    }
    delete_configmap(&cluster, "rkers-e2e-s3");
    let args = s3_args("snapshot-restore", "e2e-s3");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out) = timed(&cluster, "snapshot-restore --s3", &args);
    assert!(ok, "{out}");
    assert!(
        !out.contains(&s3.secret_key) && !out.contains(&encoded),
        "{out}"
    );
    let api = cluster.api().await;
    wait_nodes_ready(&api, &HOSTS, Duration::from_secs(240)).await;
    assert!(
        configmap_exists(&cluster, "rkers-e2e-s3"),
        "restored from S3"
    );
    s3_server("stop");

    // 6. host3 powered off during snapshot-save: named; host1 and host2 save; the state loads.
    sb.run(&["stop-host", "host3"]);
    let (ok, out) = timed(
        &cluster,
        "snapshot-save, host3 down",
        &["etcd", "snapshot-save", "--name", "e2e-down"],
    );
    sb.run(&["start-host", "host3"]);
    assert!(ok, "two of three hosts saved it:\n{out}");
    assert!(
        out.contains("missing on 1 of 3 etcd hosts") && out.contains(&sb.ip(3)),
        "{out}"
    );
    for h in ["host1", "host2"] {
        assert!(
            snapshot_files(&cluster, h).contains(&"e2e-down.zip".to_string()),
            "{h}"
        );
    }
    assert!(cluster.state()["desiredState"].is_object(), "state loads");

    // 7. Rolling snapshots: the container follows backup_config, and its command line takes
    //    and prunes `<time>_etcd` snapshots (run here every 2 s, kept 5 s).
    cluster.edit(|t| {
        t.replace(
            "services:\n",
            "services:\n  etcd:\n    backup_config:\n      interval_hours: 2\n      retention: 3\n",
        )
    });
    cluster.up();
    let inspect = sb.on_host(
        "host1",
        "docker inspect etcd-rolling-snapshots --format '{{.State.Running}} {{json .Config.Cmd}} {{.Config.Image}}'",
    );
    assert!(inspect.starts_with("true "), "{inspect}");
    assert!(
        inspect.contains("\"--creation=2h\"") && inspect.contains("\"--retention=6h\""),
        "{inspect}"
    );
    let image = inspect.split_whitespace().last().unwrap().to_string();
    let cmd: Vec<String> =
        serde_json::from_str(inspect.split_whitespace().nth(1).unwrap()).unwrap();
    let cmd: Vec<String> = cmd
        .into_iter()
        .map(|a| match a.split_once('=') {
            Some(("--creation", _)) => "--creation=2s".into(),
            Some(("--retention", _)) => "--retention=5s".into(),
            _ => format!("'{a}'"),
        })
        .collect();
    sb.on_host("host1", &format!("rm -f {SNAPSHOTS}/*_etcd.zip"));
    let (_, log) = sb.try_on_host(
        "host1",
        &format!(
            "timeout 13 docker run --rm --name e2e-rolling --net host -v {SNAPSHOTS}/:/backup \
             -v /etc/kubernetes:/etc/kubernetes {image} {} 2>&1",
            cmd.join(" ")
        ),
    );
    let _ = sb.try_on_host("host1", "docker rm -f e2e-rolling");
    let rolling: Vec<String> = snapshot_files(&cluster, "host1")
        .into_iter()
        .filter(|f| f.ends_with("_etcd.zip"))
        .collect();
    assert!(
        rolling.len() >= 2,
        "snapshots every 2 s for 13 s: {rolling:?}\n{log}"
    );
    assert!(
        rolling.len() <= 4,
        "older than 5 s are pruned: {rolling:?}\n{log}"
    );

    // 8. Back to the standard cluster.
    for h in HOSTS {
        let _ = sb.on_host(
            h,
            &format!("rm -rf {SNAPSHOTS}/e2e-* {SNAPSHOTS}/*_etcd.zip"),
        );
    }
    let api = cluster.standard().await;
    assert_eq!(etcd_members(&sb, "host1"), ["etcd-host1"]);
    for name in ["rkers-e2e-snap", "rkers-e2e-s3"] {
        let _ = cluster.kubectl(&["delete", "configmap", name]);
    }
    drop(api);
    eprintln!(
        "etcd snapshot steps took {:.0}s",
        started.elapsed().as_secs_f64()
    );
}
