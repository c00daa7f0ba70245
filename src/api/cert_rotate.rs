//! `cert rotate` as a library call, its services named as RKE1 names them.

use super::run::{cluster_error, operate};
use super::{ApiError, Operation, Outcome};
use crate::phases;

/// `rkers cert rotate`.
#[derive(Clone, Debug, Default)]
pub struct CertRotateRequest {
    pub rotate_ca: bool,
    /// Services by their RKE1 names (`kube-apiserver`, `kubelet`, `etcd`, ...); empty means all.
    pub services: Vec<String>,
}

/// Rotates certificates, like `rkers cert rotate`.
///
/// ```no_run
/// # async fn example(op: rkers::api::Operation) -> Result<(), rkers::api::ApiError> {
/// use rkers::api::CertRotateRequest;
/// let req = CertRotateRequest { services: vec!["kubelet".into()], ..Default::default() };
/// rkers::api::cert_rotate(&op, req).await?;
/// # Ok(()) }
/// ```
pub async fn cert_rotate(op: &Operation, req: CertRotateRequest) -> Result<Outcome, ApiError> {
    operate(op, "cert rotate", move |run, reporter| {
        Box::pin(async move {
            let opts = phases::cert_rotate::RotateOptions {
                dry_run: false,
                services: req
                    .services
                    .iter()
                    .map(|s| rotate_service(s))
                    .collect::<Result<_, _>>()?,
                rotate_ca: req.rotate_ca,
                agent_override: false,
                ssh: run.ssh.clone(),
                ignore_blocking_webhooks: false,
            };
            phases::cert_rotate::cert_rotate(&run.cluster, &opts, reporter)
                .await
                .map_err(|e| match e {
                    phases::cert_rotate::RotateError::Cluster(c) => cluster_error(c),
                    other => ApiError::Operation(crate::error::Failure::new(other)),
                })
        })
    })
    .await
}

fn rotate_service(name: &str) -> Result<crate::pki::RotateService, ApiError> {
    use crate::pki::RotateService as S;
    Ok(match name {
        "kube-apiserver" => S::KubeApiserver,
        "kube-controller-manager" => S::KubeControllerManager,
        "kube-scheduler" => S::KubeScheduler,
        "kubelet" => S::Kubelet,
        "kube-proxy" => S::KubeProxy,
        "etcd" => S::Etcd,
        other => {
            return Err(ApiError::InvalidConfig(format!(
                "cert rotate: unknown service {other:?}; the services are kube-apiserver, \
                 kube-controller-manager, kube-scheduler, kubelet, kube-proxy and etcd"
            )));
        }
    })
}
