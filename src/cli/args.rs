//! The command-line grammar: RKE1's commands and flags (§2) plus rkers' own.

use crate::output::OutputFormat;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "rkers",
    version,
    long_version = crate::build_info::LONG_VERSION.as_str(),
    about = "Kubernetes clusters over SSH and Docker, compatible with RKE1's cluster.yml and cluster.rkestate"
)]
pub struct Cli {
    /// Debug logging.
    #[arg(short, long, global = true)]
    pub debug: bool,
    /// Only warnings and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Trace logging (very verbose; secrets stay masked).
    #[arg(long, global = true)]
    pub trace: bool,
    /// How to report progress: live text, or one JSON object per event on stdout.
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Bring the cluster up.
    Up(UpArgs),
    /// Tear the cluster down and clean the cluster nodes.
    Remove(RemoveArgs),
    /// Bring the cluster back to what the previous successful `up` applied (from the state
    /// file; no old cluster.yml needed).
    Rollback(RollbackArgs),
    /// Show the cluster's Kubernetes version, or with --client this program's.
    Version(VersionArgs),
    /// Set up a cluster configuration, or list versions and system images.
    Config(ConfigCmdArgs),
    /// Check SSH, Docker and the ports between roles on every host, changing nothing.
    Preflight(PreflightArgs),
    /// Diagnose the running cluster (read-only), or apply one safe fix with --fix.
    Doctor(DoctorArgs),
    /// etcd snapshot save and restore.
    Etcd {
        #[command(subcommand)]
        command: EtcdCommand,
    },
    /// Certificate management.
    Cert {
        #[command(subcommand)]
        command: CertCommand,
    },
    /// Secrets encryption key management.
    Encrypt {
        #[command(subcommand)]
        command: EncryptCommand,
    },
    /// Retrieve cluster files.
    Util {
        #[command(subcommand)]
        command: UtilCommand,
    },
    /// Build the Kubernetes image RKE's containers run from the official release files.
    Image {
        #[command(subcommand)]
        command: ImageCommand,
    },
    /// Print a shell completion script (e.g. `rkers completions bash > /etc/bash_completion.d/rkers`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `rkers man | man -l -`.
    Man,
    /// Run the management server: an HTTP API over a database (see the README).
    Serve(crate::serve::ServeArgs),
}

#[derive(Args, Debug, Clone)]
pub struct VersionArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    /// Print this program's version, git commit, build date and metadata source, and ask no
    /// cluster.
    #[arg(long)]
    pub client: bool,
}

#[derive(Args, Debug, Clone)]
pub struct ConfigArg {
    /// The cluster configuration file.
    #[arg(long, env = "RKE_CONFIG", default_value = "cluster.yml")]
    pub config: PathBuf,
}

/// How rkers reaches the nodes; shared by every command that connects.
#[derive(Args, Debug, Clone)]
pub struct ConnectArgs {
    /// Use ssh-agent for every node (overrides `ssh_agent_auth` in the config).
    #[arg(long)]
    pub ssh_agent_auth: bool,
    /// Skip the Docker version check. Without this flag, `ignore_docker_version` from the config
    /// applies (RKE1 always overwrote it with the flag's default, §33.1).
    #[arg(long)]
    pub ignore_docker_version: bool,
    /// known_hosts file used to verify host keys [default: ~/.ssh/known_hosts].
    #[arg(long, value_name = "FILE")]
    pub known_hosts: Option<PathBuf>,
    /// What to do with host keys: refuse unknown ones (strict), record new ones and refuse changed
    /// ones (accept-new), or check nothing (insecure, RKE1's behaviour).
    #[arg(long, value_enum, default_value_t = HostKeyPolicy::AcceptNew)]
    pub ssh_host_key_policy: HostKeyPolicy,
    /// How many hosts are worked on at once.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HostKeyPolicy {
    Strict,
    AcceptNew,
    Insecure,
}

