//! State file compatibility (§7): RKE1-layout files load and are written back unchanged; writes
//! are atomic, 0600, and keep a bounded number of timestamped backups; a document that is JSON
//! but not a state rkers understands is refused.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rkers::state::{
    ClusterFiles, MAX_BACKUPS, StateError, StateFile, list_backups, reset_for_tests, write_atomic,
};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/state")
        .join(name)
}

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn full_rke1_state_round_trips_byte_for_byte() {
    let original = fs::read_to_string(fixture("rke1-full.rkestate")).unwrap();
    let state = StateFile::load(&fixture("rke1-full.rkestate"))
        .unwrap()
        .expect("fixture exists");

    // Typed parts are read, not just carried along.
    let desired = &state.desired_state;
    assert_eq!(desired.certificates_bundle.len(), 11);
    let ca = &desired.certificates_bundle["kube-ca"];
    assert!(
        ca.certificate_pem
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    assert!(ca.key_pem.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    assert_eq!(ca.env_name, "KUBE_CA");
    assert_eq!(ca.common_name, "system:kube-ca");
    assert!(
        desired
            .encryption_config
            .contains("EncryptionConfiguration")
    );
    let config = desired.rke_config.as_ref().unwrap();
    assert_eq!(
        config["services"]["kubeApi"]["serviceClusterIpRange"],
        "10.43.0.0/16"
    );
    assert_eq!(config["futureRkeField"]["introducedIn"], "v1.9.0");
    assert!(config["enableCriDockerd"].is_null());
    let etcd = &desired.certificates_bundle["kube-etcd-10-0-0-1"];
    assert_eq!(etcd.extra["futureCertField"]["rotatedAt"], "2031-01-01");
    assert!(state.current_state.extra.contains_key("futureStateField"));
    assert_eq!(state.extra["futureTopLevel"], "kept as is");

    let written = state.to_json().unwrap();
    let a: Value = serde_json::from_str(&original).unwrap();
    let b: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(a, b, "JSON content changed");
    assert_eq!(
        written, original,
        "layout differs from Go's MarshalIndent output"
    );
}

#[test]
fn desired_only_state_means_new_cluster() {
    let original = fs::read_to_string(fixture("rke1-desired-only.rkestate")).unwrap();
    let state = StateFile::from_json(&original, Path::new("x.rkestate")).unwrap();
    assert!(state.current_state.is_empty());
    assert!(!state.desired_state.is_empty());
    assert_eq!(state.to_json().unwrap(), original);
}

#[test]
fn empty_state_serializes_like_go() {
    let state = StateFile::default();
    assert_eq!(
        state.to_json().unwrap(),
        "{\n  \"desiredState\": {},\n  \"currentState\": {}\n}"
    );
}

#[test]
fn parse_errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.rkestate");
    fs::write(
        &path,
        "{\n  \"desiredState\": {\n    \"certificatesBundle\": [1]\n  }\n}",
    )
    .unwrap();
    let err = StateFile::load(&path).unwrap_err();
    let StateError::Parse { line, column, .. } = &err else {
        panic!("expected a parse error, got {err:?}");
    };
    assert_eq!(*line, 3);
    assert!(*column > 0);
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}:3:", path.display())),
        "error does not start with file:line: {text}"
    );
    assert!(!text.contains(" at line "), "position repeated: {text}");
}

#[test]
fn missing_state_file_is_none() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        StateFile::load(&dir.path().join("nope.rkestate"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn save_is_0600_and_keeps_previous_copy() {
    let dir = tempfile::tempdir().unwrap();
    let files = ClusterFiles::from_config_path(&dir.path().join("prod.yml"));
    assert_eq!(files.state_path, dir.path().join("prod.rkestate"));

    let mut state = StateFile::load(&fixture("rke1-full.rkestate"))
        .unwrap()
        .unwrap();
    state.save(&files.state_path).unwrap();
    assert_eq!(mode_of(&files.state_path), 0o600);
    let first = fs::read_to_string(&files.state_path).unwrap();
    assert!(
        list_backups(&files.state_path).unwrap().is_empty(),
        "no backup expected on first write"
    );

    state.promote_desired_to_current();
    let bak = state.save(&files.state_path).unwrap().expect("a backup");
    assert_eq!(
        list_backups(&files.state_path).unwrap(),
        std::slice::from_ref(&bak)
    );
    let bak_name = bak.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        bak_name.starts_with("prod.rkestate.") && bak_name.ends_with("Z.bak"),
        "{bak_name}"
    );
    assert_eq!(fs::read_to_string(&bak).unwrap(), first);
    assert_eq!(mode_of(&bak), 0o600);
    assert_eq!(mode_of(&files.state_path), 0o600);
    let mut reloaded = StateFile::load(&files.state_path).unwrap().unwrap();
    assert_eq!(reloaded.current_state, reloaded.desired_state);
    // What rkers adds to RKE1's layout is its mark alone.
    assert!(reloaded.written_by_rkers());
    reloaded.extra.remove(rkers::state::RKERS_MARK);
    assert_eq!(reloaded, state);

    // Only the state and its backup: no temporary files left behind.
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["prod.rkestate".to_string(), bak_name]);
}

