//! Kubernetes version strings as RKE names them (`vX.Y.Z-rancherN-M`) and the semver ranges KDM
//! uses to pick addon templates.

use std::cmp::Ordering;
use std::fmt;

/// Why a version or range string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error(
        "invalid Kubernetes version {input:?}: expected vX.Y.Z-rancherN-M (e.g. v1.31.1-rancher1-1): {reason}"
    )]
    BadVersion { input: String, reason: String },
    #[error("invalid version range {input:?}: {reason}")]
    BadRange { input: String, reason: String },
}

/// A parsed Kubernetes version such as `v1.20.15-rancher2-2`.
///
/// Ordering is semver ordering of the text without the leading `v` (the `rancherN-M` suffix is a
/// single pre-release identifier, compared as RKE's semver library does).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct K8sVersion {
    raw: String,
    semver: semver::Version,
}

impl K8sVersion {
    /// Parses `vX.Y.Z` with an optional pre-release suffix (normally `-rancherN-M`).
    /// The leading `v` is required, as in `kubernetes_version` and every KDM key.
    pub fn parse(input: &str) -> Result<Self, VersionError> {
        let bad = |reason: &str| VersionError::BadVersion {
            input: input.to_string(),
            reason: reason.to_string(),
        };
        let rest = input
            .strip_prefix('v')
            .ok_or_else(|| bad("it must start with 'v'"))?;
        let semver = semver::Version::parse(rest).map_err(|e| bad(&e.to_string()))?;
        if !semver.build.is_empty() {
            return Err(bad(
                "build metadata (+...) is not used in Kubernetes versions",
            ));
        }
        Ok(K8sVersion {
            raw: input.to_string(),
            semver,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }

    pub fn major(&self) -> u64 {
        self.semver.major
    }

    pub fn minor(&self) -> u64 {
        self.semver.minor
    }

    pub fn patch(&self) -> u64 {
        self.semver.patch
    }

    /// The `vX.Y` key KDM uses for per-minor data (service options, version info).
    pub fn minor_key(&self) -> String {
        format!("v{}.{}", self.semver.major, self.semver.minor)
    }

    /// The `X.Y` key of the Docker compatibility table.
    pub fn docker_key(&self) -> String {
        format!("{}.{}", self.semver.major, self.semver.minor)
    }

    /// `(N, M)` of a `-rancherN-M` suffix (`M` absent for `-rancherN`), if the suffix has that shape.
    pub fn rancher_release(&self) -> Option<(u64, Option<u64>)> {
        let rest = self.semver.pre.as_str().strip_prefix("rancher")?;
        let (n, m) = match rest.split_once('-') {
            Some((n, m)) => (n, Some(m)),
            None => (rest, None),
        };
        let n = n.parse().ok()?;
        let m = match m {
            Some(m) => Some(m.parse().ok()?),
            None => None,
        };
        Some((n, m))
    }

    pub(crate) fn semver(&self) -> &semver::Version {
        &self.semver
    }
}

impl fmt::Display for K8sVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl Ord for K8sVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.semver
            .cmp(&other.semver)
            .then_with(|| self.raw.cmp(&other.raw))
    }
}

