//! Compresses KDM's addon template bodies (`data/addon-templates.json`, about 9.8 MB of Go
//! template text, the same manifests again and again across 75 versions) into the binary: zstd
//! at its highest level keeps the file about a hundredth of its size. `data/generate --check`
//! and the template tests read the JSON itself; only the binary carries it compressed.

use std::path::PathBuf;

fn main() {
    let source = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("../../data/addon-templates.json");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed=build.rs");
    let json =
        std::fs::read(&source).unwrap_or_else(|e| panic!("reading {}: {e}", source.display()));
    let packed = zstd::bulk::compress(&json, 19).expect("zstd compresses in memory");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it"))
        .join("addon-templates.json.zst");
    std::fs::write(&out, packed).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
