//! Apply: one container brought to its planned state (created, recreated beside the old one,
//! started or restarted), then its health checked; once per run.

use super::run::Run;
use crate::diff::Action;
use crate::hosts::{self, Host};
use crate::phases::health::{self, TlsMaterial};
use crate::pki;
use crate::plan::{self, HostPlan};
use std::time::Duration;

/// Converts the plan's container (RKE1's process model) into what Docker is asked to create.
pub(super) fn docker_spec(spec: &plan::ContainerSpec) -> hosts::ContainerSpec {
    hosts::ContainerSpec {
        image: spec.image.clone(),
        entrypoint: spec.entrypoint.clone(),
        cmd: spec.cmd.clone(),
        env: spec.env.clone(),
        binds: spec.binds.clone(),
        network_mode: spec.network_mode.clone(),
        pid_mode: spec.pid_mode.clone(),
        privileged: spec.privileged,
        restart_policy: match spec.restart_policy.as_deref() {
            Some("always") => Some(hosts::RestartPolicy::Always),
            Some("on-failure") => Some(hosts::RestartPolicy::OnFailure),
            Some("unless-stopped") => Some(hosts::RestartPolicy::UnlessStopped),
            _ => None,
        },
        volumes_from: spec.volumes_from.clone(),
        labels: spec.labels.clone(),
        security_opt: spec.security_opt.clone(),
        user: spec.user.clone(),
        ports: spec
            .port_bindings
            .iter()
            .map(|p| hosts::PortBinding {
                host_ip: p.host_ip.clone(),
                host_port: p.host_port,
                container_port: p.container_port,
                protocol: p.protocol.clone(),
            })
            .collect(),
        ..Default::default()
    }
}

/// Brings one container to its planned state, then checks its health; once per run (a
/// concurrent caller waits for the first one, and tries again when that one failed).
pub(super) async fn apply_container(
    run: &Run,
    host: &Host,
    h: &HostPlan,
    name: &str,
) -> Result<(), String> {
    let once = run
        .applied
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(format!("{}/{name}", h.address))
        .or_default()
        .clone();
    once.get_or_try_init(|| apply_container_once(run, host, h, name))
        .await
        .map(|_| ())
}

pub(super) async fn apply_container_once(
    run: &Run,
    host: &Host,
    h: &HostPlan,
    name: &str,
) -> Result<(), String> {
    let spec = &h.containers[name];
    let docker = host.docker();
    let action = run.actions[&h.address].iter().find(|a| match a {
        Action::CreateContainer { name: n, .. }
        | Action::RecreateContainer { name: n, .. }
        | Action::StartContainer { name: n }
        | Action::RestartContainer { name: n } => n == name,
        _ => false,
    });
    let err = |e: hosts::HostError| e.to_string();
    match action {
        Some(Action::CreateContainer { .. }) => {
            if name == plan::ETCD {
                fix_etcd_permissions(run, host, h).await?;
            }
            docker.remove_container(name).await.map_err(err)?;
            docker
                .create_container(name, &docker_spec(spec))
                .await
                .map_err(err)?;
            if spec.start {
                docker.start_container(name).await.map_err(err)?;
            }
        }
        Some(Action::RecreateContainer { .. }) => {
            // RKE1's rolling replace (§22.1): the old container is kept aside until the new one
            // exists, so a failed create leaves something to fall back to.
            let old = format!("old-{name}");
            docker.remove_container(&old).await.map_err(err)?;
            docker.stop_container(name).await.map_err(err)?;
            docker.rename_container(name, &old).await.map_err(err)?;
            docker
                .create_container(name, &docker_spec(spec))
                .await
                .map_err(err)?;
            if spec.start {
                docker.start_container(name).await.map_err(err)?;
            }
            docker.remove_container(&old).await.map_err(err)?;
        }
        Some(Action::StartContainer { .. }) => docker.start_container(name).await.map_err(err)?,
        Some(Action::RestartContainer { .. }) => {
            docker.stop_container(name).await.map_err(err)?;
            docker.start_container(name).await.map_err(err)?;
        }
        _ => {}
    }
    if spec.start
        && let Some(check) = &spec.health_check
    {
        let tls = check_tls(run, check);
        let attempts = if name == plan::ETCD { 18 } else { 24 };
        let accept = |body: &str| name != plan::ETCD || health::etcd_body_healthy(body);
        if let Err(e) =
            health::wait_healthy(host.ssh(), &check.url, tls.as_ref(), attempts, accept).await
        {
            let logs = docker.logs(name, 5).await.unwrap_or_default();
            let last = logs.lines().last().unwrap_or("").trim();
            return Err(format!(
                "{name}: Failed to verify healthcheck: {e}, log: {last}"
            ));
        }
    }
    Ok(())
}

pub(super) async fn fix_etcd_permissions(
    run: &Run,
    host: &Host,
    h: &HostPlan,
) -> Result<(), String> {
    let data_dir = plan::join_path(&[&h.prefix_path, "/var/lib/etcd"]);
    let spec = hosts::ContainerSpec {
        image: run.helper_image.clone(),
        entrypoint: vec!["/bin/sh".into(), "-c".into()],
        cmd: vec!["mkdir -p /var/lib/rancher/etcd && chmod 700 /var/lib/rancher/etcd".into()],
        binds: vec![format!("{data_dir}:/var/lib/rancher/etcd:z")],
        ..Default::default()
    };
    host.docker()
        .run_to_success("etcd-fix-perm", &spec, Duration::from_secs(120))
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

pub(super) async fn remove_unplanned(
    run: &Run,
    host: &Host,
    h: &HostPlan,
    names: &[&str],
) -> Result<(), String> {
    for a in &run.actions[&h.address] {
        if let Action::RemoveContainer { name, .. } = a
            && names.contains(&name.as_str())
        {
            host.docker()
                .remove_container(name)
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

pub(super) fn check_tls(run: &Run, check: &plan::HealthCheck) -> Option<TlsMaterial> {
    check.client_certificate.as_ref().map(|c| TlsMaterial {
        ca_pem: run
            .bundle
            .get(pki::names::CA_CERT_NAME)
            .map(|ca| ca.certificate_pem.clone()),
        client_cert_pem: run.bundle.get(c).map(|c| c.certificate_pem.clone()),
        client_key_pem: run.bundle.get(c).map(|c| c.key_pem.clone()),
    })
}
