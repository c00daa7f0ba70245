//! Semantic validation of a defaulted cluster.yml (upstream `cluster/validation.go`, plus the
//! checks RKE1 misses and only discovers half-way through `rke up`). Every problem is reported,
//! not only the first, each at the key it concerns.

use std::collections::HashMap;
use std::net::IpAddr;

use ipnet::IpNet;

use super::load::Locations;
use super::types::*;
use super::{Diagnostic, VersionCatalog};

/// A `kubernetes_version` that is not `vX.Y.Z[-pre]`.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    #[error("`{version}` is not a valid version: it must start with `v`")]
    NoV { version: String },
    #[error("`{version}` is not valid semver: {source}")]
    Semver {
        version: String,
        #[source]
        source: semver::Error,
    },
}

/// Parses `vX.Y.Z[-pre]` as RKE1 does: a leading `v` followed by a semantic version.
pub fn parse_k8s_version(version: &str) -> Result<semver::Version, VersionError> {
    let Some(rest) = version.strip_prefix('v').filter(|r| !r.is_empty()) else {
        return Err(VersionError::NoV {
            version: version.to_string(),
        });
    };
    semver::Version::parse(rest).map_err(|source| VersionError::Semver {
        version: version.to_string(),
        source,
    })
}

/// `>= X.Y.Z-rancher0` in RKE1's ranges, i.e. any build of X.Y.Z or later.
pub(crate) fn version_at_least(version: &semver::Version, min: (u64, u64, u64)) -> bool {
    (version.major, version.minor, version.patch) >= min
}

const ROLES: [&str; 3] = ["etcd", "controlplane", "worker"];
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const NETWORK_PLUGINS: [&str; 6] = ["canal", "flannel", "calico", "weave", "aci", "none"];
const DNS_POLICIES: [&str; 4] = ["ClusterFirst", "ClusterFirstWithHostNet", "None", "Default"];
const ROTATABLE_SERVICES: [&str; 6] = [
    "etcd",
    "kubelet",
    "kube-apiserver",
    "kube-proxy",
    "kube-scheduler",
    "kube-controller-manager",
];

struct Report<'a> {
    locations: &'a Locations,
    diagnostics: Vec<Diagnostic>,
}

impl Report<'_> {
    /// Reports at `path`, or at its nearest written ancestor.
    fn at(&mut self, path: &str, message: impl Into<String>) {
        self.diagnostics
            .push(self.locations.diagnostic(path, message));
    }

    /// Reports at the first of `paths` written in the file (else as [`Self::at`] the first).
    fn at_any(&mut self, paths: &[&str], message: impl Into<String>) {
        let path = paths
            .iter()
            .find(|p| self.locations.contains(p))
            .unwrap_or(&paths[0]);
        self.at(path, message);
    }
}

/// Every problem in a defaulted config. An empty list means the config can be used.
pub fn validate(
    cfg: &RkeConfig,
    catalog: &dyn VersionCatalog,
    locations: &Locations,
) -> Vec<Diagnostic> {
    let mut report = Report {
        locations,
        diagnostics: Vec::new(),
    };
    let version = check_version(cfg, catalog, &mut report);
    check_nodes(cfg, &mut report);
    check_ssh_ports(cfg, &mut report);
    check_auth(cfg, &mut report);
    check_network(cfg, version.as_ref(), &mut report);
    check_ingress(cfg, &mut report);
    check_dns_and_monitoring(cfg, &mut report);
    if let Some(v) = &version {
        check_version_dependent(cfg, v, &mut report);
    }
    check_etcd(cfg, &mut report);
    check_upgrade_strategy(cfg, &mut report);
    check_misc(cfg, &mut report);
    check_services(cfg, &mut report);
    check_registries(cfg, &mut report);
    let mut diagnostics = report.diagnostics;
    diagnostics.sort_by_key(|d| (d.line == 0, d.line, d.column));
    diagnostics
}

fn check_version(
    cfg: &RkeConfig,
    catalog: &dyn VersionCatalog,
    report: &mut Report,
) -> Option<semver::Version> {
    let version = match parse_k8s_version(&cfg.kubernetes_version) {
        Ok(v) => v,
        Err(e) => {
            report.at(
                "kubernetes_version",
                format!("{e} (expected a version such as v1.30.5-rancher1-1)"),
            );
            return None;
        }
    };
    if catalog.is_supported(&cfg.kubernetes_version) {
        return Some(version);
    }
    let missing = required_images(cfg, &version);
    if missing.is_empty() {
        return Some(version);
    }
    let v = &cfg.kubernetes_version;
    let message = if catalog.is_unpublished(v) {
        format!(
            "{v} has no published metadata (RKE Extended Life): its images come from the \
             cluster's state when RKE1 built the cluster at {v}, else from system_images; \
             add to system_images: {}",
            missing.join(", ")
        )
    } else {
        format!(
            "{}, or give every image in system_images",
            unknown_version_message(v, &catalog.nearest_versions(v))
        )
    };
    report.at("kubernetes_version", message);
    Some(version)
}

/// The error for a version the metadata does not know: the nearest versions of its minor and
/// how to supply metadata, never the whole list.
pub fn unknown_version_message(version: &str, nearest: &[String]) -> String {
    let near = if nearest.is_empty() {
        String::new()
    } else {
        format!(" (nearest: {})", nearest.join(", "))
    };
    format!(
        "{version} is not a Kubernetes version rkers knows{near}; set RKERS_METADATA_FILE to a \
         versions.json that lists it"
    )
}

