//! Step 1, before any host: the etcd members the snapshot is restored on (at least one), the
//! local state file (it holds the certificates), the S3 target (the command line's, else the
//! config's) with its secret masked from now on, and the helper image.

use super::{Restore, RestoreOptions};
use crate::cluster::Cluster;
use crate::output::Reporter;
use crate::phases::etcd_snapshot::{SnapshotError, backup_image, members_and_s3};

pub(super) fn restore<'c>(
    cluster: &'c Cluster,
    opts: &'c RestoreOptions,
    reporter: &Reporter,
) -> Result<Restore<'c>, SnapshotError> {
    let (members, s3) = members_and_s3(
        cluster,
        opts.s3.as_ref(),
        "the config has no etcd host to restore a snapshot on",
    )?;
    if cluster.load_state()?.is_none() {
        return Err(SnapshotError::Invalid(format!(
            "{} not found: restoring needs the cluster's state file (its certificates)",
            cluster.files.state_path.display()
        )));
    }
    reporter.info(format!("Restoring etcd snapshot {}", opts.name));
    Ok(Restore {
        cluster,
        opts,
        reporter: reporter.clone(),
        members,
        s3,
        image: backup_image(cluster),
        up_failure: Default::default(),
    })
}