/// One state per "run": each run's starting state is kept, the oldest pruned past the bound, and
/// a second write within one run keeps no second backup.
#[test]
fn backups_are_bounded_and_keep_each_runs_starting_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.rkestate");
    fs::write(dir.path().join("cluster.rkestate.bak"), "legacy").unwrap();
    let mut state = StateFile::load(&fixture("rke1-desired-only.rkestate"))
        .unwrap()
        .unwrap();
    let mut written = Vec::new();
    for run in 0..MAX_BACKUPS + 3 {
        reset_for_tests();
        state.extra.insert("run".into(), Value::from(run));
        state.save(&path).unwrap();
        written.push(fs::read_to_string(&path).unwrap());
        // The same run writes the state again (e.g. after the control plane is up).
        state.extra.insert("promoted".into(), Value::from(run));
        state.save(&path).unwrap();
        *written.last_mut().unwrap() = fs::read_to_string(&path).unwrap();
    }
    let backups = list_backups(&path).unwrap();
    assert_eq!(backups.len(), MAX_BACKUPS + 1, "{backups:?}");
    assert_eq!(backups[0], dir.path().join("cluster.rkestate.bak"));
    assert_eq!(fs::read_to_string(&backups[0]).unwrap(), "legacy");
    // Each backup holds the final state of one earlier run, the newest being the previous run.
    let kept: Vec<String> = backups[1..]
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect();
    let runs = written.len();
    assert_eq!(kept, written[runs - 1 - MAX_BACKUPS..runs - 1]);
    for b in &backups[1..] {
        assert_eq!(mode_of(b), 0o600, "{}", b.display());
    }
}

#[test]
fn json_that_is_not_a_state_is_refused_with_its_reason() {
    let cases = [
        (
            r#"{"foo": 1}"#,
            "neither desiredState nor currentState (its keys: foo)",
        ),
        ("{}", "empty JSON object"),
        ("[1, 2]", "invalid type"),
        (
            r#"{"desiredState": {"foo": 1}}"#,
            "desiredState holds none of",
        ),
        (
            r#"{"currentState": {"rkeConfig": "x"}}"#,
            "currentState.rkeConfig is not",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.rkestate");
    for (text, reason) in cases {
        fs::write(&path, text).unwrap();
        let err = StateFile::load(&path).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(
                err,
                StateError::NotUnderstood { .. } | StateError::Parse { .. }
            ),
            "{text}: {err:?}"
        );
        assert!(message.contains(reason), "{text}: {message}");
        assert!(message.contains(&path.display().to_string()), "{message}");
    }
    // RKE1's shape of "no cluster yet" is still understood.
    fs::write(&path, r#"{"desiredState": {}, "currentState": {}}"#).unwrap();
    assert!(
        StateFile::load(&path)
            .unwrap()
            .unwrap()
            .desired_state
            .is_empty()
    );
}

#[test]
fn write_atomic_replaces_existing_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kube_config_cluster.yml");
    fs::write(&path, "old").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    write_atomic(&path, b"new", 0o600).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(mode_of(&path), 0o600);
}

#[test]
fn failed_write_leaves_old_file_and_no_partial_file() {
    // A 16 KiB tmpfs: the old state fits, the new one does not.
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    if !is_root {
        assert!(
            std::env::var("RKERS_NO_SKIP").as_deref() != Ok("1"),
            "failed_write_leaves_old_file_and_no_partial_file needs root (mounting a tmpfs), and RKERS_NO_SKIP=1 makes a skip a failure"
        );
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    fs::create_dir(&mnt).unwrap();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(status.success(), "mount tmpfs failed");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());

    let path = mnt.join("cluster.rkestate");
    let small = StateFile::load(&fixture("rke1-desired-only.rkestate"))
        .unwrap()
        .unwrap();
    small.save(&path).unwrap();
    let before = fs::read(&path).unwrap();

    let big = StateFile::load(&fixture("rke1-full.rkestate"))
        .unwrap()
        .unwrap();
    assert!(big.to_json().unwrap().len() > 16 * 1024);
    let err = big.save(&path).unwrap_err();
    assert!(matches!(err, StateError::Write { .. }), "{err:?}");
    assert!(err.to_string().contains("cluster.rkestate"), "{err}");

    assert_eq!(fs::read(&path).unwrap(), before, "old state was damaged");
    let leftovers: Vec<String> = fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn debug_output_has_no_key_material() {
    let state = StateFile::load(&fixture("rke1-full.rkestate"))
        .unwrap()
        .unwrap();
    let debug = format!("{state:?}");
    assert!(debug.contains("kube-ca"));
    assert!(
        !debug.contains("PRIVATE KEY"),
        "key material in Debug output"
    );
    assert!(!debug.contains("BEGIN CERTIFICATE"));
    assert!(
        !debug.contains("hunter2"),
        "registry password in Debug output"
    );
    assert!(
        !debug.contains("c2VjcmV0"),
        "encryption key in Debug output"
    );
}

#[test]
fn a_saved_state_carries_the_rkers_mark_that_rke1_reads_past() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prod.rkestate");
    let state = StateFile::from_json(r#"{"desiredState":{},"currentState":{}}"#, &path).unwrap();
    assert!(!state.written_by_rkers(), "RKE1 writes no mark");
    state.save(&path).unwrap();
    let saved = StateFile::load(&path).unwrap().unwrap();
    assert!(saved.written_by_rkers());
    // The mark is one extra top-level key; the rest is RKE1's layout.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["desiredState", "currentState", "rkers"]);
}
