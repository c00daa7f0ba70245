//! The command-line contract: exit codes, file names and modes, and that secrets stay out of
//! the output.

use assert_cmd::Command;
use predicates::prelude::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const CLUSTER: &str = "nodes:
  - address: 10.0.0.1
    user: root
    role: [controlplane, etcd, worker]
  - address: 10.0.0.2
    user: root
    role: [worker]
private_registries:
  - url: registry.example:5000
    user: admin
    password: very-secret-registry-password
";

/// One host where nothing listens (port 1): every command that connects fails on it at once.
const UNREACHABLE: &str = "nodes:\n  - address: 127.0.0.1\n    port: \"1\"\n    user: root\n    role: [controlplane, etcd, worker]\n";

fn rkers() -> Command {
    Command::cargo_bin("rkers").unwrap()
}

fn write_cluster(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn invalid_config_exits_2_for_every_command_and_lists_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_cluster(
        dir.path(),
        "bad.yml",
        "nodes:\n  - address: 10.0.0.1\n    user: root\n    role: [worker, bogus]\n",
    );
    for args in [
        vec!["up"],
        vec!["remove", "--force"],
        vec!["cert", "rotate"],
        vec!["etcd", "snapshot-save"],
        vec!["util", "get-kubeconfig"],
        vec!["preflight"],
        vec!["doctor"],
    ] {
        let mut cmd = rkers();
        cmd.args(&args).arg("--config").arg(&bad);
        cmd.assert()
            .code(2)
            .stderr(predicate::str::contains(
                "bad.yml:4:20: nodes[0].role[1]: unknown role \"bogus\"",
            ))
            .stderr(predicate::str::contains("at least one etcd host"));
    }
}

#[test]
fn missing_config_is_a_failure_naming_the_file() {
    rkers()
        .args(["up", "--config", "/nonexistent/cluster.yml"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/nonexistent/cluster.yml"));
}

#[test]
fn config_env_var_names_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "envcluster.yml", CLUSTER);
    rkers()
        .env("RKE_CONFIG", &path)
        .args(["up", "--init"])
        .assert()
        .success();
    assert!(dir.path().join("envcluster.rkestate").exists());
}

