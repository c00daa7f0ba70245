# The disk the caches, the registry and every sandbox host share. Sourced, never executed.
# Its free space is a few GB of 252 and moves with other machines' use (seen: 6.5 GB, 24 GB), so
# a run says how much it had, and trims what its caches can rebuild when there is little.

# Free GB on the disk holding $RKERS_CACHE (made here: on a fresh machine it does not exist yet,
# and df would fail on it).
disk_free_gb() {
    mkdir -p "$RKERS_CACHE"
    df -BG --output=avail "$RKERS_CACHE" | tail -1 | tr -dc 0-9
}

# Below $1 GB free: Go's build cache entries not used for a day (a module build that is cached
# does not read them) and cargo's incremental state (rebuilt by the next build, not needed by a
# clean one). Prints what it did.
disk_trim_if_below() {
    local want=$1 before
    before=$(disk_free_gb)
    [ "$before" -ge "$want" ] && return 0
    find "$RKERS_CACHE/go/build" -type f -mmin +1440 -delete 2>/dev/null || true
    rm -rf "${CARGO_TARGET_DIR:-$RKERS_CACHE/target}/debug/incremental"
    echo "disk: ${before} GB free, below ${want} GB: trimmed Go's build cache (entries unused for a day) and cargo's incremental state: $(disk_free_gb) GB free"
}

# Samples the free space every 10 s into $1 (lowest GB and when, seconds after $2) until killed.
disk_watch() {
    local record=$1 since=$2 lowest=1000000 free
    while :; do
        free=$(disk_free_gb)
        if [ "$free" -lt "$lowest" ]; then
            lowest=$free
            echo "$lowest GB free at $(( $(date +%s) - since ))s" >"$record"
        fi
        sleep 10
    done
}
