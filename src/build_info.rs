//! What this binary is, for `rkers --version` and `rkers version --client`: the crate version,
//! the git commit and build date recorded by build.rs, and the source of the Kubernetes metadata
//! compiled in (the kontainer-driver-metadata branch and the pinned Go module it was generated
//! from, the RKE release whose defaults it mirrors, and a checksum of rkers' own
//! `data/versions.json`).

use crate::metadata::{Catalog, SourceInfo};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

/// The crate version, e.g. `0.1.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit the binary was built from, or `unknown`.
pub const GIT_COMMIT: &str = env!("RKERS_GIT_COMMIT");
/// When it was built (UTC, RFC 3339; the commit's time in release builds).
pub const BUILD_DATE: &str = env!("RKERS_BUILD_DATE");

/// The lines after the program name that `rkers --version` prints.
pub fn describe() -> String {
    let catalog = Catalog::embedded();
    let source = &catalog.data().source;
    let data_sha = hex::encode(Sha256::digest(Catalog::embedded_json().as_bytes()));
    format!(
        "{VERSION}\ncommit:   {GIT_COMMIT}\nbuilt:    {BUILD_DATE}\nmetadata: {} {}, RKE {} defaults\ndata:     versions.json sha256 {}",
        or_unknown(&source.repository),
        metadata_refs(source),
        catalog.rke_version(),
        short(&data_sha),
    )
}

/// Where the data was generated from, as `data/versions.json` records it: the KDM branch and
/// the pinned Go module (with its checksum) that ships that branch's `data.json`.
fn metadata_refs(source: &SourceInfo) -> String {
    let field = |name: &str| source.details.get(name).and_then(|v| v.as_str());
    match (field("kdm_branch"), field("module")) {
        (Some(branch), Some(module)) => {
            let sum = field("module_sum")
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            format!("{branch} in {module}{sum}")
        }
        (Some(branch), None) => branch.to_string(),
        (None, Some(module)) => module.to_string(),
        (None, None) => "unknown".to_string(),
    }
}

/// [`describe`] computed once, for clap's `long_version`.
pub static LONG_VERSION: LazyLock<String> = LazyLock::new(describe);

fn short(hex: &str) -> &str {
    hex.get(..12).unwrap_or(hex)
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "unknown" } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_version_commit_date_and_metadata_source() {
        let text = describe();
        let source = &Catalog::embedded().data().source;
        assert!(text.starts_with(VERSION), "{text}");
        assert!(text.contains(&format!("commit:   {GIT_COMMIT}")), "{text}");
        assert!(!GIT_COMMIT.is_empty() && !BUILD_DATE.is_empty());
        assert!(
            time::OffsetDateTime::parse(BUILD_DATE, &time::format_description::well_known::Rfc3339)
                .is_ok(),
            "{BUILD_DATE}"
        );
        let module = source.details["module"]
            .as_str()
            .expect("versions.json names its module");
        let branch = source.details["kdm_branch"]
            .as_str()
            .expect("and its KDM branch");
        let sum = source.details["module_sum"]
            .as_str()
            .expect("and the module's checksum");
        assert!(
            text.contains(module) && text.contains(branch) && text.contains(sum),
            "{text}"
        );
        assert!(text.contains(Catalog::embedded().rke_version()), "{text}");
    }
}
