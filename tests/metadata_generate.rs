//! `rkers config` generation: the YAML it writes and the interactive question flow.

use std::io::Cursor;

use rkers::metadata::{
    Catalog, ClusterAnswers, NodeAnswers, SYSTEM_IMAGE_KEYS, generate_cluster_yml, prompt_answers,
    write_cluster_yml,
};
use serde_json::Value;

fn catalog() -> &'static Catalog {
    Catalog::embedded()
}

fn parse_yaml(text: &str) -> Value {
    serde_saphyr::from_str::<Value>(text).unwrap_or_else(|e| panic!("{e}\n---\n{text}"))
}

/// Runs the prompts with `lines` as the typed answers; returns answers and the prompt text.
fn run(lines: &[&str]) -> (std::io::Result<ClusterAnswers>, String) {
    let mut input = Cursor::new(lines.iter().map(|l| format!("{l}\n")).collect::<String>());
    let mut output = Vec::new();
    let answers = prompt_answers(&mut input, &mut output, catalog());
    (answers, String::from_utf8(output).unwrap())
}

#[test]
fn file_starts_with_a_two_line_comment_header() {
    for answers in [ClusterAnswers::empty(), ClusterAnswers::defaults(catalog())] {
        let text = generate_cluster_yml(&answers);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("# ") && lines[1].starts_with("# "),
            "{text}"
        );
        assert!(lines[0].contains("air-gapped") || lines[1].contains("air-gapped"));
        assert_eq!(lines[2], "", "header is exactly two lines");
    }
}