#[test]
fn up_init_writes_state_0600_keeps_backup_and_reuses_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "prod.yaml", CLUSTER);
    rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success();
    let state_path = dir.path().join("prod.rkestate");
    let mode = std::fs::metadata(&state_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let first: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    let ca = first["desiredState"]["certificatesBundle"]["kube-ca"]["certificatePEM"].clone();
    assert!(
        ca.as_str()
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    assert_eq!(
        first["desiredState"]["rkeConfig"]["nodes"][0]["address"],
        "10.0.0.1"
    );

    rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success();
    let second: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    assert_eq!(
        second["desiredState"]["certificatesBundle"]["kube-ca"]["certificatePEM"], ca,
        "CA must survive a second init"
    );
    // Each run keeps the state it replaced (kube-admin is re-signed every time).
    let grown = format!("{CLUSTER}ssh_key_path: /dev/null\n");
    std::fs::write(&path, grown).unwrap();
    let before = std::fs::read_to_string(&state_path).unwrap();
    rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success()
        .stderr(predicate::str::contains("the previous state is kept as ["));
    let backups = rkers::state::list_backups(&state_path).unwrap();
    assert_eq!(backups.len(), 2, "{backups:?}");
    assert_eq!(std::fs::read_to_string(&backups[1]).unwrap(), before);
    for b in &backups {
        assert_eq!(
            std::fs::metadata(b).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}

#[test]
fn dry_run_init_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    rkers()
        .args(["up", "--init", "--dry-run", "--config"])
        .arg(&path)
        .assert()
        .success();
    assert!(!dir.path().join("cluster.rkestate").exists());
}

#[test]
fn get_kubeconfig_writes_admin_kubeconfig_next_to_config() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    rkers()
        .args(["util", "get-kubeconfig", "--config"])
        .arg(&path)
        .assert()
        .code(1);
    rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success();
    rkers()
        .args(["util", "get-kubeconfig", "--config"])
        .arg(&path)
        .assert()
        .success();
    let kubeconfig = dir.path().join("kube_config_cluster.yml");
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(text.contains("server: \"https://10.0.0.1:6443\""), "{text}");
    assert!(text.contains("kube-admin-local"), "{text}");
    assert_eq!(
        std::fs::metadata(&kubeconfig).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn secrets_never_reach_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    let out = rkers()
        .args(["--debug", "up", "--init", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("very-secret-registry-password"), "{all}");
    assert!(!all.contains("PRIVATE KEY-----\nMII"), "{all}");
}

/// Issue 50: an invalid value that holds a credential is refused (exit 2) without it, on
/// stderr as in the JSON result: a registry URL with user info (with or without a scheme), an
/// `extra_env` entry without `=` whose name says it is a secret.
#[test]
fn invalid_values_holding_credentials_are_refused_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{UNREACHABLE}private_registries:\n  - url: https://bob:pw-in-url-1@reg.local\n  - url: bob:pw-in-url-2@reg.local\nservices:\n  kubelet:\n    extra_env:\n      - DB_PASSWORD s3cret-env-value\n"
    );
    let path = write_cluster(dir.path(), "cluster.yml", &config);
    for json in [false, true] {
        let mut cmd = rkers();
        if json {
            cmd.args(["--output", "json"]);
        }
        let out = cmd
            .args(["up", "--dry-run", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let printed = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        for secret in ["pw-in-url-1", "pw-in-url-2", "s3cret-env-value"] {
            assert!(!printed.contains(secret), "{secret} in: {printed}");
        }
        assert!(printed.contains("bob:[REDACTED]@reg.local"), "{printed}");
        assert!(printed.contains("DB_PASSWORD [REDACTED]"), "{printed}");
    }
}

/// Issue 50: a snapshot name with a newline, a tab, a space or `;` (or a path) is refused
/// before any host is reached, as a usage of the command line (exit 2).
#[test]
fn snapshot_names_that_are_no_file_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", UNREACHABLE);
    for command in ["snapshot-save", "snapshot-restore"] {
        for name in ["a\nb", "a\tb", "a b", "a;b", "../../etc/x"] {
            rkers()
                .args(["etcd", command, "--name", name, "--config"])
                .arg(&path)
                .assert()
                .code(2)
                .stderr(predicate::str::contains("invalid snapshot name"))
                .stderr(predicate::str::contains("127.0.0.1").not());
        }
    }
}

#[test]
fn json_output_is_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    let out = rkers()
        .args(["--output", "json", "up", "--init", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.trim().is_empty());
    for line in stdout.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(v["time"].is_string() && v["status"].is_string(), "{line}");
    }
}

#[test]
fn unknown_keys_warn_but_do_not_fail() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(
        dir.path(),
        "cluster.yml",
        &format!("{CLUSTER}not_a_key: 1\n"),
    );
    rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success()
        .stderr(predicate::str::contains("not_a_key"));
}

#[test]
fn the_configs_warnings_are_printed_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(
        dir.path(),
        "cluster.yml",
        &format!(
            "{CLUSTER}services:\n  kube-controller:\n    service_cluster_ip_range: 10.43.0.0/17\n"
        ),
    );
    rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "kube-api and kube-controller have different service_cluster_ip_range values",
        ));
}

#[test]
fn config_generation_round_trips_through_the_loader() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("generated.yml");
    rkers()
        .args(["config", "--empty", "--name"])
        .arg(&out)
        .assert()
        .success();
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o640
    );
    // An empty node is not a valid cluster; the loader must say so with locations, not crash.
    rkers()
        .args(["up", "--init", "--config"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("generated.yml:"));
}

