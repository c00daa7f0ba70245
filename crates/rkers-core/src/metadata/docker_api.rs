//! Whether a host's Docker Engine works with the cluster's container runtime, decided from the
//! Engine API versions both sides speak instead of from a list of Docker releases.
//!
//! kubelet reaches Docker through dockershim (its own Docker client, Kubernetes ≤ v1.23) or
//! through cri-dockerd (always from v1.24, and on v1.21–v1.23 with `enable_cri_dockerd`), which
//! runs from the `kubernetes_services_sidecar` image (rancher/rke-tools). Both clients start at a
//! fixed newest API version and only lower it to the daemon's, so a daemon whose minimum API is
//! above that version (Docker 29.0–29.2: 1.44) refuses them. The facts, each with its source, are in
//! `data/docker-api.json`; this module is pure: versions in, a verdict out.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::{K8sVersion, image_tag};

/// An Engine API version such as `1.44`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion {
    pub major: u32,
    pub minor: u32,
}

impl ApiVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        ApiVersion { major, minor }
    }

    /// Reads `1.44` (a leading `v` is accepted).
    pub fn parse(text: &str) -> Option<Self> {
        let (major, minor) = text.trim().trim_start_matches('v').split_once('.')?;
        Some(ApiVersion {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for ApiVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ApiVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ApiVersion::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not an API version: {text:?}")))
    }
}

/// What a host's Docker daemon reports (`docker version`).
#[derive(Clone, Debug, Default)]
pub struct Engine {
    /// `Version`, e.g. `29.0.1` or `20.10.24+dfsg1`.
    pub version: String,
    /// `ApiVersion`: the newest API it serves.
    pub api_version: Option<ApiVersion>,
    /// `MinAPIVersion`: the oldest API it accepts.
    pub min_api_version: Option<ApiVersion>,
    /// A Windows engine: the rke-tools shell wrapper does not run there.
    pub windows: bool,
}

/// The cluster side: which client drives Docker on its hosts.
#[derive(Clone, Debug, Default)]
pub struct RuntimeClient {
    /// `kubernetes_version`.
    pub kubernetes_version: String,
    /// `enable_cri_dockerd` after defaults (RKE1 turns it on from v1.24).
    pub cri_dockerd: bool,
    /// `system_images.kubernetes_services_sidecar`: the rke-tools image cri-dockerd comes from.
    pub tools_image: String,
}

/// The outcome for one host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Both sides share an API version.
    Works,
    /// They share none: the runtime cannot drive this Docker.
    Refused { reason: String, remedy: String },
    /// They share none, but `ignore_docker_version` is set: a warning.
    Ignored { reason: String, remedy: String },
    /// One side's range is not known; nothing is refused.
    Unknown { note: String },
}

/// The API check of one host: both ranges, the version they would speak and the verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DockerApiCheck {
    /// The client, e.g. `cri-dockerd 0.3.16 (rancher/rke-tools:v0.1.108)`.
    pub runtime: String,
    /// The newest API the runtime speaks.
    pub runtime_api: Option<ApiVersion>,
    pub engine_min_api: Option<ApiVersion>,
    pub engine_api: Option<ApiVersion>,
    /// What they settle on: the lower of the two newest versions.
    pub spoken_api: Option<ApiVersion>,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Works, with a caveat worth reading.
    pub warnings: Vec<String>,
}

impl DockerApiCheck {
    /// Whether the host must be refused.
    pub fn refused(&self) -> Option<(&str, &str)> {
        match &self.verdict {
            Verdict::Refused { reason, remedy } => Some((reason, remedy)),
            _ => None,
        }
    }

    /// The warnings to print: a refusal set aside by `ignore_docker_version`, an unknown range
    /// and the caveats.
    pub fn all_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        match &self.verdict {
            Verdict::Ignored { reason, remedy } => out.push(format!(
                "{reason} (ignore_docker_version is set, going ahead; remedy: {remedy})"
            )),
            Verdict::Unknown { note } => out.push(note.clone()),
            Verdict::Works | Verdict::Refused { .. } => {}
        }
        out.extend(self.warnings.iter().cloned());
        out
    }
}

