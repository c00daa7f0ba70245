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
/// so the final event's hosts come from the error's own type: the CLI's and the library API's
/// final errors take nothing else. An error that wraps another of
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
            impl $crate::error::HostContext for $t {
                fn hosts(&self) -> Vec<&str> {
                    Vec::new()
                }
            }
        )*
    };
}

pub(crate) use about_no_host;

// The pure core's errors (config, metadata, pki, state) concern files, never a host; the
// library's other errors implement the trait next to their type.
about_no_host!(
    crate::state::StateError,
    crate::state::LockError,
    crate::state::StoreError,
    crate::metadata::MetadataError,
    crate::pki::PkiError,
    crate::config::ConfigError,
    std::io::Error,
);
