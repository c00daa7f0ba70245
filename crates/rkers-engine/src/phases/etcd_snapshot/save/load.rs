//! Step 1, before any host: the etcd members the snapshot is taken on (at least one), the
//! S3 target (the command line's, else the config's) with its secret masked from now on, and
//! the helper image.

use super::{Save, SaveOptions};
use crate::cluster::Cluster;
use crate::output::Reporter;
use crate::phases::etcd_snapshot::{SnapshotError, backup_image, members_and_s3};

pub(super) fn save<'c>(
    cluster: &'c Cluster,
    opts: &'c SaveOptions,
    reporter: &Reporter,
) -> Result<Save<'c>, SnapshotError> {
    let (members, s3) = members_and_s3(
        cluster,
        opts.s3.as_ref(),
        "the config has no etcd host to take a snapshot on",
    )?;
    Ok(Save {
        cluster,
        opts,
        reporter: reporter.clone(),
        members,
        s3,
        image: backup_image(cluster),
        failures: Vec::new(),
        planned: 0,
    })
}
