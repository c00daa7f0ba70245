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

    /// Reads `e`'s hosts and causes from its source chain.
    pub fn of(e: &(dyn Error + 'static)) -> Self {
        let message = e.to_string();
        let mut causes: Vec<String> = Vec::new();
        let mut hosts = Vec::new();
        let mut link: Option<&(dyn Error + 'static)> = Some(e);
        while let Some(current) = link {
            if hosts.is_empty() {
                hosts = hosts_of(current);
            }
            if !std::ptr::addr_eq(current, e) {
                let text = current.to_string().trim_end().to_string();
                if text != message.trim_end() && causes.last() != Some(&text) {
                    causes.push(text);
                }
            }
            link = current.source();
        }
        ErrorReport {
            message,
            hosts,
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

/// An error that can name the hosts it is about. Implemented by the library's error types;
/// [`ErrorReport::of`] asks every link of a source chain.
pub trait HostContext {
    /// The hosts, in the error's order; empty when the error is not about a host (or one of its
    /// sources says which).
    fn hosts(&self) -> Vec<&str>;
}

/// The hosts one link of a chain names, if it is one of the library's typed errors.
fn hosts_of(e: &(dyn Error + 'static)) -> Vec<String> {
    fn owned(hosts: Vec<&str>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for h in hosts {
            if !out.iter().any(|o| o == h) {
                out.push(h.to_string());
            }
        }
        out
    }
    macro_rules! try_types {
        ($($t:ty),* $(,)?) => {
            $(
                if let Some(typed) = e.downcast_ref::<$t>() {
                    return owned(HostContext::hosts(typed));
                }
            )*
        };
    }
    try_types!(
        crate::hosts::HostError,
        crate::hosts::HostProblems,
        crate::hosts::preflight::PreflightFailed,
        crate::phases::PhaseError,
        crate::phases::executor::ExecError,
        crate::phases::up::UpError,
        crate::phases::remove::RemoveError,
        crate::phases::cert_rotate::RotateError,
        crate::checks::guard::GuardError,
        crate::phases::etcd_snapshot::SnapshotError,
        crate::phases::recover_state::RecoverError,
        crate::doctor::DoctorFailed,
    );
    Vec::new()
}

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

    #[test]
    fn the_host_comes_from_the_first_link_that_names_one() {
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
