//! Reading a host's files and netfilter state for the doctor: one short-lived helper container
//! per host (the cluster's Kubernetes image, which has coreutils and iptables) with the host's
//! paths bound read-only and the host's network namespace, printing sections the checks parse.
//! The same helper, with writable binds, applies the runtime-directory fix.

use crate::hosts::target::RegistryCredential;
use crate::hosts::{ContainerSpec, DockerClient, HostError, OneShotResult};
use std::collections::BTreeMap;
use std::time::Duration;

/// Name of the helper container; a stale one from an interrupted run is replaced.
pub const PROBE_CONTAINER: &str = "rkers-doctor-probe";
pub const FIX_CONTAINER: &str = "rkers-doctor-fix";

/// Marks the start of a section in the helper's output.
const MARK: &str = "##rkers-doctor ";

/// What to read.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProbeWants {
    /// Owner and mode of calico's directories and the tmpfiles.d entries naming calico.
    pub calico: bool,
    /// The nat table's FLANNEL and POSTROUTING lines.
    pub nat: bool,
}

/// The helper's script: only reads, and prints each part under a marker line.
pub fn probe_script(w: ProbeWants) -> String {
    let mut s = String::from("set +e\n");
    if w.calico {
        for dir in super::calico::DIRECTORIES {
            s.push_str(&format!(
                "echo '{MARK}stat {dir}'; stat -L -c '%a %u %g %F' /host{dir} 2>&1\n"
            ));
        }
        s.push_str(&format!(
            "echo '{MARK}tmpfiles'; for f in /host/etc/tmpfiles.d/*.conf; do [ -f \"$f\" ] && \
             grep -H 'calico' \"$f\" | sed 's|^/host||'; done; \
             [ -e /host{entry} ] || echo 'missing {entry}'\n",
            entry = super::calico::TMPFILES_ENTRY
        ));
    }
    if w.nat {
        // Both backends: the node may use either, and a chain lives in only one of them.
        s.push_str(&format!(
            "for b in iptables-legacy-save iptables-nft-save iptables-save; do \
             command -v $b >/dev/null 2>&1 || continue; echo '{MARK}nat '$b; \
             $b -t nat 2>&1 | grep -E 'FLANNEL|POSTROUTING|^#|Error|error' | grep -v '^# Generated\\|^# Completed' | head -40; done\n"
        ));
    }
    s
}

/// Splits the helper's output into sections by marker.
pub fn sections(output: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in output.lines() {
        if let Some(name) = line.strip_prefix(MARK) {
            current = Some(name.trim().to_string());
            out.entry(name.trim().to_string()).or_default();
        } else if let Some(c) = &current {
            out.get_mut(c)
                .expect("section created")
                .push(line.trim_end().to_string());
        }
    }
    out
}

/// Runs a helper container on the host's network namespace with `binds`; returns its output.
pub async fn run_helper(
    docker: &DockerClient,
    name: &str,
    image: &str,
    registries: &[RegistryCredential],
    binds: &[&str],
    script: &str,
) -> Result<OneShotResult, HostError> {
    docker.ensure_image(image, registries, &mut |_| {}).await?;
    let spec = ContainerSpec {
        image: image.to_string(),
        entrypoint: vec!["sh".into(), "-c".into()],
        cmd: vec![script.to_string()],
        binds: binds.iter().map(|b| b.to_string()).collect(),
        network_mode: Some("host".into()),
        // Reading iptables needs CAP_NET_ADMIN in the host's network namespace.
        privileged: true,
        user: Some("0".into()),
        labels: [("io.rkers.doctor".to_string(), "true".to_string())].into(),
        ..Default::default()
    };
    docker
        .run_one_shot(name, &spec, Duration::from_secs(60))
        .await
}

/// Read-only binds of what the probe reads.
pub const PROBE_BINDS: &[&str] = &[
    "/var/run:/host/var/run:ro",
    "/var/lib:/host/var/lib:ro",
    "/etc:/host/etc:ro",
];

/// Reads what `wants` asks for on one host.
pub async fn probe(
    docker: &DockerClient,
    image: &str,
    registries: &[RegistryCredential],
    wants: ProbeWants,
) -> Result<BTreeMap<String, Vec<String>>, HostError> {
    let r = run_helper(
        docker,
        PROBE_CONTAINER,
        image,
        registries,
        PROBE_BINDS,
        &probe_script(wants),
    )
    .await?;
    Ok(sections(&r.logs))
}

/// Why calico's directories and entry could not be written on a host.
#[derive(Debug, thiserror::Error)]
pub enum CalicoFixError {
    /// The helper container could not be run (the error names the host).
    #[error("{0}")]
    Helper(HostError),
    #[error(
        "host {host}: writing calico's directories and {entry} failed (exit {exit_code}): {logs}",
        entry = super::calico::TMPFILES_ENTRY
    )]
    Failed {
        host: String,
        exit_code: i64,
        logs: String,
    },
}

/// Repairs calico's directories and writes the tmpfiles.d entry on one host; the error names
/// the host and the helper's output.
pub async fn apply_calico_fix(
    docker: &DockerClient,
    image: &str,
    registries: &[RegistryCredential],
) -> Result<(), CalicoFixError> {
    let binds = super::calico::fix_binds();
    let binds: Vec<&str> = binds.iter().map(String::as_str).collect();
    let r = run_helper(
        docker,
        FIX_CONTAINER,
        image,
        registries,
        &binds,
        &super::calico::fix_script(),
    )
    .await
    .map_err(CalicoFixError::Helper)?;
    if r.exit_code != 0 {
        return Err(CalicoFixError::Failed {
            host: docker.host().to_string(),
            exit_code: r.exit_code,
            logs: r.logs.trim().to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_fix_names_the_host_the_entry_and_the_output() {
        let e = CalicoFixError::Failed {
            host: "10.0.0.1".into(),
            exit_code: 1,
            logs: "chown: denied".into(),
        };
        assert_eq!(
            e.to_string(),
            format!(
                "host 10.0.0.1: writing calico's directories and {} failed (exit 1): chown: denied",
                crate::checks::calico::TMPFILES_ENTRY
            )
        );
    }

    #[test]
    fn output_splits_into_named_sections() {
        let out = "noise\n##rkers-doctor stat /var/run/calico\n700 0 0 directory\n\
                   ##rkers-doctor tmpfiles\nmissing /etc/tmpfiles.d/calico.conf\n\
                   ##rkers-doctor nat iptables-legacy-save\n:POSTROUTING ACCEPT [0:0]\n";
        let s = sections(out);
        assert_eq!(s["stat /var/run/calico"], ["700 0 0 directory"]);
        assert_eq!(s["tmpfiles"], ["missing /etc/tmpfiles.d/calico.conf"]);
        assert_eq!(s["nat iptables-legacy-save"], [":POSTROUTING ACCEPT [0:0]"]);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn the_script_reads_only_what_is_asked() {
        let both = probe_script(ProbeWants {
            calico: true,
            nat: true,
        });
        assert!(both.contains("/host/var/run/calico") && both.contains("-t nat"));
        let nat = probe_script(ProbeWants {
            calico: false,
            nat: true,
        });
        assert!(!nat.contains("calico") && nat.contains("iptables-legacy-save"));
    }
}
