//! A sample of the upstream Kubernetes conformance suite, on a cluster rkers builds: networking,
//! DNS, kubelet and API server specs of `e2e.test`, built from the same k8s.io/kubernetes module
//! version as the cluster's components, run by `scripts/conformance` against a fresh three-host
//! v1.32 cluster on the sandbox instance `RKERS_CONFORMANCE_E2E` (`KEY=VALUE` words, as
//! `RKERS_REAL_E2E` of `tests/e2e_real_cluster.rs`), purged afterwards. Only the suite's images
//! the sample runs are built (`e2e_conformance.images`), so a sample that starts needing another
//! fails on its pull instead of passing on an image built for the whole suite.
//!
//! It fails when the script fails, when any spec failed, and when a spec of the sample did not
//! pass (a spec renamed upstream, or one that skipped itself, is a failure too: a sample that runs
//! nothing proves nothing). The whole list runs in one parallel ginkgo pass; none is `[Serial]`.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use support::docker_host::Instance;

const VERSION: &str = "v1.32.9-rancher1-1";

/// The sample: each a spec's full text as e2e.test v1.32 names it, without its labels.
const SPECS: [&str; 10] = [
    "[sig-network] DNS should provide DNS for the cluster",
    "[sig-network] DNS should provide DNS for services",
    "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: http",
    "[sig-network] Services should serve a basic endpoint from pods",
    "[sig-network] Services should provide secure master service",
    "[sig-node] Kubelet when scheduling a busybox command in a pod should print the output to logs",
    "[sig-node] Pods should get a host IP",
    "[sig-node] Variable Expansion should allow substituting values in a container's args",
    "[sig-api-machinery] Discovery should validate PreferredVersion for each APIGroup",
    "[sig-api-machinery] ResourceQuota should create a ResourceQuota and ensure its status is promptly calculated.",
];

/// The images the sample needs, and no others: scripts/test builds the same list.
const IMAGES: &str = include_str!("e2e_conformance.images");

/// The names of [`IMAGES`], comma-separated (`scripts/conformance --images`).
fn image_names() -> String {
    IMAGES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join(",")
}

/// A Go (RE2) regular expression matching `text` literally.
fn literal(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[test]
fn a_sample_of_the_conformance_suite_passes_on_a_v1_32_cluster() {
    if !support::is_root() {
        support::skip("needs root (network namespaces, the sandbox)");
        return;
    }
    let Ok(words) = std::env::var("RKERS_CONFORMANCE_E2E") else {
        support::skip("RKERS_CONFORMANCE_E2E is not set (a sandbox instance's environment)");
        return;
    };
    let sb = Instance::from_words(&words).expect("a sandbox instance's environment");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/conformance");
    // Ginkgo matches the focus anywhere in a spec's text (a `^` never matches there); the sample's
    // names are each a whole conformance spec's, and the script keeps the focus to those.
    let focus = SPECS.map(literal).join("|");
    let images = image_names();
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(&script)
        .args([
            VERSION,
            "--focus",
            &focus,
            "--fresh",
            "--down",
            "--no-serial",
            "--procs",
            "5",
            "--images",
            &images,
        ])
        .envs(sb.envs().iter().map(|(k, v)| (k, v)))
        .env("RKERS_BIN", env!("CARGO_BIN_EXE_rkers"))
        .output()
        .expect("run scripts/conformance");
    let (ok, text) = support::outcome(out);
    let lines: Vec<&str> = text.lines().collect();
    eprintln!(
        "scripts/conformance: {:.0}s\n{}",
        started.elapsed().as_secs_f64(),
        lines[lines.len().saturating_sub(30)..].join("\n")
    );
    assert!(ok, "scripts/conformance failed:\n{text}");
    let reports = text
        .lines()
        .find_map(|l| l.strip_prefix("reports: "))
        .expect("scripts/conformance names its reports directory");
    let summary = std::fs::read_to_string(PathBuf::from(reports).join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary["failed"], 0, "{summary}");
    assert_eq!(
        summary["skipped"], 0,
        "a spec of the sample skipped itself: {summary}"
    );
    let passes: Vec<&str> = summary["passes"]
        .as_array()
        .expect("summary.json lists the passed specs")
        .iter()
        .filter_map(|p| p.as_str())
        .collect();
    for spec in SPECS {
        assert!(
            passes
                .iter()
                .any(|p| p.starts_with(&format!("[It] {spec}"))),
            "{spec}: did not pass (renamed upstream?); passed: {passes:#?}"
        );
    }
    assert_eq!(passes.len(), SPECS.len(), "{passes:#?}");
}
