//! Test double of rancher/wins: protocol messages, a fake server and a `wins cli` client.

pub mod client;
pub mod proto;
pub mod server;
pub mod support;
