//! One file per command; each turns parsed arguments into calls on the library modules.

pub mod cert;
pub mod config_cmd;
pub mod doctor;
pub mod encrypt;
pub mod etcd;
pub mod image;
pub mod local;
pub mod offline;
pub mod preflight;
pub mod remove;
pub mod rollback;
pub mod state_file;
pub mod up;
pub mod version;
