//! Step 4: the executor the stages run through: the controlplane hosts, the helper image,
//! the registries' credentials and the Kubernetes API through the admin kubeconfig.

use super::observe::Controlplane;
use super::{RotateKey, RotateKeyError};
use crate::kubeapi::KubeApi;
use crate::phases::executor::Executor;

pub(super) async fn executor(
    command: &RotateKey<'_>,
    found: &Controlplane,
) -> Result<Executor<'static>, RotateKeyError> {
    let cluster = command.cluster;
    let path = &cluster.files.kubeconfig_path;
    let kubeconfig = (cluster.files.storage)
        .read_to_string(path, rkers_core::bounded::KUBECONFIG)
        .map_err(|source| RotateKeyError::Kubeconfig {
            path: path.clone(),
            source,
        })?;
    let api = KubeApi::from_kubeconfig(&kubeconfig).await?;
    let image = &cluster.config.system_images.cert_downloader;
    Ok(
        Executor::new(&command.reporter, image, cluster.registry_credentials())
            .with_hosts(&found.hosts)
            .with_api(api),
    )
}
