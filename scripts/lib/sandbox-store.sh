# shellcheck shell=bash
# The hosts' Docker data on a compressed file system (SANDBOX_DOCKER_STORE=btrfs): one sparse
# file per sandbox instance, formatted btrfs and mounted with zstd compression, holding one
# directory per host that the host binds over its /var/lib/docker. Every host keeps its own
# image copies (each host pulls, as a real one would), but Go binaries and Debian files compress
# about 3:1, so 30 hosts fit where they did not on plain ext4. The default ("plain") keeps each
# host's /var/lib/docker under its own directory, as before. Once a store exists for an instance,
# it is used until `down --purge`, whatever the variable says, so later commands find the data.
# Sourced by scripts/sandbox after scripts/lib/common.sh.

SANDBOX_STORE_IMG="$RKERS_SANDBOX_DIR/docker-store.btrfs"
SANDBOX_STORE_MNT="$RKERS_SANDBOX_DIR/docker-store"
# The file is sparse: this bounds it, the disk only holds what the hosts wrote (discard frees
# blocks again when images are removed).
SANDBOX_STORE_SIZE="${SANDBOX_STORE_SIZE:-120G}"

sandbox_store_wanted() {
    [ -f "$SANDBOX_STORE_IMG" ] && return 0
    case ${SANDBOX_DOCKER_STORE:-plain} in
        btrfs) return 0 ;;
        plain) return 1 ;;
        *) sandbox_die "SANDBOX_DOCKER_STORE must be 'plain' or 'btrfs', not '$SANDBOX_DOCKER_STORE'" ;;
    esac
}

sandbox_store_mounted() { mountpoint -q "$SANDBOX_STORE_MNT" 2>/dev/null; }

# Creates and mounts the store when wanted. zstd level 1: the hosts' pulls already keep the
# machine's cores busy decompressing; a higher level costs CPU the benchmark then measures.
sandbox_store_up() {
    sandbox_store_wanted || return 0
    sandbox_store_mounted && return 0
    command -v mkfs.btrfs >/dev/null || apt_install btrfs-progs
    grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null ||
        sandbox_die "SANDBOX_DOCKER_STORE=btrfs: this kernel has no btrfs"
    if [ ! -f "$SANDBOX_STORE_IMG" ]; then
        truncate -s "$SANDBOX_STORE_SIZE" "$SANDBOX_STORE_IMG.tmp"
        mkfs.btrfs -q -L "rkers-sandbox${SANDBOX_INSTANCE:+-$SANDBOX_INSTANCE}" "$SANDBOX_STORE_IMG.tmp" >/dev/null
        mv "$SANDBOX_STORE_IMG.tmp" "$SANDBOX_STORE_IMG"
    fi
    mkdir -p "$SANDBOX_STORE_MNT"
    mount -o loop,compress-force=zstd:1,discard=async,noatime "$SANDBOX_STORE_IMG" "$SANDBOX_STORE_MNT" ||
        sandbox_die "cannot mount $SANDBOX_STORE_IMG on $SANDBOX_STORE_MNT"
}

# The directory a host binds over /var/lib/docker, or nothing without a store.
sandbox_store_host_dir() {
    sandbox_store_mounted || return 0
    mkdir -p "$SANDBOX_STORE_MNT/$1"
    echo "$SANDBOX_STORE_MNT/$1"
}

# After every host stopped: unmount (the loop device goes with it); --purge deletes the file.
sandbox_store_down() {
    local purge=$1 i
    if sandbox_store_mounted; then
        for i in $(seq 1 50); do
            umount "$SANDBOX_STORE_MNT" 2>/dev/null && break
            sleep 0.2
        done
        sandbox_store_mounted && { sandbox_warn "$SANDBOX_STORE_MNT still busy, detaching it lazily"; umount -l "$SANDBOX_STORE_MNT"; }
    fi
    if [ "$purge" = 1 ]; then
        rm -f "$SANDBOX_STORE_IMG" "$SANDBOX_STORE_IMG.tmp"
        rmdir "$SANDBOX_STORE_MNT" 2>/dev/null || true
    fi
    return 0
}

# Disk the store takes on the machine (the sparse file's allocated blocks) and what the hosts
# wrote into it, e.g. "2.1 GiB on disk for 6.3 GiB of data".
sandbox_store_usage() {
    sandbox_store_mounted || return 0
    local disk data
    disk=$(du -B1 "$SANDBOX_STORE_IMG" | cut -f1)
    data=$(compsize -b "$SANDBOX_STORE_MNT" 2>/dev/null | awk '$1 == "TOTAL" { print $4 }')
    [ -n "$data" ] || data=$(du -sb "$SANDBOX_STORE_MNT" | cut -f1)
    awk -v d="$disk" -v u="$data" 'BEGIN { printf "%.1f GiB on disk for %.1f GiB of data\n", d / 2^30, u / 2^30 }'
}
