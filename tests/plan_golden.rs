//! Golden tests of the plan: cluster.yml fixtures → defaulted config → `plan::build`, snapshotted
//! as YAML, plus targeted assertions a reader can check against the spec (§10, §14, §16.3).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rkers::config::{self, RkeConfig, VersionCatalog};
use rkers::plan::{
    self, ClusterPlan, ContainerSpec, EtcdContext, HostFacts, PlanError, PlanInput, ServiceOptions,
};
use serde::Deserialize;

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/plan")
        .join(name)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The hand-written KDM excerpt in `tests/fixtures/plan/kdm.yaml`.
#[derive(Deserialize)]
struct Kdm {
    default_version: String,
    default_rke_tools_tag: String,
    system_images: BTreeMap<String, BTreeMap<String, String>>,
    service_options: BTreeMap<String, ServiceOptions>,
}

impl VersionCatalog for Kdm {
    fn default_version(&self) -> String {
        self.default_version.clone()
    }
    fn system_images(&self, version: &str) -> Option<BTreeMap<String, String>> {
        self.system_images.get(version).cloned()
    }
    fn is_supported(&self, version: &str) -> bool {
        self.system_images.contains_key(version)
    }
    fn supported_versions(&self) -> Vec<String> {
        self.system_images.keys().cloned().collect()
    }
}

fn kdm() -> Kdm {
    serde_saphyr::from_str(&fixture("kdm.yaml")).expect("kdm.yaml parses")
}

fn load(name: &str, kdm: &Kdm) -> RkeConfig {
    let mut cfg = config::load_str(&fixture(name), name)
        .expect("fixture parses")
        .config;
    config::apply_defaults(&mut cfg, kdm);
    cfg
}

/// KDM selects option sets by `vX.Y` (exact version keys first; our fixture has only minors).
fn options_for(kdm: &Kdm, version: &str) -> ServiceOptions {
    let minor = version.split('.').take(2).collect::<Vec<_>>().join(".");
    kdm.service_options[&minor].clone()
}

fn facts_for(cfg: &RkeConfig, facts: HostFacts) -> BTreeMap<String, HostFacts> {
    cfg.nodes
        .iter()
        .map(|n| (n.address.clone(), facts.clone()))
        .collect()
}

struct Scenario {
    cfg: RkeConfig,
    options: ServiceOptions,
    facts: BTreeMap<String, HostFacts>,
    etcd: EtcdContext,
    encryption: Option<String>,
    tools_tag: String,
    dind: bool,
}

impl Scenario {
    fn new(name: &str) -> Self {
        let kdm = kdm();
        let cfg = load(name, &kdm);
        Scenario {
            options: options_for(&kdm, &cfg.kubernetes_version),
            facts: facts_for(&cfg, HostFacts::default()),
            etcd: EtcdContext::fresh(),
            encryption: None,
            tools_tag: kdm.default_rke_tools_tag.clone(),
            dind: false,
            cfg,
        }
    }

    fn build(&self) -> Result<ClusterPlan, PlanError> {
        plan::build(&PlanInput {
            config: &self.cfg,
            service_options: &self.options,
            windows_service_options: None,
            host_facts: &self.facts,
            etcd: &self.etcd,
            encryption_config: self.encryption.as_deref(),
            default_rke_tools_tag: Some(&self.tools_tag),
            dind: self.dind,
        })
    }

    fn plan(&self) -> ClusterPlan {
        self.build().expect("plan builds")
    }
}

fn container<'p>(plan: &'p ClusterPlan, address: &str, name: &str) -> &'p ContainerSpec {
    let host = plan
        .hosts
        .iter()
        .find(|h| h.address == address)
        .unwrap_or_else(|| panic!("no host {address}"));
    host.containers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} on {address}"))
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == item)
}

fn snapshot(name: &str, plan: &ClusterPlan) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    // RKE1 puts base64(config.json with base64 user:password) into kubelet's env; keep it out
    // of the committed snapshot.
    settings.add_redaction(
        ".hosts[].containers.kubelet.env[]",
        insta::dynamic_redaction(|value, _| match value.as_str() {
            Some(s) if s.starts_with("RKE_KUBELET_DOCKER_CONFIG=") => {
                "RKE_KUBELET_DOCKER_CONFIG=[redacted]".into()
            }
            _ => value,
        }),
    );
    settings.bind(|| insta::assert_yaml_snapshot!(name, plan));
}