impl PartialOrd for K8sVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The `vX.Y` part of a version-like string (`v1.20.15-rancher1-1` → `v1.20`), the way RKE cuts
/// it: the first two dot-separated fields. `None` when there are fewer than two.
pub fn minor_key_of(tag: &str) -> Option<String> {
    let mut parts = tag.split('.');
    let major = parts.next()?;
    let minor = parts.next()?;
    if major.is_empty() || minor.is_empty() {
        return None;
    }
    Some(format!("{major}.{minor}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Comparator {
    op: Op,
    version: semver::Version,
}

/// A KDM version range such as `>=1.27.8-rancher2-1 <1.28.6-rancher1-1`: comparators separated
/// by spaces must all hold; alternatives are separated by `||`. Versions in ranges carry no `v`.
///
/// Matching compares plain semver order, including pre-release versions (unlike Cargo-style
/// requirements, which would exclude most `-rancher` versions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange {
    raw: String,
    alternatives: Vec<Vec<Comparator>>,
}

impl VersionRange {
    pub fn parse(input: &str) -> Result<Self, VersionError> {
        let bad = |reason: String| VersionError::BadRange {
            input: input.to_string(),
            reason,
        };
        let mut alternatives = Vec::new();
        for alternative in input.split("||") {
            let mut comparators = Vec::new();
            let mut tokens = alternative.split_whitespace().peekable();
            while let Some(token) = tokens.next() {
                let (op, rest) = split_operator(token);
                // KDM sometimes writes "< 1.28.0-rancher0": the version is the next token.
                let text = if rest.is_empty() {
                    tokens
                        .next()
                        .ok_or_else(|| bad(format!("operator {token:?} without a version")))?
                } else {
                    rest
                };
                let version = semver::Version::parse(text.trim_start_matches('v'))
                    .map_err(|e| bad(format!("{text:?}: {e}")))?;
                comparators.push(Comparator { op, version });
            }
            if comparators.is_empty() {
                return Err(bad("empty alternative".to_string()));
            }
            alternatives.push(comparators);
        }
        Ok(VersionRange {
            raw: input.to_string(),
            alternatives,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }

    pub fn matches(&self, version: &K8sVersion) -> bool {
        let v = version.semver();
        self.alternatives.iter().any(|all| {
            all.iter().all(|c| {
                let ord = v.cmp(&c.version);
                match c.op {
                    Op::Eq => ord == Ordering::Equal,
                    Op::Ne => ord != Ordering::Equal,
                    Op::Gt => ord == Ordering::Greater,
                    Op::Ge => ord != Ordering::Less,
                    Op::Lt => ord == Ordering::Less,
                    Op::Le => ord != Ordering::Greater,
                }
            })
        })
    }
}

fn split_operator(token: &str) -> (Op, &str) {
    for (prefix, op) in [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("!=", Op::Ne),
        ("==", Op::Eq),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ] {
        if let Some(rest) = token.strip_prefix(prefix) {
            return (op, rest);
        }
    }
    (Op::Eq, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> K8sVersion {
        K8sVersion::parse(s).unwrap()
    }

    #[test]
    fn parses_rancher_versions() {
        let x = v("v1.20.15-rancher2-2");
        assert_eq!((x.major(), x.minor(), x.patch()), (1, 20, 15));
        assert_eq!(x.minor_key(), "v1.20");
        assert_eq!(x.docker_key(), "1.20");
        assert_eq!(x.rancher_release(), Some((2, Some(2))));
        assert_eq!(x.to_string(), "v1.20.15-rancher2-2");
    }

    #[test]
    fn rejects_bad_strings_with_the_input_named() {
        for bad in [
            "1.20.15-rancher1-1",
            "v1.20",
            "vx.y.z",
            "",
            "v1.20.15+build",
        ] {
            let err = K8sVersion::parse(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
            assert!(err.contains("vX.Y.Z-rancherN-M"), "{err}");
        }
    }

    #[test]
    fn orders_by_semver() {
        let mut list = [
            v("v1.20.15-rancher2-1"),
            v("v1.20.9-rancher1-1"),
            v("v1.20.15-rancher1-4"),
            v("v1.27.16-rancher1-1"),
            v("v1.20.10-rancher1-2"),
        ];
        list.sort();
        let names: Vec<_> = list.iter().map(|x| x.as_str()).collect();
        assert_eq!(
            names,
            [
                "v1.20.9-rancher1-1",
                "v1.20.10-rancher1-2",
                "v1.20.15-rancher1-4",
                "v1.20.15-rancher2-1",
                "v1.27.16-rancher1-1"
            ]
        );
    }

    #[test]
    fn ranges_match_like_kdm() {
        let r = VersionRange::parse(">=1.27.8-rancher2-1 <1.28.6-rancher1-1").unwrap();
        assert!(r.matches(&v("v1.27.8-rancher2-1")));
        assert!(r.matches(&v("v1.28.5-rancher1-1")));
        assert!(!r.matches(&v("v1.27.8-rancher1-1")));
        assert!(!r.matches(&v("v1.28.6-rancher1-1")));
        // operator separated from its version by a space, as in some KDM ACI ranges
        let r = VersionRange::parse(">=1.27.11-rancher1-1 < 1.27.15-rancher1-1").unwrap();
        assert!(r.matches(&v("v1.27.14-rancher1-1")));
        assert!(!r.matches(&v("v1.27.15-rancher1-1")));
        let open = VersionRange::parse(">=1.30.4-rancher1-1").unwrap();
        assert!(open.matches(&v("v1.31.1-rancher1-1")));
        let le = VersionRange::parse(">=1.14.0-rancher0 <=1.14.6-rancher1-1").unwrap();
        assert!(le.matches(&v("v1.14.6-rancher1-1")));
        assert!(VersionRange::parse(">=").is_err());
        assert!(VersionRange::parse(">=1.x").is_err());
    }

    #[test]
    fn minor_key_cuts_two_fields() {
        assert_eq!(minor_key_of("v1.16.3-rancher1").as_deref(), Some("v1.16"));
        assert_eq!(minor_key_of("latest"), None);
    }
}