#[derive(Args, Debug)]
pub struct UpArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Print, per host, the actions `up` would take, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Proceed although hosts already run RKE containers and no state file exists.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub links: LinkArgs,
    /// Skip idempotent deployment of control and etcd plane.
    #[arg(long)]
    pub update_only: bool,
    /// Disable the port check between nodes.
    #[arg(long)]
    pub disable_port_check: bool,
    /// Only generate the state file (certificates and desired config), then stop.
    #[arg(long)]
    pub init: bool,
    /// Directory of custom certificates (default: `<config dir>/<config name>_certs`).
    #[arg(long)]
    pub cert_dir: Option<PathBuf>,
    /// Use the certificates in the cert dir instead of generating them.
    #[arg(long)]
    pub custom_certs: bool,
    /// Adopt a cluster whose state rkers did not write (RKE1's) without asking; without a
    /// terminal, adoption needs this flag.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Go on although an admission webhook blocks system pod creation (see `rkers doctor`).
    #[arg(long)]
    pub ignore_blocking_webhooks: bool,
    /// Go on with a minor upgrade although the target minor stops serving API versions the
    /// cluster uses (objects, addon manifests, last-applied configurations, requests).
    #[arg(long)]
    pub ignore_removed_apis: bool,
    /// Take no etcd snapshot (`rkers-pre-<UTC time>`) before a change to etcd or the control
    /// plane; a change that fails half-way can then only be undone from an older snapshot.
    #[arg(long)]
    pub no_snapshot: bool,
    /// Seconds an upgraded worker's node may take to be Ready again before the containers it
    /// ran before are put back and the run fails [default: 180].
    #[arg(long, value_name = "SECONDS")]
    pub node_ready_timeout: Option<u64>,
}

/// How `up` and `rollback` reach the nodes when not over SSH (RKE1's local and dind modes).
#[derive(Args, Debug, Clone)]
pub struct LinkArgs {
    /// Deploy on the local Docker daemon.
    #[arg(long)]
    pub local: bool,
    /// Deploy Kubernetes cluster in docker containers (experimental).
    #[arg(long)]
    pub dind: bool,
    /// Image of the docker-in-docker containers.
    #[arg(long, default_value = crate::hosts::dind::DEFAULT_IMAGE)]
    pub dind_image: String,
    /// Storage driver for the docker-in-docker containers.
    #[arg(long, default_value = "")]
    pub dind_storage_driver: String,
    /// DNS server for the docker-in-docker containers.
    #[arg(long, default_value = "8.8.8.8")]
    pub dind_dns_server: String,
}

#[derive(Args, Debug)]
pub struct RollbackArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The cluster `up --local` or `up --dind` made: reach its nodes the same way.
    #[command(flatten)]
    pub links: LinkArgs,
    /// Print, per host, the actions the rollback would take, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// First restore the etcd snapshot the rolled-back run took before it changed anything,
    /// then the containers: needed to go back over a Kubernetes minor. What was written to the
    /// cluster since that snapshot is lost.
    #[arg(long)]
    pub restore_snapshot: bool,
    /// Disable the port check between nodes.
    #[arg(long)]
    pub disable_port_check: bool,
    /// Go on although an admission webhook blocks system pod creation (see `rkers doctor`).
    #[arg(long)]
    pub ignore_blocking_webhooks: bool,
    /// Take no etcd snapshot before a change to etcd or the control plane.
    #[arg(long)]
    pub no_snapshot: bool,
}

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Only this host (address or node name); repeatable. Cluster-wide checks always run.
    #[arg(long = "host", value_name = "H")]
    pub hosts: Vec<String>,
    /// Apply the safe fix of one check, printing each step before it runs.
    #[arg(
        long,
        value_enum,
        value_name = "CHECK",
        conflicts_with = "restore_webhooks"
    )]
    pub fix: Option<crate::doctor::fix::FixCheck>,
    /// Put back the webhook configurations `--fix webhooks` removed (from the backup file next
    /// to the state).
    #[arg(long)]
    pub restore_webhooks: bool,
    /// With `--fix` or `--restore-webhooks`: print, per host, what the repair would change, and
    /// change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct RemoveArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub force: bool,
    /// Print what would be removed and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Remove a cluster deployed on the local Docker daemon.
    #[arg(long)]
    pub local: bool,
    /// Remove a docker-in-docker cluster.
    #[arg(long)]
    pub dind: bool,
    /// Keep the state file's backups (`cluster.rkestate*.bak`); they hold every private key of
    /// the removed cluster, so by default they are deleted with the state.
    #[arg(long)]
    pub keep_backups: bool,
}

