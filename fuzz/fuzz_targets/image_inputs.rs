//! What `rkers image build` reads from its inputs without running them: a binary's ELF header,
//! a checksum file beside a download, the tarball's docker_tag and an input's name. Any bytes
//! give an answer or an error, never a panic; an architecture found is one Kubernetes names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rkers::image_build::{DigestAlgo, arch_in_name, elf_arch, parse_checksum_file, parse_kubernetes_version};

const ARCHES: [&str; 7] = ["amd64", "arm64", "arm", "386", "ppc64le", "s390x", "riscv64"];

fuzz_target!(|data: &[u8]| {
    if let Ok(arch) = elf_arch(data) {
        assert!(ARCHES.contains(&arch), "{arch}");
        assert!(data.starts_with(b"\x7fELF"));
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    for algo in DigestAlgo::ALL {
        let _ = parse_checksum_file("fuzz.sha", algo, text, "kubernetes-server-linux-amd64.tar.gz");
    }
    let _ = parse_kubernetes_version(text);
    if let Some(arch) = arch_in_name(text) {
        assert!(ARCHES.contains(&arch), "{arch}");
    }
});
