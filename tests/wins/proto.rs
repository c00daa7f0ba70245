//! The messages of tests/wins/wins.proto as prost types, written by hand (field numbers and
//! types exactly as in the .proto; prost snake-cases the names).

#![allow(dead_code)]

#[derive(Clone, PartialEq, prost::Message)]
pub struct Void {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum RunExposeProtocol {
    Tcp = 0,
    Udp = 1,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessExpose {
    #[prost(int32, tag = "1")]
    pub port: i32,
    #[prost(enumeration = "RunExposeProtocol", tag = "2")]
    pub protocol: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessName {
    #[prost(string, tag = "1")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessStartRequest {
    #[prost(string, tag = "1")]
    pub checksum: String,
    #[prost(string, tag = "2")]
    pub path: String,
    #[prost(string, repeated, tag = "3")]
    pub args: Vec<String>,
    #[prost(message, repeated, tag = "4")]
    pub exposes: Vec<ProcessExpose>,
    #[prost(string, repeated, tag = "5")]
    pub envs: Vec<String>,
    #[prost(string, tag = "6")]
    pub dir: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessStartResponse {
    #[prost(message, optional, tag = "1")]
    pub data: Option<ProcessName>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessWaitRequest {
    #[prost(message, optional, tag = "1")]
    pub data: Option<ProcessName>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessWaitResponse {
    #[prost(oneof = "process_wait_response::Options", tags = "1, 2")]
    pub options: Option<process_wait_response::Options>,
}

pub mod process_wait_response {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Options {
        #[prost(bytes, tag = "1")]
        StdOut(Vec<u8>),
        #[prost(bytes, tag = "2")]
        StdErr(Vec<u8>),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessKeepAliveRequest {
    #[prost(message, optional, tag = "1")]
    pub data: Option<ProcessName>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HnsNetworkSubnet {
    #[prost(string, tag = "1")]
    pub address_cidr: String,
    #[prost(string, tag = "2")]
    pub gateway_address: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HnsNetwork {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub r#type: String,
    #[prost(message, repeated, tag = "3")]
    pub subnets: Vec<HnsNetworkSubnet>,
    #[prost(string, tag = "4")]
    pub management_ip: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HnsGetNetworkRequest {
    #[prost(oneof = "hns_get_network_request::Options", tags = "1, 2")]
    pub options: Option<hns_get_network_request::Options>,
}

pub mod hns_get_network_request {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Options {
        #[prost(string, tag = "1")]
        Address(String),
        #[prost(string, tag = "2")]
        Name(String),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HnsGetNetworkResponse {
    #[prost(message, optional, tag = "1")]
    pub data: Option<HnsNetwork>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HostVersion {
    #[prost(string, tag = "1")]
    pub current_major_version_number: String,
    #[prost(string, tag = "2")]
    pub current_minor_version_number: String,
    #[prost(string, tag = "3")]
    pub current_build_number: String,
    #[prost(string, tag = "4")]
    pub ubr: String,
    #[prost(string, tag = "5")]
    pub release_id: String,
    #[prost(string, tag = "6")]
    pub build_lab_ex: String,
    #[prost(string, tag = "7")]
    pub current_build: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HostGetVersionResponse {
    #[prost(message, optional, tag = "1")]
    pub data: Option<HostVersion>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NetworkAdapter {
    #[prost(string, tag = "1")]
    pub interface_index: String,
    #[prost(string, tag = "2")]
    pub gateway_address: String,
    #[prost(string, tag = "3")]
    pub subnet_cidr: String,
    #[prost(string, tag = "4")]
    pub host_name: String,
    #[prost(string, tag = "5")]
    pub address_cidr: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NetworkGetRequest {
    #[prost(oneof = "network_get_request::Options", tags = "1, 2")]
    pub options: Option<network_get_request::Options>,
}

pub mod network_get_request {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Options {
        #[prost(string, tag = "1")]
        Address(String),
        #[prost(string, tag = "2")]
        Name(String),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NetworkGetResponse {
    #[prost(message, optional, tag = "1")]
    pub data: Option<NetworkAdapter>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RouteAddRequest {
    #[prost(string, repeated, tag = "1")]
    pub addresses: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationInfo {
    #[prost(string, tag = "1")]
    pub checksum: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, tag = "3")]
    pub commit: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ApplicationInfoResponse {
    #[prost(message, optional, tag = "1")]
    pub info: Option<ApplicationInfo>,
}