#[test]
fn cert_rotate_without_a_state_fails_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    rkers()
        .args(["cert", "rotate", "--config"])
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "Failed to rotate certificates: can't find old certificates",
        ));
    assert!(!dir.path().join("cluster.rkestate").exists());
}

#[test]
fn remove_without_a_terminal_refuses_unless_forced_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success();
    let state = dir.path().join("cluster.rkestate");
    let before = std::fs::read(&state).unwrap();
    rkers()
        .args(["remove", "--config"])
        .arg(&path)
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a terminal"))
        .stderr(predicate::str::contains("--force"));
    assert_eq!(std::fs::read(&state).unwrap(), before);
}

#[test]
fn rotate_key_refuses_when_encryption_is_off_or_custom() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    rkers()
        .args(["encrypt", "rotate-key", "--config"])
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "can't rotate encryption keys: Encryption Configuration is disabled",
        ))
        // Issue 50: it told the user to disable a key they never set.
        .stderr(predicate::str::contains("rotate_encryption_key").not())
        .stderr(predicate::str::contains(
            "secrets_encryption_config.enabled: true",
        ));
    let custom = format!(
        "{CLUSTER}services:\n  kube-api:\n    secrets_encryption_config:\n      enabled: true\n      custom_config:\n        apiVersion: apiserver.config.k8s.io/v1\n        kind: EncryptionConfiguration\n        resources:\n          - resources: [secrets]\n            providers:\n              - aescbc:\n                  keys:\n                    - name: k1\n                      secret: c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=\n              - identity: {{}}\n"
    );
    let path = write_cluster(dir.path(), "custom.yml", &custom);
    rkers()
        .args(["encrypt", "rotate-key", "--config"])
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "Key Rotation is not supported with custom configuration",
        ));
    // The custom provider is written into the state verbatim, its key never printed.
    let out = rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success();
    let printed = String::from_utf8_lossy(&out.get_output().stderr).into_owned()
        + &String::from_utf8_lossy(&out.get_output().stdout);
    assert!(!printed.contains("c2VjcmV0c2VjcmV0"));
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("custom.rkestate")).unwrap())
            .unwrap();
    let text = state["desiredState"]["encryptionConfig"].as_str().unwrap();
    assert!(text.starts_with("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- providers:\n  - aescbc:"), "{text}");
    assert!(text.contains("name: k1"));
}

#[test]
fn doctor_refuses_an_unknown_host_and_a_restore_without_backup() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    for extra in [
        &["--host", "10.9.9.9"][..],
        &["--fix", "calico-runtime", "--host", "nope"],
        &["--fix", "flannel-nat", "--host", "nope"],
    ] {
        rkers()
            .arg("doctor")
            .args(extra)
            .arg("--config")
            .arg(&path)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("not a node of"))
            .stderr(predicate::str::contains(
                "10.0.0.1 (10.0.0.1), 10.0.0.2 (10.0.0.2)",
            ));
    }
    // Without a backup the restore, and its dry run, refuse before reaching the cluster.
    for extra in [&[][..], &["--dry-run"]] {
        rkers()
            .args(["doctor", "--restore-webhooks"])
            .args(extra)
            .arg("--config")
            .arg(&path)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                "cluster.webhooks-backup.json: no backup",
            ));
    }
    rkers()
        .args(["doctor", "--dry-run", "--config"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--dry-run goes with --fix or --restore-webhooks",
        ));
    rkers()
        .args(["doctor", "--fix", "bogus", "--config"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("calico-runtime")
                .and(predicate::str::contains("flannel-nat"))
                .and(predicate::str::contains("webhooks")),
        );
}

