//! Node access: one SSH connection per host, Docker over it, and the facts gathered from each host.
