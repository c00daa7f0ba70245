//! What changed between the last applied config (the state's `currentState`) and the new one,
//! and the steps that follow from it besides the per-host container diff: etcd members joined
//! one at a time (§16.3) and removed before their containers go (§16.4), and hosts that left
//! the cluster cleaned up and their nodes deleted (§22.2, §24.2).
//! The membership changes themselves go through `etcdctl` ([`super::etcd_membership`]).

use crate::config::RkeConfig;
use crate::diff::Action;
use crate::hosts::{ContainerSpec, Host, HostError};
use std::collections::BTreeSet;
use std::time::Duration;

/// A host of the previous config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OldHost {
    pub address: String,
    pub internal_address: String,
    pub hostname: String,
    pub etcd: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Hosts in the previous config and not in the new one.
    pub removed_hosts: Vec<OldHost>,
    /// Etcd hosts of the new config that were not etcd members before, in config order.
    pub etcd_added: Vec<String>,
    /// Etcd members to remove: hosts removed, or that lost the etcd role.
    pub etcd_removed: Vec<OldHost>,
}

fn has_role(roles: &[String], role: &str) -> bool {
    roles.iter().any(|r| r == role)
}

/// RKE1's guard (§16.4): no etcd host of the cluster stays, so no member would carry the data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "Etcd plane nodes are replaced. Stopping provisioning. Please restore your cluster from backup \
     (keep at least one current etcd host in cluster.yml while adding the new ones)"
)]
pub struct EtcdPlaneReplaced;

/// Compares the previous config with the new one; nothing changes for a new cluster.
pub fn changes(old: Option<&RkeConfig>, new: &RkeConfig) -> Result<Changes, EtcdPlaneReplaced> {
    let Some(old) = old else {
        return Ok(Changes::default());
    };
    let new_addresses: BTreeSet<&str> = new.nodes.iter().map(|n| n.address.as_str()).collect();
    let old_etcd: BTreeSet<&str> = old
        .nodes
        .iter()
        .filter(|n| has_role(&n.role, "etcd"))
        .map(|n| n.address.as_str())
        .collect();
    let new_etcd: BTreeSet<&str> = new
        .nodes
        .iter()
        .filter(|n| has_role(&n.role, "etcd"))
        .map(|n| n.address.as_str())
        .collect();
    let old_host = |n: &crate::config::Node| OldHost {
        address: n.address.clone(),
        internal_address: n.internal_address.clone(),
        hostname: n.hostname_override.clone(),
        etcd: has_role(&n.role, "etcd"),
    };
    let changes = Changes {
        removed_hosts: old
            .nodes
            .iter()
            .filter(|n| !new_addresses.contains(n.address.as_str()))
            .map(old_host)
            .collect(),
        etcd_added: new
            .nodes
            .iter()
            .filter(|n| has_role(&n.role, "etcd") && !old_etcd.contains(n.address.as_str()))
            .map(|n| n.address.clone())
            .collect(),
        etcd_removed: old
            .nodes
            .iter()
            .filter(|n| has_role(&n.role, "etcd") && !new_etcd.contains(n.address.as_str()))
            .map(old_host)
            .collect(),
    };
    if !old_etcd.is_empty()
        && old_etcd.is_disjoint(&new_etcd)
        && new.services.etcd.external_urls.is_empty()
    {
        return Err(EtcdPlaneReplaced);
    }
    Ok(changes)
}

pub fn member_name(hostname: &str) -> String {
    format!("etcd-{hostname}")
}

pub fn peer_url(internal_address: &str) -> String {
    format!("https://{}:2380", crate::config::url_host(internal_address))
}

