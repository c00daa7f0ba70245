#!/usr/bin/env bash
# Installs the Debian package into a clean Debian bookworm root and uses it there as a user
# would: `rkers --version`, `man rkers`, bash completion, and `rkers up --dry-run` against the
# sandbox (its hosts are reached from the root, which shares this machine's network).
#
#   tests/deb/run.sh [--deb FILE] [BINARY]
#
# Without --deb it packages BINARY (default: the test build, $CARGO_TARGET_DIR/debug/rkers) with
# `cargo deb --no-build`, as scripts/release packages the optimised build, so CI tests the
# package without a second, optimised compile. Needs root, the sandbox up (scripts/sandbox up)
# and cargo-deb (installed into /var/cache/rkers/tools when missing). The clean root is
# debootstrap's minbase plus man-db and bash-completion, cached as a tarball under
# /var/cache/rkers/rootfs. Prints one line per check and `N passed, N failed` last.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../../scripts/lib/common.sh
source "$repo/scripts/lib/common.sh"
# shellcheck source=../../scripts/lib/images-rootfs.sh
source "$repo/scripts/lib/images-rootfs.sh"
# shellcheck source=../../scripts/lib/tools.sh
source "$repo/scripts/lib/tools.sh"

deb=""
if [ "${1:-}" = --deb ]; then
    deb=$(realpath "$2")
    shift 2
fi
binary=${1:-${CARGO_TARGET_DIR:-$RKERS_CACHE/target}/debug/rkers}
[ "$(id -u)" = 0 ] || {
    echo "deb test: needs root (chroot)" >&2
    exit 2
}
cluster_yml="$RKERS_SANDBOX_DIR/cluster.yml"
[ -f "$cluster_yml" ] || {
    echo "deb test: no sandbox at $RKERS_SANDBOX_DIR (scripts/sandbox up)" >&2
    exit 2
}

work=$(mktemp -d "$RKERS_CACHE/deb-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() { # check NAME COMMAND...: one result line per check
    local name=$1 out
    shift
    if out=$("$@" 2>&1 </dev/null); then
        echo "ok   $name"
        passed=$((passed + 1))
    else
        echo "FAIL $name"
        printf '%s\n' "$out" | tail -20 | sed 's/^/     /'
        failed=$((failed + 1))
    fi
}

