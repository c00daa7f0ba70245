//! Secrets encryption at rest on a running cluster (§23): rewriting every Secret through the
//! API so it is stored with the first provider, `rkers encrypt rotate-key` (the provider file
//! deployed to the controlplane hosts and their kube-apiservers restarted one at a time with a
//! health check, as actions), and the provider file that turns encryption off, which `up`
//! deploys the same way.
//!
//! Rotation saves the state after every step that changes the hosts, so an interrupted run is
//! resumed by running it again: a provider file with two keys in `currentState` means a
//! rotation was under way, and it continues with the same new key.

use crate::cluster::Cluster;
use crate::diff::{Action, HealthProbe};
use crate::hosts::{Host, HostPool, SshOptions};
use crate::kubeapi::KubeApi;
use crate::output::Reporter;
use crate::phases::changeset::{self, Changeset, FileWrite, Pace};
use crate::phases::executor::Executor;
use crate::phases::health::TlsMaterial;
use crate::plan::encryption::{self, EncryptionKey};
use crate::state::StateFile;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, PostParams};
use std::sync::Arc;

/// RKE1's page size and number of concurrent rewrites.
const PAGE_SIZE: u32 = 250;
const REWRITE_WORKERS: usize = 5;

/// Rewrites every Secret of every namespace with a no-op update, so the API server stores it
/// again with its first provider. A Secret changed meanwhile is read again and rewritten; one
/// deleted meanwhile needs nothing. Returns how many were rewritten.
pub async fn rewrite_secrets(api: &KubeApi, reporter: &Reporter) -> Result<usize, String> {
    let all: Api<Secret> = Api::all(api.client.clone());
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(PAGE_SIZE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = match all.list(&lp).await {
            Ok(p) => p,
            // An expired continue token (410): start the listing over.
            Err(kube::Error::Api(e)) if e.code == 410 && token.is_some() => {
                names.clear();
                token = None;
                continue;
            }
            Err(e) => return Err(format!("list Secrets: {e}")),
        };
        for s in page.items {
            if let (Some(ns), Some(name)) = (s.metadata.namespace, s.metadata.name) {
                names.push((ns, name));
            }
        }
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    let total = names.len();
    let results: Vec<Result<(), String>> = futures::stream::iter(names)
        .map(|(ns, name)| {
            let api: Api<Secret> = Api::namespaced(api.client.clone(), &ns);
            async move { rewrite_one(&api, &ns, &name).await }
        })
        .buffer_unordered(REWRITE_WORKERS)
        .collect()
        .await;
    let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if !errors.is_empty() {
        return Err(format!(
            "{} of {total} Secrets not rewritten:\n  - {}",
            errors.len(),
            errors.join("\n  - ")
        ));
    }
    reporter.info(format!("[rewrite-secrets] {total} secrets rewritten"));
    Ok(total)
}

async fn rewrite_one(api: &Api<Secret>, ns: &str, name: &str) -> Result<(), String> {
    for _ in 0..5 {
        let Some(secret) = api
            .get_opt(name)
            .await
            .map_err(|e| format!("{ns}/{name}: {e}"))?
        else {
            return Ok(());
        };
        match api.replace(name, &PostParams::default(), &secret).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(format!("{ns}/{name}: {e}")),
        }
    }
    Err(format!("{ns}/{name}: kept changing while being rewritten"))
}

fn etc_kubernetes(cluster: &Cluster, host: &Host) -> String {
    let prefix =
        crate::plan::host_prefix_path(&cluster.config.prefix_path, &host.facts().operating_system);
    crate::plan::join_path(&[&prefix, "/etc/kubernetes"])
}

/// kube-apiserver's health check after a restart with a new provider file.
pub const APISERVER_HEALTH: &str = "https://localhost:6443/healthz";

/// The health check's TLS material: the cluster CA and the kube-apiserver client certificate.
pub fn apiserver_tls(state: &StateFile) -> TlsMaterial {
    let bundle = if state.current_state.certificates_bundle.is_empty() {
        &state.desired_state.certificates_bundle
    } else {
        &state.current_state.certificates_bundle
    };
    let get = |n: &str| bundle.get(n);
    TlsMaterial {
        ca_pem: get(crate::pki::names::CA_CERT_NAME).map(|c| c.certificate_pem.clone()),
        client_cert_pem: get("kube-apiserver").map(|c| c.certificate_pem.clone()),
        client_key_pem: get("kube-apiserver").map(|c| c.key_pem.clone()),
    }
}

pub struct RotateOptions {
    pub dry_run: bool,
    pub agent_override: bool,
    pub ssh: SshOptions,
}

