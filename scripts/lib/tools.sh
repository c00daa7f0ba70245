# Cargo-installed tools the scripts need (mdBook, cargo-deb, cargo-nextest, cargo-fuzz), pinned
# and kept outside the repository in $RKERS_CACHE/tools so a second run, and CI on the same
# machine, reuse them. Sourced after scripts/lib/common.sh.

RKERS_TOOLS="$RKERS_CACHE/tools"
MDBOOK_VERSION=0.5.4
CARGO_DEB_VERSION=3.8.0
NEXTEST_VERSION=0.9.151
CARGO_FUZZ_VERSION=0.13.2

# cargo_tool BINARY CRATE VERSION [cargo install flags...]: prints the tool's path, installing
# it first when that version is missing. Builds in a target directory of its own (not the
# project's; one for each tool, as two may be installed at once), without the features the
# scripts do not use, to keep the compile short. The tools' own release profiles (LTO, one
# codegen unit) are overridden with a cheap one: on a fresh 2-core machine cargo-nextest's
# release build took 570 s alone. Tools whose work here is light (running tests, rendering a
# small book, driving cargo) are debug builds (--debug): cargo-nextest took 219 s wall (366 s of
# CPU) so, 377 s (672 s) at opt-level 1 (2026-12-07, crates downloaded).
cargo_tool() {
    local bin=$1 crate=$2 version=$3
    shift 3
    local path="$RKERS_TOOLS/bin/$bin"
    if [ -x "$path" ] && grep -q "^\"$crate $version " "$RKERS_TOOLS/.crates.toml" 2>/dev/null; then
        echo "$path"
        return 0
    fi
    mkdir -p "$RKERS_TOOLS" "$RKERS_CACHE/logs"
    local log="$RKERS_CACHE/logs/tool-$crate.log"
    if ! env -u CARGO_TARGET_DIR -u RUSTFLAGS CARGO_PROFILE_RELEASE_LTO=false \
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
        CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=true \
        cargo install --locked --root "$RKERS_TOOLS" \
        --target-dir "$RKERS_CACHE/tools-target/$crate" --version "$version" "$@" "$crate" >"$log" 2>&1; then
        tail -20 "$log" >&2
        echo "cargo install $crate $version failed (log: $log)" >&2
        return 1
    fi
    rm -rf "$RKERS_CACHE/tools-target/$crate"
    echo "$path"
}

mdbook_tool() { cargo_tool mdbook mdbook "$MDBOOK_VERSION" --debug --no-default-features; }
# Optimised (opt-level 1): it compresses the package with xz, compiled from C at that level.
cargo_deb_tool() { cargo_tool cargo-deb cargo-deb "$CARGO_DEB_VERSION" --no-default-features --features lzma; }
nextest_tool() { cargo_tool cargo-nextest cargo-nextest "$NEXTEST_VERSION" --debug; }
cargo_fuzz_tool() { cargo_tool cargo-fuzz cargo-fuzz "$CARGO_FUZZ_VERSION" --debug; }

# deb_assets DIR RKERS: the man page and shell completions the Debian package ships, made by
# the binary itself (Cargo.toml's [package.metadata.deb] lists them).
deb_assets() {
    local dir=$1 rkers=$2
    mkdir -p "$dir"
    "$rkers" man | gzip -9n >"$dir/rkers.1.gz"
    "$rkers" completions bash >"$dir/rkers.bash"
    "$rkers" completions zsh >"$dir/_rkers"
    "$rkers" completions fish >"$dir/rkers.fish"
}