/// Every `up` ends with its timing summary, a failed one too: one JSON event listing each phase
/// that ran, in order, with its time (here the state, then the connect phase that fails: nothing
/// listens on 127.0.0.1:1).
#[test]
fn up_ends_with_a_timing_summary_event_also_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", UNREACHABLE);
    let out = rkers()
        .args(["--output", "json", "up", "--config"])
        .arg(&path)
        .arg("--known-hosts")
        .arg(dir.path().join("known_hosts"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let summaries: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["action"] == "timing summary")
        .collect();
    assert_eq!(summaries.len(), 1, "{stdout}");
    let summary = summaries[0];
    // The summary ends the run's events; only the run's result event follows it.
    let last = events.last().unwrap();
    assert_eq!(last["event"], "result", "{stdout}");
    assert!(
        std::ptr::eq(summary, &events[events.len() - 2]),
        "the summary comes last before the result: {stdout}"
    );
    let phases: Vec<&str> = summary["timings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["state", "connect"], "{stdout}");
    // Each phase's time is the one its own end event reported.
    for p in summary["timings"].as_array().unwrap() {
        let end = events
            .iter()
            .find(|e| e["phase"] == p["phase"] && e["host"].is_null() && e["status"] != "started")
            .unwrap();
        assert_eq!(end["duration_ms"], p["duration_ms"], "{stdout}");
    }
    assert!(summary["duration_ms"].as_u64().is_some());
}

/// Issue 16: whatever the command, a failure ends the run with the same `result` event: the
/// exit code, the error, the host it is about (`host`, or `hosts` for several) and its causes.
/// Nothing listens on 127.0.0.1:1, so every command fails on the one host at once.
#[test]
fn every_command_ends_a_failure_with_the_same_result_event_naming_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", UNREACHABLE);
    // A state with current certificates, as after an `up`: `cert rotate` reads them before it
    // connects.
    applied_state(&path);
    let allowed = [
        "time",
        "event",
        "status",
        "exit_code",
        "error",
        "host",
        "hosts",
        "cause",
    ];
    for args in [
        vec!["up"],
        vec!["remove", "--force"],
        vec!["cert", "rotate"],
        vec!["etcd", "snapshot-save", "--name", "s1"],
        vec!["util", "get-state-file"],
        vec!["preflight"],
        vec!["doctor"],
    ] {
        let (code, last, stderr) = run_json(&args, &path, dir.path());
        assert_eq!(code, Some(1), "{args:?}: {last}{stderr}");
        assert_eq!(last["event"], "result", "{args:?}: {last}");
        assert_eq!(last["status"], "failed", "{args:?}: {last}");
        assert_eq!(last["exit_code"], 1, "{args:?}: {last}");
        assert_eq!(last["host"], "127.0.0.1", "{args:?}: {last}");
        let error = last["error"].as_str().unwrap();
        assert!(error.contains("127.0.0.1"), "{args:?}: {last}");
        // The text output's `error:` line is the same error.
        assert!(
            stderr.contains(&format!("error: {error}")),
            "{args:?}: {stderr}"
        );
        for key in last.as_object().unwrap().keys() {
            assert!(allowed.contains(&key.as_str()), "{args:?}: {key} in {last}");
        }
        if let Some(cause) = last.get("cause") {
            let cause = cause.as_array().unwrap();
            assert!(
                !cause.is_empty() && cause.iter().all(|c| c.is_string()),
                "{last}"
            );
        }
    }
    // The host's own problem (no SSH key, or the refused connection) is the cause of `up`'s
    // error, which adds that nothing was changed.
    let (_, last, _) = run_json(&["up"], &path, dir.path());
    let cause = last["cause"][0].as_str().unwrap_or_default();
    assert!(cause.starts_with("host 127.0.0.1: "), "{last}");
    assert_eq!(
        last["error"].as_str().unwrap(),
        format!("{cause}; nothing was changed"),
        "{last}"
    );
}

