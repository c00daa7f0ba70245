//! cluster.yml loader on arbitrary text: must return Ok or an error, never panic. Whatever
//! loads is then defaulted, validated and converted to state JSON and back.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use rkers::config::{self, RkeConfig, StaticCatalog};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut loaded) = config::load_str(text, "fuzz.yml") else {
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
