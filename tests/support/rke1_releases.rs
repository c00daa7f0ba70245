//! The Kubernetes versions RKE1's last lines shipped, kept once for every test that checks
//! rkers takes them. Source: RKE's release notes v1.7.0 to v1.8.14
//! (`github.com/rancher-archives/rke/releases/tag/vX`), which list each release's versions.
//! Tests include this file with `#[path = "support/rke1_releases.rs"] mod rke1_releases;`.

#![allow(dead_code)]

/// Every Kubernetes version RKE v1.7.0 to v1.8.14 shipped, by minor.
pub const SHIPPED_BY_RKE_1_7_AND_1_8: [&str; 32] = [
    "v1.28.15-rancher1-1",
    "v1.29.10-rancher1-1",
    "v1.29.11-rancher1-1",
    "v1.29.12-rancher1-1",
    "v1.29.13-rancher1-1",
    "v1.30.6-rancher1-1",
    "v1.30.7-rancher1-1",
    "v1.30.8-rancher1-1",
    "v1.30.9-rancher1-1",
    "v1.30.10-rancher1-1",
    "v1.30.11-rancher1-1",
    "v1.30.12-rancher1-1",
    "v1.30.13-rancher1-1",
    "v1.30.14-rancher1-1",
    "v1.31.2-rancher2-1",
    "v1.31.3-rancher1-1",
    "v1.31.4-rancher1-1",
    "v1.31.5-rancher1-1",
    "v1.31.6-rancher1-1",
    "v1.31.7-rancher1-1",
    "v1.31.8-rancher1-1",
    "v1.31.9-rancher1-1",
    "v1.31.14-rancher1-1",
    "v1.32.2-rancher1-1",
    "v1.32.3-rancher1-1",
    "v1.32.4-rancher1-1",
    "v1.32.5-rancher1-1",
    "v1.32.11-rancher1-1",
    "v1.32.12-rancher1-1",
    "v1.32.13-rancher1-1",
    "v1.32.13-rancher1-2",
    "v1.32.13-rancher1-3",
];

/// The patch ranges issue 27 names per minor (v1.28.15, v1.29.10–13, v1.30.6–14, v1.31.2–14,
/// v1.32.2–13): every patch in them has at least one `-rancherN-M` release rkers knows.
pub const PATCH_RANGES: [(u64, u64, u64); 5] = [
    (28, 15, 15),
    (29, 10, 13),
    (30, 6, 14),
    (31, 2, 14),
    (32, 2, 13),
];