/// A dry run's exit code is the run's, for every command with `--dry-run`: on a cluster whose
/// one host cannot be reached (nothing listens on 127.0.0.1:1), each dry run fails with exit 1
/// naming the host, as the run does; none exits 0 with a warning.
#[test]
fn every_dry_run_fails_as_its_run_does_when_no_host_can_be_reached() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{UNREACHABLE}services:\n  kube-api:\n    secrets_encryption_config:\n      enabled: true\n"
    );
    let path = write_cluster(dir.path(), "cluster.yml", &config);
    applied_state(&path);
    // (the command, whether its failure names the host: `rollback` is refused before, as
    // there is no previous run to go back to; `doctor --fix webhooks` and `flannel-nat` read
    // the kubeconfig first, which no `up` wrote)
    let commands: [(&[&str], bool); 11] = [
        (&["up"], true),
        (&["remove", "--force"], true),
        (&["cert", "rotate"], true),
        (&["encrypt", "rotate-key"], true),
        (&["etcd", "snapshot-save", "--name", "s1"], true),
        (&["etcd", "snapshot-restore", "--name", "s1"], true),
        (&["util", "get-state-file"], true),
        (&["doctor", "--fix", "calico-runtime"], true),
        (&["doctor", "--fix", "flannel-nat"], false),
        (&["doctor", "--fix", "webhooks"], false),
        (&["rollback"], false),
    ];
    for (args, names_the_host) in commands {
        let (run, run_last, run_err) = run_json(args, &path, dir.path());
        let dry: Vec<&str> = args.iter().copied().chain(["--dry-run"]).collect();
        let (dry_run, last, stderr) = run_json(&dry, &path, dir.path());
        assert_eq!(run, Some(1), "{args:?}: {run_last}{run_err}");
        assert_eq!(dry_run, run, "{dry:?} exits as {args:?}: {last}{stderr}");
        assert_eq!(last["status"], "failed", "{dry:?}: {last}");
        if names_the_host {
            let error = last["error"].as_str().unwrap();
            assert!(error.contains("127.0.0.1"), "{dry:?}: {last}");
        }
    }
}

/// `remove --dind --dry-run` said what it would remove and exited 0 whatever the run would
/// do; now it reaches the outer Docker daemon as the run does: with no daemon at DOCKER_HOST
/// both exit 1, with a DOCKER_HOST that is no endpoint both exit 2.
#[test]
fn remove_dind_dry_run_exits_as_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", UNREACHABLE);
    let no_daemon = format!("unix://{}", dir.path().join("no-docker.sock").display());
    for (docker_host, code) in [(no_daemon.as_str(), 1), ("bogus://what", 2)] {
        let exit = |extra: &str| {
            rkers()
                .env("DOCKER_HOST", docker_host)
                .args(["remove", "--dind", extra, "--config"])
                .arg(&path)
                .output()
                .unwrap()
        };
        let (run, dry) = (exit("--force"), exit("--dry-run"));
        let said = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(
            run.status.code(),
            Some(code),
            "{docker_host}: {}",
            said(&run)
        );
        assert_eq!(
            dry.status.code(),
            run.status.code(),
            "{docker_host}: {}",
            said(&dry)
        );
    }
    // Nothing was removed by either.
    assert!(path.exists());
}

