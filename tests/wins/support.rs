//! Loading the mixed-cluster fixture with the compiled-in version metadata.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rkers::config::{self, RkeConfig};
use rkers::metadata::{self, Catalog};
use rkers::plan::{
    self, ClusterPlan, EtcdContext, HostFacts, PlanError, PlanInput, ServiceOptions,
};

pub const WINDOWS_HOST: &str = "10.77.0.21";

pub fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/wins")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn load(text: &str) -> RkeConfig {
    let mut cfg = config::load_str(text, "cluster.yml")
        .expect("fixture parses")
        .config;
    config::apply_defaults(&mut cfg, Catalog::embedded());
    cfg
}

fn to_plan_options(o: metadata::ServiceOptions) -> ServiceOptions {
    ServiceOptions {
        etcd: o.etcd,
        kube_api: o.kubeapi,
        kube_controller: o.kube_controller,
        scheduler: o.scheduler,
        kubelet: o.kubelet,
        kubeproxy: o.kubeproxy,
    }
}

pub fn linux_options(cfg: &RkeConfig) -> ServiceOptions {
    to_plan_options(
        Catalog::embedded()
            .service_options(&cfg.kubernetes_version, Some(&cfg.system_images.kubernetes))
            .expect("Linux options"),
    )
}

pub fn windows_options(cfg: &RkeConfig) -> ServiceOptions {
    to_plan_options(
        Catalog::embedded()
            .windows_service_options(&cfg.kubernetes_version, Some(&cfg.system_images.kubernetes))
            .expect("Windows options"),
    )
}

/// Docker facts: every host Linux except those listed as Windows.
pub fn facts(cfg: &RkeConfig, windows: &[&str]) -> BTreeMap<String, HostFacts> {
    cfg.nodes
        .iter()
        .map(|n| {
            let mut f = HostFacts::default();
            if windows.contains(&n.address.as_str()) {
                f.os_type = "windows".into();
                f.operating_system =
                    "Windows Server 2019 Datacenter Version 1809 (OS Build 17763.1)".into();
                f.docker_root_dir = r"C:\ProgramData\docker".into();
            }
            (n.address.clone(), f)
        })
        .collect()
}

pub fn build(
    cfg: &RkeConfig,
    facts: &BTreeMap<String, HostFacts>,
    windows_options: Option<&ServiceOptions>,
) -> Result<ClusterPlan, PlanError> {
    let linux = linux_options(cfg);
    plan::build(&PlanInput {
        config: cfg,
        service_options: &linux,
        windows_service_options: windows_options,
        host_facts: facts,
        etcd: &EtcdContext::fresh(),
        encryption_config: None,
        default_rke_tools_tag: None,
        dind: false,
    })
}

/// The mixed cluster's plan.
pub fn mixed_plan() -> (RkeConfig, ClusterPlan) {
    let cfg = load(&fixture("cluster-mixed-v120.yml"));
    let win = windows_options(&cfg);
    let plan = build(&cfg, &facts(&cfg, &[WINDOWS_HOST]), Some(&win)).expect("mixed plan builds");
    (cfg, plan)
}

/// Decodes `pwsh -EncodedCommand <base64 UTF-16LE>` back to the script.
pub fn decode_powershell(encoded: &str) -> String {
    let bytes = STANDARD.decode(encoded).expect("base64");
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).expect("utf-16")
}
