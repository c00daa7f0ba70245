# The build dockerd (imports root filesystems as images, pushes them) and the registry checks that
# decide whether an image has to be built or pushed at all. Sourced by scripts/build-images after
# scripts/lib/common.sh and scripts/lib/images-rootfs.sh.

# Where images are pushed: the sandbox registry's unauthenticated local listener.
IMAGES_PUSH_REGISTRY="${IMAGES_PUSH_REGISTRY:-$SANDBOX_REGISTRY_LOCAL}"
IMAGES_BUILD_RUN=/run/rkers-build
IMAGES_BUILD_SOCK="$IMAGES_BUILD_RUN/docker.sock"
IMAGES_BUILD_PIDFILE="$IMAGES_BUILD_RUN/dockerd.pid"
IMAGES_BUILD_DATA="$RKERS_CACHE/build-docker"
# The image label that records the hash of everything an image was made from.
IMAGES_INPUT_LABEL=io.rkers.inputs

build_docker() { docker --host "unix://$IMAGES_BUILD_SOCK" "$@"; }

# Starts the build dockerd unless one already answers on its socket. It only imports and pushes, so
# it needs neither a bridge nor iptables rules.
images_build_dockerd() {
    if build_docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
        return 0
    fi
    command -v dockerd >/dev/null || apt_install docker.io
    mkdir -p "$IMAGES_BUILD_RUN" "$IMAGES_BUILD_DATA"
    if [ -f "$IMAGES_BUILD_PIDFILE" ] && kill -0 "$(cat "$IMAGES_BUILD_PIDFILE")" 2>/dev/null; then
        images_log "build dockerd (pid $(cat "$IMAGES_BUILD_PIDFILE")) is running but not answering; waiting"
    else
        rm -f "$IMAGES_BUILD_PIDFILE" "$IMAGES_BUILD_SOCK"
        images_log "starting the build dockerd on $IMAGES_BUILD_SOCK (data in $IMAGES_BUILD_DATA)"
        setsid dockerd \
            --host "unix://$IMAGES_BUILD_SOCK" \
            --data-root "$IMAGES_BUILD_DATA" \
            --exec-root "$IMAGES_BUILD_RUN/exec" \
            --pidfile "$IMAGES_BUILD_PIDFILE" \
            --bridge=none --iptables=false --ip-masq=false \
            >>"$RKERS_CACHE/build-dockerd.log" 2>&1 </dev/null &
    fi
    local i
    for i in $(seq 1 60); do
        build_docker version >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    images_die "the build dockerd did not answer on $IMAGES_BUILD_SOCK within 30 s (log: $RKERS_CACHE/build-dockerd.log)"
}

images_registry_alive() {
    curl -fs -o /dev/null --max-time 5 "http://$IMAGES_PUSH_REGISTRY/v2/"
}

# Prints the input hash label of <repository>:<tag> as the registry holds it; prints nothing when
# the registry lacks the tag or the label.
images_registry_input_hash() {
    local repo=$1 tag=$2 manifest config_digest
    manifest=$(curl -fsS --max-time 10 \
        -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
        -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
        "http://$IMAGES_PUSH_REGISTRY/v2/$repo/manifests/$tag" 2>/dev/null) || return 0
    config_digest=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["digest"])' <<<"$manifest" 2>/dev/null) || return 0
    curl -fsS --max-time 10 "http://$IMAGES_PUSH_REGISTRY/v2/$repo/blobs/$config_digest" 2>/dev/null |
        python3 -c "import json,sys; print((json.load(sys.stdin).get('config') or {}).get('Labels', {}).get('$IMAGES_INPUT_LABEL', ''))" 2>/dev/null || true
}

# Prints the input hash label of a local image of the build dockerd, or nothing.
images_local_input_hash() {
    build_docker image inspect --format "{{ index .Config.Labels \"$IMAGES_INPUT_LABEL\" }}" "$1" 2>/dev/null || true
}

# Turns a root filesystem directory into an image. Remaining arguments are Dockerfile-style changes
# (`ENTRYPOINT [...]`, `CMD ...`, `ENV ...`, `VOLUME ...`).
images_import() {
    local root=$1 ref=$2 input_hash=$3
    shift 3
    local changes=(--change "LABEL $IMAGES_INPUT_LABEL=$input_hash")
    local c
    for c in "$@"; do changes+=(--change "$c"); done
    tar --numeric-owner --sort=name -C "$root" -cf - . |
        build_docker import "${changes[@]}" - "$ref" >/dev/null
}

images_push() {
    local ref=$1
    build_docker push "$ref" >"$RKERS_CACHE/push.log" 2>&1 || {
        tail -5 "$RKERS_CACHE/push.log" >&2
        images_die "pushing $ref failed"
    }
}