/// Runs `args` on `config` with `--output json` (host keys recorded under `dir`): the exit
/// code, the last event and stderr.
fn run_json(args: &[&str], config: &Path, dir: &Path) -> (Option<i32>, serde_json::Value, String) {
    let out = rkers()
        .args(["--output", "json"])
        .args(args)
        .arg("--config")
        .arg(config)
        .arg("--known-hosts")
        .arg(dir.join("known_hosts"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"));
    (
        out.status.code(),
        last,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn list_version_shows_the_default_and_all_offered_minors() {
    rkers()
        .args(["config", "--list-version"])
        .assert()
        .success()
        .stdout("v1.32.6-rancher1-1\n");
    rkers()
        .args(["config", "--list-version", "--all"])
        .assert()
        .success()
        .stdout(
            "v1.30.14-rancher1-1\nv1.31.14-rancher1-1\nv1.32.13-rancher1-3\nv1.33.5-rkers1\n\
             v1.34.10-rkers1\nv1.35.8-rkers1\nv1.36.3-rkers1\nv1.37.2-rkers1\n",
        );
}

#[test]
fn system_images_of_versions_rke1_offered() {
    for (version, kubernetes) in [
        ("v1.21.14-rancher1-1", "rancher/hyperkube:v1.21.14-rancher1"),
        ("v1.28.15-rancher1-1", "rancher/hyperkube:v1.28.15-rancher1"),
        ("v1.31.2-rancher2-1", "rancher/hyperkube:v1.31.2-rancher2"),
        (
            "v1.32.11-rancher1-1",
            "rke-extended-life/hyperkube:v1.32.11-rancher1",
        ),
        // RKE Extended Life releases: published in RKE v1.8.14's data.json.
        (
            "v1.32.13-rancher1-2",
            "rke-extended-life/hyperkube:v1.32.13-rancher1",
        ),
    ] {
        rkers()
            .args(["config", "--system-images", "--version", version])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!("{kubernetes}\n")))
            .stdout(predicate::str::contains("rancher/rke-tools:"));
    }
    rkers()
        .args([
            "config",
            "--system-images",
            "--version",
            "v1.32.14-rancher1-1",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "v1.32.14-rancher1-1 is not a Kubernetes version rkers knows (nearest: \
             v1.32.13-rancher1-3); set RKERS_METADATA_FILE",
        ));
}

#[test]
fn dry_run_of_an_unpublished_version_says_its_images_come_from_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let version = "v1.32.13-rancher1-3";
    // A metadata file that lists the version as shipped without metadata (the compiled-in data
    // has its images: RKE v1.8.14's data.json publishes them).
    let mut data = rkers::metadata::Catalog::embedded().data().clone();
    data.system_images.remove(version);
    data.unpublished_versions.insert(
        version.to_string(),
        rkers::metadata::UnpublishedVersion {
            rke: "v1.8.14".to_string(),
        },
    );
    let metadata = dir.path().join("versions.json");
    std::fs::write(&metadata, serde_json::to_string(&data).unwrap()).unwrap();
    let rkers = || {
        let mut cmd = rkers();
        cmd.env("RKERS_METADATA_FILE", &metadata);
        cmd
    };
    let path = write_cluster(
        dir.path(),
        "cluster.yml",
        &format!("{UNREACHABLE}kubernetes_version: {version}\n"),
    );
    // Without a state nor system_images: exit 2 saying what to add.
    rkers()
        .args(["up", "--dry-run", "--config"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("add to system_images: etcd"));

    // A state RKE1 wrote for this version: its images are used, and the dry run says so.
    let mut recorded = rkers::config::load_str(
        &format!("{UNREACHABLE}kubernetes_version: v1.32.11-rancher1-1\n"),
        "state",
    )
    .unwrap()
    .config;
    rkers::config::apply_defaults(&mut recorded, rkers::metadata::Catalog::embedded());
    recorded.kubernetes_version = version.to_string();
    let state = serde_json::json!({
        "desiredState": { "rkeConfig": recorded.to_state_json() },
        "currentState": { "rkeConfig": recorded.to_state_json() },
    });
    std::fs::write(dir.path().join("cluster.rkestate"), state.to_string()).unwrap();
    rkers()
        .args(["up", "--dry-run", "--config"])
        .arg(&path)
        .assert()
        .stderr(predicate::str::contains(
            "kubernetes_version v1.32.13-rancher1-3: images from the cluster's state; this \
             version's metadata is not published",
        ));
}

/// The state `up --init` writes for `config`, as if it had been applied (the desired state is
/// also the current one, as after an `up`); returns its path.
fn applied_state(config: &Path) -> std::path::PathBuf {
    rkers()
        .args(["up", "--init", "--config"])
        .arg(config)
        .assert()
        .success();
    let state_path = config.with_extension("rkestate");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    state["currentState"] = state["desiredState"].clone();
    std::fs::write(&state_path, state.to_string()).unwrap();
    state_path
}

/// The newest version rkers knows of minor `1.minor`.
fn newest_of_minor(minor: u64) -> String {
    rkers::metadata::Catalog::embedded()
        .supported_versions()
        .iter()
        .filter_map(|v| rkers::metadata::K8sVersion::parse(v).ok())
        .filter(|v| v.major() == 1 && v.minor() == minor)
        .max()
        .unwrap_or_else(|| panic!("no v1.{minor} version in the metadata"))
        .to_string()
}

/// The one-minor rule refuses before any host is reached (nothing listens on 127.0.0.1:1):
/// two minors ahead names the path, a minor back the reason; the next minor goes on to
/// connect. The state says the cluster runs a v1.28 version.
#[test]
fn up_moves_one_minor_at_a_time_and_refuses_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let (v127, v128, v129, v130) = (
        newest_of_minor(27),
        newest_of_minor(28),
        newest_of_minor(29),
        newest_of_minor(30),
    );
    let config = |version: &str| format!("{UNREACHABLE}kubernetes_version: {version}\n");
    let path = write_cluster(dir.path(), "cluster.yml", &config(&v128));
    let state_path = applied_state(&path);
    let written = std::fs::read_to_string(&state_path).unwrap();

    for dry_run in [true, false] {
        let args: &[&str] = if dry_run {
            &["up", "--dry-run"]
        } else {
            &["up"]
        };
        std::fs::write(&path, config(&v130)).unwrap();
        let (code, last, _) = run_json(args, &path, dir.path());
        assert_eq!(code, Some(1), "{last}");
        let error = last["error"].as_str().unwrap();
        assert!(
            error.contains(&format!("{v128} → {v129} → {v130}")),
            "{error}"
        );
        assert!(error.contains("once per minor"), "{error}");
        assert!(
            !error.contains("127.0.0.1"),
            "refused after connecting: {error}"
        );

        std::fs::write(&path, config(&v127)).unwrap();
        let (code, last, _) = run_json(args, &path, dir.path());
        assert_eq!(code, Some(1), "{last}");
        let error = last["error"].as_str().unwrap();
        assert!(error.contains("older minor"), "{error}");
        assert!(error.contains("at a v1.28 version"), "{error}");

        // The next minor passes the rule and fails only on the host.
        std::fs::write(&path, config(&v129)).unwrap();
        let (code, last, _) = run_json(args, &path, dir.path());
        assert_eq!(code, Some(1), "{last}");
        assert!(
            last["error"].as_str().unwrap().contains("127.0.0.1"),
            "{last}"
        );
    }
    assert_eq!(std::fs::read_to_string(&state_path).unwrap(), written);
}

#[test]
fn rollback_without_a_previous_run_is_refused_with_the_way_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", CLUSTER);
    rkers()
        .args(["rollback", "--config"])
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("never brought up"));
    // `up --init` writes a state, but no run finished: nothing to go back to.
    rkers()
        .args(["up", "--init", "--config"])
        .arg(&path)
        .assert()
        .success();
    rkers()
        .args(["rollback", "--dry-run", "--config"])
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("records no previous run"))
        .stderr(predicate::str::contains(
            "`rkers up` with the old cluster.yml",
        ));
}

