//! Versions RKE1 offered, seen by config validation: every one RKE v1.7.0 to v1.8.14 shipped is
//! accepted; a version a metadata file lists as shipped without published metadata takes its
//! images from the cluster's state or from cluster.yml, else fails with what to add; an unknown
//! version gets one short error at its position. The compiled-in data lists no such version
//! (RKE v1.8.14's data.json has them all), so the tests use a metadata file that lists one.

use rkers::cluster::Cluster;
use rkers::config::{self, RkeConfig, UnpublishedImages};
use rkers::metadata::{Catalog, RKERS_METADATA_FILE_ENV, UnpublishedVersion};
use rkers::output::{OutputFormat, Reporter};
use rkers::state::{ClusterFiles, ClusterState, StateFile};
use std::sync::LazyLock;

#[path = "support/rke1_releases.rs"]
mod rke1_releases;
use rke1_releases::SHIPPED_BY_RKE_1_7_AND_1_8 as SHIPPED;

const UNPUBLISHED: &str = "v1.32.13-rancher1-2";

/// The compiled-in data with UNPUBLISHED's images taken out and the version listed as shipped
/// by RKE v1.8.13 without metadata, as rkers' data had it before RKE v1.8.14's data.json.
static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    let mut data = Catalog::embedded().data().clone();
    data.system_images.remove(UNPUBLISHED);
    data.unpublished_versions.insert(
        UNPUBLISHED.to_string(),
        UnpublishedVersion {
            rke: "v1.8.13".to_string(),
        },
    );
    Catalog::from_data(data, "test").unwrap()
});

fn cluster_yml(version: &str, extra: &str) -> String {
    format!(
        "nodes:\n  - address: 10.0.0.1\n    user: rancher\n    role: [controlplane, etcd, worker]\n\
         kubernetes_version: {version}\n{extra}"
    )
}

/// What the state of a cluster RKE1 built at `version` records: every image, the extended-life
/// hyperkube among them.
fn recorded_config(version: &str) -> RkeConfig {
    let mut cfg = config::load_str(&cluster_yml("v1.32.11-rancher1-1", ""), "state")
        .unwrap()
        .config;
    config::apply_defaults(&mut cfg, &*CATALOG);
    cfg.kubernetes_version = version.to_string();
    cfg.system_images.kubernetes = "rke-extended-life/hyperkube:v1.32.13-rancher1".to_string();
    cfg
}

/// Loads, defaults, takes images from `state` as `Cluster` does, and validates.
fn check(
    text: &str,
    state: Option<&RkeConfig>,
) -> (RkeConfig, Option<UnpublishedImages>, Vec<String>) {
    let loaded = config::load_str(text, "cluster.yml").unwrap();
    let mut cfg = loaded.config;
    let catalog: &Catalog = &CATALOG;
    config::apply_defaults(&mut cfg, catalog);
    let source = config::images_for_unpublished_version(&mut cfg, catalog, state);
    let problems = config::validate(&cfg, catalog, &loaded.locations)
        .iter()
        .map(ToString::to_string)
        .collect();
    (cfg, source, problems)
}

#[test]
fn every_version_rke_1_7_to_1_8_14_shipped_is_accepted() {
    for version in SHIPPED {
        let recorded = recorded_config(version);
        let (cfg, source, problems) = check(&cluster_yml(version, ""), Some(&recorded));
        assert!(problems.is_empty(), "{version}: {problems:?}");
        let unpublished = CATALOG.is_unpublished(version);
        assert_eq!(source.is_some(), unpublished, "{version}");
        if !unpublished {
            // Published versions take the catalog's images, whatever the state holds.
            assert_eq!(
                cfg.system_images.kubernetes,
                CATALOG.system_images(version).unwrap()["kubernetes"],
                "{version}"
            );
        }
    }
}