if [ -z "$deb" ]; then
    [ -x "$binary" ] || {
        echo "deb test: no rkers binary at $binary (cargo build)" >&2
        exit 2
    }
    cargo_deb=$(cargo_deb_tool) || exit 1
    # cargo-deb packages target/release/... of the target directory it is given: place the
    # binary and the assets the binary makes there.
    mkdir -p "$work/target/release" "$work/out"
    cp "$binary" "$work/target/release/rkers"
    deb_assets "$work/target/release/deb-assets" "$binary"
    # --fast: this package is only installed here, and xz at its default level spends minutes
    # of a busy CPU on the 130 MB unstripped test binary (scripts/release keeps the default).
    (cd "$repo" && CARGO_TARGET_DIR="$work/target" "$cargo_deb" deb --no-build --locked \
        --no-strip --fast --output "$work/out" >"$work/cargo-deb.log" 2>&1) || {
        cat "$work/cargo-deb.log" >&2
        exit 1
    }
    deb=$(ls "$work"/out/*.deb)
fi
echo "package: $(basename "$deb")"

contents() { dpkg-deb -c "$deb" | awk '{print $NF}'; }
has_files() {
    local listing f
    listing=$(contents)
    for f in ./usr/bin/rkers ./usr/share/man/man1/rkers.1.gz \
        ./usr/share/bash-completion/completions/rkers ./usr/share/zsh/vendor-completions/_rkers \
        ./usr/share/fish/vendor_completions.d/rkers.fish ./usr/lib/systemd/system/rkers-serve.service; do
        grep -qx "$f" <<<"$listing" || {
            echo "missing $f in:"
            echo "$listing"
            return 1
        }
    done
}
check "package holds the binary, man page, completions and the serve unit" has_files

# The clean root, cached: minbase plus what the checks use (man, bash completion).
key=$(printf '%s\n' "$(basename "$(images_base_tarball)")" man-db bash-completion | sha256sum | cut -c1-12)
root_tar="$RKERS_CACHE/rootfs/deb-test-$key.tar"
if [ ! -s "$root_tar" ]; then
    images_rootfs_with_packages "$work/base" man-db bash-completion >/dev/null
    rm -rf "$work/base/usr/sbin/policy-rc.d" "$work/base"/var/lib/apt/lists/* "$work/base"/var/cache/apt/*
    tar --numeric-owner -C "$work/base" -cf "$root_tar.tmp" . && mv "$root_tar.tmp" "$root_tar"
    rm -rf "$work/base"
fi
root="$work/root"
mkdir -p "$root"
tar --numeric-owner -C "$root" -xf "$root_tar"
in_root() { images_chroot "$root" "$@"; }

cp "$deb" "$root/tmp/rkers.deb"
check "dpkg -i installs it" in_root dpkg -i /tmp/rkers.deb
check "rkers is on PATH from the package" in_root sh -c 'test "$(command -v rkers)" = /usr/bin/rkers && dpkg -S /usr/bin/rkers'

version_says_what_it_is() {
    local out
    out=$(in_root rkers --version) || return 1
    echo "$out"
    grep -q "^rkers [0-9]" <<<"$out" && grep -q "^commit: " <<<"$out" && grep -q "^built: " <<<"$out" &&
        grep -q "^metadata: .*kontainer-driver-metadata" <<<"$out" && grep -q "^data: .*sha256" <<<"$out" &&
        [ "$out" = "$(in_root rkers version --client)" ]
}
check "rkers --version and version --client: version, commit, build date, metadata" version_says_what_it_is

man_page() {
    local out
    out=$(in_root env MANPAGER=cat MANWIDTH=100 man rkers) || return 1
    grep -q "rkers" <<<"$out" && grep -q "SUBCOMMANDS\|COMMANDS" <<<"$out" && grep -q "serve" <<<"$out" ||
        { echo "$out" | head -30; return 1; }
}
check "man rkers" man_page

# bash completion as an interactive shell gets it: bash-completion loads /usr/share's file on
# first use; completing `rkers up --dry` must offer --dry-run.
bash_completion() {
    local out
    out=$(in_root bash -c '
        source /usr/share/bash-completion/bash_completion
        _completion_loader rkers
        complete -p rkers || exit 1
        COMP_WORDS=(rkers up --dry); COMP_CWORD=2; COMP_LINE="rkers up --dry"; COMP_POINT=${#COMP_LINE}
        fn=$(complete -p rkers | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
        "$fn" rkers --dry up
        printf "%s\n" "${COMPREPLY[@]}"') || { echo "$out"; return 1; }
    echo "$out"
    grep -qx -- "--dry-run" <<<"$out"
}
check "bash completion offers rkers up --dry-run" bash_completion

check "systemd unit is installed, not enabled" in_root sh -c \
    'test -f /usr/lib/systemd/system/rkers-serve.service && ! ls /etc/systemd/system/*/rkers-serve.service 2>/dev/null'

# `up --dry-run` against the sandbox from inside the root: the cluster.yml, key and known_hosts
# copied to the same paths, so the config works unchanged.
mkdir -p "$root$RKERS_SANDBOX_DIR"
cp -a "$cluster_yml" "$RKERS_SANDBOX_DIR/ssh" "$root$RKERS_SANDBOX_DIR/"
dry_run() {
    local out
    # No stdin (a dry run asks nothing), and a bound in case a host never answers.
    out=$(in_root timeout 300 rkers up \
        --config "$cluster_yml" --known-hosts "$RKERS_SANDBOX_DIR/ssh/known_hosts" --dry-run </dev/null) ||
        { echo "$out"; return 1; }
    echo "$out"
    local first
    first=$(grep -m1 -o '^  - address: [0-9.]*' "$cluster_yml" | awk '{print $3}')
    grep -q "$first" <<<"$out" && ! ls "$root$RKERS_SANDBOX_DIR"/*.rkestate 2>/dev/null
}
check "rkers up --dry-run against the sandbox from the root" dry_run

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