/// Deletes the contents of directories on a host with a one-shot container (RKE1's
/// `kube-cleaner`, §24): only the listed directories, nothing else.
pub async fn clean_directories(host: &Host, image: &str, dirs: &[String]) -> Result<(), HostError> {
    if dirs.is_empty() {
        return Ok(());
    }
    let spec = ContainerSpec {
        image: image.to_string(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec![empty_directories_script(dirs)],
        binds: dirs.iter().map(|d| format!("{d}:{d}:z")).collect(),
        privileged: true,
        // It only deletes files: no network to set up (a bridge endpoint costs Docker time).
        network_mode: Some("none".into()),
        ..Default::default()
    };
    host.docker()
        .run_to_success("kube-cleaner", &spec, Duration::from_secs(300))
        .await
        .map(drop)
}

/// What [`clean_directories`] and [`crate::phases::log_links::clean_log_links`] do, run by the
/// host's own shell: for a host whose SSH user is root, which needs no helper container.
pub async fn clean_as_root(
    host: &Host,
    dirs: &[String],
    log_dir: Option<&str>,
) -> Result<(), HostError> {
    run_as_root(host, "clean as root", &clean_as_root_script(dirs, log_dir)).await
}

/// What `etcd-fix-perm` does (and, for a joining member, [`clean_directories`] before it), run
/// by the host's own shell: `path` exists, emptied first when `empty_first`, and only its owner
/// reads it.
pub async fn make_private_directory_as_root(
    host: &Host,
    path: &str,
    empty_first: bool,
) -> Result<(), HostError> {
    run_as_root(
        host,
        "etcd-fix-perm as root",
        &private_directory_script(path, empty_first),
    )
    .await
}

fn private_directory_script(path: &str, empty_first: bool) -> String {
    let make = format!("mkdir -p {0} && chmod 700 {0}", shell_words::quote(path));
    if empty_first {
        let emptied = empty_directories_script(&[path.to_string()]);
        format!("{{ {emptied}; }} && {make}")
    } else {
        make
    }
}

/// Runs `script` in the host's shell; a failure names `command`, its exit status and the end
/// of its stderr.
async fn run_as_root(host: &Host, command: &str, script: &str) -> Result<(), HostError> {
    let out = host.link().exec(script).await?;
    if out.success() {
        return Ok(());
    }
    Err(HostError::Exec {
        host: host.name().to_string(),
        command: command.into(),
        detail: format!(
            "exit status {}: {}",
            out.exit_status.map_or("unknown".into(), |c| c.to_string()),
            crate::output::last_lines(&String::from_utf8_lossy(&out.stderr), 5).join("\n    ")
        ),
    })
}

/// [`clean_as_root`]'s one command: every part runs, and any failed part fails the whole.
fn clean_as_root_script(dirs: &[String], log_dir: Option<&str>) -> String {
    let mut parts = Vec::new();
    if !dirs.is_empty() {
        parts.push(empty_directories_script(dirs));
    }
    if let Some(dir) = log_dir {
        parts.push(crate::phases::log_links::dangling_links_script(dir));
    }
    let parts: String = parts
        .iter()
        .map(|p| format!("{{ {p}; }} || rc=1; "))
        .collect();
    format!("rc=0; {parts}[ \"$rc\" = 0 ]")
}

/// Empties every directory of `dirs` that exists, all at once (distinct trees; etcd's data is
/// the big one), and exits non-zero when anything could not be deleted. RKE1's cleaner ignores
/// such failures (its script ends in `true`); a removal that left files is not reported done.
fn empty_directories_script(dirs: &[String]) -> String {
    format!(
        "pids=; for d in {}; do {{ [ ! -d \"$d\" ] || find \"$d\" -mindepth 1 -delete; }} & \
         pids=\"$pids $!\"; done; failed=0; for p in $pids; do wait \"$p\" || failed=1; done; \
         [ \"$failed\" = 0 ]",
        shell_words::join(dirs)
    )
}

/// What RKE1 cleans on a host that left the cluster (§24.2), with the host's prefix path.
pub fn removed_host_directories(prefix: &str, etcd: bool) -> Vec<String> {
    let p = |path: &str| crate::plan::join_path(&[prefix, path]);
    let mut dirs = vec![
        p("/etc/kubernetes"),
        "/etc/cni".to_string(),
        "/opt/cni".to_string(),
        "/var/run/calico".to_string(),
        p("/var/lib/cni"),
    ];
    if etcd {
        dirs.push(p("/var/lib/etcd"));
    }
    dirs
}

/// How a reachable host that left the cluster is cleaned once its containers are gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostCleanup {
    /// RKE1's `kube-cleaner` over these directories (a Linux image).
    Linux { directories: Vec<String> },
    /// A Windows worker is torn down through wins instead: a Linux cleaner cannot run there,
    /// and its wins-managed processes, firewall rules and HNS network would outlive it.
    /// `image` is the one the teardown's privileged step runs in (the sidekick's).
    Windows {
        plan: crate::plan::WindowsRemovePlan,
        image: String,
    },
}

