//! Valid configs: every RKE1 key is understood and maps onto RKE1's state-file JSON names,
//! defaults equal RKE1's, and the shipped example passes validation.

#[path = "fixtures/config/catalog.rs"]
mod catalog;

use std::path::{Path, PathBuf};

use rkers::config::{self, RkeConfig};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config")
        .join(name)
}

fn read_json(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Names the first differing JSON path, so a failure says which key is wrong.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value::Object;
    match (a, b) {
        (Object(x), Object(y)) => {
            for key in x.keys().chain(y.keys()) {
                let p = format!("{path}.{key}");
                match (x.get(key), y.get(key)) {
                    (Some(u), Some(v)) => {
                        if let Some(d) = first_difference(u, v, &p) {
                            return Some(d);
                        }
                    }
                    (u, v) => return Some(format!("{p}: {u:?} vs {v:?}")),
                }
            }
            None
        }
        _ if a != b => Some(format!("{path}: {a} vs {b}")),
        _ => None,
    }
}

fn assert_json_eq(actual: &serde_json::Value, expected: &serde_json::Value) {
    if let Some(d) = first_difference(actual, expected, "") {
        panic!("JSON differs at {d}");
    }
    assert_eq!(actual, expected);
}

#[test]
fn every_yaml_key_is_known_and_maps_onto_its_state_json_name() {
    let loaded = config::load_file(&fixture("every-key.yml")).expect("every-key.yml loads");
    assert!(
        loaded.warnings.is_empty(),
        "keys reported unknown: {:?}",
        loaded.warnings
    );
    // The fixture sets odd spellings; check a few reached their fields.
    let cfg = &loaded.config;
    let s3 = cfg
        .services
        .etcd
        .backup_config
        .as_ref()
        .unwrap()
        .s3_backup_config
        .as_ref();
    assert_eq!(
        s3.unwrap().bucket_name,
        "services.etcd.backupConfig.s3BackupConfig.bucketName"
    );
    assert!(cfg.rotate_certificates.as_ref().unwrap().ca_certificates);
    assert_eq!(cfg.network.tolerations[0].toleration_seconds, Some(30));
    assert_eq!(
        cfg.network
            .calico_network_provider
            .as_ref()
            .unwrap()
            .cloud_provider,
        "network.calicoNetworkProvider.cloudProvider"
    );
    assert_json_eq(&cfg.to_state_json(), &read_json("every-key.state.json"));
}

#[test]
fn state_json_with_every_field_round_trips() {
    let state = read_json("every-key.state.json");
    let cfg = RkeConfig::from_state_json(&state).expect("state JSON deserializes");
    assert_json_eq(&cfg.to_state_json(), &state);
    // And the YAML-loaded config equals the one read from JSON.
    let loaded = config::load_file(&fixture("every-key.yml")).unwrap();
    assert_eq!(loaded.config, cfg);
}

