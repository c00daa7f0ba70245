//! Images: presence, pulls with the registry credentials that apply (retried, one host at a
//! time per image), and how an image name maps to its registry.

use std::time::Duration;

use bollard::query_parameters::CreateImageOptions;
use futures::StreamExt;

use super::DockerClient;
use super::errors::is_not_found;
use crate::hosts::error::HostError;
use crate::hosts::target::RegistryCredential;

/// Progress of an image pull, one event per status line Docker sends.
#[derive(Clone, Debug, Default)]
pub struct PullProgress {
    pub image: String,
    pub layer: Option<String>,
    pub status: String,
    pub current: Option<i64>,
    pub total: Option<i64>,
}

impl DockerClient {
    pub async fn image_exists(&self, image: &str) -> Result<bool, HostError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(self.err(format!("inspect image {image}"), e)),
        }
    }

    /// Pulls `image` with the matching credentials from `registries` (spec §8.6), reporting
    /// each status line to `progress`.
    pub async fn pull_image(
        &self,
        image: &str,
        registries: &[RegistryCredential],
        progress: &mut (dyn FnMut(PullProgress) + Send),
    ) -> Result<(), HostError> {
        let (repo, tag) = split_image(image);
        let creds =
            registry_for_image(image, registries).map(|r| bollard::auth::DockerCredentials {
                username: Some(r.user.clone()),
                password: Some(r.password.expose().to_owned()),
                serveraddress: Some(r.url.clone()),
                ..Default::default()
            });
        let opts = CreateImageOptions {
            from_image: Some(repo.to_owned()),
            tag: Some(tag.to_owned()),
            ..Default::default()
        };
        let mut stream = self.docker.create_image(Some(opts), None, creds);
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| self.err(format!("pull {image}"), e))?;
            if let Some(err) = info.error_detail.and_then(|d| d.message) {
                return Err(HostError::Docker {
                    host: self.host.clone(),
                    op: format!("pull {image}"),
                    detail: err,
                });
            }
            let detail = info.progress_detail.unwrap_or_default();
            progress(PullProgress {
                image: image.to_owned(),
                layer: info.id,
                status: info.status.unwrap_or_default(),
                current: detail.current,
                total: detail.total,
            });
        }
        Ok(())
    }

    /// Makes sure `image` is present: inspect, else pull (up to 3 attempts, as RKE1).
    /// Returns whether a pull happened.
    pub async fn ensure_image(
        &self,
        image: &str,
        registries: &[RegistryCredential],
        progress: &mut (dyn FnMut(PullProgress) + Send),
    ) -> Result<bool, HostError> {
        if self.image_exists(image).await? {
            return Ok(false);
        }
        // Held over the retries: a host that failed once keeps its turn at the registry.
        let _turn = crate::hosts::pulls::PullGate::global().permit(image).await;
        let mut last = None;
        for attempt in 0..3u64 {
            match self.pull_image(image, registries, progress).await {
                Ok(()) => return Ok(true),
                Err(e) => {
                    let msg = e.to_string();
                    last = Some(e);
                    // Authentication and missing images do not heal with retries.
                    if msg.contains("unauthorized")
                        || msg.contains("not found")
                        || msg.contains("no basic auth")
                    {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(500 * (attempt + 1))).await;
                }
            }
        }
        Err(last.expect("at least one attempt"))
    }
}

/// `repo[:tag]` split as Docker does (a `:` after the last `/` starts the tag).
fn split_image(image: &str) -> (&str, &str) {
    let image = image.split('@').next().unwrap_or(image);
    let slash = image.rfind('/').map(|i| i + 1).unwrap_or(0);
    match image[slash..].rfind(':') {
        Some(i) => (&image[..slash + i], &image[slash + i + 1..]),
        None => (image, "latest"),
    }
}

/// The registry key of an image (spec §8.6): its domain, plus the leading path components
/// when the path has more than two.
pub fn registry_key(image: &str) -> String {
    let (repo, _) = split_image(image);
    let parts: Vec<&str> = repo.split('/').collect();
    let has_domain = parts.len() > 1
        && (parts[0].contains('.') || parts[0].contains(':') || parts[0] == "localhost");
    if !has_domain {
        return "docker.io".into();
    }
    let path = &parts[1..];
    if path.len() > 2 {
        format!("{}/{}", parts[0], path[..path.len() - 2].join("/"))
    } else {
        parts[0].to_owned()
    }
}

/// The credentials that apply to `image`, if any.
pub fn registry_for_image<'a>(
    image: &str,
    registries: &'a [RegistryCredential],
) -> Option<&'a RegistryCredential> {
    let key = registry_key(image);
    registries
        .iter()
        .find(|r| r.url.trim_end_matches('/') == key && !r.user.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_split_and_map_to_registries() {
        assert_eq!(
            split_image("10.77.0.1:5000/rkers/rke-tools:v1"),
            ("10.77.0.1:5000/rkers/rke-tools", "v1")
        );
        assert_eq!(split_image("alpine"), ("alpine", "latest"));
        assert_eq!(split_image("host:5000/a"), ("host:5000/a", "latest"));
        assert_eq!(registry_key("rancher/rke-tools:v0.1.100"), "docker.io");
        assert_eq!(
            registry_key("10.77.0.1:5000/rkers/rke-tools:v1"),
            "10.77.0.1:5000"
        );
        assert_eq!(
            registry_key("repo.com/foo/bar/rancher/rke-tools:v1"),
            "repo.com/foo/bar"
        );
        let regs = vec![RegistryCredential {
            url: "10.77.0.1:5000".into(),
            user: "u".into(),
            password: "p".into(),
        }];
        assert!(registry_for_image("10.77.0.1:5000/x/y:1", &regs).is_some());
        assert!(registry_for_image("other.io/x/y:1", &regs).is_none());
    }
}
