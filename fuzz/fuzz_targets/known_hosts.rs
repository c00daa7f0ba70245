//! The known_hosts parser on arbitrary text: lines that do not parse are skipped (as OpenSSH
//! does), never a panic; the first line names the hosts to look up, hashed or patterned entries
//! included, and the decision for a fixed key must be the same on a second parse.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rkers::hosts::known_hosts::KnownHosts;
use russh::keys::PublicKey;
use std::path::Path;

const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDVczkfNWDMcE2sSLzLotyfIKj+z3InBYbx/ApY92Pi7";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (names, file) = text.split_once('\n').unwrap_or((text, ""));
    let names: Vec<String> = names.split_whitespace().map(str::to_owned).collect();
    let key = PublicKey::from_openssh(KEY).expect("a valid key");
    let first = KnownHosts::parse(Path::new("fuzz_known_hosts"), file).check(&names, &key);
    let again = KnownHosts::parse(Path::new("fuzz_known_hosts"), file).check(&names, &key);
    assert_eq!(first, again);
});