#[derive(Deserialize)]
struct Versioned<T> {
    api: T,
}

#[derive(Deserialize)]
struct ToolsTable {
    from: Vec<(String, String)>,
    newest_checked: String,
}

#[derive(Deserialize)]
struct Table {
    docker_releases: Versioned<BTreeMap<String, (ApiVersion, ApiVersion)>>,
    runtime_min_engine_api: Versioned<ApiVersion>,
    dockershim: Versioned<BTreeMap<String, ApiVersion>>,
    cri_dockerd: Versioned<BTreeMap<String, ApiVersion>>,
    rke_tools_cri_dockerd: ToolsTable,
    rke_tools_wrapper_api: Versioned<ApiVersion>,
}

static TABLE: LazyLock<Result<Table, String>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../../../data/docker-api.json"))
        .map_err(|e| format!("data/docker-api.json: {e}"))
});

/// `major.minor.patch` of a version string with an optional `v` and any suffix.
fn triple(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text
        .trim()
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor, patch))
}

fn minor_key(version: &str) -> Option<String> {
    triple(version).map(|(a, b, _)| format!("{a}.{b}"))
}

/// Which client drives Docker, and the newest API it speaks (`None`: not known).
struct Runtime {
    name: String,
    api: Option<ApiVersion>,
    cri_dockerd: bool,
    note: Option<String>,
}

impl Table {
    fn engine_range(&self, engine: &Engine) -> (Option<ApiVersion>, Option<ApiVersion>) {
        let listed = minor_key(&engine.version).and_then(|k| self.docker_releases.api.get(&k));
        (
            engine.min_api_version.or(listed.map(|r| r.0)),
            engine.api_version.or(listed.map(|r| r.1)),
        )
    }

    /// The cri-dockerd a rke-tools image carries: `(cri-dockerd version, assumed)`.
    fn cri_dockerd_of(&self, tools_image: &str) -> Result<(String, bool), String> {
        let is_rke_tools = tools_image
            .rsplit_once(':')
            .map_or(tools_image, |(repo, _)| repo)
            .ends_with("rke-tools");
        let version = image_tag(tools_image)
            .filter(|_| is_rke_tools)
            .and_then(|tag| triple(&tag))
            .ok_or_else(|| {
                format!("cannot tell which cri-dockerd {tools_image:?} carries (not a rancher/rke-tools vX.Y.Z image)")
            })?;
        let row = self
            .rke_tools_cri_dockerd
            .from
            .iter()
            .rev()
            .find(|(from, _)| triple(from).is_some_and(|f| f <= version))
            .ok_or_else(|| {
                format!("{tools_image} carries no cri-dockerd (rke-tools added it later)")
            })?;
        let assumed =
            triple(&self.rke_tools_cri_dockerd.newest_checked).is_some_and(|n| version > n);
        Ok((row.1.clone(), assumed))
    }

    fn runtime(&self, client: &RuntimeClient) -> Result<Runtime, String> {
        let k8s = K8sVersion::parse(&client.kubernetes_version).map_err(|e| e.to_string())?;
        let cri_dockerd = client.cri_dockerd || (k8s.major(), k8s.minor()) >= (1, 24);
        if !cri_dockerd {
            let key = k8s.docker_key();
            // A kubelet older than the table's first row vendors an older client still.
            let api = self
                .dockershim
                .api
                .get(&key)
                .or_else(|| self.dockershim.api.values().next())
                .copied();
            return Ok(Runtime {
                name: format!("kubelet v{key}'s dockershim"),
                api,
                cri_dockerd,
                note: None,
            });
        }
        let (version, assumed) = match self.cri_dockerd_of(&client.tools_image) {
            Ok(found) => found,
            Err(note) => {
                return Ok(Runtime {
                    name: format!("cri-dockerd ({})", client.tools_image),
                    api: None,
                    cri_dockerd,
                    note: Some(note),
                });
            }
        };
        let note = assumed.then(|| {
            format!(
                "{} is newer than the newest rke-tools checked (v{}): taken to carry cri-dockerd {version}",
                client.tools_image, self.rke_tools_cri_dockerd.newest_checked
            )
        });
        Ok(Runtime {
            name: format!("cri-dockerd {version} ({})", client.tools_image),
            api: self.cri_dockerd.api.get(&version).copied(),
            cri_dockerd,
            note,
        })
    }