/// `system_images` keys that must be given when the version has no catalog entry.
fn required_images(cfg: &RkeConfig, version: &semver::Version) -> Vec<&'static str> {
    let images = &cfg.system_images;
    let mut required: Vec<&'static str> = vec![
        "etcd",
        "kubernetes",
        "pod_infra_container",
        "alpine",
        "nginx_proxy",
        "cert_downloader",
        "kubernetes_services_sidecar",
    ];
    match cfg.network.plugin.as_str() {
        "flannel" => required.extend(["flannel", "flannel_cni"]),
        "canal" => required.extend(["canal_node", "canal_cni", "canal_flannel"]),
        "calico" => required.extend([
            "calico_cni",
            "calico_ctl",
            "calico_node",
            "calico_controllers",
        ]),
        "weave" => required.extend(["weave_cni", "weave_node"]),
        "aci" => required.extend([
            "aci_cni_deploy_container",
            "aci_host_container",
            "aci_opflex_container",
            "aci_mcast_container",
            "aci_ovs_container",
            "aci_controller_container",
        ]),
        _ => {}
    }
    if let Some(dns) = &cfg.dns {
        match dns.provider.as_str() {
            "kube-dns" => required.extend([
                "kubedns",
                "dnsmasq",
                "kubedns_sidecar",
                "kubedns_autoscaler",
            ]),
            "coredns" => required.extend(["coredns", "coredns_autoscaler"]),
            _ => {}
        }
        if dns.nodelocal.is_some() {
            required.push("nodelocal");
        }
    }
    if cfg.monitoring.provider != "none" {
        required.push("metrics_server");
    }
    if cfg.ingress.provider != "none" {
        required.extend(["ingress", "ingress_backend"]);
        if version_at_least(version, (1, 21, 0)) {
            required.push("ingress_webhook");
        }
    }
    let slots: HashMap<&str, &String> = images.slots().into_iter().collect();
    required
        .into_iter()
        .filter(|key| slots.get(key).is_none_or(|v| v.is_empty()))
        .collect()
}

/// Kubernetes' DNS-1123 subdomain rule (node names must follow it).
pub fn is_dns1123_subdomain(name: &str) -> bool {
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    name.split('.').all(|label| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    })
}

/// An address without the brackets an IPv6 address may be written in (`[::1]`).
fn unbracketed(address: &str) -> &str {
    address
        .strip_prefix('[')
        .and_then(|a| a.strip_suffix(']'))
        .unwrap_or(address)
}

/// How an address is compared with the others: an IP address in its one written form
/// (`127.000.000.002` is `127.0.0.2`, `0:0::1` is `::1`), a DNS name without case or a final
/// dot.
fn address_key(address: &str) -> String {
    let bare = unbracketed(address);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return ip.to_string();
    }
    if let Some(ip) = dotted_quad_with_zeros(bare) {
        return ip.to_string();
    }
    bare.trim_end_matches('.').to_ascii_lowercase()
}

/// `127.000.000.002`: four decimal numbers, some with leading zeros, which Rust refuses and
/// the system's resolver reads as octal (`010` is 8). Returns the address read as decimal.
fn dotted_quad_with_zeros(address: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<&str> = address.split('.').collect();
    if parts.len() != 4
        || !parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
        || !parts.iter().any(|p| p.len() > 1 && p.starts_with('0'))
    {
        return None;
    }
    let octets: Vec<u8> = parts.iter().filter_map(|p| p.parse().ok()).collect();
    (octets.len() == 4).then(|| std::net::Ipv4Addr::new(octets[0], octets[1], octets[2], octets[3]))
}

/// What is wrong with a node's `address` or `internal_address` as a written address, if
/// anything: the unspecified address (`0.0.0.0`, `::`) is no host's, and a dotted quad with
/// leading zeros is read as octal by the resolver SSH uses.
fn check_node_address(address: &str) -> Result<(), String> {
    let bare = unbracketed(address);
    if bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified()) {
        return Err(format!(
            "\"{address}\" is the unspecified address, which names no host: give the node's own address"
        ));
    }
    if let Some(ip) = dotted_quad_with_zeros(bare) {
        return Err(format!(
            "\"{address}\" has leading zeros, which the system's resolver reads as octal: write {ip} (or the octal value you mean, without the zeros)"
        ));
    }
    Ok(())
}