#[test]
fn unpublished_version_takes_the_images_the_state_recorded_for_it() {
    let recorded = recorded_config(UNPUBLISHED);
    let (cfg, source, problems) = check(&cluster_yml(UNPUBLISHED, ""), Some(&recorded));
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(source, Some(UnpublishedImages::State));
    assert_eq!(cfg.system_images, recorded.system_images);
    assert_eq!(
        source.unwrap().note(UNPUBLISHED),
        "kubernetes_version v1.32.13-rancher1-2: images from the cluster's state; this version's \
         metadata is not published"
    );
    // The minor's published flags apply.
    let options = CATALOG
        .service_options(UNPUBLISHED, Some(&cfg.system_images.kubernetes))
        .unwrap();
    assert_eq!(options.kubeapi["service-account-issuer"], "rke");

    // cluster.yml's own images win over the state's.
    let (cfg, _, problems) = check(
        &cluster_yml(
            UNPUBLISHED,
            "system_images:\n  kubernetes: registry.local/hyperkube:v1.32.13-rancher1\n",
        ),
        Some(&recorded),
    );
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        cfg.system_images.kubernetes,
        "registry.local/hyperkube:v1.32.13-rancher1"
    );
    assert_eq!(cfg.system_images.etcd, recorded.system_images.etcd);
}

#[test]
fn unpublished_version_takes_images_from_system_images() {
    let recorded = recorded_config(UNPUBLISHED);
    let mut images = String::from("system_images:\n");
    for (key, image) in recorded.system_images.slots() {
        if !image.is_empty() {
            images.push_str(&format!("  {key}: {image}\n"));
        }
    }
    let (cfg, source, problems) = check(&cluster_yml(UNPUBLISHED, &images), None);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(source, Some(UnpublishedImages::SystemImages));
    assert_eq!(cfg.system_images, recorded.system_images);
    assert!(
        source
            .unwrap()
            .note(UNPUBLISHED)
            .contains("images from cluster.yml system_images")
    );
}

#[test]
fn unpublished_version_without_images_says_what_to_add() {
    // No state, and a state at another version: its images are never borrowed.
    let older = recorded_config("v1.32.11-rancher1-1");
    for state in [None, Some(&older)] {
        let (_, source, problems) = check(&cluster_yml(UNPUBLISHED, ""), state);
        assert_eq!(source, Some(UnpublishedImages::SystemImages));
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        assert!(
            p.starts_with(
                "cluster.yml:5:1: kubernetes_version: v1.32.13-rancher1-2 has no published \
                 metadata (RKE Extended Life)"
            ),
            "{p}"
        );
        assert!(p.contains("add to system_images: etcd, kubernetes"), "{p}");
    }
}

#[test]
fn unknown_version_gets_one_short_error_with_its_neighbours() {
    let (_, source, problems) = check(&cluster_yml("v1.32.14-rancher1-1", ""), None);
    assert_eq!(source, None);
    assert_eq!(
        problems,
        [
            "cluster.yml:5:1: kubernetes_version: v1.32.14-rancher1-1 is not a Kubernetes version \
          rkers knows (nearest: v1.32.13-rancher1-3); set RKERS_METADATA_FILE to a versions.json \
          that lists it, or give every image in system_images"
        ]
    );
    let (_, _, problems) = check(&cluster_yml("v1.26.10-rancher1-1", ""), None);
    assert!(
        problems[0].contains("(nearest: v1.26.9-rancher1-1, v1.26.11-rancher2-1)"),
        "{problems:?}"
    );
}

#[test]
fn cluster_reads_the_state_for_an_unpublished_version_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let metadata = dir.path().join("versions.json");
    std::fs::write(&metadata, serde_json::to_string(CATALOG.data()).unwrap()).unwrap();
    // SAFETY: no other test of this file reads the environment (they use CATALOG).
    unsafe { std::env::set_var(RKERS_METADATA_FILE_ENV, &metadata) };
    let path = dir.path().join("cluster.yml");
    std::fs::write(&path, cluster_yml(UNPUBLISHED, "")).unwrap();
    let recorded = recorded_config(UNPUBLISHED);
    let state = StateFile {
        current_state: ClusterState {
            rke_config: Some(recorded.to_state_json()),
            ..ClusterState::default()
        },
        ..StateFile::default()
    };
    let files = ClusterFiles::from_config_path(&path);
    std::fs::write(&files.state_path, state.to_json().unwrap()).unwrap();

    let reporter = Reporter::new(OutputFormat::Text, true);
    let cluster = Cluster::load(&path, &reporter).expect("images come from the state");
    assert_eq!(cluster.config.system_images, recorded.system_images);

    std::fs::remove_file(&files.state_path).unwrap();
    let err = match Cluster::load(&path, &reporter) {
        Ok(_) => panic!("no images: the load must fail"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("has no published metadata"), "{err}");
}