    /// The first rke-tools release whose cri-dockerd speaks `needed`, with that cri-dockerd.
    fn tools_speaking(&self, needed: ApiVersion) -> Option<(&str, &str)> {
        self.rke_tools_cri_dockerd
            .from
            .iter()
            .find(|(_, cri)| self.cri_dockerd.api.get(cri).is_some_and(|a| *a >= needed))
            .map(|(tools, cri)| (tools.as_str(), cri.as_str()))
    }

    /// "or run Docker …" naming the runs of Docker releases whose default minimum API accepts
    /// `api` (28.x and older at 1.24; 29.3 and newer at 1.40).
    fn releases_accepting(&self, api: ApiVersion) -> String {
        let mut releases: Vec<(ApiVersion, ApiVersion)> = self
            .docker_releases
            .api
            .iter()
            .filter_map(|(release, (min, _))| Some((ApiVersion::parse(release)?, *min)))
            .collect();
        releases.sort();
        let accepts: Vec<bool> = releases.iter().map(|(_, min)| *min <= api).collect();
        let mut runs = Vec::new();
        for (i, (release, _)) in releases.iter().enumerate() {
            let starts = accepts[i] && (i == 0 || !accepts[i - 1]);
            if !starts {
                continue;
            }
            let end = (i..releases.len())
                .take_while(|j| accepts[*j])
                .last()
                .unwrap_or(i);
            runs.push(match (i == 0, end + 1 == releases.len()) {
                (true, true) => "any release".to_string(),
                (true, false) => format!("{} or older", releases[end].0),
                (false, true) => format!("{release} or newer"),
                (false, false) => format!("{release} to {}", releases[end].0),
            });
        }
        if runs.is_empty() {
            return String::new();
        }
        format!(
            ", or run a Docker release whose default minimum API accepts {api} ({})",
            runs.join(", ")
        )
    }

    fn remedy(
        &self,
        client: &RuntimeClient,
        runtime: &Runtime,
        runtime_api: ApiVersion,
        engine_min: ApiVersion,
    ) -> String {
        let lower = format!(
            "lower dockerd's minimum API version to {runtime_api} (\"min-api-version\": \"{runtime_api}\" in /etc/docker/daemon.json, Docker 29.0 or newer; or DOCKER_MIN_API_VERSION={runtime_api} in dockerd's environment) and restart dockerd"
        );
        let older_docker = self.releases_accepting(runtime_api);
        let tools = self.tools_speaking(engine_min);
        let minor = minor_key(&client.kubernetes_version).unwrap_or_default();
        match (runtime.cri_dockerd, tools) {
            (true, Some((tools, cri))) => format!(
                "set system_images.kubernetes_services_sidecar to rancher/rke-tools:v{tools} or newer (cri-dockerd {cri}), {lower}{older_docker}"
            ),
            (false, Some((tools, cri))) => {
                let cri_on_this_minor =
                    triple(&client.kubernetes_version).is_some_and(|(a, b, _)| (a, b) >= (1, 21));
                let enable = if cri_on_this_minor {
                    format!(
                        "set enable_cri_dockerd: true with system_images.kubernetes_services_sidecar rancher/rke-tools:v{tools} or newer (cri-dockerd {cri}), "
                    )
                } else {
                    String::new()
                };
                format!(
                    "{enable}upgrade Kubernetes from v{minor} to v1.24 or newer (one minor at a time) with rancher/rke-tools:v{tools} or newer, {lower}{older_docker}"
                )
            }
            (_, None) => format!("{lower}{older_docker}"),
        }
    }
}

