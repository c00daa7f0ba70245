//! cluster.yml loader on arbitrary bytes, read from a file as `--config` reads it (the bounded
//! read and its UTF-8 check first): must return Ok or an error, never panic, and agree with the
//! text loader. Whatever loads is then defaulted, validated and converted to state JSON and
//! back.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use rkers_core::config::{self, RkeConfig, StaticCatalog};

/// One file per fuzzing process, rewritten for each input.
fn input_file(data: &[u8]) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("rkers-fuzz-config-{}.yml", std::process::id()));
    std::fs::write(&path, data).expect("the temp dir is writable");
    path
}

fuzz_target!(|data: &[u8]| {
    let from_file = config::load_file(&input_file(data));
    let Ok(text) = std::str::from_utf8(data) else {
        assert!(from_file.is_err(), "bytes that are not UTF-8 loaded as a cluster.yml");
        return;
    };
    let from_text = config::load_str(text, "fuzz.yml");
    // A NUL marks a binary file, which only the file loader refuses (the text loader is given
    // text); otherwise the two agree.
    if text.contains('\0') {
        assert!(from_file.is_err(), "a file with a NUL byte loaded as a cluster.yml");
    } else {
        assert_eq!(
            from_file.is_ok(),
            from_text.is_ok(),
            "the file and text loaders disagree"
        );
    }
    let Ok(mut loaded) = from_text else {
        return;
    };
    let mut images = BTreeMap::new();
    images.insert("kubernetes".to_string(), "rancher/hyperkube:v1.30.5-rancher1".to_string());
    images.insert("etcd".to_string(), "rancher/mirrored-coreos-etcd:v3.5.12".to_string());
    let catalog = StaticCatalog {
        default_version: "v1.30.5-rancher1-1".to_string(),
        versions: BTreeMap::from([("v1.30.5-rancher1-1".to_string(), images)]),
    };
    config::apply_defaults(&mut loaded.config, &catalog);
    let _ = config::validate(&loaded.config, &catalog, &loaded.locations);
    let json = loaded.config.to_state_json();
    let back = RkeConfig::from_state_json(&json).expect("our own state JSON reads back");
    assert_eq!(back.to_state_json(), json, "state JSON round trip changed the config");
});
