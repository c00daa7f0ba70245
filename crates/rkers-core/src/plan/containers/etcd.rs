//! The etcd member and its rolling-snapshot sidecar, and the rke-tools backup flags and image
//! the snapshot commands share.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::*;
use crate::config::url_host;
use crate::plan::flags::{apply_extra_args, apply_service_options, map, render_flags};
use crate::plan::util::{image_tag, join_path, parse_version, uniq};

impl<'a> ClusterView<'a> {
    pub(super) fn etcd(&self, host: &Host, facts: &HostFacts, prefix: &str) -> ContainerSpec {
        let etcd = &self.cfg.services.etcd;
        let node_cert = cert_name_for_host(&host.address, &host.internal_address, "kube-etcd");
        let members: Vec<&Host> = match &self.input.etcd.ready_hosts {
            Some(ready) if !ready.is_empty() => ready
                .iter()
                .filter_map(|a| self.etcd_hosts.iter().find(|h| &h.address == a))
                .collect(),
            _ => self.etcd_hosts.iter().collect(),
        };
        let initial_cluster = members
            .iter()
            .map(|h| {
                format!(
                    "etcd-{}=https://{}:2380",
                    h.hostname,
                    url_host(&h.internal_address)
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        let state = if self.input.etcd.existing.contains(&host.address) {
            "existing"
        } else {
            "new"
        };
        let listen = if host.address == host.internal_address {
            "0.0.0.0"
        } else {
            host.internal_address.as_str()
        };
        let listen = url_host(listen);
        let internal = url_host(&host.internal_address);
        let mut args = map(&[
            ("name", &format!("etcd-{}", host.hostname)),
            ("data-dir", ETCD_DATA_DIR),
            ("listen-client-urls", &format!("https://{listen}:2379")),
            (
                "initial-advertise-peer-urls",
                &format!("https://{internal}:2380"),
            ),
            ("listen-peer-urls", &format!("https://{listen}:2380")),
            ("initial-cluster-token", "etcd-cluster-1"),
            ("initial-cluster", &initial_cluster),
            ("initial-cluster-state", state),
            ("trusted-ca-file", &cert("kube-ca")),
            ("peer-trusted-ca-file", &cert("kube-ca")),
            ("cert-file", &cert(&node_cert)),
            ("key-file", &key(&node_cert)),
            ("peer-cert-file", &cert(&node_cert)),
            ("peer-key-file", &key(&node_cert)),
        ]);
        let etcd_version = image_tag(&etcd.image).and_then(parse_version);
        let older_than = |text: &str| {
            let limit = parse_version(text).expect("constant version parses");
            etcd_version.as_ref().is_some_and(|v| *v < limit)
        };
        let client_urls = if older_than("3.4.3-rancher99") {
            format!("https://{internal}:2379,https://{internal}:4001")
        } else {
            format!("https://{internal}:2379")
        };
        args.insert("advertise-client-urls".into(), client_urls);
        if !older_than("3.4.14-rancher99") {
            args.insert(
                "cipher-suites".into(),
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
                    .into(),
            );
        }
        let binds = self.strip_z_if_122(vec![
            format!(
                "{}:{ETCD_DATA_DIR}:z",
                join_path(&[prefix, "/var/lib/etcd"])
            ),
            format!(
                "{}:/etc/kubernetes:z",
                join_path(&[prefix, "/etc/kubernetes"])
            ),
        ]);
        apply_service_options(&mut args, &self.input.service_options.etcd, None);
        apply_extra_args(&mut args, &etcd.extra_args);

        let mut cmd = strings(&["/usr/local/bin/etcd"]);
        // Older KDM sets did not carry these; RKE1 then adds the bare flags.
        if !args.contains_key("client-cert-auth") {
            cmd.push("--client-cert-auth".into());
        }
        if !args.contains_key("peer-client-cert-auth") {
            cmd.push("--peer-client-cert-auth".into());
        }
        cmd.extend(render_flags(&args, &etcd.extra_args_array));

        let mut env = vec![
            "ETCDCTL_API=3".to_string(),
            format!("ETCDCTL_CACERT={}", cert("kube-ca")),
            format!("ETCDCTL_CERT={}", cert(&node_cert)),
            format!("ETCDCTL_KEY={}", key(&node_cert)),
        ];
        if older_than("3.2.99") {
            env.push(format!("ETCDCTL_ENDPOINT=https://{listen}:2379"));
        } else if listen == "0.0.0.0" {
            env.push("ETCDCTL_ENDPOINTS=https://127.0.0.1:2379".into());
        } else {
            env.push(format!("ETCDCTL_ENDPOINTS=https://{listen}:2379"));
        }
        let arch = if facts.arch == "aarch64" {
            "arm64"
        } else {
            facts.arch.as_str()
        };
        env.push(format!("ETCD_UNSUPPORTED_ARCH={arch}"));
        env.extend(etcd.extra_env.iter().cloned());

        let mut all_binds = binds;
        all_binds.extend(etcd.extra_binds.iter().cloned());
        // §33.2: RKE1 writes `<uid>:<uid>`; the gid is what the data files are chowned to, and
        // RKE1's comparison ignores `User`, so the fix restarts nothing.
        let user = (etcd.uid != 0 && etcd.gid != 0).then(|| format!("{}:{}", etcd.uid, etcd.gid));
        self.finish(
            ContainerSpec {
                name: ETCD.into(),
                image: etcd.image.clone(),
                entrypoint: Vec::new(),
                cmd,
                env,
                binds: uniq(all_binds),
                network_mode: Some("host".into()),
                restart_policy: Some("always".into()),
                labels: Self::labelled(ETCD),
                user,
                health_check: Some(HealthCheck {
                    url: format!("https://{internal}:2379/health"),
                    client_certificate: Some("kube-node".into()),
                }),
                start: true,
                ..Default::default()
            },
            facts,
        )
    }

    pub(super) fn etcd_rolling_snapshots(
        &self,
        host: &Host,
        facts: &HostFacts,
        prefix: &str,
    ) -> ContainerSpec {
        let etcd = &self.cfg.services.etcd;
        let mut cmd = strings(&[
            "/opt/rke-tools/rke-etcd-backup",
            "etcd-backup",
            "save",
            "--cacert",
            &cert("kube-ca"),
            "--cert",
            &cert("kube-node"),
            "--key",
            &key("kube-node"),
            "--name",
            ETCD_ROLLING_SNAPSHOTS,
            &format!("--endpoints={}:2379", url_host(&host.internal_address)),
        ]);
        let mut env = etcd.extra_env.clone();
        match &etcd.backup_config {
            None => {
                cmd.push(format!("--retention={}", etcd.retention));
                cmd.push(format!("--creation={}", etcd.creation));
            }
            Some(backup) => {
                cmd.push(format!("--creation={}h", backup.interval_hours));
                cmd.push(format!(
                    "--retention={}h",
                    backup.retention * backup.interval_hours
                ));
                if let Some(s3) = &backup.s3_backup_config {
                    let (flags, s3_env) = s3_backup_flags(s3);
                    cmd.extend(flags);
                    env.extend(s3_env);
                }
            }
        }
        let binds = self.strip_z_if_122(vec![
            format!("{ETCD_SNAPSHOT_PATH}:/backup:z"),
            format!(
                "{}:/etc/kubernetes:z",
                join_path(&[prefix, "/etc/kubernetes"])
            ),
        ]);
        // Not a `GetProcessConfig` container: only the type label, only from 1.22.
        let security_opt = if self.k8s_122 && facts.selinux_enabled {
            vec![SELINUX_LABEL.to_string()]
        } else {
            Vec::new()
        };
        ContainerSpec {
            name: ETCD_ROLLING_SNAPSHOTS.into(),
            image: self.rolling_snapshot_image(),
            cmd,
            env,
            binds,
            network_mode: Some("host".into()),
            restart_policy: Some("always".into()),
            security_opt,
            start: true,
            ..Default::default()
        }
    }

    /// RKE1's `GetDefaultRKETools`: a `rancher/rke-tools` image gets the default version's tag.
    fn rolling_snapshot_image(&self) -> String {
        default_rke_tools(
            &self.cfg.system_images.alpine,
            self.input.default_rke_tools_tag,
        )
    }
}

/// The S3 flags and environment of an rke-tools backup command (RKE1's `configS3BackupImgCmd`):
/// the keys go base64-encoded through the environment, never on the command line.
pub fn s3_backup_flags(s3: &crate::config::S3BackupConfig) -> (Vec<String>, Vec<String>) {
    let mut flags = vec![
        "--s3-backup=true".to_string(),
        format!("--s3-endpoint={}", s3.endpoint),
        format!("--s3-bucketName={}", s3.bucket_name),
        format!("--s3-region={}", s3.region),
    ];
    let mut env = Vec::new();
    if !s3.access_key.is_empty() || !s3.secret_key.is_empty() {
        env.push(format!("S3_ACCESS_KEY={}", STANDARD.encode(&s3.access_key)));
        env.push(format!("S3_SECRET_KEY={}", STANDARD.encode(&s3.secret_key)));
    }
    if !s3.custom_ca.is_empty() {
        flags.push(format!(
            "--s3-endpoint-ca={}",
            STANDARD.encode(&s3.custom_ca)
        ));
    }
    if !s3.folder.is_empty() {
        flags.push(format!("--s3-folder={}", s3.folder));
    }
    (flags, env)
}

/// RKE1's `GetDefaultRKETools`: a `rancher/rke-tools` `alpine` image gets `default_tag`.
pub fn default_rke_tools(alpine: &str, default_tag: Option<&str>) -> String {
    match (image_tag(alpine), default_tag) {
        (Some(tag), Some(default_tag)) if alpine.contains("rancher/rke-tools") => {
            alpine.replacen(tag, default_tag, 1)
        }
        _ => alpine.to_string(),
    }
}