fn check_nodes(cfg: &RkeConfig, report: &mut Report) {
    let mut addresses: HashMap<String, usize> = HashMap::new();
    let mut internal_addresses: HashMap<String, usize> = HashMap::new();
    let mut hostnames: HashMap<String, usize> = HashMap::new();
    for (i, node) in cfg.nodes.iter().enumerate() {
        let base = format!("nodes[{i}]");
        for (key, value) in [
            ("address", &node.address),
            ("internal_address", &node.internal_address),
        ] {
            // The default internal address is the address, checked once.
            if key == "internal_address" && node.internal_address == node.address {
                continue;
            }
            if let Err(why) = check_node_address(value) {
                report.at_any(&[&format!("{base}.{key}"), &base], format!("{key} {why}"));
            }
        }
        let duplicate_address = addresses.get(&address_key(&node.address)).copied();
        if node.address.is_empty() {
            report.at(&base, "node has no `address`");
        } else if let Some(first) = duplicate_address {
            let line = report
                .locations
                .nearest(&format!("nodes[{first}].address"))
                .map(|p| p.line)
                .unwrap_or(0);
            let written = &cfg.nodes[first].address;
            let same = if *written == node.address {
                String::new()
            } else {
                format!(", the same address as \"{written}\"")
            };
            report.at(
                &format!("{base}.address"),
                format!(
                    "duplicate address \"{}\" (also at line {line}{same})",
                    node.address
                ),
            );
        } else {
            addresses.insert(address_key(&node.address), i);
        }
        // Two nodes with one internal address would be one etcd member and one node IP; a
        // duplicate address already says so.
        if !node.internal_address.is_empty() {
            let key = address_key(&node.internal_address);
            match internal_addresses.get(&key) {
                Some(&first) if duplicate_address.is_none() => {
                    let line = report
                        .locations
                        .nearest(&format!("nodes[{first}]"))
                        .map(|p| p.line)
                        .unwrap_or(0);
                    report.at_any(
                        &[&format!("{base}.internal_address"), &base],
                        format!(
                            "duplicate internal_address \"{}\" (node at line {line} has it too): \
                             each node needs its own, for its node IP and its etcd member",
                            node.internal_address
                        ),
                    );
                }
                Some(_) => {}
                None => {
                    internal_addresses.insert(key, i);
                }
            }
        }
        if node.user.is_empty() {
            report.at(&base, "node has no `user`");
        }
        let hostname_path = format!("{base}.hostname_override");
        let hostname_at = [hostname_path.as_str(), &format!("{base}.address"), &base];
        let hostname = if node.hostname_override.is_empty() {
            node.address.to_lowercase()
        } else {
            node.hostname_override.to_lowercase()
        };
        if !hostname.is_empty() {
            if !is_dns1123_subdomain(&hostname) {
                // The node name defaults to the address; an IPv6 one can never be a name.
                let remedy = if hostname.contains(':') {
                    ": an IPv6 address is no node name, set `hostname_override` to the node's name"
                } else {
                    ""
                };
                report.at_any(
                    &hostname_at,
                    format!(
                        "node name \"{hostname}\" is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters){remedy}"
                    ),
                );
            }
            if let Some(first) = hostnames.get(&hostname) {
                let line = report
                    .locations
                    .nearest(&format!("nodes[{first}]"))
                    .map(|p| p.line)
                    .unwrap_or(0);
                // A duplicate address already says the same thing.
                if cfg.nodes[*first].address != node.address {
                    report.at_any(
                        &hostname_at,
                        format!("duplicate node name \"{hostname}\" (also at line {line})"),
                    );
                }
            } else {
                hostnames.insert(hostname, i);
            }
        }
        if node.role.is_empty() {
            report.at_any(&[&format!("{base}.role"), &base], "node has no `role`");
        }
        for (j, role) in node.role.iter().enumerate() {
            if !ROLES.contains(&role.as_str()) {
                report.at(
                    &format!("{base}.role[{j}]"),
                    format!("unknown role \"{role}\" (expected controlplane, etcd or worker)"),
                );
            }
        }
        // The default is the address, which may be a DNS name; one the user gives is what
        // kubelet's --node-ip and etcd's URLs get, and both need an IP address.
        if node.internal_address != node.address
            && node.internal_address.parse::<IpAddr>().is_err()
            && dotted_quad_with_zeros(&node.internal_address).is_none()
        {
            report.at_any(
                &[&format!("{base}.internal_address"), &base],
                format!(
                    "internal_address \"{}\" is not an IP address (kubelet's --node-ip and etcd's URLs need one)",
                    node.internal_address
                ),
            );
        }
        for (key, value) in &node.labels {
            let path = format!("{base}.labels.{key}");
            let at = [path.as_str(), &format!("{base}.labels")];
            if let Err(why) = check_qualified_name(key) {
                report.at_any(
                    &at,
                    format!("label key \"{key}\" is not valid in Kubernetes: {why}"),
                );
            }
            if let Err(why) = check_label_value(value) {
                report.at_any(
                    &at,
                    format!("label value \"{value}\" of {key} is not valid in Kubernetes: {why}"),
                );
            }
        }
        for (j, taint) in node.taints.iter().enumerate() {
            let path = format!("{base}.taints[{j}]");
            // Kubernetes keeps one taint per key and effect: the API refuses the node's update.
            if let Some(first) = node.taints[..j]
                .iter()
                .position(|t| t.key == taint.key && t.effect == taint.effect)
            {
                report.at(
                    &path,
                    format!(
                        "taint {}:{} is also taints[{first}]: a node has one taint per key and effect",
                        taint.key, taint.effect
                    ),
                );
            }
            if taint.key.is_empty() {
                report.at(&path, "taint has no `key`");
            } else if let Err(why) = check_qualified_name(&taint.key) {
                report.at_any(
                    &[&format!("{path}.key"), &path],
                    format!(
                        "taint key \"{}\" is not valid in Kubernetes: {why}",
                        taint.key
                    ),
                );
            }
            if let Err(why) = check_label_value(&taint.value) {
                report.at_any(
                    &[&format!("{path}.value"), &path],
                    format!(
                        "taint value \"{}\" is not valid in Kubernetes: {why}",
                        taint.value
                    ),
                );
            }
            if !TAINT_EFFECTS.contains(&taint.effect.as_str()) {
                report.at_any(
                    &[&format!("{path}.effect"), &path],
                    format!(
                        "invalid taint effect \"{}\" (expected NoSchedule, PreferNoSchedule or NoExecute)",
                        taint.effect
                    ),
                );
            }
        }
    }

    let has_role = |role: &str| cfg.nodes.iter().any(|n| n.role.iter().any(|r| r == role));
    let external_etcd = !cfg.services.etcd.external_urls.is_empty();
    if !has_role("etcd") && !external_etcd {
        report.at(
            "nodes",
            "cluster must have at least one etcd host: give a node the `etcd` role",
        );
    }
    if has_role("etcd") && external_etcd {
        report.at(
            "services.etcd.external_urls",
            "cluster can't have both internal and external etcd: remove `external_urls` or the `etcd` roles",
        );
    }
    if !has_role("controlplane") {
        report.at(
            "nodes",
            "cluster must have at least one controlplane host: give a node the `controlplane` role",
        );
    }
}

