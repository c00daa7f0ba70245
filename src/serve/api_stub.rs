//! TEMPORARY: the names of the library API contract (issue 20) until wip-api is merged.
#![allow(dead_code, unused_variables)]
pub use crate::output::{Event, EventSink, Status};
pub use crate::state::store::{StateStore, StateVersion, StoreError};
use std::sync::Arc;
pub use tokio_util::sync::CancellationToken;

pub enum ClusterInput {
    Yaml(String),
}
pub struct Operation {
    pub cancel: CancellationToken,
    pub events: EventSink,
    pub store: Arc<dyn StateStore>,
}
impl Operation {
    pub fn new(cluster: ClusterInput, store: Arc<dyn StateStore>) -> Self {
        Operation {
            cancel: CancellationToken::new(),
            events: Arc::new(|_| {}),
            store,
        }
    }
    pub fn with_cancel(mut self, c: CancellationToken) -> Self {
        self.cancel = c;
        self
    }
    pub fn with_events(mut self, s: EventSink) -> Self {
        self.events = s;
        self
    }
}
#[derive(Default)]
pub struct UpRequest {
    pub force: bool,
    pub disable_port_check: bool,
    pub yes: bool,
}
#[derive(Default)]
pub struct RemoveRequest {
    pub keep_backups: bool,
}
#[derive(Default)]
pub struct CertRotateRequest {
    pub rotate_ca: bool,
    pub services: Vec<String>,
}
pub struct Outcome {
    pub kubeconfig: Option<String>,
    pub state_version: StateVersion,
}
#[derive(serde::Serialize)]
pub struct Plan {
    pub hosts: Vec<crate::diff::HostActions>,
}
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidConfig(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Failed(String),
}
impl ApiError {
    pub fn exit_code(&self) -> u8 {
        match self {
            ApiError::InvalidConfig(_) => 2,
            ApiError::Cancelled => 130,
            _ => 1,
        }
    }
}
async fn nothing(op: &Operation) -> Result<Outcome, ApiError> {
    // Saves the state once, so the server's plumbing can be exercised without hosts.
    let loaded = op.store.load()?;
    let v = op
        .store
        .save(&loaded.state.unwrap_or_default(), &loaded.version)?;
    tokio::select! { _ = op.cancel.cancelled() => return Err(ApiError::Cancelled), _ = tokio::time::sleep(std::time::Duration::from_millis(300)) => {} }
    Ok(Outcome {
        kubeconfig: Some("apiVersion: v1\nsecret-kubeconfig".into()),
        state_version: v,
    })
}
pub async fn up(op: &Operation, req: UpRequest) -> Result<Outcome, ApiError> {
    nothing(op).await
}
pub async fn plan(op: &Operation) -> Result<Plan, ApiError> {
    Ok(Plan { hosts: vec![] })
}
pub async fn remove(op: &Operation, req: RemoveRequest) -> Result<Outcome, ApiError> {
    nothing(op).await
}
pub async fn cert_rotate(op: &Operation, req: CertRotateRequest) -> Result<Outcome, ApiError> {
    nothing(op).await
}
pub async fn snapshot_save(op: &Operation, name: &str) -> Result<Outcome, ApiError> {
    nothing(op).await
}
pub async fn snapshot_restore(op: &Operation, name: &str) -> Result<Outcome, ApiError> {
    nothing(op).await
}
