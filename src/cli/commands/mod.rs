//! One file per command; each turns parsed arguments into calls on the library modules.

pub mod config_cmd;
pub mod etcd;
pub mod offline;
pub mod preflight;
pub mod up;