/// Kubernetes' rule for a label name, a label value and the part of a key after its prefix:
/// at most 63 letters, digits, `-`, `_` and `.`, beginning and ending with a letter or digit.
fn check_name_part(name: &str) -> Result<(), String> {
    if name.len() > 63 {
        return Err(format!("longer than 63 characters ({})", name.len()));
    }
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || !alphanumeric(name.chars().next())
        || !alphanumeric(name.chars().next_back())
    {
        return Err(
            "use letters, digits, '-', '_' and '.', beginning and ending with a letter or digit"
                .into(),
        );
    }
    Ok(())
}

/// A label or taint key: `[prefix/]name`, the prefix a DNS-1123 subdomain.
fn check_qualified_name(key: &str) -> Result<(), String> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            if !is_dns1123_subdomain(prefix) {
                return Err(format!(
                    "its prefix \"{prefix}\" must be a lowercase DNS subdomain such as example.com"
                ));
            }
            name
        }
        None => key,
    };
    if name.is_empty() {
        return Err("the name after the prefix is empty".into());
    }
    check_name_part(name)
}

fn check_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    check_name_part(value)
}

/// An SSH port that is not a number from 1 to 65535 is an error: RKE1 and earlier rkers fell
/// back to 22, which may reach a different daemon than the one the user meant.
fn check_ssh_ports(cfg: &RkeConfig, report: &mut Report) {
    let ports = cfg
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (format!("nodes[{i}].port"), &n.port))
        .chain(std::iter::once((
            "bastion_host.port".to_string(),
            &cfg.bastion_host.port,
        )));
    for (path, port) in ports {
        if !port.is_empty() && !port.trim().parse::<u16>().is_ok_and(|p| p != 0) {
            report.at(
                &path,
                format!("invalid SSH port \"{port}\": give a number from 1 to 65535"),
            );
        }
    }
}

fn check_auth(cfg: &RkeConfig, report: &mut Report) {
    let strategies: Vec<String> = cfg
        .authentication
        .strategy
        .split('|')
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    for strategy in &strategies {
        if strategy != "x509" && strategy != "webhook" {
            report.at(
                "authentication.strategy",
                format!("authentication strategy \"{strategy}\" is not supported (x509, webhook)"),
            );
        }
    }
    if !strategies.iter().any(|s| s == "x509") {
        report.at(
            "authentication.strategy",
            "authentication strategy must contain \"x509\"",
        );
    }
    let mode = cfg.authorization.mode.as_str();
    if mode != "rbac" && mode != "none" {
        report.at(
            "authorization.mode",
            format!("authorization mode \"{mode}\" is not supported (rbac, none)"),
        );
    }
}

fn parse_cidrs(value: &str) -> Result<Vec<IpNet>, String> {
    value
        .split(',')
        .map(|part| {
            part.trim().parse::<IpNet>().map_err(|_| {
                format!(
                    "\"{}\" is not a valid CIDR (e.g. 10.43.0.0/16)",
                    part.trim()
                )
            })
        })
        .collect()
}

