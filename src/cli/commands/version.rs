//! `rkers version`: the cluster's Kubernetes version, asked from the API server through the
//! admin kubeconfig, printed as RKE1 prints it; with `--client`, this program's build.

use crate::cli::CliError;
use crate::cluster::Cluster;
use crate::kubeapi::KubeApi;

/// `rkers version --client`: what `rkers --version` prints, plus the metadata file in use when
/// RKERS_METADATA_FILE or RANCHER_METADATA_URL replaces the one compiled in.
pub fn print_client() -> Result<(), CliError> {
    let in_use = match crate::metadata::Catalog::load() {
        Ok(catalog) if catalog.origin() != crate::metadata::Catalog::embedded().origin() => {
            format!("metadata in use: {}\n", catalog.origin())
        }
        Ok(_) => String::new(),
        Err(e) => format!("metadata in use: none ({e})\n"),
    };
    super::super::print_out(format_args!(
        "rkers {}\n{in_use}",
        crate::build_info::describe()
    ))
}

pub async fn run(cluster: &Cluster) -> Result<(), CliError> {
    let path = &cluster.files.kubeconfig_path;
    let text = rkers_core::bounded::read_to_string(path, rkers_core::bounded::KUBECONFIG).map_err(
        |e| {
            CliError::Failed(format!(
                "{}: {e} (run `rkers up`, or `rkers util get-kubeconfig`)",
                path.display()
            ))
        },
    )?;
    let api = KubeApi::from_kubeconfig(&text)
        .await
        .map_err(CliError::failed)?;
    let info = api
        .client
        .apiserver_version()
        .await
        .map_err(|e| CliError::Failed(format!("{}: GET /version: {e}", api.server)))?;
    super::super::print_out(format_args!("Server Version: {}\n", go_version_info(&info)))
}

/// Go's `%#v` of `version.Info`, which is what RKE1 prints.
fn go_version_info(i: &k8s_openapi::apimachinery::pkg::version::Info) -> String {
    format!(
        "version.Info{{Major:{:?}, Minor:{:?}, GitVersion:{:?}, GitCommit:{:?}, GitTreeState:{:?}, BuildDate:{:?}, GoVersion:{:?}, Compiler:{:?}, Platform:{:?}}}",
        i.major,
        i.minor,
        i.git_version,
        i.git_commit,
        i.git_tree_state,
        i.build_date,
        i.go_version,
        i.compiler,
        i.platform
    )
}
