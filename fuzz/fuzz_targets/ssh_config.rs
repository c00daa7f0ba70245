//! The part of `~/.ssh/config` support rkers parses itself: `ProxyJump` values
//! (`[ssh://][user@]host[:port]`, comma-separated). The file itself is resolved by OpenSSH
//! (`ssh -G`), not by rkers, so it has no in-process parser to fuzz. Never a panic; every hop
//! comes from one non-empty comma-separated piece of the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rkers::hosts::ssh_config::parse_proxy_jump;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let hops = parse_proxy_jump(text);
    assert_eq!(hops.len(), text.split(',').filter(|s| !s.is_empty()).count());
    for hop in &hops {
        assert!(text.contains(hop.host.as_str()));
    }
});