fn overlaps(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

fn check_network(cfg: &RkeConfig, version: Option<&semver::Version>, report: &mut Report) {
    let plugin = cfg.network.plugin.as_str();
    if !NETWORK_PLUGINS.contains(&plugin) {
        report.at(
            "network.plugin",
            format!(
                "network plugin \"{plugin}\" is not supported (canal, flannel, calico, weave, aci, none)"
            ),
        );
    }
    if plugin == "flannel" && cfg.network.mtu != 0 {
        report.at(
            "network.mtu",
            "network plugin flannel does not support configuring `mtu`",
        );
    }
    if plugin == "weave"
        && let Some(v) = version
        && version_at_least(v, (1, 30, 0))
    {
        report.at(
            "network.plugin",
            "weave CNI support is removed for Kubernetes >= 1.30.0: choose another network plugin",
        );
    }

    let services = &cfg.services;
    let ranges = [
        (
            "services.kube-api.service_cluster_ip_range",
            services.kube_api.service_cluster_ip_range.as_str(),
        ),
        (
            "services.kube-controller.service_cluster_ip_range",
            services.kube_controller.service_cluster_ip_range.as_str(),
        ),
        (
            "services.kube-controller.cluster_cidr",
            services.kube_controller.cluster_cidr.as_str(),
        ),
    ];
    let mut parsed: Vec<Option<Vec<IpNet>>> = Vec::new();
    let mut dual_stack_at = None;
    for (path, value) in ranges {
        if value.is_empty() {
            parsed.push(None);
            continue;
        }
        match parse_cidrs(value) {
            Ok(nets) => {
                if nets.len() > 1 && dual_stack_at.is_none() {
                    dual_stack_at = Some(path);
                }
                parsed.push(Some(nets));
            }
            Err(e) => {
                report.at(path, e);
                parsed.push(None);
            }
        }
    }
    if let (Some(service), Some(cluster)) = (&parsed[0], &parsed[2]) {
        for s in service {
            for c in cluster {
                if overlaps(s, c) {
                    report.at(
                        "services.kube-controller.cluster_cidr",
                        format!("cluster CIDR {c} overlaps the service CIDR {s}"),
                    );
                }
            }
        }
    }
    if let Some(path) = dual_stack_at {
        if plugin != "calico" && plugin != "aci" {
            report.at(
                path,
                format!("network plugin \"{plugin}\" does not support dual-stack (IPv4+IPv6) CIDRs; use calico"),
            );
        } else if plugin == "aci"
            && let Some(v) = version
        {
            let supported = match (v.major, v.minor) {
                (1, 23) => version_at_least(v, (1, 23, 16)),
                (1, 24) => version_at_least(v, (1, 24, 13)),
                _ => version_at_least(v, (1, 25, 9)),
            };
            if !supported {
                report.at(
                    path,
                    format!(
                        "Kubernetes {} has no aci CNI version that supports dual-stack",
                        cfg.kubernetes_version
                    ),
                );
            }
        }
    }
    if !cfg.services.kubelet.cluster_dns_server.is_empty()
        && cfg
            .services
            .kubelet
            .cluster_dns_server
            .parse::<IpAddr>()
            .is_err()
    {
        report.at(
            "services.kubelet.cluster_dns_server",
            format!(
                "\"{}\" is not an IP address",
                cfg.services.kubelet.cluster_dns_server
            ),
        );
    }
    let dns_server = &cfg.services.kubelet.cluster_dns_server;
    if let (Ok(ip), Some(service)) = (dns_server.parse::<IpAddr>(), &parsed[0])
        && !service.iter().any(|net| net.contains(&ip))
    {
        report.at_any(
            &[
                "services.kubelet.cluster_dns_server",
                "services.kube-api.service_cluster_ip_range",
            ],
            format!(
                "cluster_dns_server {ip} is outside the service range {}: the DNS service could not get that address",
                services.kube_api.service_cluster_ip_range
            ),
        );
    }
    check_node_port_range(&services.kube_api.service_node_port_range, report);
    if plugin == "aci" {
        check_aci(cfg, report);
    }
}

/// `lo-hi`, two ports with lo below hi, as kube-apiserver's --service-node-port-range.
fn check_node_port_range(range: &str, report: &mut Report) {
    if range.is_empty() {
        return;
    }
    let port = |s: &str| s.trim().parse::<u16>().ok().filter(|p| *p > 0);
    let valid = range
        .split_once('-')
        .and_then(|(lo, hi)| Some((port(lo)?, port(hi)?)))
        .is_some_and(|(lo, hi)| lo < hi);
    if !valid {
        report.at(
            "services.kube-api.service_node_port_range",
            format!(
                "\"{range}\" is not a port range: give two ports from 1 to 65535 as lo-hi, lo below hi (e.g. 30000-32767)"
            ),
        );
    }
}

fn check_aci(cfg: &RkeConfig, report: &mut Report) {
    let Some(aci) = &cfg.network.aci_network_provider else {
        report.at(
            "network",
            "network plugin aci needs an `aci_network_provider` section",
        );
        return;
    };
    let required = [
        ("system_id", &aci.system_id),
        ("token", &aci.token),
        ("apic_user_name", &aci.apic_user_name),
        ("apic_user_key", &aci.apic_user_key),
        ("apic_user_crt", &aci.apic_user_crt),
        ("encap_type", &aci.encap_type),
        ("mcast_range_start", &aci.mcast_range_start),
        ("mcast_range_end", &aci.mcast_range_end),
        ("node_subnet", &aci.node_subnet),
        ("aep", &aci.aep),
        ("vrf_name", &aci.vrf_name),
        ("vrf_tenant", &aci.vrf_tenant),
        ("l3out", &aci.l3out),
        ("extern_dynamic", &aci.extern_dynamic),
        ("extern_static", &aci.extern_static),
        ("node_svc_subnet", &aci.node_svc_subnet),
        ("kube_api_vlan", &aci.kube_api_vlan),
        ("service_vlan", &aci.service_vlan),
        ("infra_vlan", &aci.infra_vlan),
    ];
    for (key, value) in required {
        if value.is_empty() {
            report.at(
                "network.aci_network_provider",
                format!("network plugin aci: `{key}` is not set under aci_network_provider"),
            );
        }
    }
    if aci.apic_hosts.is_empty() {
        report.at(
            "network.aci_network_provider",
            "network plugin aci: `apic_hosts` is not set under aci_network_provider",
        );
    }
    if aci.l3out_external_networks.is_empty() {
        report.at(
            "network.aci_network_provider",
            "network plugin aci: `l3out_external_networks` is not set under aci_network_provider",
        );
    }
}

fn check_ingress(cfg: &RkeConfig, report: &mut Report) {
    let ingress = &cfg.ingress;
    if ingress.provider != "nginx" && ingress.provider != "none" {
        report.at(
            "ingress.provider",
            format!(
                "ingress provider \"{}\" is not supported (nginx, none)",
                ingress.provider
            ),
        );
    }
    if !ingress.dns_policy.is_empty() && !DNS_POLICIES.contains(&ingress.dns_policy.as_str()) {
        report.at(
            "ingress.dns_policy",
            format!(
                "\"{}\" is not a valid DNS policy (ClusterFirst, ClusterFirstWithHostNet, None, Default)",
                ingress.dns_policy
            ),
        );
    }
    if ingress.network_mode == "hostPort" {
        for (path, port) in [
            ("ingress.https_port", ingress.https_port),
            ("ingress.http_port", ingress.http_port),
        ] {
            if !(0..=65535).contains(&port) {
                report.at(
                    path,
                    format!("port {port} is invalid: it must be within 0 to 65535"),
                );
            }
        }
        if ingress.http_port != 0
            && ingress.https_port != 0
            && ingress.http_port == ingress.https_port
        {
            report.at_any(
                &["ingress.https_port", "ingress.http_port"],
                format!(
                    "http and https ports must differ (both are {})",
                    ingress.http_port
                ),
            );
        }
    }
    if !["", "hostNetwork", "hostPort", "none"].contains(&ingress.network_mode.as_str()) {
        report.at(
            "ingress.network_mode",
            format!(
                "\"{}\" is not a valid network mode (hostNetwork, hostPort, none)",
                ingress.network_mode
            ),
        );
    }
}

fn check_dns_and_monitoring(cfg: &RkeConfig, report: &mut Report) {
    if let Some(dns) = &cfg.dns {
        if !["coredns", "kube-dns", "none", ""].contains(&dns.provider.as_str()) {
            report.at(
                "dns.provider",
                format!(
                    "DNS provider \"{}\" is not supported (coredns, kube-dns, none)",
                    dns.provider
                ),
            );
        }
        if let Some(nodelocal) = &dns.nodelocal
            && !nodelocal.ip_address.is_empty()
            && nodelocal.ip_address.parse::<IpAddr>().is_err()
        {
            report.at(
                "dns.nodelocal.ip_address",
                format!("\"{}\" is not an IP address", nodelocal.ip_address),
            );
        }
    }
    let provider = cfg.monitoring.provider.as_str();
    if provider != "metrics-server" && provider != "none" && !provider.is_empty() {
        report.at(
            "monitoring.provider",
            format!("monitoring provider \"{provider}\" is not supported (metrics-server, none)"),
        );
    }
}

fn check_version_dependent(cfg: &RkeConfig, version: &semver::Version, report: &mut Report) {
    match cfg.enable_cri_dockerd {
        Some(true) if !version_at_least(version, (1, 21, 0)) => report.at(
            "enable_cri_dockerd",
            format!(
                "enabling cri-dockerd for Kubernetes {} is not supported (needs >= 1.21)",
                cfg.kubernetes_version
            ),
        ),
        // Not checked by RKE1, whose kubelet then fails to start: dockershim is gone in 1.24.
        Some(false) if version_at_least(version, (1, 24, 0)) => report.at(
            "enable_cri_dockerd",
            format!(
                "Kubernetes {} has no dockershim: `enable_cri_dockerd` must be true (or left out)",
                cfg.kubernetes_version
            ),
        ),
        _ => {}
    }

    let level = cfg.services.kube_api.pod_security_configuration.as_str();
    if !level.is_empty() {
        let path = "services.kube-api.pod_security_configuration";
        if cfg.authorization.mode != "rbac" {
            report.at(
                path,
                "PodSecurity can't be enabled with RBAC authorization disabled",
            );
        }
        if !version_at_least(version, (1, 23, 0)) {
            report.at(
                path,
                "Kubernetes must be at least v1.23 to use pod_security_configuration",
            );
        }
        if level != "privileged" && level != "restricted" {
            report.at(
                path,
                format!("invalid pod_security_configuration \"{level}\" (privileged, restricted)"),
            );
        }
    }

    if cfg.cloud_provider.name == "aws" && version_at_least(version, (1, 27, 0)) {
        report.at(
            "cloud_provider.name",
            format!(
                "cloud provider \"aws\" is invalid for Kubernetes {}: use \"external-aws\"",
                cfg.kubernetes_version
            ),
        );
    }
}

fn check_etcd(cfg: &RkeConfig, report: &mut Report) {
    let etcd = &cfg.services.etcd;
    if !etcd.external_urls.is_empty() {
        for (field, value, what) in [
            ("ca_cert", &etcd.ca_cert, "external etcd CA certificate"),
            ("cert", &etcd.cert, "external etcd client certificate"),
            ("key", &etcd.key, "external etcd client key"),
            ("path", &etcd.path, "external etcd path"),
        ] {
            if value.is_empty() {
                report.at(
                    "services.etcd.external_urls",
                    format!("{what} (`services.etcd.{field}`) can't be empty with external etcd"),
                );
            }
        }
    }
    if let Some(backup) = &etcd.backup_config {
        // etcd-rolling-snapshots exits on a non-positive interval and restarts for ever.
        for (key, value) in [
            ("interval_hours", backup.interval_hours),
            ("retention", backup.retention),
        ] {
            if value < 1 {
                report.at(
                    &format!("services.etcd.backup_config.{key}"),
                    format!("{key} must be 1 or more, not {value}"),
                );
            }
        }
    }
    if let Some(s3) = etcd
        .backup_config
        .as_ref()
        .and_then(|b| b.s3_backup_config.as_ref())
    {
        let base = "services.etcd.backup_config.s3backupconfig";
        if s3.endpoint.is_empty() {
            report.at(base, "etcd s3 backup endpoint can't be empty");
        }
        if s3.bucket_name.is_empty() {
            report.at(base, "etcd s3 backup bucket_name can't be empty");
        }
        if !s3.custom_ca.is_empty() && !is_valid_certificate(&s3.custom_ca) {
            report.at(
                &format!("{base}.custom_ca"),
                "custom_ca is not a PEM-encoded X.509 certificate",
            );
        }
    }
}

fn is_valid_certificate(text: &str) -> bool {
    match pem::parse(text) {
        Ok(block) => {
            block.tag() == "CERTIFICATE"
                && x509_parser::parse_x509_certificate(block.contents()).is_ok()
        }
        Err(_) => false,
    }
}

/// `max_unavailable_*`: a positive count or a percentage in 1%..=100%.
fn check_max_unavailable(value: &str, path: &str, report: &mut Report) {
    if value.is_empty() {
        return;
    }
    let valid = match value.strip_suffix('%') {
        Some(percent) => percent.parse::<u32>().is_ok_and(|p| (1..=100).contains(&p)),
        None => value.parse::<u64>().is_ok_and(|n| n > 0),
    };
    if !valid {
        report.at(
            path,
            format!(
                "\"{value}\" is not a positive number of nodes or a percentage between 1% and 100%"
            ),
        );
    }
}

fn check_upgrade_strategy(cfg: &RkeConfig, report: &mut Report) {
    let Some(strategy) = &cfg.upgrade_strategy else {
        return;
    };
    check_max_unavailable(
        &strategy.max_unavailable_worker,
        "upgrade_strategy.max_unavailable_worker",
        report,
    );
    check_max_unavailable(
        &strategy.max_unavailable_controlplane,
        "upgrade_strategy.max_unavailable_controlplane",
        report,
    );
    if let Some(drain) = &strategy.node_drain_input
        && !(1..=10800).contains(&drain.timeout)
    {
        report.at(
            "upgrade_strategy.node_drain_input.timeout",
            format!(
                "drain timeout {} must be between 1 and 10800 seconds",
                drain.timeout
            ),
        );
    }
}

fn check_misc(cfg: &RkeConfig, report: &mut Report) {
    if let Some(rotate) = &cfg.rotate_certificates {
        for (i, service) in rotate.services.iter().enumerate() {
            if !ROTATABLE_SERVICES.contains(&service.as_str()) {
                report.at(
                    &format!("rotate_certificates.services[{i}]"),
                    format!("\"{service}\" is not a service whose certificate can be rotated"),
                );
            }
        }
    }
    if cfg.addon_job_timeout < 0 {
        report.at(
            "addon_job_timeout",
            format!(
                "addon_job_timeout must be a positive number of seconds, not {}",
                cfg.addon_job_timeout
            ),
        );
    }
    if !cfg.prefix_path.is_empty() && !cfg.prefix_path.starts_with('/') {
        report.at(
            "prefix_path",
            format!(
                "prefix_path \"{}\" must be an absolute path (starting with /)",
                cfg.prefix_path
            ),
        );
    }
    if !cfg.cloud_provider.custom_cloud_provider.is_empty() && cfg.cloud_provider.name.is_empty() {
        report.at("cloud_provider", "a custom cloud provider needs a `name`");
    }
    if let Some(policy) = cfg
        .services
        .kube_api
        .audit_log
        .as_ref()
        .and_then(|a| a.configuration.as_ref())
        .and_then(|c| c.policy.as_ref())
        && policy.get("kind").and_then(|k| k.as_str()) != Some("Policy")
    {
        report.at(
            "services.kube-api.audit_log.configuration.policy",
            "audit policy must be an audit.k8s.io/v1 object with `kind: Policy`",
        );
    }
}

/// Every service's `extra_binds` (Linux: `/host/path:/container/path[:options]`, as Docker
/// reads them relative to nothing) and `extra_env`/`win_extra_env` (`NAME=value`).
fn check_services(cfg: &RkeConfig, report: &mut Report) {
    let s = &cfg.services;
    let services = [
        ("etcd", s.etcd.base()),
        ("kube-api", s.kube_api.base()),
        ("kube-controller", s.kube_controller.base()),
        ("scheduler", s.scheduler.base()),
        ("kubelet", s.kubelet.base()),
        ("kubeproxy", s.kubeproxy.base()),
    ];
    for (service, base) in services {
        for (key, args) in [
            ("extra_args", base.extra_args),
            ("win_extra_args", base.win_extra_args),
        ] {
            for (name, value) in args {
                if let Err(why) = check_extra_arg(name, value) {
                    report.at_any(
                        &[
                            &format!("services.{service}.{key}.{name}"),
                            &format!("services.{service}.{key}"),
                        ],
                        format!("{key} entry {name:?} {why}"),
                    );
                }
            }
        }
        for (key, args) in [
            ("extra_args_array", base.extra_args_array),
            ("win_extra_args_array", base.win_extra_args_array),
        ] {
            for (name, values) in args {
                if let Some(why) = values.iter().find_map(|v| check_extra_arg(name, v).err()) {
                    report.at_any(
                        &[
                            &format!("services.{service}.{key}.{name}"),
                            &format!("services.{service}.{key}"),
                        ],
                        format!("{key} entry {name:?} {why}"),
                    );
                }
            }
        }
        for (i, bind) in base.extra_binds.iter().enumerate() {
            if let Err(why) = check_bind(bind) {
                report.at(
                    &format!("services.{service}.extra_binds[{i}]"),
                    format!("bind \"{bind}\" {why}"),
                );
            }
        }
        for (key, envs) in [
            ("extra_env", base.extra_env),
            ("win_extra_env", base.win_extra_env),
        ] {
            for (i, entry) in envs.iter().enumerate() {
                if entry
                    .split_once('=')
                    .is_none_or(|(name, _)| name.is_empty())
                {
                    report.at(
                        &format!("services.{service}.{key}[{i}]"),
                        format!(
                            "\"{}\" is not NAME=value",
                            crate::redact::mask_secret_assignment(entry)
                        ),
                    );
                }
            }
        }
    }
}

/// The options Docker takes after a bind's container path, by kind: one of each kind at most.
const BIND_OPTIONS: [&[&str]; 4] = [
    &["ro", "rw"],
    &["z", "Z"],
    &[
        "shared", "rshared", "slave", "rslave", "private", "rprivate",
    ],
    &["nocopy", "consistent", "cached", "delegated"],
];

fn check_bind(bind: &str) -> Result<(), String> {
    let mut parts = bind.split(':');
    let host = parts.next().unwrap_or_default();
    let Some(container) = parts.next().filter(|c| !c.is_empty()) else {
        return Err("has no container path: write /host/path:/container/path".into());
    };
    if !host.starts_with('/') {
        return Err("needs an absolute host path (starting with /)".into());
    }
    if !container.starts_with('/') {
        return Err("needs an absolute container path (starting with /)".into());
    }
    let Some(options) = parts.next() else {
        return Ok(());
    };
    if parts.next().is_some() {
        return Err(
            "has more than three parts: write /host/path:/container/path[:options], the \
             options separated by commas"
                .into(),
        );
    }
    let mut seen = [None::<&str>; BIND_OPTIONS.len()];
    for option in options.split(',') {
        let Some(kind) = BIND_OPTIONS.iter().position(|k| k.contains(&option)) else {
            return Err(format!(
                "has the option \"{option}\", which Docker refuses (it takes {})",
                BIND_OPTIONS.map(|k| k.join(", ")).join("; ")
            ));
        };
        if let Some(other) = seen[kind] {
            return Err(format!(
                "has both \"{other}\" and \"{option}\": Docker takes one of {}",
                BIND_OPTIONS[kind].join(", ")
            ));
        }
        seen[kind] = Some(option);
    }
    Ok(())
}

/// An `extra_args` entry, which becomes `--key=value` on the service's command line: a key
/// that is empty or holds whitespace, `=` or a control character, or a value with a line break
/// or another control character, is no flag the service reads as written.
fn check_extra_arg(key: &str, value: &str) -> Result<(), &'static str> {
    let key = key.trim_start_matches('-');
    if key.is_empty() {
        return Err("has an empty key: write the flag's name without its leading --");
    }
    if key.contains(|c: char| c.is_whitespace() || c.is_control() || c == '=') {
        return Err("has a key with a space, '=' or a control character: a flag's name has none");
    }
    if value.contains(|c: char| c.is_control()) {
        return Err(
            "has a value with a line break or another control character: the flag would be cut \
             or read as more than one",
        );
    }
    Ok(())
}