/// Decides whether `engine` works with the runtime of `client`. With `ignore_docker_version`
/// (RKE1's switch for going ahead on any Docker) a refusal becomes [`Verdict::Ignored`].
pub fn check(
    engine: &Engine,
    client: &RuntimeClient,
    ignore_docker_version: bool,
) -> DockerApiCheck {
    let table = match &*TABLE {
        Ok(t) => t,
        Err(e) => return unknown(String::new(), None, None, e.clone()),
    };
    let (engine_min, engine_max) = table.engine_range(engine);
    let runtime = match table.runtime(client) {
        Ok(r) => r,
        Err(e) => {
            return unknown(
                String::new(),
                engine_min,
                engine_max,
                format!("Docker's API range was not checked: {e}"),
            );
        }
    };
    // Without a known API the note says why; with one it is an assumption worth reading.
    let mut warnings: Vec<String> = Vec::new();
    if runtime.api.is_some() {
        warnings.extend(runtime.note.iter().cloned());
    }
    let wrapper_api = table.rke_tools_wrapper_api.api;
    if !engine.windows && engine_min.is_some_and(|m| m > wrapper_api) {
        warnings.push(format!(
            "Docker {} refuses API {wrapper_api}, which rke-tools' kubelet wrapper uses to find Docker's root directory: with a root other than /var/lib/docker, mounts under it are no longer released inside the kubelet container",
            engine.version
        ));
    }
    let (Some(runtime_api), Some(engine_max)) = (runtime.api, engine_max) else {
        let missing = match (runtime.api, &runtime.note) {
            (None, Some(why)) => why.clone(),
            (None, None) => format!("the Engine API {} speaks is not known", runtime.name),
            (Some(_), _) => format!("Docker {} reports no API version", engine.version),
        };
        let note = match (engine_min, runtime.cri_dockerd) {
            (Some(min), true) => format!(
                "{missing}; Docker {} accepts API ≥ {min}, which cri-dockerd {} speaks",
                engine.version,
                table
                    .tools_speaking(min)
                    .map_or("(none known)".to_string(), |(_, cri)| format!(
                        "{cri} or newer"
                    ))
            ),
            _ => missing,
        };
        let mut out = unknown(runtime.name, engine_min, engine_max, note);
        out.runtime_api = runtime.api;
        out.warnings = warnings;
        return out;
    };
    let spoken = runtime_api.min(engine_max);
    let floor = table.runtime_min_engine_api.api;
    let refusal = if engine_max < floor {
        Some((
            format!(
                "Docker {} serves Engine API ≤ {engine_max}; {} needs ≥ {floor}",
                engine.version, runtime.name
            ),
            "upgrade Docker on this host".to_string(),
        ))
    } else if let Some(min) = engine_min.filter(|m| spoken < *m) {
        Some((
            format!(
                "Docker {} accepts Engine API ≥ {min}; {} speaks ≤ {runtime_api}",
                engine.version, runtime.name
            ),
            table.remedy(client, &runtime, runtime_api, min),
        ))
    } else {
        None
    };
    let verdict = match refusal {
        None => Verdict::Works,
        Some((reason, remedy)) if ignore_docker_version => Verdict::Ignored { reason, remedy },
        Some((reason, remedy)) => Verdict::Refused { reason, remedy },
    };
    DockerApiCheck {
        runtime: runtime.name,
        runtime_api: Some(runtime_api),
        engine_min_api: engine_min,
        engine_api: Some(engine_max),
        spoken_api: matches!(verdict, Verdict::Works).then_some(spoken),
        verdict,
        warnings,
    }
}

