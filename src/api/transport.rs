//! How an operation reaches its hosts: the [`TransportFactory`] a caller plugs in, SSH by default.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::HostLink;
use crate::hosts::{HostError, LinkOpener, SshOptions, SshTarget};

/// How each host is reached. A phase drives a host through its [`HostLink`]: commands (with
/// stdin), TCP connections made from the host, and the streams its Docker API is spoken over.
/// SSH is the default link ([`SshTransport`] chooses its settings); a factory whose
/// [`open_link`](TransportFactory::open_link) answers for a host plugs in another one, like
/// RKE1's per-node dialers.
///
/// ```no_run
/// use std::sync::Arc;
/// use futures::future::BoxFuture;
/// use rkers::api::{HostLink, TransportFactory};
/// use rkers::hosts::{HostError, SshOptions, SshTarget};
///
/// /// Reaches the nodes whose address starts with `local-` through the caller's own link,
/// /// the others over SSH.
/// struct Mixed {
///     local: Arc<dyn HostLink>,
/// }
///
/// impl TransportFactory for Mixed {
///     fn ssh_options(&self) -> SshOptions {
///         SshOptions::default()
///     }
///     fn open_link<'a>(
///         &'a self,
///         target: &'a SshTarget,
///     ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>> {
///         if !target.address.starts_with("local-") {
///             return None; // SSH, as usual
///         }
///         let link = self.local.clone();
///         Some(Box::pin(async move { Ok(link) }))
///     }
/// }
/// # fn use_it(op: rkers::api::Operation, local: Arc<dyn HostLink>) -> rkers::api::Operation {
/// op.with_transport(Arc::new(Mixed { local }))
/// # }
/// ```
pub trait TransportFactory: Send + Sync {
    /// The SSH settings hosts are reached with (known_hosts, host key policy, timeouts,
    /// concurrency); the concurrency and Docker timeout apply to every link.
    fn ssh_options(&self) -> SshOptions;

    /// Opens the link to one host (cluster.yml's node as a target: address, user, Docker
    /// socket). `None`, the default, reaches it over SSH with [`ssh_options`](Self::ssh_options).
    /// A link is opened once per host and run, and closed with [`HostLink::close`] at the end.
    fn open_link<'a>(
        &'a self,
        target: &'a SshTarget,
    ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>> {
        let _ = target;
        None
    }
}

/// The operation's factory as the host pool's link opener.
pub(super) struct FactoryLinks(pub(super) Arc<dyn TransportFactory>);

impl LinkOpener for FactoryLinks {
    fn open_link<'a>(
        &'a self,
        target: &'a SshTarget,
    ) -> Option<BoxFuture<'a, Result<Arc<dyn HostLink>, HostError>>> {
        self.0.open_link(target)
    }
}

/// Hosts reached over SSH, as the CLI does. Nothing is read from the process: no
/// `~/.ssh/config`, no passphrase prompt. New host keys are recorded in `known_hosts` (by
/// default a file in the run's scratch directory, i.e. trusted on first use per operation).
#[derive(Clone, Debug, Default)]
pub struct SshTransport {
    /// known_hosts file to check and record host keys in.
    pub known_hosts: Option<PathBuf>,
    /// Refuse hosts whose key is not in `known_hosts` yet.
    pub strict_host_keys: bool,
}

impl TransportFactory for SshTransport {
    fn ssh_options(&self) -> SshOptions {
        SshOptions {
            known_hosts_path: self.known_hosts.clone(),
            host_key_policy: if self.strict_host_keys {
                crate::hosts::target::HostKeyPolicy::Strict
            } else {
                crate::hosts::target::HostKeyPolicy::AcceptNew
            },
            passphrase_prompt: false,
            ssh_config_enabled: false,
            ..SshOptions::default()
        }
    }
}
