# Cargo-installed tools the scripts need (mdBook, cargo-deb), pinned and kept outside the
# repository in $RKERS_CACHE/tools so a second run, and CI on the same machine, reuse them.
# Sourced after scripts/lib/common.sh.

RKERS_TOOLS="$RKERS_CACHE/tools"
MDBOOK_VERSION=0.5.4
CARGO_DEB_VERSION=3.8.0

# cargo_tool BINARY CRATE VERSION [cargo install flags...]: prints the tool's path, installing
# it first when that version is missing. Builds in a target directory of its own (not the
# project's), without the features the scripts do not use, to keep the compile short.
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
    if ! env -u CARGO_TARGET_DIR -u RUSTFLAGS cargo install --locked --root "$RKERS_TOOLS" \
        --target-dir "$RKERS_CACHE/tools-target" --version "$version" "$@" "$crate" >"$log" 2>&1; then
        tail -20 "$log" >&2
        echo "cargo install $crate $version failed (log: $log)" >&2
        return 1
    fi
    rm -rf "$RKERS_CACHE/tools-target"
    echo "$path"
}

mdbook_tool() { cargo_tool mdbook mdbook "$MDBOOK_VERSION" --no-default-features; }
cargo_deb_tool() { cargo_tool cargo-deb cargo-deb "$CARGO_DEB_VERSION" --no-default-features --features lzma; }

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