fn unknown(
    runtime: String,
    engine_min_api: Option<ApiVersion>,
    engine_api: Option<ApiVersion>,
    note: String,
) -> DockerApiCheck {
    DockerApiCheck {
        runtime,
        runtime_api: None,
        engine_min_api,
        engine_api,
        spoken_api: None,
        verdict: Verdict::Unknown { note },
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Docker release as its `docker version` reports it.
    fn docker(version: &str, min: &str, max: &str) -> Engine {
        Engine {
            version: version.into(),
            api_version: ApiVersion::parse(max),
            min_api_version: ApiVersion::parse(min),
            windows: false,
        }
    }

    fn engines() -> [Engine; 5] {
        [
            docker("20.10.24+dfsg1", "1.12", "1.41"),
            docker("24.0.7", "1.12", "1.43"),
            docker("27.5.1", "1.24", "1.47"),
            docker("28.5.2", "1.24", "1.51"),
            docker("29.0.1", "1.44", "1.52"),
        ]
    }

    fn dockershim(k8s: &str) -> RuntimeClient {
        RuntimeClient {
            kubernetes_version: k8s.into(),
            cri_dockerd: false,
            tools_image: "rancher/rke-tools:v0.1.89".into(),
        }
    }

    fn cri_dockerd(k8s: &str, tools: &str) -> RuntimeClient {
        RuntimeClient {
            kubernetes_version: k8s.into(),
            cri_dockerd: true,
            tools_image: format!("rancher/rke-tools:{tools}"),
        }
    }

    fn verdicts(client: &RuntimeClient) -> Vec<&'static str> {
        engines()
            .iter()
            .map(|e| match check(e, client, false).verdict {
                Verdict::Works => "works",
                Verdict::Refused { .. } => "refused",
                Verdict::Ignored { .. } => "ignored",
                Verdict::Unknown { .. } => "unknown",
            })
            .collect()
    }

    #[test]
    fn the_embedded_table_loads() {
        let table = TABLE.as_ref().expect("data/docker-api.json parses");
        for (_, cri) in &table.rke_tools_cri_dockerd.from {
            assert!(table.cri_dockerd.api.contains_key(cri), "{cri}");
        }
    }

    #[test]
    fn dockershim_works_up_to_docker_28_and_is_refused_by_29() {
        for k8s in ["v1.20.15-rancher2-2", "v1.23.16-rancher2-3"] {
            assert_eq!(
                verdicts(&dockershim(k8s)),
                ["works", "works", "works", "works", "refused"],
                "{k8s}"
            );
        }
        let c = check(&engines()[4], &dockershim("v1.23.16-rancher2-3"), false);
        let (reason, remedy) = c.refused().expect("refused");
        assert_eq!(
            reason,
            "Docker 29.0.1 accepts Engine API ≥ 1.44; kubelet v1.23's dockershim speaks ≤ 1.41"
        );
        assert!(
            remedy.contains("enable_cri_dockerd: true")
                && remedy.contains("rancher/rke-tools:v0.1.107")
                && remedy.contains("v1.24 or newer")
                && remedy.contains(
                    "(\"min-api-version\": \"1.41\" in /etc/docker/daemon.json, Docker 29.0 or newer; or DOCKER_MIN_API_VERSION=1.41 in dockerd's environment)"
                )
                && remedy.ends_with(
                    "or run a Docker release whose default minimum API accepts 1.41 (28.5 or older, 29.3 or newer)"
                ),
            "{remedy}"
        );
        // Docker 29.3 lowered its default minimum to 1.40: the table knows it for a daemon
        // that does not report its own.
        let unreported = Engine {
            min_api_version: None,
            api_version: None,
            ..docker("29.3.1", "1.40", "1.54")
        };
        let c = check(&unreported, &dockershim("v1.20.15-rancher2-2"), false);
        assert_eq!(c.verdict, Verdict::Works, "{c:?}");
        assert_eq!(c.spoken_api, ApiVersion::parse("1.40"));
        // v1.20 cannot enable cri-dockerd (RKE1 allows it from v1.21).
        let c = check(&engines()[4], &dockershim("v1.20.15-rancher2-2"), false);
        let (reason, remedy) = c.refused().expect("refused");
        assert!(
            reason.ends_with("kubelet v1.20's dockershim speaks ≤ 1.40"),
            "{reason}"
        );
        assert!(!remedy.contains("enable_cri_dockerd"), "{remedy}");
        // Docker 20.10 and v1.20: they settle on the older of the two newest versions.
        let c = check(&engines()[0], &dockershim("v1.20.15-rancher2-2"), false);
        assert_eq!(c.spoken_api, ApiVersion::parse("1.40"));
    }

    #[test]
    fn each_cri_dockerd_of_rke_tools() {
        // 0.3.14 (v0.1.100) and 0.3.15 (v0.1.102-v0.1.105) speak 1.43; 0.3.16 (v0.1.108+) 1.44.
        for tools in ["v0.1.100", "v0.1.102", "v0.1.105"] {
            let client = cri_dockerd("v1.30.14-rancher1-1", tools);
            assert_eq!(
                verdicts(&client),
                ["works", "works", "works", "works", "refused"],
                "{tools}"
            );
            let c = check(&engines()[4], &client, false);
            let (reason, remedy) = c.refused().expect("refused");
            assert!(reason.ends_with("speaks ≤ 1.43"), "{reason}");
            assert!(
                remedy.starts_with(
                    "set system_images.kubernetes_services_sidecar to rancher/rke-tools:v0.1.107 or newer (cri-dockerd 0.3.16)"
                ),
                "{remedy}"
            );
        }
        for tools in ["v0.1.108", "v0.1.111"] {
            let client = cri_dockerd("v1.31.14-rancher1-1", tools);
            assert_eq!(
                verdicts(&client),
                ["works", "works", "works", "works", "works"],
                "{tools}"
            );
            let c = check(&engines()[4], &client, false);
            assert_eq!(
                c.runtime,
                format!("cri-dockerd 0.3.16 (rancher/rke-tools:{tools})")
            );
            assert_eq!(c.spoken_api, ApiVersion::parse("1.44"));
            assert!(c.warnings.iter().any(|w| w.contains("API 1.24")), "{c:?}");
        }
        // Docker 24 and cri-dockerd 0.3.16: it lowers its version to the daemon's.
        let c = check(
            &engines()[1],
            &cri_dockerd("v1.32.13-rancher1-3", "v0.1.111"),
            false,
        );
        assert_eq!(c.verdict, Verdict::Works);
        assert_eq!(c.spoken_api, ApiVersion::parse("1.43"));
    }

    #[test]
    fn from_v1_24_the_runtime_is_cri_dockerd_even_unset() {
        let client = RuntimeClient {
            cri_dockerd: false,
            ..cri_dockerd("v1.27.16-rancher1-1", "v0.1.100")
        };
        assert!(
            check(&engines()[4], &client, false)
                .runtime
                .starts_with("cri-dockerd 0.3.14")
        );
    }

    #[test]
    fn ignore_docker_version_turns_a_refusal_into_a_warning() {
        let c = check(&engines()[4], &dockershim("v1.20.15-rancher2-2"), true);
        assert!(matches!(c.verdict, Verdict::Ignored { .. }), "{c:?}");
        assert!(c.refused().is_none());
        assert!(c.all_warnings()[0].contains("ignore_docker_version is set"));
    }

    #[test]
    fn unknown_ranges_refuse_nothing() {
        // Not an rke-tools image: which cri-dockerd it carries is not known.
        let client = RuntimeClient {
            tools_image: "registry.example/tools:latest".into(),
            ..cri_dockerd("v1.30.14-rancher1-1", "x")
        };
        let c = check(&engines()[4], &client, false);
        let Verdict::Unknown { note } = &c.verdict else {
            panic!("{c:?}")
        };
        assert!(note.contains("0.3.16 or newer"), "{note}");
        // A release newer than the newest checked carries the newest known cri-dockerd.
        let c = check(
            &engines()[4],
            &cri_dockerd("v1.32.13-rancher1-3", "v0.1.114"),
            false,
        );
        assert_eq!(c.verdict, Verdict::Works);
        assert!(
            c.warnings[0].contains("taken to carry cri-dockerd 0.3.16"),
            "{c:?}"
        );
        // A host that reports no range is looked up by its release.
        let bare = Engine {
            version: "29.0.0".into(),
            ..Engine::default()
        };
        let c = check(&bare, &dockershim("v1.22.17-rancher1-2"), false);
        assert!(c.refused().is_some(), "{c:?}");
        // An engine too old for any runtime.
        let c = check(
            &docker("1.13.1", "1.12", "1.25"),
            &dockershim("v1.20.15-rancher2-2"),
            false,
        );
        assert!(c.refused().unwrap().0.contains("needs ≥ 1.26"), "{c:?}");
    }

    #[test]
    fn rke_tools_without_cri_dockerd_is_reported_not_refused() {
        let c = check(
            &engines()[0],
            &cri_dockerd("v1.24.17-rancher1-1", "v0.1.75"),
            false,
        );
        let Verdict::Unknown { note } = &c.verdict else {
            panic!("{c:?}")
        };
        assert!(note.contains("carries no cri-dockerd"), "{note}");
    }
}
