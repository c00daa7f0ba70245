# shellcheck shell=bash
# The sandbox's image registry: Debian's docker-registry (the real distribution registry) serving
# one storage twice: on the bridge address with htpasswd basic auth, for the hosts (exercising
# `private_registries`), and on 127.0.0.1 without auth, for pushing from the machine.
# Sourced by scripts/sandbox after scripts/lib/common.sh.

# Overridable so that several sandbox instances can serve one image store.
SANDBOX_REGISTRY_STORAGE="${SANDBOX_REGISTRY_STORAGE:-$RKERS_SANDBOX_DIR/registry/storage}"
SANDBOX_REGISTRY_PASSWORD_FILE="$RKERS_SANDBOX_DIR/registry-password"

# Generates the password (once) and the htpasswd file; the password never reaches a command line.
sandbox_registry_credentials() {
    local rdir="$RKERS_SANDBOX_DIR/registry"
    mkdir -p "$rdir" "$SANDBOX_REGISTRY_STORAGE"
    if [ ! -s "$SANDBOX_REGISTRY_PASSWORD_FILE" ]; then
        (umask 077; openssl rand -hex 16 >"$SANDBOX_REGISTRY_PASSWORD_FILE")
    fi
    chmod 600 "$SANDBOX_REGISTRY_PASSWORD_FILE"
    if [ ! -s "$rdir/htpasswd" ] || [ "$SANDBOX_REGISTRY_PASSWORD_FILE" -nt "$rdir/htpasswd" ]; then
        (umask 077; htpasswd -niB "$SANDBOX_REGISTRY_USER" <"$SANDBOX_REGISTRY_PASSWORD_FILE" | grep . >"$rdir/htpasswd")
    fi
    [ -s "$rdir/http-secret" ] || (umask 077; openssl rand -hex 32 >"$rdir/http-secret")
}

# Writes the configuration of one listener: "bridge" (auth) or "local" (no auth).
sandbox_registry_config() {
    local which=$1 rdir="$RKERS_SANDBOX_DIR/registry" addr auth=""
    if [ "$which" = bridge ]; then
        addr=$SANDBOX_REGISTRY
        auth="auth:
  htpasswd:
    realm: rkers-sandbox
    path: $rdir/htpasswd"
    else
        addr=$SANDBOX_REGISTRY_LOCAL
    fi
    (umask 077; cat >"$rdir/$which.yml" <<CFG
version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $SANDBOX_REGISTRY_STORAGE
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $addr
  secret: $(cat "$rdir/http-secret")
$auth
CFG
    )
}

sandbox_registry_pid() {
    local pidfile="$RKERS_SANDBOX_DIR/registry/$1.pid" pid
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "docker-registry serve $RKERS_SANDBOX_DIR/registry/$1.yml"; then
        echo "$pid"
    fi
}

sandbox_registry_url() {
    if [ "$1" = bridge ]; then echo "http://$SANDBOX_REGISTRY/v2/"; else echo "http://$SANDBOX_REGISTRY_LOCAL/v2/"; fi
}

# The bridge listener answers 401 without credentials; both count as alive when they answer HTTP.
sandbox_registry_alive() {
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$(sandbox_registry_url "$1")" 2>/dev/null)
    [ "$code" = 200 ] || [ "$code" = 401 ]
}

sandbox_registry_up() {
    local which rdir="$RKERS_SANDBOX_DIR/registry"
    sandbox_registry_credentials
    for which in local bridge; do
        sandbox_registry_config "$which"
        if [ -n "$(sandbox_registry_pid "$which")" ]; then
            sandbox_registry_alive "$which" && continue
            sandbox_die "registry ($which) pid $(sandbox_registry_pid "$which") does not answer (log: $rdir/$which.log)"
        fi
        if sandbox_registry_alive "$which"; then
            sandbox_die "something else already answers on $(sandbox_registry_url "$which"); not starting the sandbox registry there"
        fi
        setsid docker-registry serve "$rdir/$which.yml" </dev/null >>"$rdir/$which.log" 2>&1 9>&- &
        echo $! >"$rdir/$which.pid"
        disown || true
        for _ in $(seq 1 60); do
            sandbox_registry_alive "$which" && break
            sleep 0.25
        done
        sandbox_registry_alive "$which" || sandbox_die "registry ($which) did not answer within 15 s (log: $rdir/$which.log)"
    done
}

