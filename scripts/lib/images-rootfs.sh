# Root filesystems for the sandbox images: one debootstrap'ed Debian bookworm base (cached as a
# tarball), copied per image and completed with Debian packages inside a throwaway mount namespace.
# Sourced by scripts/build-images after scripts/lib/common.sh.

# Bump when the way the base is made changes.
IMAGES_BASE_REVISION=1
IMAGES_SUITE=bookworm

images_log() { echo "build-images: $*" >&2; }
images_die() {
    images_log "error: $*"
    exit 1
}

# The machine's own Debian mirror (the first non-security deb URI in its apt sources).
images_debian_mirror() {
    local uri
    uri=$(grep -rhoE '^(URIs:|deb)[[:space:]]+[^[:space:]]*debian/?' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
        grep -v security | awk '{print $NF}' | head -1 || true)
    echo "${uri:-http://deb.debian.org/debian}"
}

images_security_mirror() {
    local uri
    uri=$(grep -rhoE '^(URIs:|deb)[[:space:]]+[^[:space:]]*debian-security/?' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
        awk '{print $NF}' | head -1 || true)
    echo "$uri"
}

# Prints the path of the cached base tarball, making it first when absent.
images_base_tarball() {
    local mirror key tarball work
    mirror=$(images_debian_mirror)
    key=$(printf '%s\n' "$mirror" "$IMAGES_SUITE" minbase "$IMAGES_BASE_REVISION" | sha256sum | cut -c1-12)
    tarball="$RKERS_CACHE/rootfs/$IMAGES_SUITE-minbase-$key.tar"
    if [ -s "$tarball" ] && tar -tf "$tarball" ./usr/bin/apt-get >/dev/null 2>&1; then
        echo "$tarball"
        return 0
    fi
    apt_install debootstrap
    images_log "debootstrap --variant=minbase $IMAGES_SUITE from $mirror (cached as $tarball)"
    mkdir -p "$RKERS_CACHE/rootfs"
    work=$(mktemp -d "$RKERS_CACHE/rootfs/debootstrap.XXXXXX")
    if ! debootstrap --variant=minbase "$IMAGES_SUITE" "$work/root" "$mirror" >"$work.log" 2>&1; then
        tail -20 "$work.log" >&2
        rm -rf "$work"
        images_die "debootstrap failed (log: $work.log)"
    fi
    local security
    security=$(images_security_mirror)
    {
        echo "deb $mirror $IMAGES_SUITE main"
        echo "deb $mirror $IMAGES_SUITE-updates main"
        [ -n "$security" ] && echo "deb $security $IMAGES_SUITE-security main"
    } >"$work/root/etc/apt/sources.list"
    tar --numeric-owner -C "$work/root" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$work" "$work.log"
    echo "$tarball"
}

# Runs a command chrooted into $1 inside a private mount namespace that has /proc, /sys and /dev,
# so nothing mounted for the build outlives it.
images_chroot() {
    local root=$1
    shift
    unshare --mount --fork --propagation private bash -euc '
        root=$1; shift
        mount -t proc proc "$root/proc"
        mount -t sysfs sysfs "$root/sys"
        mount --rbind /dev "$root/dev"
        exec chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            DEBIAN_FRONTEND=noninteractive LC_ALL=C HOME=/root "$@"
    ' images-chroot "$root" "$@"
}

# Unpacks the base into $1 and installs the Debian packages named in the remaining arguments.
images_rootfs_with_packages() {
    local root=$1
    shift
    local base
    base=$(images_base_tarball)
    mkdir -p "$root"
    tar --numeric-owner -C "$root" -xf "$base"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # Package scripts must not try to start services inside the build root.
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod 0755 "$root/usr/sbin/policy-rc.d"
    if [ $# -gt 0 ]; then
        images_chroot "$root" apt-get -qq update >&2 || images_die "apt-get update failed in $root"
        images_chroot "$root" apt-get -qq install -y --no-install-recommends "$@" >"$root.apt.log" 2>&1 || {
            tail -20 "$root.apt.log" >&2
            images_die "installing $* failed (log: $root.apt.log)"
        }
        rm -f "$root.apt.log"
    fi
}

# Removes what an image never needs at run time: apt's lists and caches, documentation, man pages,
# logs. The dpkg database stays: the entrypoint wrapper uses update-alternatives.
images_rootfs_slim() {
    local root=$1
    images_chroot "$root" apt-get -qq clean
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
        "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
        "$root"/usr/share/locale/* "$root"/usr/share/lintian \
        "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old \
        "$root"/var/log/*.log "$root"/var/log/apt/* "$root"/tmp/* "$root"/root/.cache
    rm -f "$root/usr/sbin/policy-rc.d"
    # Docker bind-mounts its own resolv.conf, hostname and hosts over these.
    : >"$root/etc/resolv.conf"
}
