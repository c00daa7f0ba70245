//! What this binary is, for `rkers --version` and `rkers version --client`: the crate version,
//! the git commit and build date recorded by build.rs, and the source of the Kubernetes metadata
//! compiled in (the kontainer-driver-metadata branches and commits it was extracted from, the RKE
//! release whose defaults it mirrors, and a checksum of rkers' own `data/versions.json`).

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

/// The KDM refs the data was extracted from: each git branch at its commit, then the commit of
/// the pages read from the search index (newer than any branch), as `data/versions.json` records.
fn metadata_refs(source: &SourceInfo) -> String {
    let mut refs: Vec<String> = source
        .details
        .get("branches")
        .and_then(|b| b.as_array())
        .into_iter()
        .flatten()
        .filter_map(|b| {
            let name = b.get("ref")?.as_str()?;
            let commit = b.get("commit")?.as_str()?;
            Some(format!("{name}@{}", short(commit)))
        })
        .collect();
    if let Some(commit) = source
        .details
        .get("files")
        .and_then(|f| f.get("commit"))
        .and_then(|c| c.as_str())
    {
        refs.push(format!("files@{}", short(commit)));
    }
    if refs.is_empty() {
        "unknown".to_string()
    } else {
        refs.join(" ")
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
        let newest = source.details["branches"]
            .as_array()
            .and_then(|b| b.last())
            .expect("versions.json names its branches");
        let files = source.details["files"]["commit"].as_str().unwrap();
        assert!(
            text.contains(newest["ref"].as_str().unwrap())
                && text.contains(&newest["commit"].as_str().unwrap()[..12])
                && text.contains(&files[..12]),
            "{text}"
        );
        assert!(text.contains(Catalog::embedded().rke_version()), "{text}");
    }
}