impl HostCleanup {
    /// The cleanup for a host of `platform` that had `prefix` and the etcd role; a Windows
    /// one runs in `windows_image`.
    pub fn for_host(
        platform: crate::plan::Platform,
        prefix: &str,
        etcd: bool,
        windows_image: &str,
    ) -> HostCleanup {
        match platform {
            crate::plan::Platform::Windows => HostCleanup::windows(windows_image),
            crate::plan::Platform::Linux => HostCleanup::Linux {
                directories: removed_host_directories(prefix, etcd),
            },
        }
    }

    /// A Windows worker's teardown (the same as `rkers remove`'s), run in `image`. `up` installed
    /// and registered wins, so it is unregistered too.
    pub fn windows(image: &str) -> HostCleanup {
        HostCleanup::Windows {
            plan: crate::plan::remove_plan_windows(crate::plan::WINDOWS_PREFIX_PATH, true),
            image: image.to_string(),
        }
    }

    /// The containers to look for on the host: every container `up` may have left on it.
    pub fn containers<'a>(&'a self, linux: &'a [&'a str]) -> Vec<&'a str> {
        match self {
            HostCleanup::Linux { .. } => linux.to_vec(),
            HostCleanup::Windows { plan, .. } => {
                plan.containers.iter().map(String::as_str).collect()
            }
        }
    }

    pub fn action(&self) -> Action {
        match self {
            HostCleanup::Linux { directories } => Action::CleanDirectories {
                paths: directories.clone(),
            },
            HostCleanup::Windows { plan, image } => Action::CleanWindowsHost {
                directories: plan.directories.clone(),
                unregister_wins: plan.unregister_wins,
                image: image.clone(),
            },
        }
    }
}

