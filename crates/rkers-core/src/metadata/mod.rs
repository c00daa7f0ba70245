//! Kubernetes version metadata (§29): supported versions, system images, default component
//! flags, supported Docker versions and addon template ranges, loaded from the data file
//! `data/versions.json` (regenerated from KDM by `data/extract-kdm.py`), plus the logic of
//! `rkers config` (image and version listings, cluster.yml generation and its prompts), and
//! the Docker Engine API check of [`docker_api`] (`data/docker-api.json`). Minors after RKE1's
//! last come from rkers' own `data/versions-next.json` ([`next`]), added to the embedded catalog.

mod catalog;
pub mod docker_api;
pub mod generate;
mod kdm;
pub mod next;
pub mod removed_apis;
mod version;

use std::path::PathBuf;

pub use catalog::{
    Catalog, CatalogData, DockerVerdict, RANCHER_METADATA_URL_ENV, RKERS_METADATA_FILE_ENV,
    SYSTEM_IMAGE_KEYS, ServiceOptions, SourceInfo, UnpublishedVersion, VersionInfo, addon,
    image_tag, metadata_url_to_path,
};
pub use generate::{
    ClusterAnswers, NodeAnswers, generate_cluster_yml, list_versions, prompt_answers,
    system_images_listing, write_cluster_yml,
};
pub use kdm::KdmError;
pub use removed_apis::{RemovedApi, RemovedApis};
pub use version::{K8sVersion, VersionError, VersionRange, minor_key_of};

/// Errors of loading and querying version metadata.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("cannot read metadata file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}:{line}:{column}: invalid metadata: {message}")]
    Parse {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{origin}: invalid metadata: {message}")]
    Invalid { origin: String, message: String },
    /// Not a source: the result event's causes stay as they were when this was text.
    #[error("{origin}: invalid metadata: {cause}")]
    Kdm { origin: String, cause: KdmError },
    #[error(
        "{variable}={value}: only file paths are supported (rkers does not download metadata); \
         download the file and point {variable} at it"
    )]
    UrlNotSupported {
        variable: &'static str,
        value: String,
    },
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error("{}", unsupported_version_message(version, *unpublished, nearest))]
    UnsupportedVersion {
        version: String,
        /// RKE1 shipped it, but its metadata was never published.
        unpublished: bool,
        /// The closest known versions of its minor.
        nearest: Vec<String>,
    },
    #[error(
        "No serviceOptions found for cluster version [{version}] or cluster major version [{minor}]"
    )]
    NoServiceOptions { version: String, minor: String },
    #[error("cannot read Docker version {version:?}: expected MAJOR.MINOR[.PATCH]")]
    BadDockerVersion { version: String },
}

/// The error for a version whose images are not in the metadata.
fn unsupported_version_message(version: &str, unpublished: bool, nearest: &[String]) -> String {
    if unpublished {
        format!(
            "{version} has no published metadata (RKE Extended Life), so its images are not known \
             here; a cluster RKE1 built at {version} keeps the images its state records"
        )
    } else {
        crate::config::unknown_version_message(version, nearest)
    }
}
