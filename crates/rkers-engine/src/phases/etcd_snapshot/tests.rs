use super::*;

#[test]
fn the_secret_is_masked_in_messages() {
    let s = S3BackupConfig {
        access_key: "AK".into(),
        secret_key: "very-secret-key".into(),
        bucket_name: "snaps".into(),
        ..Default::default()
    };
    register_s3_secrets(&s, Redactor::global());
    let shown = crate::output::redact(&format!(
        "env S3_SECRET_KEY={} and {}",
        STANDARD.encode(&s.secret_key),
        s.secret_key
    ));
    assert!(!shown.contains("very-secret-key"), "{shown}");
    assert!(
        !shown.contains(&STANDARD.encode("very-secret-key")),
        "{shown}"
    );
}

#[test]
fn a_bad_name_is_invalid_input() {
    assert!(matches!(
        check_snapshot_name("a/b"),
        Err(SnapshotError::Invalid(m)) if m.contains("without '/'")
    ));
}