/// `rkers encrypt rotate-key` (§23): `[new, old]` first (new writes use the new key, both
/// decrypt), every Secret rewritten, then `[new]` alone; the state is saved after each step.
pub async fn rotate_key(
    cluster: &Cluster,
    opts: &RotateOptions,
    reporter: &Reporter,
) -> Result<(), String> {
    let sec = cluster
        .config
        .services
        .kube_api
        .secrets_encryption_config
        .as_ref()
        .filter(|s| s.enabled);
    let Some(sec) = sec else {
        return Err(
            "can't rotate encryption keys: Encryption Configuration is disabled. \
                    Please disable rotate_encryption_key and run rkers up again"
                .into(),
        );
    };
    if sec.custom_config.is_some() {
        return Err(
            "can't rotate encryption keys: Key Rotation is not supported with custom configuration"
                .into(),
        );
    }
    let state = cluster
        .load_state()
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "no state file at {}: run `rkers up` first",
                cluster.files.state_path.display()
            )
        })?;
    let applied = if state.current_state.encryption_config.is_empty() {
        state.desired_state.encryption_config.clone()
    } else {
        state.current_state.encryption_config.clone()
    };
    if applied.is_empty() || !encryption::encrypts_with_aescbc(&applied) {
        return Err(
            "can't rotate encryption keys: the cluster has no encryption key yet; \
                    run `rkers up` with secrets encryption enabled first"
                .into(),
        );
    }
    let keys = encryption::aescbc_keys(&applied).map_err(|e| e.to_string())?;
    for k in &keys {
        cluster.redactor.register(&k.secret);
    }
    // Two keys applied: an earlier rotation stopped after adding its new key; finish it.
    let resuming = keys.len() >= 2;
    let (new, old) = if keys.len() >= 2 {
        reporter.info(format!(
            "resuming the rotation to key {} left unfinished",
            keys[0].name
        ));
        (keys[0].clone(), keys[1..].to_vec())
    } else {
        let k = EncryptionKey::generate();
        cluster.redactor.register(&k.secret);
        (k, keys)
    };
    let with_both = {
        let mut both = vec![new.clone()];
        both.extend(old.iter().cloned());
        encryption::render_provider(&both)
    };
    let final_text = encryption::render_provider(std::slice::from_ref(&new));
    let old_names = old
        .iter()
        .map(|k| k.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    // A key generated by this run gets a new name in every run: the actions do not name it,
    // so a dry run and the run it predicts show the same actions.
    let new_key = if resuming {
        format!("key {}", new.name)
    } else {
        "a new key".to_string()
    };

    let phase = reporter.phase("plan");
    let hosts = match connect_controlplane(cluster, opts.agent_override, &opts.ssh).await {
        Ok(h) => h,
        Err(e) => {
            phase.fail(&e);
            return Err(e);
        }
    };
    let image = cluster.config.system_images.cert_downloader.clone();
    let mut changes = Changeset::default();
    let rounds = [
        (
            ADD_KEY,
            with_both.as_str(),
            format!("{new_key} first, then {old_names}"),
        ),
        (
            REMOVE_KEY,
            final_text.as_str(),
            format!("{new_key} alone, {old_names} removed"),
        ),
    ];
    for (round, text, reason) in &rounds {
        let write = format!("{round}: write");
        let restart = format!("{round}: restart kube-apiserver");
        for host in &hosts {
            let name = host.name();
            if *round == ADD_KEY
                && !host
                    .docker()
                    .image_exists(&image)
                    .await
                    .map_err(|e| e.to_string())?
            {
                changes.push(
                    &write,
                    Pace::OneAtATime,
                    name,
                    Action::PullImage {
                        image: image.clone(),
                    },
                );
            }
            changes.push(
                &write,
                Pace::OneAtATime,
                name,
                Action::WriteFileSet {
                    dir: etc_kubernetes(cluster, host),
                    files: vec![FileWrite {
                        path: PROVIDER_FILE.into(),
                        mode: 0o600,
                        reason: reason.clone(),
                        contents: text.as_bytes().to_vec(),
                    }],
                },
            );
        }
        for host in &hosts {
            changes.push(
                &restart,
                Pace::OneAtATime,
                host.name(),
                Action::RestartAndCheck {
                    name: crate::plan::KUBE_APISERVER.into(),
                    health_url: Some(APISERVER_HEALTH.into()),
                    check: Some(Box::new(HealthProbe {
                        url: APISERVER_HEALTH.into(),
                        tls: Some(apiserver_tls(&state)),
                    })),
                },
            );
        }
        changes.push(
            &format!("{round}: state secret"),
            Pace::OneAtATime,
            changeset::CLUSTER,
            Action::SaveStateSecret {
                reason: format!("the provider file with {reason}"),
            },
        );
        if *round == ADD_KEY {
            changes.push(
                REWRITE,
                Pace::OneAtATime,
                changeset::CLUSTER,
                Action::RewriteSecrets {
                    reason: format!("store every Secret with {new_key}"),
                },
            );
        }
    }
    phase.done();
    if opts.dry_run {
        reporter.planned(&changes.planned());
        close(&hosts).await;
        return Ok(());
    }

    let api = admin_api(cluster).await?;
    let runner = crate::phases::Runner::new(reporter.clone(), opts.ssh.concurrency);
    let exec = Executor::new(reporter, &image, cluster.registry_credentials())
        .with_hosts(&hosts)
        .with_api(api);
    let mut state = state;
    for stage in &changes.stages {
        let failures = exec.apply_stage(stage, &runner).await;
        let failed = changeset::list_failures(&failures);
        if stage.phase.ends_with(": state secret") {
            if !failures.is_empty() {
                reporter.warn(format!(
                    "the in-cluster copy of the state was not updated:\n{failed}"
                ));
            }
            continue;
        }
        if stage.phase == REWRITE && !failures.is_empty() {
            // RKE1 goes back to the old key alone here; keeping both keys is safer: every
            // Secret stays readable whichever key wrote it, and running the command again
            // finishes.
            close(&hosts).await;
            return Err(format!(
                "{failed}\nthe cluster keeps both keys; run `rkers encrypt rotate-key` again to finish"
            ));
        }
        if !failures.is_empty() {
            close(&hosts).await;
            return Err(format!("[{}]\n{failed}", stage.phase));
        }
        if stage.phase.ends_with(": write") {
            // Written on every controlplane host: recorded as current before any apiserver
            // restarts with it, so an interrupted rotation resumes with the same keys.
            let text = if stage.phase.starts_with(ADD_KEY) {
                &with_both
            } else {
                &final_text
            };
            state.current_state.encryption_config = text.clone();
            state
                .save(&cluster.files.state_path)
                .map_err(|e| e.to_string())?;
            // What the round's `state secret` stage stores.
            exec.set_state_json(state.to_json().map_err(|e| e.to_string())?);
        }
    }
    state.desired_state.encryption_config = final_text;
    state
        .save(&cluster.files.state_path)
        .map_err(|e| e.to_string())?;
    close(&hosts).await;
    reporter.info("Cluster secrets encryption key rotated successfully");
    Ok(())
}