#[test]
fn empty_config_has_one_empty_node_and_parses() {
    let yaml = parse_yaml(&generate_cluster_yml(&ClusterAnswers::empty()));
    let nodes = yaml["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0]["address"], "");
    assert_eq!(nodes[0]["port"], "");
    assert_eq!(nodes[0]["role"], Value::Array(vec![]));
    assert_eq!(yaml["kubernetes_version"], "");
    let images = yaml["system_images"].as_object().unwrap();
    assert_eq!(images.len(), SYSTEM_IMAGE_KEYS.len());
    assert!(images.values().all(|v| v == ""));
    assert_eq!(yaml["addons_include"], Value::Array(vec![]));
}

#[test]
fn default_config_uses_rke_keys_and_parses() {
    let defaults = ClusterAnswers::defaults(catalog());
    let yaml = parse_yaml(&generate_cluster_yml(&defaults));
    let node = &yaml["nodes"][0];
    assert_eq!(node["port"], "22", "port stays a string");
    assert_eq!(node["user"], "ubuntu");
    assert_eq!(node["role"], serde_json::json!(["controlplane"]));
    assert_eq!(node["docker_socket"], "/var/run/docker.sock");
    assert_eq!(node["ssh_key_path"], "~/.ssh/id_rsa");
    assert_eq!(
        yaml["services"]["kube-api"]["service_cluster_ip_range"],
        "10.43.0.0/16"
    );
    assert_eq!(
        yaml["services"]["kube-controller"]["cluster_cidr"],
        "10.42.0.0/16"
    );
    assert_eq!(
        yaml["services"]["kube-controller"]["service_cluster_ip_range"],
        "10.43.0.0/16"
    );
    assert_eq!(
        yaml["services"]["kubelet"]["cluster_domain"],
        "cluster.local"
    );
    assert_eq!(
        yaml["services"]["kubelet"]["cluster_dns_server"],
        "10.43.0.10"
    );
    assert_eq!(yaml["network"]["plugin"], "canal");
    assert_eq!(yaml["authentication"]["strategy"], "x509");
    assert_eq!(yaml["authorization"]["mode"], "rbac");
    assert_eq!(yaml["ssh_key_path"], "~/.ssh/id_rsa");
    assert_eq!(yaml["kubernetes_version"], "v1.32.6-rancher1-1");
    let images = yaml["system_images"].as_object().unwrap();
    let expected = catalog().system_images("v1.32.6-rancher1-1").unwrap();
    assert_eq!(images.len(), expected.len());
    for (key, image) in &expected {
        assert_eq!(images[key], image.as_str(), "{key}");
    }
    // No JSON (camelCase) names anywhere.
    let text = generate_cluster_yml(&defaults);
    for json_name in [
        "nginxProxy",
        "kubernetesVersion",
        "sshKeyPath",
        "addonsInclude",
    ] {
        assert!(!text.contains(json_name), "{json_name} in output");
    }
}

#[test]
fn pressing_enter_everywhere_gives_the_defaults() {
    // 24 questions for one host with no key path and no key content; extra blank lines are unused.
    let blanks = vec![""; 40];
    let (answers, prompts) = run(&blanks);
    assert_eq!(answers.unwrap(), ClusterAnswers::defaults(catalog()));
    assert!(prompts.contains("[+] Cluster Level SSH Private Key Path [~/.ssh/id_rsa]: "));
    assert!(prompts.contains("[+] Number of Hosts [1]: "));
    assert!(prompts.contains("[+] SSH Address of host (1) [none]: "));
    assert!(prompts.contains("[+] SSH Port of host (1) [22]: "));
    assert!(prompts.contains("[+] Is host () a Control Plane host (y/n)? [y]: "));
    assert!(
        prompts.contains("[+] Network Plugin Type (flannel, calico, weave, canal, aci) [canal]: ")
    );
    assert!(prompts.contains("[+] Kubernetes Docker image [rancher/hyperkube:v1.32.6-rancher1]: "));
    assert!(prompts.contains("[+] Add addon manifest URLs or YAML files [no]: "));
}

#[test]
fn scripted_session_yields_the_expected_file() {
    let (answers, prompts) = run(&[
        "~/.ssh/cluster_key",                  // cluster key path
        "2",                                   // hosts
        "10.20.0.11",                          // host 1 address
        "2222",                                // port
        "/keys/one",                           // key path
        "rke",                                 // user
        "y",                                   // controlplane
        "n",                                   // worker
        "y",                                   // etcd
        "node-one",                            // hostname override
        "192.168.0.11",                        // internal IP
        "",                                    // docker socket (default)
        "10.20.0.12",                          // host 2 address
        "",                                    // port (default)
        "",                                    // key path (empty → asks for key)
        "",                                    // key content empty → cluster key
        "",                                    // user (default)
        "n",                                   // controlplane
        "Y",                                   // worker
        "n",                                   // etcd
        "",                                    // hostname override
        "",                                    // internal IP
        "/run/docker.sock",                    // docker socket
        "calico",                              // network plugin
        "",                                    // authn
        "none",                                // authz
        "rancher/hyperkube:v1.20.15-rancher2", // kube image of v1.20.15-rancher2-1/-2
        "cluster.test",                        // cluster domain
        "10.99.0.0/16",                        // service range
        "10.98.0.0/16",                        // cluster CIDR
        "10.99.0.10",                          // DNS IP
        "yes",                                 // addons?
        "https://example.test/a.yaml",
        "y",
        "/srv/b.yaml",
        "no",
    ]);
    let answers = answers.unwrap();
    let expected = ClusterAnswers {
        ssh_key_path: "~/.ssh/cluster_key".to_string(),
        nodes: vec![
            NodeAnswers {
                address: "10.20.0.11".to_string(),
                port: "2222".to_string(),
                internal_address: "192.168.0.11".to_string(),
                roles: vec!["controlplane".to_string(), "etcd".to_string()],
                hostname_override: "node-one".to_string(),
                user: "rke".to_string(),
                docker_socket: "/var/run/docker.sock".to_string(),
                ssh_key: String::new(),
                ssh_key_path: "/keys/one".to_string(),
            },
            NodeAnswers {
                address: "10.20.0.12".to_string(),
                port: "22".to_string(),
                internal_address: String::new(),
                roles: vec!["worker".to_string()],
                hostname_override: String::new(),
                user: "ubuntu".to_string(),
                docker_socket: "/run/docker.sock".to_string(),
                ssh_key: String::new(),
                ssh_key_path: "~/.ssh/cluster_key".to_string(),
            },
        ],
        network_plugin: "calico".to_string(),
        authentication_strategy: "x509".to_string(),
        authorization_mode: "none".to_string(),
        // the newest version whose kubernetes image is the one typed
        kubernetes_version: "v1.20.15-rancher2-2".to_string(),
        system_images: catalog().system_images("v1.20.15-rancher2-2").unwrap(),
        cluster_domain: "cluster.test".to_string(),
        service_cluster_ip_range: "10.99.0.0/16".to_string(),
        cluster_cidr: "10.98.0.0/16".to_string(),
        cluster_dns_server: "10.99.0.10".to_string(),
        addons_include: vec![
            "https://example.test/a.yaml".to_string(),
            "/srv/b.yaml".to_string(),
        ],
    };
    assert_eq!(answers, expected);
    assert!(prompts.contains("[+] SSH Private Key Path of host (10.20.0.12) [none]: "));
    assert!(prompts.contains("[+] SSH Private Key of host (10.20.0.12) [none]: "));
    assert!(
        prompts.contains("~/.ssh/cluster_key"),
        "fallback to the cluster key is announced"
    );

    let yaml = parse_yaml(&generate_cluster_yml(&answers));
    let nodes = yaml["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0]["address"], "10.20.0.11");
    assert_eq!(nodes[0]["port"], "2222");
    assert_eq!(
        nodes[0]["role"],
        serde_json::json!(["controlplane", "etcd"])
    );
    assert_eq!(nodes[0]["internal_address"], "192.168.0.11");
    assert_eq!(nodes[0]["hostname_override"], "node-one");
    assert_eq!(nodes[1]["role"], serde_json::json!(["worker"]));
    assert_eq!(nodes[1]["ssh_key_path"], "~/.ssh/cluster_key");
    assert_eq!(nodes[1]["docker_socket"], "/run/docker.sock");
    assert_eq!(yaml["network"]["plugin"], "calico");
    assert_eq!(yaml["authorization"]["mode"], "none");
    assert_eq!(yaml["kubernetes_version"], "v1.20.15-rancher2-2");
    assert_eq!(
        yaml["system_images"]["kubernetes"],
        "rancher/hyperkube:v1.20.15-rancher2"
    );
    assert_eq!(yaml["system_images"]["alpine"], "rancher/rke-tools:v0.1.87");
    assert_eq!(
        yaml["services"]["kubelet"]["cluster_domain"],
        "cluster.test"
    );
    assert_eq!(
        yaml["services"]["kubelet"]["cluster_dns_server"],
        "10.99.0.10"
    );
    assert_eq!(
        yaml["services"]["kube-api"]["service_cluster_ip_range"],
        "10.99.0.0/16"
    );
    assert_eq!(
        yaml["services"]["kube-controller"]["cluster_cidr"],
        "10.98.0.0/16"
    );
    assert_eq!(
        yaml["addons_include"],
        serde_json::json!(["https://example.test/a.yaml", "/srv/b.yaml"])
    );
}

#[test]
fn inline_key_and_custom_image() {
    let (answers, prompts) = run(&[
        "",
        "1",
        "host.example",
        "",
        "",
        "ssh-ed25519-private-material",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "registry.local/hyperkube:v1.31.1-custom",
        "",
        "",
        "",
        "",
        "",
    ]);
    let answers = answers.unwrap();
    assert_eq!(answers.nodes[0].ssh_key, "ssh-ed25519-private-material");
    assert_eq!(answers.nodes[0].ssh_key_path, "");
    assert!(
        !format!("{answers:?}").contains("private-material"),
        "Debug hides the key"
    );
    assert_eq!(
        prompts.matches("private-material").count(),
        0,
        "the key is never echoed"
    );
    // An image of no known version: default images with that kubernetes image, no version.
    assert_eq!(answers.kubernetes_version, "");
    assert_eq!(
        answers.system_images["kubernetes"],
        "registry.local/hyperkube:v1.31.1-custom"
    );
    assert_eq!(
        answers.system_images["etcd"],
        catalog().system_images("v1.32.6-rancher1-1").unwrap()["etcd"]
    );
    let yaml = parse_yaml(&generate_cluster_yml(&answers));
    assert_eq!(yaml["nodes"][0]["ssh_key"], "ssh-ed25519-private-material");
}

#[test]
fn a_version_typed_as_the_image_answer_selects_that_version() {
    let mut lines = vec![""; 16];
    lines.push("v1.27.16-rancher1-1");
    lines.extend([""; 5]);
    let answers = run(&lines).0.unwrap();
    assert_eq!(answers.kubernetes_version, "v1.27.16-rancher1-1");
    assert_eq!(
        answers.system_images["kubernetes"],
        "rancher/hyperkube:v1.27.16-rancher1"
    );
}

#[test]
fn bad_host_count_is_asked_again() {
    let mut lines = vec!["", "two", "1"];
    lines.extend([""; 30]);
    let (answers, prompts) = run(&lines);
    assert_eq!(answers.unwrap().nodes.len(), 1);
    assert_eq!(prompts.matches("[+] Number of Hosts [1]: ").count(), 2);
    assert!(prompts.contains("\"two\" is not a number of hosts"));
}

#[test]
fn only_yes_adds_addons() {
    // RKE would treat "nope" as yes (its answer check looks for any of the letters in "Yes").
    let mut lines = vec![""; 21];
    lines.push("nope");
    let answers = run(&lines).0.unwrap();
    assert!(answers.addons_include.is_empty());
}

#[test]
fn input_ending_early_names_the_question() {
    let err = run(&["", "1", "10.0.0.1"]).0.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    assert!(err.to_string().contains("SSH Port of host (1)"), "{err}");
}

#[test]
fn special_values_are_quoted_so_they_stay_strings() {
    let mut answers = ClusterAnswers::defaults(catalog());
    answers.nodes[0].address = "yes".to_string();
    answers.nodes[0].hostname_override = "123".to_string();
    answers.nodes[0].internal_address = "10.0.0.1".to_string();
    answers.cluster_domain = "a: b # c".to_string();
    answers.addons_include = vec!["- weird".to_string(), "\"quoted\"".to_string()];
    let yaml = parse_yaml(&generate_cluster_yml(&answers));
    assert_eq!(yaml["nodes"][0]["address"], "yes");
    assert_eq!(yaml["nodes"][0]["hostname_override"], "123");
    assert_eq!(yaml["nodes"][0]["internal_address"], "10.0.0.1");
    assert_eq!(yaml["services"]["kubelet"]["cluster_domain"], "a: b # c");
    assert_eq!(
        yaml["addons_include"],
        serde_json::json!(["- weird", "\"quoted\""])
    );
}

#[cfg(unix)]
#[test]
fn written_file_has_mode_0640() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.yml");
    let text = generate_cluster_yml(&ClusterAnswers::defaults(catalog()));
    // a permissive umask must not widen the mode
    write_cluster_yml(&path, &text).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o640 & !umask());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    let missing = dir.path().join("no/such/dir/cluster.yml");
    let err = write_cluster_yml(&missing, &text).unwrap_err();
    assert!(err.to_string().contains("no/such/dir/cluster.yml"), "{err}");
}

#[cfg(unix)]
fn umask() -> u32 {
    // Read the process umask without changing it for long: the status file has it on Linux.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}