#[test]
fn one_node_all_roles_v1_31_defaults() {
    let scenario = Scenario::new("cluster-1node-v131.yml");
    let plan = scenario.plan();
    let host = &plan.hosts[0];
    assert_eq!(
        host.containers.keys().collect::<Vec<_>>(),
        vec![
            "etcd",
            "etcd-rolling-snapshots",
            "service-sidekick",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kubelet",
            "kube-proxy"
        ],
        "deployment order; no nginx-proxy on a controlplane host"
    );

    let etcd = container(&plan, "192.168.10.11", "etcd");
    assert_eq!(etcd.image, "rancher/mirrored-coreos-etcd:v3.5.15");
    assert!(etcd.entrypoint.is_empty());
    assert_eq!(etcd.cmd[0], "/usr/local/bin/etcd");
    for flag in [
        "--name=etcd-192.168.10.11",
        "--listen-client-urls=https://0.0.0.0:2379",
        "--advertise-client-urls=https://192.168.10.11:2379",
        "--initial-cluster=etcd-192.168.10.11=https://192.168.10.11:2380",
        "--initial-cluster-state=new",
        "--cert-file=/etc/kubernetes/ssl/kube-etcd-192-168-10-11.pem",
        "--cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "--client-cert-auth=true",
        "--election-timeout=5000",
        "--heartbeat-interval=500",
    ] {
        assert!(has(&etcd.cmd, flag), "etcd lacks {flag}: {:?}", etcd.cmd);
    }
    assert!(
        !has(&etcd.cmd, "--client-cert-auth"),
        "KDM sets it, no bare flag"
    );
    assert!(has(&etcd.env, "ETCDCTL_ENDPOINTS=https://127.0.0.1:2379"));
    assert!(has(&etcd.env, "ETCD_UNSUPPORTED_ARCH=x86_64"));
    // ≥ 1.22: no `:z` on binds.
    assert_eq!(
        etcd.binds,
        vec![
            "/var/lib/etcd:/var/lib/rancher/etcd/",
            "/etc/kubernetes:/etc/kubernetes"
        ]
    );

    let snapshots = container(&plan, "192.168.10.11", "etcd-rolling-snapshots");
    assert_eq!(snapshots.image, "rancher/rke-tools:v0.1.100");
    assert!(has(&snapshots.cmd, "--retention=72h") && has(&snapshots.cmd, "--creation=12h"));

    let api = container(&plan, "192.168.10.11", "kube-apiserver");
    assert_eq!(
        &api.entrypoint[..2],
        &["/opt/rke-tools/entrypoint.sh", "kube-apiserver"]
    );
    for flag in [
        "--etcd-servers=https://192.168.10.11:2379",
        "--advertise-address=192.168.10.11",
        "--authorization-mode=Node,RBAC",
        "--cloud-provider=",
        "--audit-log-path=/var/log/kube-audit/audit-log.json",
        "--audit-policy-file=/etc/kubernetes/audit-policy.yaml",
        "--admission-control-config-file=/etc/kubernetes/admission.yaml",
    ] {
        assert!(has(&api.entrypoint, flag), "apiserver lacks {flag}");
    }
    assert!(
        !api.entrypoint
            .iter()
            .any(|f| f.starts_with("--insecure-port"))
    );
    assert!(
        api.env
            .iter()
            .any(|e| e.starts_with("RKE_ADMISSION_CONFIG_CHECKSUM="))
    );
    assert!(
        api.env
            .iter()
            .any(|e| e.starts_with("RKE_AUDITLOG_CONFIG_CHECKSUM="))
    );

    let kubelet = container(&plan, "192.168.10.11", "kubelet");
    assert!(kubelet.privileged);
    assert_eq!(kubelet.pid_mode.as_deref(), Some("host"));
    assert!(has(
        &kubelet.entrypoint,
        "--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock"
    ));
    assert!(
        !kubelet
            .entrypoint
            .iter()
            .any(|f| f.starts_with("--container-runtime=")),
        "< 1.27 only"
    );
    assert!(
        !kubelet
            .entrypoint
            .iter()
            .any(|f| f.starts_with("--enforce-node-allocatable")),
        "KDM \"\" deletes"
    );
    assert!(has(
        &kubelet.binds,
        "/var/lib/cri-dockerd:/var/lib/cri-dockerd"
    ));
    assert!(has(&kubelet.env, "RKE_KUBELET_CRIDOCKERD=true"));

    let kcm = container(&plan, "192.168.10.11", "kube-controller-manager");
    assert_eq!(
        kcm.health_check.as_ref().unwrap().url,
        "https://localhost:10257/healthz"
    );
    assert_eq!(kcm.cmd, vec!["--use-service-account-credentials=true"]);
    let sched = container(&plan, "192.168.10.11", "kube-scheduler");
    assert_eq!(
        sched.health_check.as_ref().unwrap().url,
        "https://localhost:10259/healthz"
    );

    let sidekick = container(&plan, "192.168.10.11", "service-sidekick");
    assert!(!sidekick.start);
    assert_eq!(sidekick.network_mode.as_deref(), Some("none"));
    assert_eq!(sidekick.restart_policy, None);

    let files: Vec<&str> = host.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        files,
        vec![
            "/etc/kubernetes/admission.yaml",
            "/etc/kubernetes/audit-policy.yaml"
        ]
    );
    // A single etcd host: no etcd <-> etcd row (§10).
    assert!(
        plan.port_checks
            .iter()
            .all(|c| c.description != "etcd <-> etcd")
    );
    snapshot("one_node_all_roles_v1_31", &plan);
}