const ADD_KEY: &str = "add new key";
const REMOVE_KEY: &str = "remove old key";
const REWRITE: &str = "rewrite secrets";
const PROVIDER_FILE: &str = "ssl/encryption.yaml";

async fn close(hosts: &[Arc<Host>]) {
    for h in hosts {
        h.link().close().await;
    }
}

/// The provider file that turns encryption off (§23), from the one the cluster runs with
/// (`applied`): `identity` first, its first aescbc key kept to read what it encrypted. `up`
/// writes it on the controlplane hosts and restarts their kube-apiservers
/// ([`crate::diff::encryption`]) before every Secret is rewritten in plain text; the
/// restarts' health checks reach them with `state`'s certificates, which they run with.
pub fn identity_first(
    applied: &str,
    state: &StateFile,
) -> Result<crate::diff::encryption::IdentityFirst, String> {
    let keys = encryption::aescbc_keys(applied).map_err(|e| e.to_string())?;
    let Some(key) = keys.first() else {
        return Err(
            "can't turn encryption off: the provider file the cluster runs with has no aescbc \
             key to keep reading its Secrets with; turn it off in the custom_config instead \
             (identity first), run `rkers up`, then remove it"
                .into(),
        );
    };
    Ok(crate::diff::encryption::IdentityFirst {
        path: PROVIDER_FILE.into(),
        contents: encryption::render_disabled(key).into_bytes(),
        key: key.name.clone(),
        check: HealthProbe {
            url: APISERVER_HEALTH.into(),
            tls: Some(apiserver_tls(state)),
        },
    })
}

/// The Kubernetes API through the admin kubeconfig.
async fn admin_api(cluster: &Cluster) -> Result<KubeApi, String> {
    let kubeconfig = std::fs::read_to_string(&cluster.files.kubeconfig_path).map_err(|e| {
        format!(
            "{}: {e} (run `rkers util get-kubeconfig`)",
            cluster.files.kubeconfig_path.display()
        )
    })?;
    KubeApi::from_kubeconfig(&kubeconfig)
        .await
        .map_err(|e| e.to_string())
}

fn controlplane_addresses(cluster: &Cluster) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in &cluster.config.nodes {
        if n.role.iter().any(|r| r == "controlplane") && !out.contains(&n.address) {
            out.push(n.address.clone());
        }
    }
    out
}

/// The controlplane hosts, connected; one unreachable host stops the command.
async fn connect_controlplane(
    cluster: &Cluster,
    agent_override: bool,
    ssh: &SshOptions,
) -> Result<Vec<Arc<Host>>, String> {
    let cp = controlplane_addresses(cluster);
    let targets: Vec<_> = cluster
        .ssh_targets(agent_override)
        .into_iter()
        .filter(|t| cp.contains(&t.address))
        .collect();
    let pool = HostPool::connect(&targets, ssh)
        .await
        .map_err(|e| format!("cannot reach every controlplane host:\n{e}"))?;
    Ok(cp.iter().filter_map(|a| pool.get(a).cloned()).collect())
}