/// `private_registries[].url`: what kubelet's docker config is keyed by and image names are
/// prefixed with, so `host[:port][/path]` without a scheme.
fn check_registries(cfg: &RkeConfig, report: &mut Report) {
    for (i, registry) in cfg.private_registries.iter().enumerate() {
        if let Err(why) = check_registry_url(&registry.url) {
            report.at_any(
                &[
                    &format!("private_registries[{i}].url"),
                    &format!("private_registries[{i}]"),
                ],
                format!("registry url \"{}\" {why}", registry.url),
            );
        }
    }
}

fn check_registry_url(url: &str) -> Result<(), &'static str> {
    if url.is_empty() {
        return Err("is empty: give the registry as host[:port]");
    }
    if url.contains("://") {
        return Err("has a scheme: give host[:port] (images are pulled as host[:port]/image)");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("contains spaces or control characters");
    }
    let (authority, path) = url.split_once('/').unwrap_or((url, ""));
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => {
            let (v6, after) = rest.split_once(']').ok_or("has an unclosed [")?;
            if v6.parse::<std::net::Ipv6Addr>().is_err() {
                return Err("has an invalid IPv6 address");
            }
            if !after.is_empty() && !after.starts_with(':') {
                return Err("has text between the IPv6 address and the port");
            }
            (None, after.strip_prefix(':'))
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(authority), None),
        },
    };
    if let Some(host) = host {
        let valid_host = !host.is_empty()
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if !valid_host {
            return Err("has no valid host name or IP address before the port or path");
        }
    }
    if let Some(port) = port
        && !port.parse::<u16>().is_ok_and(|p| p > 0)
    {
        return Err("has an invalid port: give a number from 1 to 65535");
    }
    let path_ok = path.is_empty()
        || path.split('/').all(|c| {
            !c.is_empty()
                && c.chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch))
        });
    if !path_ok {
        return Err(
            "has an invalid path: lowercase letters, digits, '.', '_' and '-' between slashes",
        );
    }
    Ok(())
}

/// Things that work but are probably not what the user wants (printed, never fatal).
pub fn warnings(cfg: &RkeConfig, locations: &Locations) -> Vec<Diagnostic> {
    let mut report = Report {
        locations,
        diagnostics: Vec::new(),
    };
    if cfg.network.plugin == "weave"
        && parse_k8s_version(&cfg.kubernetes_version)
            .is_ok_and(|v| version_at_least(&v, (1, 27, 0)))
    {
        report.at(
            "network.plugin",
            "the weave CNI plugin is deprecated from Kubernetes 1.27 and removed in 1.30",
        );
    }
    let services = &cfg.services;
    if !services.kube_controller.service_cluster_ip_range.is_empty()
        && services.kube_api.service_cluster_ip_range
            != services.kube_controller.service_cluster_ip_range
    {
        report.at_any(
            &[
                "services.kube-controller.service_cluster_ip_range",
                "services.kube-api.service_cluster_ip_range",
            ],
            "kube-api and kube-controller have different service_cluster_ip_range values",
        );
    }
    report.diagnostics
}