/// Issue 50: `rkers config` with nobody to ask wrote a cluster.yml whose node has no address
/// and exited 0; it refuses, as over an existing file, whether stdin is /dev/null or closed.
#[test]
fn config_without_a_terminal_refuses_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (stdin, redirect) in [("/dev/null", "</dev/null"), ("closed", "<&-")] {
        for extra in ["", "--print"] {
            let out = std::process::Command::new("sh")
                .current_dir(dir.path())
                .arg("-c")
                .arg(format!("\"$0\" config {extra} {redirect}"))
                .arg(assert_cmd::cargo::cargo_bin("rkers"))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "stdin {stdin} {extra}: {stderr}"
            );
            assert!(stderr.contains("not a terminal"), "{stderr}");
            assert!(stderr.contains("--empty"), "{stderr}");
            assert!(out.stdout.is_empty(), "stdin {stdin} {extra}");
            assert!(names_in_dir(dir.path()).is_empty(), "stdin {stdin} {extra}");
        }
    }
}

fn names_in_dir(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Issue 50: a listing into a closed stdout (`>&-`) printed nothing and exited 0 (Rust's
/// runtime puts /dev/null in its place): it fails, saying stdout cannot be written.
#[test]
fn a_product_into_a_closed_stdout_fails() {
    for args in [
        "config --list-version --all",
        "config --system-images",
        "version --client",
        "man",
        "completions bash",
    ] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("\"$0\" {args} >&-"))
            .arg(assert_cmd::cargo::cargo_bin("rkers"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args}: {stderr}");
        assert!(
            stderr.contains("cannot write to stdout"),
            "{args}: {stderr}"
        );
    }
}

/// Issue 50: with `--output json`, the commands whose product is text printed it with a JSON
/// line after it; they refuse the option (exit 2), and stdout holds JSON alone.
#[test]
fn json_output_is_refused_by_the_commands_that_print_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_cluster(dir.path(), "cluster.yml", UNREACHABLE);
    let commands: [&[&str]; 8] = [
        &["version", "--client"],
        &["version", "--config", path.to_str().unwrap()],
        &["config", "--list-version"],
        &["config", "--system-images"],
        &["config", "--print", "--empty"],
        &["man"],
        &["completions", "bash"],
        &["completions", "zsh"],
    ];
    for args in commands {
        let out = rkers()
            .args(["--output", "json"])
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}");
        for line in stdout.lines() {
            let event: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {line}"));
            assert_eq!(event["event"], "result", "{args:?}: {line}");
            assert!(
                event["error"]
                    .as_str()
                    .unwrap()
                    .contains("without --output json"),
                "{line}"
            );
        }
        assert_eq!(stdout.lines().count(), 1, "{args:?}: {stdout}");
    }
}