#[test]
fn sandbox_three_nodes_v1_20_with_private_registry() {
    let scenario = Scenario::new("cluster-sandbox-v120.yml");
    let plan = scenario.plan();
    let cp = "10.77.0.11";

    let etcd = container(&plan, cp, "etcd");
    assert_eq!(etcd.image, "10.77.0.1:5000/rkers/etcd:v3.4.23-rkers1");
    assert!(has(&etcd.cmd, "--enable-v2=true"));
    assert!(has(&etcd.cmd, "--name=etcd-host1"));
    // < 1.22: binds keep `:z`.
    assert!(has(&etcd.binds, "/var/lib/etcd:/var/lib/rancher/etcd/:z"));

    let snapshots = container(&plan, cp, "etcd-rolling-snapshots");
    assert_eq!(
        snapshots.image, "10.77.0.1:5000/rkers/rke-tools:v0.1.100-rkers1",
        "not rancher/rke-tools: tag kept"
    );

    let api = container(&plan, cp, "kube-apiserver");
    assert!(has(&api.entrypoint, "--insecure-port=0"));
    assert!(has(
        &api.entrypoint,
        "--feature-gates=ServiceAccountIssuerDiscovery=false"
    ));
    assert!(has(&api.binds, "/etc/kubernetes:/etc/kubernetes:z"));
    let kcm = container(&plan, cp, "kube-controller-manager");
    assert_eq!(
        kcm.health_check.as_ref().unwrap().url,
        "http://localhost:10252/healthz",
        "image tag v1.20.2"
    );
    assert!(has(&kcm.entrypoint, "--address=0.0.0.0"));
    assert!(
        !kcm.entrypoint
            .iter()
            .any(|f| f.starts_with("--authentication-kubeconfig"))
    );
    let sched = container(&plan, cp, "kube-scheduler");
    assert_eq!(
        sched.health_check.as_ref().unwrap().url,
        "http://localhost:10251/healthz"
    );

    for worker in ["10.77.0.12", "10.77.0.13"] {
        let nginx = container(&plan, worker, "nginx-proxy");
        assert_eq!(nginx.entrypoint, vec!["nginx-proxy"]);
        assert_eq!(nginx.env, vec!["CP_HOSTS=10.77.0.11"]);
        assert_eq!(nginx.cmd, nginx.env);
        let proxy = container(&plan, worker, "kube-proxy");
        assert!(has(&proxy.entrypoint, "--conntrack-max-per-core=0"));
        assert!(has(&proxy.entrypoint, "--hostname-override=host2") || worker == "10.77.0.13");
        let kubelet = container(&plan, worker, "kubelet");
        assert!(has(&kubelet.entrypoint, "--network-plugin=cni"));
        assert!(has(
            &kubelet.entrypoint,
            "--pod-infra-container-image=10.77.0.1:5000/rkers/pause:3.2"
        ));
        assert!(
            !kubelet
                .env
                .iter()
                .any(|e| e.starts_with("RKE_KUBELET_CRIDOCKERD")),
            "cri-dockerd only from 1.24 by default"
        );
        let docker_config = kubelet
            .env
            .iter()
            .find_map(|e| e.strip_prefix("RKE_KUBELET_DOCKER_CONFIG="))
            .expect("registry config env");
        let decoded = String::from_utf8(STANDARD.decode(docker_config).unwrap()).unwrap();
        assert_eq!(
            decoded,
            format!(
                r#"{{"auths":{{"10.77.0.1:5000":{{"auth":"{}"}}}}}}"#,
                STANDARD.encode("rkers:sandbox-registry-secret")
            )
        );
        assert!(has(
            &kubelet.env,
            "RKE_KUBELET_DOCKER_FILE=/var/lib/kubelet/config.json"
        ));
        // Workers get no controlplane files.
        let host = plan.hosts.iter().find(|h| h.address == worker).unwrap();
        assert!(host.files.is_empty());
        assert_eq!(
            host.certificate_names,
            vec!["kube-ca", "kube-proxy", "kube-node"]
        );
    }

    let rows: Vec<(&str, &str)> = plan
        .port_checks
        .iter()
        .map(|c| (c.description.as_str(), c.source.as_str()))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("control plane -> etcd", "10.77.0.11"),
            ("control plane -> worker", "10.77.0.11"),
            ("worker -> control plane", "10.77.0.11"),
            ("worker -> control plane", "10.77.0.12"),
            ("worker -> control plane", "10.77.0.13"),
        ]
    );

    let text = serde_json::to_string(&plan).unwrap();
    assert!(
        !text.contains("sandbox-registry-secret"),
        "password in clear text"
    );
    snapshot("sandbox_three_nodes_v1_20", &plan);
}

