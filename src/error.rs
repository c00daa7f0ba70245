//! How a failure reaches the user, the same for every command: the one `result` event a run
//! ends with carries the error's message, the host or hosts it is about and its chain of
//! causes ([`ErrorReport`]). The library's errors are typed and keep their source; this module
//! reads the hosts out of them, so no command has to.

use std::error::Error;

/// A failure as the `result` event shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorReport {
    /// The whole error, as the text output prints it after `error:`.
    pub message: String,
    /// The hosts the error is about, in the error's order; empty when it concerns none.
    pub hosts: Vec<String>,
    /// The error's sources, outermost first, each once (a wrapper that only repeats its
    /// source's text adds nothing).
    pub causes: Vec<String>,
}

impl ErrorReport {
    /// A failure known only as text (usage errors, the runtime not starting).
    pub fn message(message: impl Into<String>) -> Self {
        ErrorReport {
            message: message.into(),
            ..Default::default()
        }
    }

    /// Reads `e`'s hosts from its own type and its causes from its source chain.
    pub fn of(e: &(dyn HostContext + 'static)) -> Self {
        let mut report = Self::of_foreign(e);
        for host in e.hosts() {
            if !report.hosts.iter().any(|h| h == host) {
                report.hosts.push(host.to_string());
            }
        }
        report
    }

    /// The message and causes of an error from outside the library (a client library's), which
    /// names no host of its own.
    pub fn of_foreign(e: &(dyn Error + 'static)) -> Self {
        let message = e.to_string();
        let mut causes: Vec<String> = Vec::new();
        let mut link = e.source();
        while let Some(current) = link {
            let text = current.to_string().trim_end().to_string();
            if text != message.trim_end() && causes.last() != Some(&text) {
                causes.push(text);
            }
            link = current.source();
        }
        ErrorReport {
            message,
            hosts: Vec::new(),
            causes,
        }
    }

    /// The same report with every secret `redact` knows masked (messages may quote a host's
    /// output).
    pub fn redacted(self, redact: impl Fn(&str) -> String) -> Self {
        ErrorReport {
            message: redact(&self.message),
            hosts: self.hosts,
            causes: self.causes.iter().map(|c| redact(c)).collect(),
        }
    }
}

/// An error that names the hosts it is about. Every error a command ends with implements it,
/// so the final event's hosts come from the error's own type: [`crate::cli::CliError::failed`]
/// and [`crate::api::ApiError::Operation`] take nothing else. An error that wraps another of
/// the library's asks it (its `match` has no catch-all, so a new variant decides too).
pub trait HostContext: Error {
    /// The hosts, in the error's order; empty when the error is not about a host.
    fn hosts(&self) -> Vec<&str>;
}

/// One of the library's typed errors, boxed: what an operation of the library API ends with.
#[derive(Debug)]
pub struct Failure(pub Box<dyn HostContext + Send + Sync + 'static>);

impl Failure {
    pub fn new(e: impl HostContext + Send + Sync + 'static) -> Self {
        Failure(Box::new(e))
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Error for Failure {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

impl HostContext for Failure {
    fn hosts(&self) -> Vec<&str> {
        self.0.hosts()
    }
}

/// Errors that are never about a host (files, config, metadata, certificates).
macro_rules! about_no_host {
    ($($t:ty),* $(,)?) => {
        $(
            impl HostContext for $t {
                fn hosts(&self) -> Vec<&str> {
                    Vec::new()
                }
            }
        )*
    };
}

about_no_host!(
    crate::cluster::ClusterError,
    crate::state::StateError,
    crate::state::LockError,
    crate::state::StoreError,
    crate::kubeapi::KubeApiError,
    crate::phases::cert_list::ListError,
    crate::metadata::MetadataError,
    crate::pki::PkiError,
    crate::config::ConfigError,
    std::io::Error,
);

impl HostContext for crate::hosts::HostError {
    fn hosts(&self) -> Vec<&str> {
        vec![self.host()]
    }
}

impl HostContext for crate::hosts::HostProblems {
    fn hosts(&self) -> Vec<&str> {
        self.0.iter().map(|e| e.host()).collect()
    }
}

impl HostContext for crate::phases::PhaseError {
    fn hosts(&self) -> Vec<&str> {
        use crate::phases::PhaseError;
        match self {
            PhaseError::Host { host, .. } => vec![host],
            PhaseError::Hosts { failures, .. } => {
                failures.iter().map(|(h, _)| h.as_str()).collect()
            }
            PhaseError::Phase { .. } | PhaseError::Interrupted => Vec::new(),
        }
    }
}

impl HostContext for crate::phases::executor::ExecError {
    fn hosts(&self) -> Vec<&str> {
        vec![&self.host]
    }
}

impl HostContext for crate::phases::addons::DeployError {
    fn hosts(&self) -> Vec<&str> {
        use crate::phases::addons::DeployError;
        match self {
            DeployError::Apply(e) => e.hosts(),
            DeployError::Wait(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::HostError;
    use crate::phases::PhaseError;

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("{0}")]
        Phase(#[from] PhaseError),
        #[error("cannot read {path}: {source}")]
        Read {
            path: String,
            #[source]
            source: std::io::Error,
        },
    }

    impl HostContext for Outer {
        fn hosts(&self) -> Vec<&str> {
            match self {
                Outer::Phase(e) => e.hosts(),
                Outer::Read { .. } => Vec::new(),
            }
        }
    }

    #[test]
    fn a_wrapped_errors_hosts_are_asked_through_its_types() {
        use crate::phases::etcd_snapshot::SnapshotError;
        use crate::phases::up::UpError;
        let unreachable = crate::hosts::HostProblems(vec![HostError::Ssh {
            host: "10.0.0.5".into(),
            detail: "reset".into(),
        }]);
        let e = SnapshotError::Up {
            name: "before".into(),
            cause: UpError::Unreachable(unreachable),
        };
        assert_eq!(ErrorReport::of(&e).hosts, ["10.0.0.5"]);
        let api = crate::api::ApiError::Operation(Failure::new(e));
        let r = ErrorReport::of(&api);
        assert_eq!(r.hosts, ["10.0.0.5"]);
        assert!(r.message.contains("before"), "{}", r.message);
        assert!(
            r.causes.iter().any(|c| c.contains("10.0.0.5")),
            "{:?}",
            r.causes
        );
    }

    #[test]
    fn a_wrapper_asks_the_error_it_wraps_for_its_host() {
        let e = Outer::Phase(PhaseError::Host {
            phase: "etcd plane".into(),
            host: "10.0.0.2".into(),
            message: "health check failed".into(),
        });
        let r = ErrorReport::of(&e);
        assert_eq!(r.hosts, ["10.0.0.2"]);
        assert_eq!(r.message, "[etcd plane] host 10.0.0.2: health check failed");
        // The wrapper only repeats its source: no cause is listed twice.
        assert!(r.causes.is_empty(), "{:?}", r.causes);
    }

    #[test]
    fn up_names_the_host_of_a_boxed_host_error_and_of_a_nested_guard() {
        use crate::phases::up::UpError;
        let e = UpError::from(HostError::Ssh {
            host: "10.0.0.3".into(),
            detail: "reset".into(),
        });
        assert_eq!(ErrorReport::of(&e).hosts, ["10.0.0.3"]);
        let e = UpError::from(crate::checks::guard::GuardError::CalicoFix {
            host: "10.0.0.4".into(),
            detail: "host 10.0.0.4: writing calico's directories failed".into(),
        });
        let r = ErrorReport::of(&e);
        assert_eq!(r.hosts, ["10.0.0.4"]);
        assert_eq!(
            r.message,
            "host 10.0.0.4: writing calico's directories failed"
        );
        // A failure about no host in particular names none.
        assert!(ErrorReport::of(&UpError::NoEtcdMember).hosts.is_empty());
    }

    #[test]
    fn several_hosts_are_listed_once_each_in_order() {
        let problems = crate::hosts::HostProblems(vec![
            HostError::Ssh {
                host: "b".into(),
                detail: "reset".into(),
            },
            HostError::Ssh {
                host: "a".into(),
                detail: "reset".into(),
            },
            HostError::Exec {
                host: "b".into(),
                command: "true".into(),
                detail: "exit 1".into(),
            },
        ]);
        assert_eq!(ErrorReport::of(&problems).hosts, ["b", "a"]);
    }

    #[test]
    fn causes_follow_the_source_chain_and_no_host_is_made_up() {
        let e = Outer::Read {
            path: "/x/cluster.rkestate".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        };
        let r = ErrorReport::of(&e);
        assert_eq!(r.causes, ["gone"]);
        assert!(r.hosts.is_empty());
        let r = r.redacted(|t| t.replace("gone", "[REDACTED]"));
        assert_eq!(r.causes, ["[REDACTED]"]);
        assert_eq!(r.message, "cannot read /x/cluster.rkestate: [REDACTED]");
    }
}
