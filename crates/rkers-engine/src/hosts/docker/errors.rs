//! How bollard's errors become [`HostError`]s naming the host (and the container), and the
//! not-found test the other files share.

use bollard::errors::Error as BollardError;

use super::DockerClient;
use crate::hosts::error::HostError;

impl DockerClient {
    pub(super) fn err(&self, op: impl Into<String>, e: BollardError) -> HostError {
        HostError::Docker {
            host: self.host.clone(),
            op: op.into(),
            detail: describe_bollard(e),
        }
    }

    pub(super) fn cerr(&self, container: &str, what: &str, e: BollardError) -> HostError {
        HostError::Container {
            host: self.host.clone(),
            container: container.to_owned(),
            detail: format!("{what}: {}", describe_bollard(e)),
        }
    }
}

pub(super) fn is_not_found(e: &BollardError) -> bool {
    matches!(
        e,
        BollardError::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

fn describe_bollard(e: BollardError) -> String {
    match e {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => format!("{message} (HTTP {status_code})"),
        other => other.to_string(),
    }
}