#[test]
fn three_all_role_hosts_with_every_option() {
    let mut scenario = Scenario::new("cluster-full-v131.yml");
    scenario.encryption = Some(fixture("encryption.yaml"));
    scenario.facts.insert(
        "203.0.113.22".into(),
        HostFacts {
            selinux_enabled: true,
            arch: "aarch64".into(),
            docker_root_dir: "/data/docker".into(),
            ..HostFacts::default()
        },
    );
    let plan = scenario.plan();
    let a = "203.0.113.21";
    let b = "203.0.113.22";

    let etcd = container(&plan, a, "etcd");
    assert_eq!(
        etcd.user.as_deref(),
        Some("52034:52035"),
        "§33.2 fixed: uid:gid"
    );
    assert!(
        has(&etcd.cmd, "--name=etcd-node-a"),
        "hostname_override lowercased"
    );
    assert!(
        has(&etcd.cmd, "--listen-client-urls=https://172.16.0.21:2379"),
        "internal ≠ address"
    );
    assert!(has(&etcd.env, "ETCDCTL_ENDPOINTS=https://172.16.0.21:2379"));
    assert!(has(&etcd.cmd, "--quota-backend-bytes=8589934592"));
    assert!(has(
        &etcd.cmd,
        "--experimental-peer-skip-client-san-verification=true"
    ));
    assert!(has(
        &etcd.binds,
        "/opt/custom-rke/var/lib/etcd:/var/lib/rancher/etcd/"
    ));
    assert!(has(&etcd.binds, "/srv/etcd-extra:/srv/etcd-extra"));
    assert!(has(&etcd.env, "ETCD_EXTRA=1"));
    assert!(has(
        &etcd.cmd,
        "--initial-cluster=etcd-node-a=https://172.16.0.21:2380,etcd-203.0.113.22=https://172.16.0.22:2380,etcd-172.16.0.23=https://172.16.0.23:2380"
    ));
    let etcd_b = container(&plan, b, "etcd");
    assert!(has(&etcd_b.env, "ETCD_UNSUPPORTED_ARCH=arm64"));
    assert_eq!(
        etcd_b.security_opt,
        vec!["label=type:rke_container_t"],
        "not privileged, no sidekick"
    );

    let snapshots = container(&plan, a, "etcd-rolling-snapshots");
    assert!(has(&snapshots.cmd, "--creation=6h") && has(&snapshots.cmd, "--retention=24h"));

    let api = container(&plan, a, "kube-apiserver");
    for flag in [
        "--etcd-servers=https://172.16.0.21:2379,https://172.16.0.22:2379,https://172.16.0.23:2379",
        "--encryption-provider-config=/etc/kubernetes/ssl/encryption.yaml",
        "--kubelet-certificate-authority=/etc/kubernetes/ssl/kube-ca.pem",
        "--cloud-provider=my-cloud",
        "--cloud-config=/etc/kubernetes/cloud-config",
        "--audit-log-path=/var/log/kube-audit/audit.json",
        "--audit-log-maxage=7",
        "--v=4",
        "--tls-sni-cert-key=/etc/kubernetes/a.pem,/etc/kubernetes/a-key.pem",
        "--tls-sni-cert-key=/etc/kubernetes/b.pem,/etc/kubernetes/b-key.pem",
    ] {
        assert!(has(&api.entrypoint, flag), "apiserver lacks {flag}");
    }
    let plugins = api
        .entrypoint
        .iter()
        .find_map(|f| f.strip_prefix("--enable-admission-plugins="))
        .unwrap();
    assert!(plugins.ends_with(",PersistentVolumeClaimResize,AlwaysPullImages,EventRateLimit"));
    let api_b = container(&plan, b, "kube-apiserver");
    assert_eq!(
        api_b.security_opt,
        vec!["label=level:s0:c1000,c1001", "label=type:rke_container_t"],
        "SELinux host, volumes from the sidekick"
    );
    assert!(has(
        &api.binds,
        "/opt/custom-rke/var/log/kube-audit:/var/log/kube-audit"
    ));
    assert!(has(&api.binds, "/srv/api:/srv/api:ro"));

    let etcd_servers_c = container(&plan, "172.16.0.23", "kube-apiserver")
        .entrypoint
        .iter()
        .find(|f| f.starts_with("--etcd-servers="))
        .cloned()
        .unwrap();
    assert_eq!(
        etcd_servers_c,
        "--etcd-servers=https://172.16.0.23:2379,https://172.16.0.21:2379,https://172.16.0.22:2379",
        "own address first"
    );

    let kubelet = container(&plan, a, "kubelet");
    for flag in [
        "--cluster-dns=169.254.20.10",
        "--tls-cert-file=/etc/kubernetes/ssl/kube-kubelet-172-16-0-21.pem",
        "--node-ip=172.16.0.21",
        "--root-dir=/opt/custom-rke/var/lib/kubelet",
        "--fail-swap-on=false",
        "--max-pods=150",
        "--enforce-node-allocatable=pods",
        "--eviction-hard=memory.available<100Mi",
        "--eviction-hard=nodefs.available<10%",
        "--hostname-override=node-a",
    ] {
        assert!(has(&kubelet.entrypoint, flag), "kubelet lacks {flag}");
    }
    assert!(has(
        &kubelet.binds,
        "/var/lib/kubelet/volumeplugins:/var/lib/kubelet/volumeplugins:shared"
    ));
    assert!(has(
        &kubelet.binds,
        "/opt/custom-rke/var/lib/kubelet:/opt/custom-rke/var/lib/kubelet:shared"
    ));
    assert!(
        has(&kubelet.binds, "/srv/kubelet:/srv/kubelet:z"),
        "extra binds keep their options"
    );
    for env in [
        "RKE_KUBELET_CRIDOCKERD=true",
        "CRIDOCKERD_STREAM_SERVER_ADDRESS=127.0.0.1",
        "CRIDOCKERD_STREAM_SERVER_PORT=10010",
        "RKE_KUBELET_CRIDOCKERD_DUALSTACK=true",
        "KUBELET_EXTRA=1",
    ] {
        assert!(has(&kubelet.env, env), "kubelet lacks env {env}");
    }
    let kubelet_b = container(&plan, b, "kubelet");
    assert!(kubelet_b.security_opt.is_empty(), "privileged: no labels");
    assert!(has(&kubelet_b.binds, "/data/docker:/data/docker:rw,rslave"));

    let proxy = container(&plan, a, "kube-proxy");
    assert!(
        has(&proxy.entrypoint, "--bind-address=172.16.0.21"),
        "cloud provider set"
    );
    assert!(has(&proxy.entrypoint, "--proxy-mode=ipvs"));
    let sched = container(&plan, a, "kube-scheduler");
    assert_eq!(
        sched.env,
        vec!["SCHED_EXTRA=1", "SCHED_EXTRA=1"],
        "scheduler env is not de-duplicated upstream"
    );
    assert!(has(&sched.entrypoint, "--feature-gates=A=true"));

    // Files and checksums.
    let host = plan.hosts.iter().find(|h| h.address == a).unwrap();
    let cloud = host
        .files
        .iter()
        .find(|f| f.container_path == "/etc/kubernetes/cloud-config")
        .unwrap();
    assert_eq!(cloud.path, "/opt/custom-rke/etc/kubernetes/cloud-config");
    assert_eq!(cloud.contents, "[Global]\nregion = lab-1\n");
    assert!(has(
        &api.env,
        &format!(
            "RKE_CLOUD_CONFIG_CHECKSUM={}",
            plan::md5_hex("[Global]\nregion = lab-1\n")
        )
    ));
    let encryption = host
        .files
        .iter()
        .find(|f| f.container_path == "/etc/kubernetes/ssl/encryption.yaml")
        .unwrap();
    assert_eq!(encryption.contents, fixture("encryption.yaml"));
    let admission = host
        .files
        .iter()
        .find(|f| f.container_path == "/etc/kubernetes/admission.yaml")
        .unwrap();
    assert!(admission.contents.contains("enforce: restricted"));
    assert!(admission.contents.contains("- ingress-nginx"));
    assert!(has(
        &api.env,
        &format!(
            "RKE_ADMISSION_CONFIG_CHECKSUM={}",
            plan::md5_hex(&admission.contents)
        )
    ));
    assert!(
        host.certificate_names
            .contains(&"kube-kubelet-172-16-0-23".to_string())
    );
    assert!(
        host.certificate_names
            .contains(&"kube-etcd-172-16-0-22".to_string())
    );
    snapshot("three_all_roles_every_option", &plan);
}