#[test]
fn an_unwritable_stderr_keeps_the_commands_own_exit_code() {
    // A full disk (here /dev/full) or a closed pipe under stderr: the command ends with its
    // own outcome, not a panic (exit 101) from a line it could not print.
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let bad = write_cluster(
        dir.path(),
        "bad.yml",
        "nodes:\n  - address: 10.0.0.1\n    user: root\n    role: [worker, bogus]\n",
    );
    let invalid = std::process::Command::new(assert_cmd::cargo::cargo_bin("rkers"))
        .args(["up", "--config"])
        .arg(&bad)
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(invalid.code(), Some(2), "{invalid:?}");
    let missing = std::process::Command::new(assert_cmd::cargo::cargo_bin("rkers"))
        .args(["up", "--config", "/nonexistent/cluster.yml"])
        .stderr(full())
        .stdout(full())
        .status()
        .unwrap();
    assert_eq!(missing.code(), Some(1), "{missing:?}");
}

#[test]
fn a_product_stdout_cannot_take_fails_the_command_and_a_closed_pipe_does_not() {
    // What a one-shot command prints is its product: a full disk under stdout must not end in
    // a panic (exit 101) nor in exit 0 with nothing written; a reader that went away (`| head`)
    // is no failure of rkers.
    let run = |args: &[&str], stdout: std::process::Stdio| {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("rkers"))
            .args(args)
            .stdout(stdout)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let commands: [&[&str]; 6] = [
        &["--version"],
        &["version", "--client"],
        &["config", "--list-version"],
        &["config", "--system-images"],
        &["completions", "bash"],
        &["man"],
    ];
    for args in commands {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let (code, stderr) = run(args, full.into());
        assert_eq!(code, Some(1), "{args:?} into /dev/full: {stderr}");
        assert!(
            stderr.contains("cannot write to stdout"),
            "{args:?} into /dev/full: {stderr}"
        );

        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let (code, stderr) = run(args, writer.into());
        assert_eq!(code, Some(0), "{args:?} into a closed pipe: {stderr}");
    }
}
