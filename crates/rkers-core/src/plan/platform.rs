//! The platform seam: the one place a Linux host and a Windows worker part ways. A host's
//! [`Platform`] is chosen once, from its Docker facts ([`Platform::of`]); the plan's builder
//! picks the per-OS host plan from it, and the commands' steps and the executor ask it what
//! differs (where a host's files are kept and how their paths read, whether Linux helper
//! containers, probes and file modes apply there, whether its worker plane runs under wins)
//! instead of testing the OS themselves. How a Windows worker's host work runs (the host agent,
//! privileged steps through the wins pipe) is the engine's `phases::windows`.

use super::util::join_path;
use super::{ClusterPlan, HostFacts, HostPlan};

/// How a host is driven: a Linux host (containers, helper containers for its files) or a
/// Windows worker (host processes started through wins, files through the host agent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Platform {
    #[default]
    Linux,
    Windows,
}

impl Platform {
    /// The platform Docker reports for a host: the one OS test there is.
    pub fn of(facts: &HostFacts) -> Platform {
        Self::of_os_type(&facts.os_type)
    }

    /// The platform of Docker's `OSType` (`linux` or `windows`).
    pub fn of_os_type(os_type: &str) -> Platform {
        if os_type.eq_ignore_ascii_case("windows") {
            Platform::Windows
        } else {
            Platform::Linux
        }
    }

    /// The directory a host's files are kept relative to: `<prefix>/etc/kubernetes` on Linux;
    /// the drive root on a Windows worker, whose plan also writes CNI, flannel, nginx and wins
    /// files.
    pub fn files_root(self, h: &HostPlan) -> String {
        match self {
            Platform::Linux => join_path(&[&h.prefix_path, "/etc/kubernetes"]),
            Platform::Windows => h.prefix_path.clone(),
        }
    }

    /// A planned path (`/etc/kubernetes/ssl/kube-ca.pem`, or a Windows plan's `c:/...`) as
    /// it reads relative to [`Platform::files_root`]; `None` when it is kept elsewhere.
    pub fn relative_path<'p>(self, h: &HostPlan, path: &'p str) -> Option<&'p str> {
        match self {
            Platform::Linux => path.strip_prefix("/etc/kubernetes/"),
            Platform::Windows => path
                .strip_prefix(h.prefix_path.as_str())
                .or_else(|| path.strip_prefix('/')),
        }
    }

    /// A path relative to the files root as Linux keeps it, relative to `etc/kubernetes`, for
    /// the rules keyed on those paths (which containers read a file, certificate expiry, least
    /// privilege); `None` for a Windows worker's files outside `etc/kubernetes`.
    pub fn kubernetes_path(self, relative: &str) -> Option<&str> {
        relative.strip_prefix(self.kubernetes_dir())
    }

    /// Where `etc/kubernetes` is, relative to the files root: the prefix
    /// [`Platform::kubernetes_path`] takes away.
    pub fn kubernetes_dir(self) -> &'static str {
        match self {
            Platform::Linux => "",
            Platform::Windows => "etc/kubernetes/",
        }
    }

    /// Linux helper containers run there: the file helper, the port listeners and probes, the
    /// calico checks and the log links. A Windows engine runs none of them.
    pub fn runs_linux_helpers(self) -> bool {
        self == Platform::Linux
    }

    /// Files get the planned mode and owner; a Windows worker's files are protected by the
    /// ACL they are written with.
    pub fn sets_file_modes(self) -> bool {
        self == Platform::Linux
    }

    /// The worker plane runs as host processes wins starts: wins is installed and started
    /// first, orphans of a previous wins are swept before the plane changes, and the plane
    /// cannot start early with the Linux workers.
    pub fn runs_under_wins(self) -> bool {
        self == Platform::Windows
    }
}

impl ClusterPlan {
    /// The platform the plan was built for on `address` (a Windows worker is one the plan
    /// holds a wins setup for).
    pub fn platform(&self, address: &str) -> Platform {
        if self.windows.contains_key(address) {
            Platform::Windows
        } else {
            Platform::Linux
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(prefix: &str) -> HostPlan {
        HostPlan {
            address: "10.0.0.1".into(),
            internal_address: String::new(),
            hostname: "n1".into(),
            roles: Default::default(),
            prefix_path: prefix.into(),
            containers: Default::default(),
            files: Vec::new(),
            certificate_names: Vec::new(),
            port_checks: Vec::new(),
        }
    }

    #[test]
    fn the_os_type_alone_chooses_the_platform() {
        assert_eq!(Platform::of_os_type("Windows"), Platform::Windows);
        assert_eq!(Platform::of_os_type("linux"), Platform::Linux);
        assert_eq!(Platform::of_os_type(""), Platform::Linux);
    }

    #[test]
    fn files_are_kept_under_etc_kubernetes_on_linux_and_the_drive_root_on_windows() {
        let linux = host("/opt/rke");
        assert_eq!(
            Platform::Linux.files_root(&linux),
            "/opt/rke/etc/kubernetes"
        );
        assert_eq!(
            Platform::Linux.relative_path(&linux, "/etc/kubernetes/ssl/kube-ca.pem"),
            Some("ssl/kube-ca.pem")
        );
        assert_eq!(Platform::Linux.relative_path(&linux, "/etc/cni/x"), None);
        let windows = host("c:/");
        assert_eq!(Platform::Windows.files_root(&windows), "c:/");
        assert_eq!(
            Platform::Windows.relative_path(&windows, "c:/etc/kubernetes/ssl/kube-ca.pem"),
            Some("etc/kubernetes/ssl/kube-ca.pem")
        );
        assert_eq!(
            Platform::Windows.relative_path(&windows, "/etc/kubernetes/ssl/kube-ca.pem"),
            Some("etc/kubernetes/ssl/kube-ca.pem")
        );
        assert_eq!(
            Platform::Windows.kubernetes_path("etc/kubernetes/ssl/kube-ca.pem"),
            Some("ssl/kube-ca.pem")
        );
        assert_eq!(Platform::Windows.kubernetes_path("etc/cni/net.d/x"), None);
        assert_eq!(
            Platform::Linux.kubernetes_path("ssl/kube-ca.pem"),
            Some("ssl/kube-ca.pem")
        );
    }
}
