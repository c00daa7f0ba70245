//! Small pure helpers shared by the plan builders: Go-compatible path joining, image tag and
//! version parsing, RKE1's list de-duplication and SELinux bind handling.

use semver::Version;

/// Joins path elements the way Go's `path.Join` does: empty elements are skipped and the result
/// is lexically cleaned (`//` collapsed, `.` and `..` resolved); all-empty input gives `""`.
pub fn join_path(parts: &[&str]) -> String {
    let joined = parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    if joined.is_empty() {
        return String::new();
    }
    clean_path(&joined)
}

/// Go's `path.Clean`.
pub fn clean_path(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|s| *s != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_string(),
        (false, false) => body,
    }
}

/// The tag of a Docker image reference (`reg:5000/a/b:v1` → `v1`), ignoring a digest; `None`
/// when the reference has no tag.
pub fn image_tag(image: &str) -> Option<&str> {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last_component_start = without_digest.rfind('/').map_or(0, |i| i + 1);
    let last = &without_digest[last_component_start..];
    last.split_once(':')
        .map(|(_, tag)| tag)
        .filter(|t| !t.is_empty())
}

/// Parses `v1.20.15-rancher2-2` or `3.4.23-rkers1` the way RKE1 does (leading `v` dropped,
/// strict semver). `None` when it does not parse.
pub fn parse_version(text: &str) -> Option<Version> {
    Version::parse(text.strip_prefix('v').unwrap_or(text)).ok()
}

/// Whether `version` is at least `major.minor` (any patch or pre-release of that minor counts,
/// matching RKE1's `>= X.Y.0-rancher0` ranges). Unparseable versions count as new: RKE1 either
/// logs and continues or panics there, and every version KDM ships parses.
pub fn at_least(version: &str, major: u64, minor: u64) -> bool {
    match parse_version(version) {
        Some(v) => (v.major, v.minor) >= (major, minor),
        None => true,
    }
}

/// RKE1's `getUniqStringList`: trims entries, drops empty ones and later duplicates.
pub fn uniq(list: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for item in list {
        let trimmed = item.trim().to_string();
        if trimmed.is_empty() || !seen.insert(trimmed.clone()) {
            continue;
        }
        out.push(trimmed);
    }
    out
}

/// RKE1's `RemoveZFromBinds` (k8s ≥ 1.22): drops every `z`/`Z` option from the text after the
/// last `:`; a bind that ends with `:` (no options at all) is dropped, as upstream does.
pub fn remove_z_from_binds(binds: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for bind in binds {
        let last = bind.rfind(':').map_or(0, |i| i);
        let has_colon = bind.contains(':');
        let options = if has_colon {
            &bind[last + 1..]
        } else {
            bind.as_str()
        };
        if options.is_empty() {
            continue;
        }
        let kept: Vec<&str> = options
            .split(',')
            .filter(|o| !o.eq_ignore_ascii_case("z"))
            .collect();
        let head = if has_colon { &bind[..last] } else { "" };
        if kept.is_empty() {
            out.push(head.to_string());
        } else {
            out.push(format!("{head}:{}", kept.join(",")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_path_matches_go() {
        assert_eq!(join_path(&["/", "/etc/kubernetes"]), "/etc/kubernetes");
        assert_eq!(
            join_path(&["/opt/rke/", "/var/lib/kubelet"]),
            "/opt/rke/var/lib/kubelet"
        );
        assert_eq!(join_path(&["", "/etc/kubernetes"]), "/etc/kubernetes");
        assert_eq!(join_path(&["/opt//rke/./x/..", "etc"]), "/opt/rke/etc");
        assert_eq!(join_path(&["", ""]), "");
    }

    #[test]
    fn image_tags() {
        assert_eq!(
            image_tag("10.77.0.1:5000/rkers/rke-tools:v0.1.100-rkers1"),
            Some("v0.1.100-rkers1")
        );
        assert_eq!(image_tag("10.77.0.1:5000/rkers/rke-tools"), None);
        assert_eq!(
            image_tag("rancher/hyperkube:v1.31.1-rancher1"),
            Some("v1.31.1-rancher1")
        );
        assert_eq!(image_tag("etcd:v3@sha256:abc"), Some("v3"));
    }

    #[test]
    fn versions() {
        assert!(at_least("v1.22.0-rancher1-1", 1, 22));
        assert!(!at_least("v1.21.14-rancher1-1", 1, 22));
        assert!(at_least("v1.31.1-rancher1-1", 1, 24));
        assert!(at_least("garbage", 1, 24));
    }

    #[test]
    fn z_removal_follows_rke1() {
        let binds: Vec<String> = [
            "/etc/kubernetes:/etc/kubernetes:z",
            "/etc/cni:/etc/cni:rw,z",
            "/etc/resolv.conf:/etc/resolv.conf",
            "/var/lib/kubelet:/var/lib/kubelet:shared,Z",
            "/x:/y:",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            remove_z_from_binds(&binds),
            vec![
                "/etc/kubernetes:/etc/kubernetes",
                "/etc/cni:/etc/cni:rw",
                "/etc/resolv.conf:/etc/resolv.conf",
                "/var/lib/kubelet:/var/lib/kubelet:shared",
            ]
        );
    }

    #[test]
    fn uniq_trims_and_dedups() {
        let list = [" ", "a=1", "a=1 ", "", "b=2"].map(String::from);
        assert_eq!(uniq(list), vec!["a=1", "b=2"]);
    }
}
