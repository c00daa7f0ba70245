//! Step 1, before any host: the etcd members the snapshot is taken on (at least one), the
//! S3 target (the command line's, else the config's) with its secret masked from now on, and
//! the helper image.

use super::{Save, SaveOptions};
use crate::cluster::Cluster;
use crate::output::Reporter;
use crate::phases::etcd_snapshot::{SnapshotError, backup_image, register_s3_secrets};
use rkers_core::diff::snapshot::{effective_s3, etcd_members};

pub(super) fn save<'c>(
    cluster: &'c Cluster,
    opts: &'c SaveOptions,
    reporter: &Reporter,
) -> Result<Save<'c>, SnapshotError> {
    let members = etcd_members(&cluster.config);
    if members.is_empty() {
        return Err(SnapshotError::Invalid(
            "the config has no etcd host to take a snapshot on".into(),
        ));
    }
    let s3 = effective_s3(&cluster.config.services.etcd, opts.s3.as_ref());
    if let Some(s3) = s3 {
        register_s3_secrets(s3, &cluster.redactor);
    }
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