#[test]
fn minimal_config_gets_rke1_defaults() {
    let catalog = catalog::catalog();
    let mut loaded = config::load_file(&fixture("minimal.yml")).unwrap();
    config::apply_defaults(&mut loaded.config, &catalog);
    assert_json_eq(
        &loaded.config.to_state_json(),
        &read_json("minimal.defaulted.json"),
    );
    let problems = config::validate(&loaded.config, &catalog, &loaded.locations);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn defaults_follow_the_kubernetes_version() {
    let catalog = catalog::catalog();
    let src = format!(
        "kubernetes_version: {}\nnodes:\n  - {{address: 10.0.0.1, user: u, role: [etcd, controlplane]}}\n",
        catalog::OLD_VERSION
    );
    let mut cfg = config::load_str(&src, "old.yml").unwrap().config;
    config::apply_defaults(&mut cfg, &catalog);
    assert_eq!(
        cfg.enable_cri_dockerd, None,
        "cri-dockerd is only defaulted from 1.24"
    );
    assert_eq!(cfg.ingress.network_mode, "hostNetwork");
    assert_eq!(cfg.ingress.default_backend, Some(true));
    assert_eq!(cfg.services.kube_api.pod_security_configuration, "");
    assert_eq!(cfg.dns.as_ref().unwrap().provider, "coredns");
    assert!(cfg.services.kube_api.audit_log.as_ref().unwrap().enabled);
}

#[test]
fn default_registry_prefixes_only_defaulted_images() {
    let catalog = catalog::catalog();
    let src = "nodes: [{address: a, user: u, role: [etcd]}]\n\
               private_registries:\n  - url: registry.example.com:5000\n    is_default: true\n    password: hunter2\n\
               system_images:\n  etcd: my/etcd:1\n";
    let mut cfg = config::load_str(src, "r.yml").unwrap().config;
    config::apply_defaults(&mut cfg, &catalog);
    assert_eq!(cfg.system_images.etcd, "my/etcd:1");
    assert_eq!(
        cfg.system_images.alpine,
        "registry.example.com:5000/rancher/rke-tools:v0.1.103"
    );
    assert_eq!(cfg.services.etcd.image, "my/etcd:1");
    // The registry password never shows in Debug output.
    let debug = format!("{cfg:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("<redacted>"));
}

#[test]
fn drain_input_gets_parse_time_defaults_only_for_absent_keys() {
    let src = "upgrade_strategy:\n  drain: true\n  node_drain_input:\n    grace_period: 0\n    ignore_daemonsets: false\n";
    let cfg = config::load_str(src, "d.yml").unwrap().config;
    let drain = cfg.upgrade_strategy.unwrap().node_drain_input.unwrap();
    assert_eq!(drain.grace_period, 0);
    assert_eq!(drain.timeout, 120);
    assert_eq!(drain.ignore_daemonsets, Some(false));
}

#[test]
fn yaml_1_1_booleans_and_unquoted_scalars_read_like_go_yaml_v2() {
    let src = "ssh_agent_auth: yes\nignore_docker_version: On\nenable_cri_dockerd: n\n\
               nodes:\n  - address: 10.0.0.1\n    port: 2222\n    user: yes\n    role: [etcd]\n    labels:\n      tier: 1\n      flag: true\n";
    let cfg = config::load_str(src, "b.yml").unwrap().config;
    assert!(cfg.ssh_agent_auth);
    assert_eq!(cfg.ignore_docker_version, Some(true));
    assert_eq!(cfg.enable_cri_dockerd, Some(false));
    assert_eq!(cfg.nodes[0].port, "2222");
    assert_eq!(cfg.nodes[0].user, "yes");
    assert_eq!(cfg.nodes[0].labels["tier"], "1");
    assert_eq!(cfg.nodes[0].labels["flag"], "true");
}

#[test]
fn empty_values_are_go_zero_values() {
    let src =
        "nodes:\n  - address: a\n    labels:\n    taints:\nservices:\n  etcd:\naddons_include:\n";
    let cfg = config::load_str(src, "e.yml").unwrap().config;
    assert!(cfg.nodes[0].labels.is_empty());
    assert!(cfg.addons_include.is_empty());
}

#[test]
fn unknown_keys_are_warnings_with_their_path_and_position() {
    let src = "nodes:\n  - address: 10.0.0.1\n    rol: [etcd]\nservices:\n  kube-api:\n    extra_arg:\n      v: 2\nfoo: bar\n";
    let loaded = config::load_str(src, "cluster.yml").expect("unknown keys do not fail");
    let shown: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        shown,
        vec![
            "cluster.yml:3:5: nodes[0].rol: unknown key `rol` is ignored",
            "cluster.yml:6:5: services.kube-api.extra_arg: unknown key `extra_arg` is ignored",
            "cluster.yml:8:1: foo: unknown key `foo` is ignored",
        ]
    );
}

#[test]
fn example_cluster_yml_is_valid() {
    let catalog = catalog::catalog();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster.example.yml");
    let mut loaded = config::load_file(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    config::apply_defaults(&mut loaded.config, &catalog);
    let problems = config::validate(&loaded.config, &catalog, &loaded.locations);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(loaded.config.nodes.len(), 3);
}

#[test]
fn unreadable_file_is_an_io_error_naming_the_file() {
    let err = config::load_file(Path::new("/nonexistent/cluster.yml")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/cluster.yml: cannot read")
    );
    assert_eq!(err.exit_code(), 1);
}