/// The actions shown for a host that left the cluster; `cleanup` is `None` when the host
/// cannot be reached.
pub fn removed_host_actions(
    host: &OldHost,
    present: &[String],
    cleanup: Option<&HostCleanup>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    if host.etcd {
        actions.push(Action::RemoveEtcdMember {
            member: member_name(&host.hostname),
        });
    }
    for name in present {
        actions.push(Action::RemoveContainer {
            name: name.clone(),
            reason: "host removed from the cluster".into(),
        });
    }
    if let Some(cleanup) = cleanup {
        actions.push(cleanup.action());
    }
    actions.push(Action::DeleteNode {
        node: host.hostname.clone(),
    });
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cleaning_scripts_empty_what_exists_and_drop_only_dangling_links() {
        let root = tempfile::tempdir().unwrap();
        let dir = |p: &str| root.path().join(p).display().to_string();
        for d in ["a/sub", "b"] {
            std::fs::create_dir_all(dir(d)).unwrap();
        }
        std::fs::write(dir("a/sub/f"), "x").unwrap();
        std::fs::write(dir("b/g"), "x").unwrap();
        std::fs::create_dir_all(dir("log")).unwrap();
        std::fs::write(dir("target"), "x").unwrap();
        std::os::unix::fs::symlink(dir("target"), dir("log/kept.log")).unwrap();
        std::os::unix::fs::symlink(dir("gone"), dir("log/dangling.log")).unwrap();
        let script = clean_as_root_script(
            &[dir("a"), dir("missing"), dir("b with space"), dir("b")],
            Some(&dir("log")),
        );
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let entries = |p: &str| std::fs::read_dir(dir(p)).unwrap().count();
        assert_eq!((entries("a"), entries("b")), (0, 0));
        assert!(std::fs::symlink_metadata(dir("log/kept.log")).is_ok());
        assert!(std::fs::symlink_metadata(dir("log/dangling.log")).is_err());
        assert!(std::path::Path::new(&dir("target")).exists());

        // A tree that cannot be emptied fails the whole command (RKE1's cleaner said nothing);
        // the dangling log links are dropped all the same.
        std::os::unix::fs::symlink(dir("gone"), dir("log/dangling.log")).unwrap();
        let failing = clean_as_root_script(&[dir("a")], Some(&dir("log")))
            .replace("find \"$d\" -mindepth 1 -delete", "false");
        assert!(failing.contains("false;"), "{failing}");
        let status = std::process::Command::new("/bin/sh")
            .args(["-c", &failing])
            .status()
            .unwrap();
        assert!(!status.success());
        assert!(std::fs::symlink_metadata(dir("log/dangling.log")).is_err());
    }

    #[test]
    fn the_private_directory_script_makes_it_0700_and_empties_it_only_when_asked() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let etcd = root.path().join("var lib/etcd");
        let path = etcd.display().to_string();
        let sh = |script: String| {
            std::process::Command::new("/bin/sh")
                .args(["-c", &script])
                .status()
                .unwrap()
                .success()
        };
        assert!(sh(private_directory_script(&path, false)));
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&etcd), 0o700);

        std::fs::create_dir_all(etcd.join("member/snap")).unwrap();
        std::fs::set_permissions(&etcd, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(sh(private_directory_script(&path, false)));
        assert!(etcd.join("member/snap").exists(), "kept unless asked");
        assert_eq!(mode(&etcd), 0o700);
        assert!(sh(private_directory_script(&path, true)));
        assert_eq!(std::fs::read_dir(&etcd).unwrap().count(), 0);
        assert_eq!(mode(&etcd), 0o700);

        // A directory that cannot be emptied fails before it is made private.
        let failing = private_directory_script(&path, true)
            .replace("find \"$d\" -mindepth 1 -delete", "false");
        assert!(failing.contains("false;"), "{failing}");
        std::fs::set_permissions(&etcd, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!sh(failing));
        assert_eq!(mode(&etcd), 0o755);
    }

    fn config(nodes: &[(&str, &[&str])]) -> RkeConfig {
        let mut c = RkeConfig::default();
        for (addr, roles) in nodes {
            c.nodes.push(crate::config::Node {
                address: addr.to_string(),
                internal_address: addr.to_string(),
                hostname_override: format!("h{}", &addr[addr.len() - 1..]),
                role: roles.iter().map(|r| r.to_string()).collect(),
                ..Default::default()
            });
        }
        c
    }

    #[test]
    fn new_cluster_has_no_membership_changes() {
        let new = config(&[("10.0.0.1", &["etcd"])]);
        assert_eq!(changes(None, &new).unwrap(), Changes::default());
    }

    #[test]
    fn growing_and_shrinking_etcd_and_removing_a_worker() {
        let old = config(&[
            ("10.0.0.1", &["etcd", "controlplane"]),
            ("10.0.0.2", &["worker"]),
            ("10.0.0.4", &["worker", "etcd"]),
        ]);
        let new = config(&[
            ("10.0.0.1", &["etcd", "controlplane"]),
            ("10.0.0.2", &["worker", "etcd"]),
            ("10.0.0.3", &["etcd"]),
        ]);
        let c = changes(Some(&old), &new).unwrap();
        assert_eq!(c.etcd_added, ["10.0.0.2", "10.0.0.3"]);
        assert_eq!(
            c.removed_hosts
                .iter()
                .map(|h| h.address.as_str())
                .collect::<Vec<_>>(),
            ["10.0.0.4"]
        );
        assert_eq!(
            c.etcd_removed
                .iter()
                .map(|h| h.address.as_str())
                .collect::<Vec<_>>(),
            ["10.0.0.4"]
        );
    }

    #[test]
    fn replacing_every_etcd_member_at_once_is_refused() {
        let old = config(&[("10.0.0.1", &["etcd"])]);
        let new = config(&[("10.0.0.2", &["etcd"])]);
        assert_eq!(changes(Some(&old), &new).unwrap_err(), EtcdPlaneReplaced);
        assert!(
            EtcdPlaneReplaced
                .to_string()
                .contains("Etcd plane nodes are replaced")
        );
    }

    #[test]
    fn removed_host_cleanup_lists_rke1_directories_with_prefix() {
        let dirs = removed_host_directories("/opt/rke", true);
        assert_eq!(
            dirs,
            [
                "/opt/rke/etc/kubernetes",
                "/etc/cni",
                "/opt/cni",
                "/var/run/calico",
                "/opt/rke/var/lib/cni",
                "/opt/rke/var/lib/etcd"
            ]
        );
        let host = OldHost {
            address: "a".into(),
            internal_address: "a".into(),
            hostname: "h4".into(),
            etcd: false,
        };
        let cleanup =
            HostCleanup::for_host(crate::plan::Platform::Linux, "/opt/rke", true, "unused");
        assert_eq!(
            cleanup,
            HostCleanup::Linux {
                directories: dirs.clone()
            }
        );
        let actions = removed_host_actions(&host, &["kubelet".into()], Some(&cleanup));
        assert_eq!(
            actions,
            [
                Action::RemoveContainer {
                    name: "kubelet".into(),
                    reason: "host removed from the cluster".into()
                },
                Action::CleanDirectories { paths: dirs },
                Action::DeleteNode { node: "h4".into() }
            ]
        );
        // Unreachable: nothing to clean, the node is deleted all the same.
        assert_eq!(
            removed_host_actions(&host, &[], None),
            [Action::DeleteNode { node: "h4".into() }]
        );
    }

    #[test]
    fn a_windows_worker_that_left_is_torn_down_through_wins() {
        let cleanup = HostCleanup::for_host(crate::plan::Platform::Windows, "/", false, "sidekick");
        let HostCleanup::Windows { plan, image } = &cleanup else {
            panic!("{cleanup:?}")
        };
        assert!(plan.unregister_wins);
        assert_eq!(image, "sidekick");
        // Only the Windows worker's containers are looked for.
        assert_eq!(
            cleanup.containers(&["etcd", "kubelet"]),
            ["kube-proxy", "kubelet", "nginx-proxy", "service-sidekick"]
        );
        let host = OldHost {
            address: "w".into(),
            internal_address: "w".into(),
            hostname: "win1".into(),
            etcd: false,
        };
        let shown: Vec<String> = removed_host_actions(&host, &["kubelet".into()], Some(&cleanup))
            .iter()
            .map(|a| a.to_string())
            .collect();
        assert_eq!(
            shown[0],
            "remove container kubelet (host removed from the cluster)"
        );
        assert!(
            shown[1].starts_with("through wins: stop the rancher-wins-* processes"),
            "{shown:?}"
        );
        assert!(shown[1].contains(r"c:\etc\kubernetes, "), "{shown:?}");
        assert!(
            shown[1].ends_with("unregister the rancher-wins service"),
            "{shown:?}"
        );
        assert!(!shown[1].contains("/var/run/calico"), "{shown:?}");
        assert_eq!(shown[2], "delete node win1");
    }
}