#[test]
fn etcd_member_being_added_gets_existing_state_and_partial_cluster() {
    let mut scenario = Scenario::new("cluster-etcd-add-v131.yml");
    let all: Vec<String> = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
        .map(String::from)
        .to_vec();
    // 10.0.0.2 was just added; 10.0.0.3 is still waiting for its MemberAdd.
    scenario.etcd = EtcdContext::while_adding(&all, &BTreeSet::from(["10.0.0.3".to_string()]));
    let plan = scenario.plan();
    let expected_cluster =
        "--initial-cluster=etcd-10.0.0.1=https://10.0.0.1:2380,etcd-10.0.0.2=https://10.0.0.2:2380";
    for ready in ["10.0.0.1", "10.0.0.2"] {
        let etcd = container(&plan, ready, "etcd");
        assert!(has(&etcd.cmd, "--initial-cluster-state=existing"));
        assert!(has(&etcd.cmd, expected_cluster));
    }
    let pending = container(&plan, "10.0.0.3", "etcd");
    assert!(has(&pending.cmd, "--initial-cluster-state=new"));
    assert!(
        has(&pending.cmd, expected_cluster),
        "RKE1 lists the ready members on every etcd host"
    );
    // The flags that change are exactly the ones diff ignores (§33.6).
    let fresh = Scenario::new("cluster-etcd-add-v131.yml").plan();
    let before = &container(&fresh, "10.0.0.1", "etcd").cmd;
    let after = &container(&plan, "10.0.0.1", "etcd").cmd;
    let changed: Vec<&String> = after.iter().filter(|a| !before.contains(a)).collect();
    assert_eq!(changed.len(), 2);
    assert!(changed.iter().all(|a| plan::is_etcd_dont_care_arg(a)));
    // Three etcd hosts: the etcd <-> etcd checks exist.
    assert_eq!(
        plan.port_checks
            .iter()
            .filter(|c| c.description == "etcd <-> etcd")
            .count(),
        3
    );
    snapshot("etcd_member_being_added", &plan);
}

#[test]
fn windows_hosts_are_refused_from_one_place() {
    let mut scenario = Scenario::new("cluster-sandbox-v120.yml");
    scenario.facts.get_mut("10.77.0.13").unwrap().os_type = "windows".into();
    // Without KDM's Windows option set a Windows worker cannot be planned (tests/windows_plan.rs
    // covers the planned case).
    let err = scenario.build().unwrap_err();
    assert!(
        matches!(err, PlanError::Host { ref host, ref cause } if host == "10.77.0.13" && cause.contains("Windows"))
    );
}