sandbox_registry_down() {
    local which pid
    for which in bridge local; do
        pid=$(sandbox_registry_pid "$which")
        [ -n "$pid" ] || continue
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            sandbox_pid_alive "$pid" || break
            sleep 0.1
        done
        sandbox_pid_alive "$pid" && kill -KILL "$pid"
        rm -f "$RKERS_SANDBOX_DIR/registry/$which.pid"
    done
}

# Pushes a root filesystem tarball as a one-layer image through the local (no auth) listener,
# speaking the registry HTTP API directly, so no dockerd is needed on the machine.
# Usage: sandbox_registry_push_rootfs <rootfs.tar> <repository> <tag> [cmd...]
sandbox_registry_push_rootfs() {
    local tar=$1 repo=$2 tag=$3
    shift 3
    local work base="http://$SANDBOX_REGISTRY_LOCAL/v2/$repo" diff_id layer_digest layer_size
    local config_digest config_size cmd_json blob
    work=$(mktemp -d)
    gzip -n -c "$tar" >"$work/layer.tar.gz"
    diff_id="sha256:$(sha256sum <"$tar" | cut -d' ' -f1)"
    layer_digest="sha256:$(sha256sum <"$work/layer.tar.gz" | cut -d' ' -f1)"
    layer_size=$(stat -c %s "$work/layer.tar.gz")
    cmd_json=$(jq -cn '$ARGS.positional' --args "${@:-/bin/sh}")
    jq -cn --arg diff "$diff_id" --argjson cmd "$cmd_json" \
        '{architecture: "amd64", os: "linux", config: {Cmd: $cmd, Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
          rootfs: {type: "layers", diff_ids: [$diff]}}' >"$work/config.json"
    config_digest="sha256:$(sha256sum <"$work/config.json" | cut -d' ' -f1)"
    config_size=$(stat -c %s "$work/config.json")
    for blob in "layer.tar.gz:$layer_digest" "config.json:$config_digest"; do
        local file=${blob%%:*} digest=${blob#*:} location
        if curl -fsS -o /dev/null --head "$base/blobs/$digest" 2>/dev/null; then continue; fi
        location=$(curl -fsS -D - -o /dev/null -X POST "$base/blobs/uploads/" | tr -d '\r' | awk 'tolower($1) == "location:" { print $2 }')
        [ -n "$location" ] || { rm -rf "$work"; sandbox_die "registry refused an upload to $repo"; }
        case $location in http*) ;; *) location="http://$SANDBOX_REGISTRY_LOCAL$location" ;; esac
        case $location in *\?*) location="$location&digest=$digest" ;; *) location="$location?digest=$digest" ;; esac
        curl -fsS -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$work/$file" "$location" ||
            { rm -rf "$work"; sandbox_die "uploading $file of $repo:$tag failed"; }
    done
    jq -cn --arg cd "$config_digest" --argjson cs "$config_size" --arg ld "$layer_digest" --argjson ls "$layer_size" \
        '{schemaVersion: 2, mediaType: "application/vnd.docker.distribution.manifest.v2+json",
          config: {mediaType: "application/vnd.docker.container.image.v1+json", size: $cs, digest: $cd},
          layers: [{mediaType: "application/vnd.docker.image.rootfs.diff.tar.gzip", size: $ls, digest: $ld}]}' >"$work/manifest.json"
    curl -fsS -o /dev/null -X PUT -H 'Content-Type: application/vnd.docker.distribution.manifest.v2+json' \
        --data-binary "@$work/manifest.json" "$base/manifests/$tag" ||
        { rm -rf "$work"; sandbox_die "pushing the manifest of $repo:$tag failed"; }
    rm -rf "$work"
}
