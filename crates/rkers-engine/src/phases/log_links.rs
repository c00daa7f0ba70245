//! RKE1's log links (§8.5): `/var/lib/rancher/rke/log/<container>_<id>.log` points at the Docker
//! log of every Kubernetes component, so log shippers configured for RKE1 clusters keep finding
//! them; links whose log is gone are removed.
//!
//! RKE1 starts a privileged `rke-log-linker` container after every component and an
//! `rke-log-cleaner` at the end of `up`; rkers does both at once per host, and only on hosts
//! where a component container was created in this run: inside the running kubelet, which
//! mounts `/var/lib/rancher` and Docker's root directory at their host paths, or, when there is
//! no kubelet to run it in, in one helper container like RKE1's.

use crate::hosts::{self, Host, HostError};
use std::time::Duration;

/// The directory RKE1 keeps the links in.
pub const LOG_LINK_DIR: &str = "/var/lib/rancher/rke/log";

/// The start of the kubelet bind that makes [`LOG_LINK_DIR`] the host's directory.
const LOG_LINK_ROOT_BIND: &str = "/var/lib/rancher:/var/lib/rancher";

/// The shell script that links `(container name, id, log path)` and removes dangling links.
/// Names, IDs and paths come from Docker and contain no quote characters; they are still quoted.
pub fn link_script(links: &[(String, String, String)]) -> String {
    let mut script = format!("set -e; mkdir -p {LOG_LINK_DIR}; ");
    for (name, id, log_path) in links {
        script.push_str(&format!(
            "ln -sfn '{log_path}' '{LOG_LINK_DIR}/{name}_{id}.log'; "
        ));
    }
    // A link whose target is gone belonged to a removed container.
    script.push_str(&format!(
        "for l in {LOG_LINK_DIR}/*.log; do [ -L \"$l\" ] && [ ! -e \"$l\" ] && rm -f \"$l\"; done; true"
    ));
    script
}

/// Links the logs of `containers` on `host` and cleans dangling links. `docker_root` is the
/// host's Docker root directory, mounted at the same path so the links' targets can be checked.
pub async fn link_logs(
    host: &Host,
    helper_image: &str,
    docker_root: &str,
    containers: &[String],
) -> Result<(), HostError> {
    let docker = host.docker();
    let mut links = Vec::new();
    for name in containers {
        if let Some(c) = docker.inspect_container(name).await?
            && let Some(path) = c.log_path
            && !path.contains('\'')
        {
            links.push((name.clone(), c.id, path));
        }
    }
    let script = link_script(&links);
    // Every Linux host runs kubelet; a command in it costs one exec instead of a container's
    // create, start, wait and removal, which at 30 hosts on two cores took two minutes.
    let kubelet_running = docker
        .inspect_container("kubelet")
        .await?
        .is_some_and(|k| k.running && k.binds.iter().any(|b| b.starts_with(LOG_LINK_ROOT_BIND)));
    if kubelet_running {
        match docker
            .exec_detached(
                "kubelet",
                &["/bin/sh", "-c", &script],
                Duration::from_secs(60),
            )
            .await
        {
            Ok(0) => return Ok(()),
            // The helper container below reports why, with the script's output.
            Ok(code) => tracing::debug!(host = host.name(), code, "log links in kubelet failed"),
            Err(e) => {
                tracing::debug!(host = host.name(), error = %e, "log links in kubelet failed")
            }
        }
    }
    let mut binds = vec!["/var/lib:/var/lib".to_string()];
    if !docker_root.is_empty() && !docker_root.starts_with("/var/lib/") {
        binds.push(format!("{docker_root}:{docker_root}"));
    }
    let spec = hosts::ContainerSpec {
        image: helper_image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![script],
        binds,
        privileged: true,
        // It only touches files: no network to set up (a bridge endpoint costs Docker time).
        network_mode: Some("none".into()),
        ..Default::default()
    };
    docker
        .run_to_success("rke-log-linker", &spec, Duration::from_secs(60))
        .await
        .map(drop)
}

/// Drops the dangling log links under `dir` (RKE1's `rke-log-cleaner`) in a one-shot
/// container of `image`.
pub async fn clean_log_links(host: &Host, image: &str, dir: &str) -> Result<(), HostError> {
    let spec = crate::hosts::ContainerSpec {
        image: image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![dangling_links_script(dir)],
        binds: vec!["/var/lib:/var/lib".into()],
        privileged: true,
        network_mode: Some("none".into()),
        ..Default::default()
    };
    host.docker()
        .run_to_success(
            crate::phases::remove::LOG_CLEANER,
            &spec,
            std::time::Duration::from_secs(120),
        )
        .await
        .map(drop)
}

/// Deletes the dangling links under `dir`, when it exists; exits non-zero when one could not be
/// deleted (RKE1's cleaner ignores that).
pub(crate) fn dangling_links_script(dir: &str) -> String {
    let dir = shell_words::quote(dir);
    format!("[ ! -d {dir} ] || find {dir} -type l ! -exec test -e {{}} \\; -print -delete")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_named_like_rke1s_and_dangling_ones_removed() {
        let s = link_script(&[(
            "kubelet".into(),
            "abc123".into(),
            "/var/lib/docker/containers/abc123/abc123-json.log".into(),
        )]);
        assert!(s.contains(
            "ln -sfn '/var/lib/docker/containers/abc123/abc123-json.log' '/var/lib/rancher/rke/log/kubelet_abc123.log'"
        ));
        assert!(s.contains("[ ! -e \"$l\" ] && rm -f \"$l\""));
    }
}