#[test]
fn missing_host_facts_name_the_host() {
    let mut scenario = Scenario::new("cluster-1node-v131.yml");
    scenario.facts.clear();
    assert_eq!(
        scenario.build().unwrap_err().to_string(),
        "host 192.168.10.11: no Docker facts were gathered for it"
    );
}

#[test]
fn flag_precedence_base_kdm_conditional_extra_args_array() {
    let mut scenario = Scenario::new("cluster-1node-v131.yml");
    // KDM overrides a base flag and deletes another.
    scenario
        .options
        .kube_api
        .insert("etcd-prefix".into(), "/kdm".into());
    scenario
        .options
        .kube_api
        .insert("service-node-port-range".into(), String::new());
    // KDM sets authorization-mode, the rbac conditional wins over it.
    scenario
        .options
        .kube_api
        .insert("authorization-mode".into(), "AlwaysAllow".into());
    // extra_args win over everything, extra_args_array adds repeated values.
    let api = &mut scenario.cfg.services.kube_api;
    api.extra_args
        .insert("advertise-address".into(), "10.9.9.9".into());
    api.extra_args_array
        .insert("etcd-prefix".into(), vec!["/array".into()]);
    let plan = scenario.plan();
    let flags = &container(&plan, "192.168.10.11", "kube-apiserver").entrypoint;
    assert!(has(flags, "--etcd-prefix=/kdm"));
    assert!(
        has(flags, "--etcd-prefix=/array"),
        "array values are appended, not merged"
    );
    assert!(
        !flags
            .iter()
            .any(|f| f.starts_with("--service-node-port-range"))
    );
    assert!(has(flags, "--authorization-mode=Node,RBAC"));
    assert!(has(flags, "--advertise-address=10.9.9.9"));
    assert!(!has(flags, "--advertise-address=192.168.10.11"));
}

#[test]
fn etcd_without_kdm_cert_auth_gets_bare_flags() {
    let mut scenario = Scenario::new("cluster-1node-v131.yml");
    scenario.options.etcd.clear();
    let plan = scenario.plan();
    let cmd = &container(&plan, "192.168.10.11", "etcd").cmd;
    assert_eq!(
        &cmd[..3],
        &[
            "/usr/local/bin/etcd",
            "--client-cert-auth",
            "--peer-client-cert-auth"
        ]
    );
}

#[test]
fn selinux_labels_and_z_binds() {
    // < 1.22: binds keep `:z`; SELinux adds only the MCS label, and only to unprivileged
    // containers sharing the sidekick volume (and the sidekick itself).
    let mut old = Scenario::new("cluster-sandbox-v120.yml");
    for facts in old.facts.values_mut() {
        facts.selinux_enabled = true;
    }
    let plan = old.plan();
    let cp = "10.77.0.11";
    assert_eq!(
        container(&plan, cp, "kube-apiserver").security_opt,
        vec!["label=level:s0:c1000,c1001"]
    );
    assert_eq!(
        container(&plan, cp, "service-sidekick").security_opt,
        vec!["label=level:s0:c1000,c1001"]
    );
    assert!(container(&plan, cp, "etcd").security_opt.is_empty());
    assert!(container(&plan, cp, "kubelet").security_opt.is_empty());
    assert!(has(
        &container(&plan, cp, "kubelet").binds,
        "/etc/cni:/etc/cni:rw,z"
    ));
    assert!(
        container(&plan, "10.77.0.12", "nginx-proxy")
            .security_opt
            .is_empty()
    );

    // ≥ 1.22 without SELinux: no labels, no `z`.
    let new = Scenario::new("cluster-1node-v131.yml").plan();
    let kubelet = container(&new, "192.168.10.11", "kubelet");
    assert!(has(&kubelet.binds, "/etc/cni:/etc/cni:rw"));
    assert!(
        kubelet
            .binds
            .iter()
            .all(|b| !b.ends_with(":z") && !b.contains(",z"))
    );
    assert!(
        new.hosts[0]
            .containers
            .values()
            .all(|c| c.security_opt.is_empty())
    );
}