#[derive(Args, Debug)]
pub struct ConfigCmdArgs {
    /// File to write.
    #[arg(short, long, default_value = "cluster.yml")]
    pub name: PathBuf,
    /// Write a configuration with one empty node, asking nothing.
    #[arg(short, long)]
    pub empty: bool,
    /// Print the configuration instead of writing it.
    #[arg(short, long)]
    pub print: bool,
    /// Print the system images of the default Kubernetes version (or --version, or --all).
    #[arg(short = 's', long)]
    pub system_images: bool,
    /// Print the default Kubernetes version (or every current one with --all).
    #[arg(short, long)]
    pub list_version: bool,
    /// With --system-images or --list-version: every current version.
    #[arg(short, long)]
    pub all: bool,
    /// Kubernetes version for --system-images.
    #[arg(long)]
    pub version: Option<String>,
    /// Replace an existing file without asking (it is kept as `<name>.<time>.bak`).
    #[arg(short, long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct PreflightArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Skip the port checks between roles.
    #[arg(long)]
    pub disable_port_check: bool,
}

#[derive(Args, Debug, Clone)]
pub struct S3Args {
    /// Back up to or restore from S3.
    #[arg(long)]
    pub s3: bool,
    #[arg(long, default_value = "s3.amazonaws.com")]
    pub s3_endpoint: String,
    /// Path to a CA certificate (PEM) for the S3 endpoint.
    #[arg(long)]
    pub s3_endpoint_ca: Option<PathBuf>,
    #[arg(long, env = "S3_ACCESS_KEY", hide_env_values = true)]
    pub access_key: Option<String>,
    #[arg(long, env = "S3_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    #[arg(long)]
    pub bucket_name: Option<String>,
    #[arg(long)]
    pub region: Option<String>,
    #[arg(long)]
    pub folder: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum EtcdCommand {
    /// Take a snapshot on every etcd host.
    SnapshotSave {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        connect: ConnectArgs,
        /// Snapshot name (default: `rke_etcd_snapshot_<time>`).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        s3: S3Args,
        #[arg(long)]
        dry_run: bool,
    },
    /// Restore an existing snapshot.
    SnapshotRestore {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        connect: ConnectArgs,
        /// Snapshot name, without the .zip extension.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        s3: S3Args,
        #[arg(long)]
        cert_dir: Option<PathBuf>,
        #[arg(long)]
        custom_certs: bool,
        /// Use the local state file, not the one inside the snapshot archive.
        #[arg(long)]
        use_local_state: bool,
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RotatableService {
    #[value(name = "kube-apiserver")]
    KubeApiserver,
    #[value(name = "kube-controller-manager")]
    KubeControllerManager,
    #[value(name = "kube-scheduler")]
    KubeScheduler,
    #[value(name = "kubelet")]
    Kubelet,
    #[value(name = "kube-proxy")]
    KubeProxy,
    #[value(name = "etcd")]
    Etcd,
}

#[derive(Subcommand, Debug)]
pub enum CertCommand {
    /// Rotate the cluster's certificates.
    Rotate {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        connect: ConnectArgs,
        /// Only these services' certificates (repeatable).
        #[arg(long, value_enum)]
        service: Vec<RotatableService>,
        /// Rotate every certificate including the CAs.
        #[arg(long)]
        rotate_ca: bool,
        #[arg(long)]
        dry_run: bool,
        /// Go on although an admission webhook blocks system pod creation (see `rkers doctor`).
        #[arg(long)]
        ignore_blocking_webhooks: bool,
    },
    /// Every certificate each host holds and when it expires (from the hosts, else the state).
    List {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        connect: ConnectArgs,
    },
    /// Write certificate signing requests (and keys) for the components into the cert dir.
    GenerateCsr {
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        cert_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
pub enum EncryptCommand {
    /// Rotate the secrets encryption provider key.
    RotateKey {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        connect: ConnectArgs,
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum UtilCommand {
    /// Retrieve the state file from the cluster.
    GetStateFile {
        #[command(flatten)]
        config: ConfigArg,
        #[command(flatten)]
        connect: ConnectArgs,
        /// Recover the state and say where it came from, without writing it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Rebuild the admin kubeconfig from the state file.
    GetKubeconfig {
        #[command(flatten)]
        config: ConfigArg,
    },
}

#[derive(Subcommand, Debug)]
pub enum ImageCommand {
    /// Build the one Kubernetes image (kubelet, kube-apiserver, kube-controller-manager,
    /// kube-scheduler, kube-proxy, cri-dockerd) from the official server tarball and a cri-dockerd
    /// binary, on a node's Docker (or the local one with --local), push it with the
    /// `private_registries` credentials, and print the `system_images` lines for cluster.yml.
    Build(ImageBuildArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ImageBuildArgs {
    #[command(flatten)]
    pub config: ConfigArg,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// `kubernetes-server-linux-<arch>.tar.gz`, or a directory of its server binaries. A
    /// `.sha512`/`.sha256` file beside it is checked.
    #[arg(long, value_name = "PATH")]
    pub kubernetes: PathBuf,
    /// The cri-dockerd binary, or its release .tgz. A `.sha512`/`.sha256` file beside it is checked.
    #[arg(long, value_name = "FILE")]
    pub cri_dockerd: PathBuf,
    /// The image to build on: it must have bash, iptables and mount (e.g. your site's Debian
    /// image with iptables, conntrack, mount, ethtool installed).
    #[arg(long, value_name = "IMAGE")]
    pub base: String,
    /// The image to build (default for v1.33 and later:
    /// `<default private registry>/rkers/hyperkube:vX.Y.Z-rkers1`; required below v1.33).
    #[arg(long, value_name = "REPO:TAG")]
    pub tag: Option<String>,
    /// The Kubernetes tarball's checksum (sha256:HEX or sha512:HEX), instead of a file beside it.
    #[arg(long, value_name = "DIGEST")]
    pub kubernetes_checksum: Option<String>,
    /// The cri-dockerd file's checksum (sha256:HEX or sha512:HEX), instead of a file beside it.
    #[arg(long, value_name = "DIGEST")]
    pub cri_dockerd_checksum: Option<String>,
    /// The Kubernetes version, when the inputs do not record it (the tarball's
    /// kube-apiserver.docker_tag); must agree with it. No input is run to ask it.
    #[arg(long, value_name = "vX.Y.Z")]
    pub kubernetes_version: Option<String>,
    /// The node whose Docker builds the image (its address or hostname_override) [default: the
    /// first node of cluster.yml].
    #[arg(long, value_name = "NODE", conflicts_with = "local")]
    pub node: Option<String>,
    /// Build with the Docker engine DOCKER_HOST names (default unix:///var/run/docker.sock)
    /// instead of a node's.
    #[arg(long)]
    pub local: bool,
    /// Build and tag only; do not push.
    #[arg(long)]
    pub no_push: bool,
}

impl Command {
    /// The config file a command reads, when it reads one.
    pub fn config_path(&self) -> Option<&std::path::Path> {
        let arg = match self {
            Command::Up(a) => &a.config,
            Command::Remove(a) => &a.config,
            Command::Rollback(a) => &a.config,
            Command::Version(a) if a.client => return None,
            Command::Version(a) => &a.config,
            Command::Preflight(a) => &a.config,
            Command::Doctor(a) => &a.config,
            Command::Config(_) | Command::Completions { .. } | Command::Man | Command::Serve(_) => {
                return None;
            }
            Command::Etcd { command } => match command {
                EtcdCommand::SnapshotSave { config, .. } => config,
                EtcdCommand::SnapshotRestore { config, .. } => config,
            },
            Command::Cert { command } => match command {
                CertCommand::Rotate { config, .. } => config,
                CertCommand::List { config, .. } => config,
                CertCommand::GenerateCsr { config, .. } => config,
            },
            Command::Encrypt { command } => match command {
                EncryptCommand::RotateKey { config, .. } => config,
            },
            Command::Util { command } => match command {
                UtilCommand::GetStateFile { config, .. } => config,
                UtilCommand::GetKubeconfig { config } => config,
            },
            Command::Image {
                command: ImageCommand::Build(a),
            } => &a.config,
        };
        Some(&arg.config)
    }

    /// For a command that changes the cluster or writes its state: the name its run lock
    /// records, and whether this is its dry run (which never takes the lock). `None` for the
    /// commands that only read.
    pub fn run_lock_name(&self) -> Option<(&'static str, bool)> {
        Some(match self {
            Command::Up(a) => ("up", a.dry_run),
            Command::Remove(a) => ("remove", a.dry_run),
            Command::Rollback(a) => ("rollback", a.dry_run),
            Command::Doctor(a) if a.fix.is_some() || a.restore_webhooks => {
                ("doctor --fix", a.dry_run)
            }
            Command::Etcd { command } => match command {
                EtcdCommand::SnapshotSave { dry_run, .. } => ("etcd snapshot-save", *dry_run),
                EtcdCommand::SnapshotRestore { dry_run, .. } => ("etcd snapshot-restore", *dry_run),
            },
            Command::Cert {
                command: CertCommand::Rotate { dry_run, .. },
            } => ("cert rotate", *dry_run),
            Command::Encrypt {
                command: EncryptCommand::RotateKey { dry_run, .. },
            } => ("encrypt rotate-key", *dry_run),
            Command::Util {
                command: UtilCommand::GetStateFile { dry_run, .. },
            } => ("util get-state-file", *dry_run),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn rke1_flags_parse() {
        let cli = Cli::try_parse_from([
            "rkers",
            "up",
            "--config",
            "x.yml",
            "--update-only",
            "--disable-port-check",
            "--ignore-docker-version",
            "--ssh-agent-auth",
            "--cert-dir",
            "c",
            "--custom-certs",
            "--dry-run",
        ])
        .unwrap();
        let Command::Up(up) = cli.command else {
            panic!()
        };
        assert!(up.update_only && up.disable_port_check && up.custom_certs && up.dry_run);
        assert!(up.connect.ignore_docker_version && up.connect.ssh_agent_auth);
        assert_eq!(up.config.config, std::path::PathBuf::from("x.yml"));
        let cli = Cli::try_parse_from([
            "rkers",
            "cert",
            "rotate",
            "--service",
            "etcd",
            "--service",
            "kubelet",
            "--rotate-ca",
        ])
        .unwrap();
        let Command::Cert {
            command: CertCommand::Rotate {
                service, rotate_ca, ..
            },
        } = cli.command
        else {
            panic!()
        };
        assert_eq!(service, [RotatableService::Etcd, RotatableService::Kubelet]);
        assert!(rotate_ca);
        assert!(Cli::try_parse_from(["rkers", "cert", "rotate", "--service", "bogus"]).is_err());
        let cli = Cli::try_parse_from(["rkers", "config", "-s", "--version", "v1.31.1-rancher1-1"])
            .unwrap();
        let Command::Config(c) = cli.command else {
            panic!()
        };
        assert_eq!(c.version.as_deref(), Some("v1.31.1-rancher1-1"));
    }

    #[test]
    fn cert_list_takes_the_config_and_connection_flags() {
        let cli = Cli::try_parse_from([
            "rkers",
            "--output",
            "json",
            "cert",
            "list",
            "--config",
            "c.yml",
            "--known-hosts",
            "kh",
        ])
        .unwrap();
        assert_eq!(cli.output, OutputFormat::Json);
        let Command::Cert {
            command: CertCommand::List { config, connect },
        } = &cli.command
        else {
            panic!("{:?}", cli.command)
        };
        assert_eq!(config.config, PathBuf::from("c.yml"));
        assert_eq!(connect.known_hosts, Some(PathBuf::from("kh")));
        assert_eq!(
            cli.command.config_path(),
            Some(std::path::Path::new("c.yml"))
        );
    }
}