#[test]
fn checksum_envs_follow_file_contents() {
    let checksum = |plan: &ClusterPlan, var: &str| {
        container(plan, "192.168.10.11", "kube-apiserver")
            .env
            .iter()
            .find_map(|e| e.strip_prefix(&format!("{var}=")).map(String::from))
    };
    let base = Scenario::new("cluster-1node-v131.yml");
    let base_plan = base.plan();

    let mut restricted = Scenario::new("cluster-1node-v131.yml");
    restricted.cfg.services.kube_api.pod_security_configuration = "restricted".into();
    let restricted_plan = restricted.plan();
    assert_ne!(
        checksum(&base_plan, "RKE_ADMISSION_CONFIG_CHECKSUM"),
        checksum(&restricted_plan, "RKE_ADMISSION_CONFIG_CHECKSUM")
    );
    assert_eq!(
        checksum(&base_plan, "RKE_AUDITLOG_CONFIG_CHECKSUM"),
        checksum(&restricted_plan, "RKE_AUDITLOG_CONFIG_CHECKSUM")
    );

    let mut policy = Scenario::new("cluster-1node-v131.yml");
    let audit = policy.cfg.services.kube_api.audit_log.as_mut().unwrap();
    audit.configuration.as_mut().unwrap().policy = Some(serde_json::json!({
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "None"}]
    }));
    let policy_plan = policy.plan();
    assert_ne!(
        checksum(&base_plan, "RKE_AUDITLOG_CONFIG_CHECKSUM"),
        checksum(&policy_plan, "RKE_AUDITLOG_CONFIG_CHECKSUM")
    );
    let file = policy_plan.hosts[0]
        .files
        .iter()
        .find(|f| f.container_path == "/etc/kubernetes/audit-policy.yaml")
        .unwrap();
    assert_eq!(
        file.contents,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nmetadata:\n  creationTimestamp: null\nrules:\n- level: None\n"
    );

    // No cloud provider: no cloud checksum; with one, the checksum is the MD5 of the file.
    assert_eq!(checksum(&base_plan, "RKE_CLOUD_CONFIG_CHECKSUM"), None);
    let mut cloud = Scenario::new("cluster-1node-v131.yml");
    cloud.cfg.cloud_provider.name = "external-aws".into();
    let cloud_plan = cloud.plan();
    assert_eq!(
        checksum(&cloud_plan, "RKE_CLOUD_CONFIG_CHECKSUM").as_deref(),
        Some("d41d8cd98f00b204e9800998ecf8427e"),
        "external-aws: empty cloud-config"
    );
    assert!(has(
        &container(&cloud_plan, "192.168.10.11", "kube-apiserver").entrypoint,
        "--cloud-provider=external"
    ));

    // A user admission file: no generated file, no checksum.
    let mut own = Scenario::new("cluster-1node-v131.yml");
    own.cfg.services.kube_api.extra_args.insert(
        "admission-control-config-file".into(),
        "/etc/kubernetes/mine.yaml".into(),
    );
    let own_plan = own.plan();
    assert_eq!(checksum(&own_plan, "RKE_ADMISSION_CONFIG_CHECKSUM"), None);
    assert!(
        own_plan.hosts[0]
            .files
            .iter()
            .all(|f| f.container_path != "/etc/kubernetes/admission.yaml")
    );
}

#[test]
fn cert_names_follow_rke1() {
    assert_eq!(
        plan::cert_name_for_host("1.2.3.4", "1.2.3.4", "kube-etcd"),
        "kube-etcd-1-2-3-4"
    );
    assert_eq!(
        plan::cert_name_for_host("1.2.3.4", "10.0.0.4", "kube-etcd"),
        "kube-etcd-10-0-0-4"
    );
    assert_eq!(
        plan::cert_name_for_host("Host.Example", "", "kube-kubelet"),
        "kube-kubelet-host-example"
    );
    assert_eq!(plan::host_prefix_path("/", "RancherOS v1.5"), "/opt/rke");
    assert_eq!(plan::host_prefix_path("/", "Debian GNU/Linux 12"), "/");
    assert_eq!(plan::host_prefix_path("/srv/rke", "Flatcar"), "/srv/rke");
}

/// kubelet's container runtime by Kubernetes version, as rancher/rke `cluster/plan.go`
/// (`BuildKubeletProcess`, v1.6.3 = release/v1.7) and `cluster/defaults.go` (`setCRIDockerd`)
/// build it: cri-dockerd from v1.24 (and on v1.21–v1.23 when enabled, then through the
/// dockershim socket path), `--container-runtime=remote` below v1.27, the cri-dockerd bind only
/// from v1.24, and the rest of the container unchanged.
#[test]
fn kubelet_runtime_follows_rke1_for_every_minor() {
    const CRI_SOCKET: &str = "--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock";
    const SHIM_SOCKET: &str = "--container-runtime-endpoint=/var/run/dockershim.sock";
    const CRI_BIND: &str = "/var/lib/cri-dockerd:/var/lib/cri-dockerd";
    /// Version, enable_cri_dockerd, endpoint flag, --container-runtime=remote, cri bind.
    type Case = (&'static str, Option<bool>, Option<&'static str>, bool, bool);
    let cases: &[Case] = &[
        ("v1.21.14-rancher1-1", None, None, false, false),
        (
            "v1.21.14-rancher1-1",
            Some(true),
            Some(SHIM_SOCKET),
            true,
            false,
        ),
        (
            "v1.23.16-rancher2-3",
            Some(true),
            Some(SHIM_SOCKET),
            true,
            false,
        ),
        ("v1.24.17-rancher1-1", None, Some(CRI_SOCKET), true, true),
        ("v1.25.16-rancher2-3", None, Some(CRI_SOCKET), true, true),
        ("v1.26.15-rancher1-1", None, Some(CRI_SOCKET), true, true),
        ("v1.27.16-rancher1-1", None, Some(CRI_SOCKET), false, true),
        ("v1.28.15-rancher1-1", None, Some(CRI_SOCKET), false, true),
        ("v1.29.15-rancher1-1", None, Some(CRI_SOCKET), false, true),
        ("v1.30.14-rancher1-1", None, Some(CRI_SOCKET), false, true),
        ("v1.31.14-rancher1-1", None, Some(CRI_SOCKET), false, true),
        ("v1.32.13-rancher1-3", None, Some(CRI_SOCKET), false, true),
    ];
    let kdm = kdm();
    for &(version, enable, endpoint, remote, bind) in cases {
        let mut scenario = Scenario::new("cluster-1node-v131.yml");
        scenario.cfg.kubernetes_version = version.into();
        scenario.cfg.enable_cri_dockerd = enable;
        // rkers' defaults do what RKE1's setCRIDockerd does.
        config::apply_defaults(&mut scenario.cfg, &kdm);
        let plan = scenario.plan();
        let kubelet = container(&plan, "192.168.10.11", "kubelet");
        let flag = |prefix: &str| -> Vec<&String> {
            kubelet
                .entrypoint
                .iter()
                .filter(|f| f.starts_with(prefix))
                .collect()
        };
        let cri = endpoint.is_some();
        assert_eq!(
            flag("--container-runtime-endpoint="),
            endpoint.into_iter().collect::<Vec<_>>(),
            "{version}"
        );
        assert_eq!(
            flag("--container-runtime="),
            if remote {
                vec!["--container-runtime=remote"]
            } else {
                vec![]
            },
            "{version}"
        );
        assert_eq!(
            has(&kubelet.binds, CRI_BIND),
            bind,
            "{version}: {:?}",
            kubelet.binds
        );
        assert_eq!(
            has(&kubelet.env, "RKE_KUBELET_CRIDOCKERD=true"),
            cri,
            "{version}"
        );
        assert_eq!(
            &kubelet.entrypoint[..2],
            &["/opt/rke-tools/entrypoint.sh", "kubelet"],
            "{version}"
        );
        assert_eq!(kubelet.volumes_from, vec!["service-sidekick"], "{version}");
        assert_eq!(kubelet.network_mode.as_deref(), Some("host"), "{version}");
        assert_eq!(kubelet.pid_mode.as_deref(), Some("host"), "{version}");
        assert!(kubelet.privileged, "{version}");
        assert_eq!(
            kubelet.restart_policy.as_deref(),
            Some("always"),
            "{version}"
        );
        assert_eq!(
            kubelet
                .labels
                .get("io.rancher.rke.container.name")
                .map(String::as_str),
            Some("kubelet"),
            "{version}"
        );
        // From v1.22 no bind keeps `z` (util.RemoveZFromBinds), the cri-dockerd one included.
        let z = kubelet
            .binds
            .iter()
            .any(|b| b.ends_with(":z") || b.contains(",z"));
        assert_eq!(
            z,
            version.starts_with("v1.21."),
            "{version}: {:?}",
            kubelet.binds
        );
    }

    // The cri-dockerd environment RKE1 adds: dual stack, the streaming server's address and port.
    let mut scenario = Scenario::new("cluster-1node-v131.yml");
    scenario.cfg.services.kube_controller.cluster_cidr = "10.42.0.0/16,fd00:42::/56".into();
    scenario.cfg.cri_dockerd_stream_server_address = "0.0.0.0".into();
    scenario.cfg.cri_dockerd_stream_server_port = "10011".into();
    let plan = scenario.plan();
    let kubelet = container(&plan, "192.168.10.11", "kubelet");
    for env in [
        "RKE_KUBELET_CRIDOCKERD=true",
        "RKE_KUBELET_CRIDOCKERD_DUALSTACK=true",
        "CRIDOCKERD_STREAM_SERVER_ADDRESS=0.0.0.0",
        "CRIDOCKERD_STREAM_SERVER_PORT=10011",
    ] {
        assert!(has(&kubelet.env, env), "{env}: {:?}", kubelet.env);
    }
}

/// `up --dind`: RKE1's docker-in-docker flags (rancher/rke `cluster/plan.go`: `c.DinD` in
/// `BuildKubeletProcess`, `BuildKubeProxyProcess`, and below v1.24 in
/// `BuildKubeControllerProcess` and `BuildSchedulerProcess`).
#[test]
fn dind_health_endpoints_listen_everywhere() {
    for (fixture, address_flag) in [
        ("cluster-1node-v131.yml", false),
        ("cluster-sandbox-v120.yml", true),
    ] {
        let mut scenario = Scenario::new(fixture);
        let plain = scenario.plan();
        scenario.dind = true;
        let dind = scenario.plan();
        let address = &plain.hosts[0].address;
        for name in ["kubelet", "kube-proxy"] {
            let flags = &container(&dind, address, name).entrypoint;
            assert!(
                has(flags, "--healthz-bind-address=0.0.0.0"),
                "{fixture} {name}: {flags:?}"
            );
            assert_eq!(
                flags
                    .iter()
                    .filter(|f| f.starts_with("--healthz-bind-address="))
                    .count(),
                1,
                "{fixture} {name}: one value, RKE1's"
            );
            assert!(
                !has(
                    &container(&plain, address, name).entrypoint,
                    "--healthz-bind-address=0.0.0.0"
                ),
                "{fixture} {name}"
            );
        }
        for name in ["kube-controller-manager", "kube-scheduler"] {
            let flags = &container(&dind, address, name).entrypoint;
            assert_eq!(
                has(flags, "--address=0.0.0.0"),
                address_flag,
                "{fixture} {name}: {flags:?}"
            );
        }
    }
}
