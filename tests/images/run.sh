#!/usr/bin/env bash
# Checks that each sandbox image starts on a sandbox host and does its job. Needs the sandbox up
# (scripts/sandbox up) and the images pushed (scripts/build-images).
#
#   tests/images/run.sh [TEST...]
#
# Prints one line per test and `N passed, N failed, N skipped` last; exits non-zero when a test failed.
# Everything it starts is named imgtest-* and removed at the end; files go to each host's /tmp.
# IMGTEST_HOSTS="hostA hostB" chooses the hosts. Ports used on the hosts: 23790/23800 (test etcd),
# 2379 (snapshot serve, when free), 16443, 16444, 16999, 10248 (kubelet healthz).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../../scripts/lib/common.sh
source "$repo/scripts/lib/common.sh"

SANDBOX_CMD=${SANDBOX_CMD:-$repo/scripts/sandbox}
[ -x "$SANDBOX_CMD" ] || {
    echo "images tests: $SANDBOX_CMD not found (set SANDBOX_CMD)" >&2
    exit 2
}
hosts_file="$RKERS_SANDBOX_DIR/hosts.list"
# IMGTEST_HOSTS="hostA hostB" picks the two hosts (default: the first two of the sandbox).
if [ -n "${IMGTEST_HOSTS:-}" ]; then
    read -r -a HOSTS <<<"$IMGTEST_HOSTS"
else
    mapfile -t HOSTS < <(grep -v '^\s*$' "$hosts_file" 2>/dev/null)
fi
[ ${#HOSTS[@]} -ge 2 ] || {
    echo "images tests: need a running sandbox with at least 2 hosts ($hosts_file)" >&2
    exit 2
}
H1=${HOSTS[0]}
H2=${HOSTS[1]}
[ "$H1" != "$H2" ] || echo "images tests: warning: both hosts are $H1; cross-host checks stay on one host" >&2
host_ip() { echo "${SANDBOX_SUBNET_PREFIX}.$((10 + ${1#host}))"; }
IP1=$(host_ip "$H1")
IP2=$(host_ip "$H2")

REG=$SANDBOX_REGISTRY
REG_PASSWORD_FILE=${REG_PASSWORD_FILE:-$RKERS_SANDBOX_DIR/registry-password}
HK="$REG/$IMAGE_HYPERKUBE"
ETCD="$REG/$IMAGE_ETCD"
# IMGTEST_TOOLS_IMAGE runs the tools tests against another tools image already on both hosts (not
# pulled), e.g. a deliberately broken one to see tools_behaviour.sh fail.
TOOLS=${IMGTEST_TOOLS_IMAGE:-"$REG/$IMAGE_TOOLS"}
PAUSE="$REG/$IMAGE_PAUSE"
CNI="$REG/$IMAGE_CNI_PLUGINS"

on() { # on HOST cmd... : run inside a sandbox host
    local h=$1
    shift
    "$SANDBOX_CMD" exec "$h" "$@"
}
dk() { # dk HOST docker-args...
    local h=$1
    shift
    on "$h" docker "$@"
}

work=$(mktemp -d /tmp/rkers-imgtest.XXXXXX)
log="$work/log"
cleanup() {
    local h
    for h in "$H1" "$H2"; do
        on "$h" bash -c 'docker rm -f imgtest-kubelet >/dev/null 2>&1
            ids=$(docker ps -aq --filter name=imgtest-); [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1
            grep " /tmp/imgtest" /proc/mounts | cut -d" " -f2 | sort -r | xargs -r umount 2>/dev/null
            rm -rf /tmp/imgtest' </dev/null >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "    $*" >>"$log"
    return 1
}
expect_contains() { # what haystack needle
    case "$2" in *"$3"*) return 0 ;; esac
    fail "$1: expected '$3' in: $(printf '%s' "$2" | tail -c 400)"
}

# Copies a local directory to /tmp/imgtest/<name> on a host (its own /tmp).
push_dir() {
    local h=$1 src=$2 name=$3
    tar -C "$src" -cf - . | on "$h" bash -c "rm -rf /tmp/imgtest/$name && mkdir -p /tmp/imgtest/$name && tar -C /tmp/imgtest/$name -xf -"
}

login() {
    local out
    out=$(on "$1" bash -c "docker login -u '$SANDBOX_REGISTRY_USER' --password-stdin '$REG' 2>&1" <"$REG_PASSWORD_FILE") || {
        echo "$out" >&2
        return 1
    }
}

# ---------------------------------------------------------------------------------------------

test_registry_pull_needs_credentials() {
    local out
    dk "$H1" logout "$REG" >/dev/null 2>&1
    dk "$H1" rmi -f "$PAUSE" >/dev/null 2>&1
    if out=$(dk "$H1" pull "$PAUSE" 2>&1); then
        fail "pull without credentials succeeded: $out"
        return 1
    fi
    expect_contains "anonymous pull" "$out" "no basic auth credentials" || return 1
    if out=$(echo wrong-password | on "$H1" docker login -u "$SANDBOX_REGISTRY_USER" --password-stdin "$REG" 2>&1); then
        fail "login with a wrong password succeeded"
        return 1
    fi
    login "$H1" || fail "login with the sandbox credentials failed" || return 1
    out=$(dk "$H1" pull "$PAUSE" 2>&1) || fail "pull with credentials failed: $out" || return 1
}

test_kubernetes_binaries_print_version() {
    local b out
    for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet; do
        out=$(dk "$H1" run --rm --entrypoint "/usr/local/bin/$b" "$HK" --version 2>&1)
        [ "$(echo "$out" | tail -1)" = "Kubernetes v1.20.2" ] || fail "$b --version printed: $out" || return 1
    done
    out=$(dk "$H1" run --rm --entrypoint kubectl "$HK" version --client --short 2>&1)
    [ "$out" = "Client Version: v1.20.2" ] || fail "kubectl version --client printed: $out" || return 1
}

test_hyperkube_has_host_tools() {
    local out
    out=$(dk "$H1" run --rm --entrypoint bash "$HK" -c '
        for c in bash iptables iptables-save ip6tables ipset conntrack mount umount nsenter socat find \
                 jq modprobe ip sysctl pgrep update-alternatives mountpoint base64 tac; do
            command -v "$c" >/dev/null || echo "missing $c"
        done
        find --version | head -1' 2>&1)
    case "$out" in *missing*) fail "$out" || return 1 ;; esac
    expect_contains "GNU find" "$out" "GNU findutils"
}

test_wrapper_from_sidekick_runs_components() {
    local out
    dk "$H1" rm -f imgtest-sidekick >/dev/null 2>&1
    dk "$H1" create --name imgtest-sidekick --net none --entrypoint /bin/bash "$TOOLS" >/dev/null || fail "creating the sidekick failed" || return 1
    out=$(dk "$H1" run --rm --volumes-from imgtest-sidekick --entrypoint /opt/rke-tools/entrypoint.sh "$HK" kube-scheduler --version 2>&1)
    expect_contains "entrypoint.sh kube-scheduler" "$out" "Kubernetes v1.20.2" || return 1
    # kube-proxy goes through the iptables backend choice and gets --hostname-override added.
    out=$(dk "$H1" run --rm --net host --privileged --volumes-from imgtest-sidekick --entrypoint /opt/rke-tools/entrypoint.sh "$HK" kube-proxy --version 2>&1)
    expect_contains "entrypoint.sh kube-proxy" "$out" "Kubernetes v1.20.2" || return 1
    expect_contains "entrypoint.sh kube-proxy" "$out" "iptables backend:" || return 1
    # kubelet's part of the wrapper asks the host's Docker through the CLI in the volume.
    out=$(dk "$H1" run --rm -v /var/run/docker.sock:/var/run/docker.sock --volumes-from imgtest-sidekick \
        --entrypoint /opt/rke-tools/bin/docker "$HK" info -f '{{.Info.CgroupDriver}}' 2>&1)
    [ "$out" = cgroupfs ] || [ "$out" = systemd ] || fail "docker CLI from the volume printed: $out" || return 1
}

# kubelet the way RKE starts it (privileged, host network and PID, wrapper from the sidekick
# volume), standalone: it must answer /healthz and run a static pod whose sandbox is the pause image.
test_kubelet_runs_static_pod_through_wrapper() {
    local out i
    if on "$H1" curl -s --max-time 2 -o /dev/null http://127.0.0.1:10248/healthz; then
        echo "    skipped: a kubelet already runs on $H1" >>"$log"
        return 77
    fi
    dk "$H1" rm -f imgtest-sidekick imgtest-kubelet >/dev/null 2>&1
    dk "$H1" create --name imgtest-sidekick --net none --entrypoint /bin/bash "$TOOLS" >/dev/null || fail "creating the sidekick failed" || return 1
    on "$H1" bash -c "mkdir -p /tmp/imgtest/manifests /tmp/imgtest/kubelet && cat > /tmp/imgtest/manifests/imgtest.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: imgtest-static, namespace: default}
spec:
  hostNetwork: true
  containers:
  - {name: sleeper, image: "$TOOLS", imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
EOF
    dk "$H1" run -d --name imgtest-kubelet --net host --pid host --privileged --volumes-from imgtest-sidekick \
        -v /var/lib/docker:/var/lib/docker:rw,rslave -v /tmp/imgtest:/tmp/imgtest:shared \
        -v /sys:/sys:rprivate -v /var/run:/var/run:rw,rprivate -v /run:/run:rprivate -v /dev:/host/dev:rprivate \
        -v /usr:/host/usr:ro -v /etc:/host/etc:ro -v /etc/resolv.conf:/etc/resolv.conf \
        --entrypoint /opt/rke-tools/entrypoint.sh "$HK" kubelet --root-dir=/tmp/imgtest/kubelet \
        --pod-manifest-path=/tmp/imgtest/manifests --pod-infra-container-image="$PAUSE" --fail-swap-on=false \
        --hostname-override="$H1" --resolv-conf=/etc/resolv.conf >/dev/null || fail "kubelet did not start" || return 1
    for i in $(seq 1 90); do
        out=$(dk "$H1" ps --filter name=imgtest-static --format '{{.Names}} {{.Image}}' 2>&1)
        case "$out" in *k8s_sleeper_imgtest-static*) case "$out" in *"k8s_POD_imgtest-static"*"$PAUSE"*) break ;; esac ;; esac
        sleep 1
    done
    expect_contains "static pod sandbox" "$out" "$PAUSE" || {
        fail "kubelet log: $(dk "$H1" logs --tail 8 imgtest-kubelet 2>&1)"
        return 1
    }
    expect_contains "static pod container" "$out" "k8s_sleeper_imgtest-static" || return 1
    out=$(on "$H1" curl -s --max-time 5 http://127.0.0.1:10248/healthz)
    [ "$out" = ok ] || fail "kubelet /healthz: $out" || return 1
    out=$(dk "$H1" logs imgtest-kubelet 2>&1 | grep 'rke-tools entrypoint' | tr '\n' ' ')
    expect_contains "wrapper log" "$out" "cgroup driver" || return 1
    dk "$H1" rm -f imgtest-kubelet >/dev/null 2>&1
}

test_tools_contract() {
    local out vols
    out=$(dk "$H1" run --rm "$TOOLS" sh -c 'readlink -f /bin/sh; ls /usr/lib/nginx/modules/ngx_stream_module.so;
        for c in cert-deployer nginx-proxy nc etcdctl kubectl setfacl tar gzip find md5sum mktemp; do command -v $c >/dev/null || echo "missing $c"; done;
        test -x /opt/rke-tools/entrypoint.sh && test -x /opt/rke-tools/rke-etcd-backup && test -x /opt/rke-tools/bin/docker && echo tools-ok;
        t=$(mktemp); FILE_DEPLOY="a\tb"; echo -e "$FILE_DEPLOY" > $t && grep -qP "a\tb" $t && echo echo-e-ok' 2>&1)
    expect_contains "/bin/sh" "$out" "/usr/bin/bash" || return 1
    case "$out" in *missing*) fail "$out" || return 1 ;; esac
    expect_contains "volume" "$out" "tools-ok" || return 1
    expect_contains "echo -e" "$out" "echo-e-ok" || return 1
    vols=$(dk "$H1" image inspect -f '{{json .Config.Volumes}}' "$TOOLS")
    expect_contains "VOLUME" "$vols" '"/opt/rke-tools"'
}

test_cert_deployer_writes_files() {
    local out
    on "$H1" bash -c 'rm -rf /tmp/imgtest/k8s && mkdir -p /tmp/imgtest/k8s'
    dk "$H1" run --rm --privileged -v /tmp/imgtest/k8s:/etc/kubernetes \
        -e KUBE_CA='ca-one' -e KUBE_NODE_KEY='key-one' -e KUBECFG_KUBE_NODE='cfg-one' "$TOOLS" cert-deployer >/dev/null 2>&1 ||
        fail "first cert-deployer run failed" || return 1
    # Without FORCE_DEPLOY existing files stay; with it certificates change, kubeconfigs never do.
    dk "$H1" run --rm -v /tmp/imgtest/k8s:/etc/kubernetes -e KUBE_CA='ca-two' -e KUBECFG_KUBE_NODE='cfg-two' "$TOOLS" cert-deployer >/dev/null 2>&1
    out=$(on "$H1" cat /tmp/imgtest/k8s/ssl/kube-ca.pem)
    [ "$out" = ca-one ] || fail "kube-ca.pem overwritten without FORCE_DEPLOY: $out" || return 1
    dk "$H1" run --rm -v /tmp/imgtest/k8s:/etc/kubernetes -e KUBE_CA='ca-three' -e KUBECFG_KUBE_NODE='cfg-three' -e FORCE_DEPLOY=true "$TOOLS" cert-deployer >/dev/null 2>&1
    out=$(on "$H1" bash -c 'cd /tmp/imgtest/k8s/ssl && cat kube-ca.pem kube-node-key.pem kubecfg-kube-node.yaml && stat -c "%a %n" * | sort && stat -c %a .')
    # kube-node.pem too: upstream's name scan finds KUBE_NODE inside KUBECFG_KUBE_NODE (BEHAVIOUR.md).
    [ "$out" = $'ca-three\nkey-one\ncfg-one\n600 kube-ca.pem\n600 kube-node-key.pem\n600 kube-node.pem\n600 kubecfg-kube-node.yaml\n755' ] ||
        fail "unexpected certificate files: $out" || return 1
}

# TODO(pki): the certificates come from openssl here; switch to a small rkers example that writes
# kube-ca / kube-etcd-<host> / kube-node with rkers' PKI module once that module lands, so the test
# proves etcd accepts what rkers generates.
make_test_pki() {
    local d=$1
    mkdir -p "$d"
    (
        cd "$d" || exit 1
        openssl req -x509 -newkey rsa:2048 -nodes -keyout kube-ca-key.pem -out kube-ca.pem -days 2 -subj /CN=kube-ca 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout kube-etcd-key.pem -out etcd.csr -subj /CN=kube-etcd 2>/dev/null
        printf 'subjectAltName=IP:%s,IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' "$IP1" >etcd.ext
        openssl x509 -req -in etcd.csr -CA kube-ca.pem -CAkey kube-ca-key.pem -CAcreateserial -out kube-etcd.pem -days 2 -extfile etcd.ext 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout kube-node-key.pem -out node.csr -subj '/CN=system:node/O=system:nodes' 2>/dev/null
        printf 'extendedKeyUsage=clientAuth\n' >node.ext
        openssl x509 -req -in node.csr -CA kube-ca.pem -CAkey kube-ca-key.pem -CAcreateserial -out kube-node.pem -days 2 -extfile node.ext 2>/dev/null
        rm -f ./*.csr ./*.ext ./*.srl kube-ca-key.pem
    ) || return 1
    chmod 0644 "$d"/*.pem
}

etcdctl_on() { # HOST args... : etcdctl in the etcd image, test PKI at /pki
    local h=$1
    shift
    dk "$h" run --rm --net host -v /tmp/imgtest/pki:/pki -e ETCDCTL_API=3 "$ETCD" /usr/local/bin/etcdctl \
        --endpoints="https://$IP1:23790" --cacert=/pki/kube-ca.pem "$@"
}

start_test_etcd() {
    make_test_pki "$work/pki" || fail "making test certificates failed" || return 1
    push_dir "$H1" "$work/pki" pki && push_dir "$H2" "$work/pki" pki || fail "copying certificates failed" || return 1
    dk "$H1" rm -f imgtest-etcd >/dev/null 2>&1
    dk "$H1" run -d --name imgtest-etcd --net host -v /tmp/imgtest/pki:/etc/kubernetes/ssl -v /tmp/imgtest/etcd:/var/lib/rancher/etcd \
        -e ETCDCTL_API=3 "$ETCD" /usr/local/bin/etcd --name=etcd-imgtest --data-dir=/var/lib/rancher/etcd/ \
        --listen-client-urls="https://$IP1:23790" --advertise-client-urls="https://$IP1:23790" \
        --listen-peer-urls="https://$IP1:23800" --initial-advertise-peer-urls="https://$IP1:23800" \
        --initial-cluster="etcd-imgtest=https://$IP1:23800" --initial-cluster-state=new --initial-cluster-token=etcd-cluster-1 \
        --trusted-ca-file=/etc/kubernetes/ssl/kube-ca.pem --peer-trusted-ca-file=/etc/kubernetes/ssl/kube-ca.pem \
        --cert-file=/etc/kubernetes/ssl/kube-etcd.pem --key-file=/etc/kubernetes/ssl/kube-etcd-key.pem \
        --peer-cert-file=/etc/kubernetes/ssl/kube-etcd.pem --peer-key-file=/etc/kubernetes/ssl/kube-etcd-key.pem \
        --client-cert-auth --peer-client-cert-auth \
        --cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 >/dev/null ||
        fail "starting etcd failed" || return 1
    local i
    for i in $(seq 1 30); do
        etcdctl_on "$H2" --cert=/pki/kube-node.pem --key=/pki/kube-node-key.pem endpoint health >/dev/null 2>&1 && return 0
        sleep 1
    done
    fail "etcd never became healthy: $(dk "$H1" logs --tail 5 imgtest-etcd 2>&1)"
}

test_etcd_serves_tls_clients() {
    local out
    start_test_etcd || return 1
    out=$(dk "$H1" run --rm --entrypoint /usr/local/bin/etcd "$ETCD" --version 2>&1)
    expect_contains "etcd --version" "$out" "etcd Version: 3.4" || return 1
    etcdctl_on "$H2" --cert=/pki/kube-node.pem --key=/pki/kube-node-key.pem put /imgtest/key "value-from-$H2" >/dev/null ||
        fail "put over TLS from $H2 failed" || return 1
    out=$(etcdctl_on "$H2" --cert=/pki/kube-node.pem --key=/pki/kube-node-key.pem get /imgtest/key --print-value-only 2>&1)
    [ "$out" = "value-from-$H2" ] || fail "get over TLS returned: $out" || return 1
    # Without a client certificate the server must refuse (client-cert-auth).
    if out=$(etcdctl_on "$H2" --dial-timeout=3s --command-timeout=5s get /imgtest/key 2>&1); then
        fail "etcd answered a client without certificate: $out"
        return 1
    fi
}

test_etcd_snapshot_save_serve_download_restore() {
    local out name=imgtest-snap sum1 sum2
    dk "$H1" inspect imgtest-etcd >/dev/null 2>&1 || start_test_etcd || return 1
    on "$H1" bash -c "mkdir -p /tmp/imgtest/backup /tmp/imgtest/snap-k8s && echo '{\"imgtest\":true}' > /tmp/imgtest/snap-k8s/$name.rkestate"
    # As RKE's etcd-snapshot-once container runs it.
    out=$(dk "$H1" run --rm --net host -v /tmp/imgtest/backup:/backup -v /tmp/imgtest/snap-k8s:/etc/kubernetes -v /tmp/imgtest/pki:/pki "$TOOLS" \
        /opt/rke-tools/rke-etcd-backup etcd-backup save --cacert /pki/kube-ca.pem --cert /pki/kube-node.pem --key /pki/kube-node-key.pem \
        --name "$name" --endpoints="$IP1:23790" --once 2>&1) || fail "save --once failed: $out" || return 1
    out=$(on "$H1" bash -c "stat -c '%a' /tmp/imgtest/backup/$name.zip; ls /tmp/imgtest/backup; ls /tmp/imgtest/snap-k8s")
    [ "$out" = $'600\n'"$name.zip" ] || fail "after save: $out" || return 1
    out=$(dk "$H1" run --rm -v /tmp/imgtest/backup:/backup -v /tmp/imgtest/snap-k8s:/etc/kubernetes "$TOOLS" \
        sh -c "/opt/rke-tools/rke-etcd-backup etcd-backup extractstatefile --name $name >/dev/null 2>&1 && cat /tmp/cluster.rkestate" 2>&1)
    [ "$out" = '{"imgtest":true}' ] || fail "extractstatefile gave: $out" || return 1

    # Serve from host1 on 2379 (RKE stops etcd there first); skipped when a real etcd holds the port.
    if dk "$H2" run --rm --net host "$TOOLS" nc -w 2 -z "$IP1" 2379 >/dev/null 2>&1; then
        echo "    (serve/download part skipped: $IP1:2379 is in use)" >>"$log"
    else
        dk "$H1" run -d --name imgtest-serve --net host -v /tmp/imgtest/backup:/backup -v /tmp/imgtest/pki:/pki "$TOOLS" \
            /opt/rke-tools/rke-etcd-backup etcd-backup serve --name "$name" --cacert /pki/kube-ca.pem --cert /pki/kube-etcd.pem --key /pki/kube-etcd-key.pem >/dev/null
        on "$H2" bash -c 'rm -rf /tmp/imgtest/downloaded && mkdir -p /tmp/imgtest/downloaded'
        local i
        for i in $(seq 1 20); do
            out=$(dk "$H2" run --rm --net host -v /tmp/imgtest/downloaded:/backup -v /tmp/imgtest/pki:/pki "$TOOLS" \
                /opt/rke-tools/rke-etcd-backup etcd-backup download --name "$name" --local-endpoint "$IP1" \
                --cacert /pki/kube-ca.pem --cert /pki/kube-node.pem --key /pki/kube-node-key.pem 2>&1) && break
            sleep 0.5
        done
        dk "$H1" rm -f imgtest-serve >/dev/null 2>&1
        sum1=$(on "$H1" md5sum "/tmp/imgtest/backup/$name" | cut -d' ' -f1)
        sum2=$(on "$H2" md5sum "/tmp/imgtest/downloaded/$name" | cut -d' ' -f1)
        [ -n "$sum1" ] && [ "$sum1" = "$sum2" ] || fail "downloaded snapshot differs ($sum1 vs $sum2): $out" || return 1
        # serve unpacks, download writes: both leave 0600 root files (images/tools/BEHAVIOUR.md).
        out="$(on "$H1" stat -c '%a %u:%g' "/tmp/imgtest/backup/$name") $(on "$H2" stat -c '%a %u:%g' "/tmp/imgtest/downloaded/$name")"
        [ "$out" = "600 0:0 600 0:0" ] || fail "served and downloaded snapshot modes: $out" || return 1
    fi
    # Restore as RKE's etcd-restore one-shot does, in the etcd image.
    # serve leaves the uncompressed snapshot next to the archive; without serve, unpack it here.
    on "$H1" python3 -c "import zipfile,os,sys; d='/tmp/imgtest/backup'; n='$name'
if not os.path.exists(os.path.join(d, n)):
    open(os.path.join(d, n), 'wb').write(zipfile.ZipFile(os.path.join(d, n + '.zip')).read('/backup/' + n))" || fail "unpacking the archive failed" || return 1
    out=$(dk "$H1" run --rm -v /tmp/imgtest/backup:/opt/rke/etcd-snapshots -v /tmp/imgtest/restored:/var/lib/rancher/etcd -e ETCDCTL_API=3 "$ETCD" \
        sh -c "if [ ! -f /opt/rke/etcd-snapshots/$name ]; then exit 3; fi; rm -rf /opt/rke/etcd-snapshots-restore && /usr/local/bin/etcdctl snapshot restore /opt/rke/etcd-snapshots/$name \
            --data-dir=/opt/rke/etcd-snapshots-restore/ --name=etcd-imgtest --initial-cluster=etcd-imgtest=https://$IP1:23800 \
            --initial-cluster-token=etcd-cluster-1 --initial-advertise-peer-urls=https://$IP1:23800 && mv /opt/rke/etcd-snapshots-restore/* /var/lib/rancher/etcd/ && ls /var/lib/rancher/etcd/member" 2>&1)
    [ "$(echo "$out" | tail -2 | tr '\n' ' ')" = "snap wal " ] || fail "restore failed: $out" || return 1
}

test_nginx_proxy_forwards_to_other_host() {
    local out
    # On one host the client could reach the listener without nginx in between.
    [ "$H1" != "$H2" ] || fail "needs two distinct hosts" || return 1
    dk "$H1" rm -f imgtest-listener >/dev/null 2>&1
    dk "$H2" rm -f imgtest-nginx-proxy >/dev/null 2>&1
    dk "$H1" run -d --name imgtest-listener --net host "$TOOLS" nc -lk -p 16443 -e "echo hello-from-$H1" >/dev/null ||
        fail "listener did not start" || return 1
    # The container shape RKE uses: Entrypoint nginx-proxy, Cmd CP_HOSTS=<list>, env CP_HOSTS.
    dk "$H2" run -d --name imgtest-nginx-proxy --net host -e "CP_HOSTS=$IP1" -e NGINX_PROXY_PORT=16443 \
        --entrypoint nginx-proxy "$TOOLS" "CP_HOSTS=$IP1" >/dev/null || fail "nginx-proxy did not start" || return 1
    local i
    for i in $(seq 1 20); do
        # stdin stays open a moment: nginx ends a stream session when the client half-closes.
        out=$(dk "$H2" run --rm --net host "$TOOLS" sh -c 'sleep 1 | nc -w 3 127.0.0.1 16443' 2>&1)
        [ "$out" = "hello-from-$H1" ] && break
        sleep 0.5
    done
    [ "$out" = "hello-from-$H1" ] || fail "through nginx-proxy on $H2 got '$out'; logs: $(dk "$H2" logs --tail 5 imgtest-nginx-proxy 2>&1)" || return 1
    out=$(dk "$H2" exec imgtest-nginx-proxy cat /etc/nginx/nginx.conf)
    dk "$H1" rm -f imgtest-listener >/dev/null 2>&1
    dk "$H2" rm -f imgtest-nginx-proxy >/dev/null 2>&1
    expect_contains "rendered config" "$out" "server $IP1:16443;"
}

test_port_checker_reports_closed_ports() {
    local out
    # RKE's port listener: `nc -kl -p 1337 -e echo` behind a published port.
    dk "$H1" rm -f imgtest-port-listener >/dev/null 2>&1
    dk "$H1" run -d --name imgtest-port-listener -p 16444:1337 "$TOOLS" nc -kl -p 1337 -e echo >/dev/null ||
        fail "port listener did not start" || return 1
    sleep 1
    # RKE's rke-port-checker command, verbatim.
    out=$(dk "$H2" run --rm --net host -e "HOSTS=$IP1" -e "PORTS=16444 16999" "$TOOLS" sh -c \
        'for host in $HOSTS; do for port in $PORTS ; do echo "Checking host ${host} on port ${port}" >&1 & nc -w 5 -z $host $port > /dev/null || echo "${host}:${port}" >&2 & done; wait; done' 2>&1 >/dev/null)
    [ "$out" = "$IP1:16999" ] || fail "port checker stderr: '$out' (expected only $IP1:16999)"
}

test_pause_stays_up() {
    local out
    dk "$H1" rm -f imgtest-pause >/dev/null 2>&1
    dk "$H1" run -d --name imgtest-pause "$PAUSE" >/dev/null || fail "pause did not start" || return 1
    sleep 3
    out=$(dk "$H1" inspect -f '{{.State.Running}} {{.State.Restarting}}' imgtest-pause)
    [ "$out" = "true false" ] || fail "pause state after 3 s: $out" || return 1
    dk "$H1" stop -t 10 imgtest-pause >/dev/null
    out=$(dk "$H1" inspect -f '{{.State.ExitCode}}' imgtest-pause)
    [ "$out" = 0 ] || fail "pause exit code on SIGTERM: $out" || return 1
    out=$(dk "$H1" run --rm "$PAUSE" -v 2>&1)
    expect_contains "pause -v" "$out" "pause.c"
}

test_cni_plugins_install() {
    local out
    out=$(dk "$H1" run --rm -v /tmp/imgtest/cni:/host/opt/cni/bin "$CNI" 2>&1) || fail "install-cni failed: $out" || return 1
    out=$(on "$H1" bash -c 'ls /tmp/imgtest/cni; /tmp/imgtest/cni/bridge 2>&1 | head -1' </dev/null)
    for p in bridge host-local loopback portmap; do
        expect_contains "installed plugins" "$out" "$p" || return 1
    done
    expect_contains "bridge plugin runs" "$out" "CNI bridge plugin"
}

# The files each tools command leaves, held to images/tools/BEHAVIOUR.md.
# shellcheck source=tools_behaviour.sh
source "$here/tools_behaviour.sh"

# ---------------------------------------------------------------------------------------------

ALL_TESTS=(
    test_registry_pull_needs_credentials
    test_kubernetes_binaries_print_version
    test_hyperkube_has_host_tools
    test_wrapper_from_sidekick_runs_components
    test_kubelet_runs_static_pod_through_wrapper
    test_tools_contract
    test_cert_deployer_writes_files
    test_etcd_serves_tls_clients
    test_etcd_snapshot_save_serve_download_restore
    test_nginx_proxy_forwards_to_other_host
    test_port_checker_reports_closed_ports
    test_pause_stays_up
    test_cni_plugins_install
    "${TOOLS_BEHAVIOUR_TESTS[@]}"
)
selected=("$@")
[ ${#selected[@]} -gt 0 ] || selected=("${ALL_TESTS[@]}")

passed=0
failed=0
skipped=0
for h in "$H1" "$H2"; do
    on "$h" true </dev/null 2>/dev/null || {
        echo "images tests: sandbox host $h is not running (scripts/sandbox status)" >&2
        exit 2
    }
    login "$h" || {
        echo "images tests: registry login on $h failed" >&2
        exit 2
    }
    for img in "$HK" "$ETCD" "$TOOLS" "$PAUSE" "$CNI"; do
        [ "$img" = "${IMGTEST_TOOLS_IMAGE:-}" ] && continue
        dk "$h" pull -q "$img" >/dev/null 2>"$work/pull.err" || {
            echo "images tests: $h cannot pull $img: $(cat "$work/pull.err") (run scripts/build-images)" >&2
            exit 2
        }
    done
done
for t in "${selected[@]}"; do
    [[ "$t" == test_* ]] || t="test_$t"
    declare -F "$t" >/dev/null || {
        echo "no such test: $t" >&2
        exit 2
    }
    : >"$log"
    start=$(date +%s.%N)
    "$t" </dev/null
    case $? in
        0)
            result=ok
            passed=$((passed + 1))
            ;;
        77)
            if [ "${RKERS_NO_SKIP:-0}" = 1 ]; then
                # Under scripts/test a test that cannot run is a failure (RKERS_NO_SKIP=1).
                result=FAILED
                failed=$((failed + 1))
            else
                result=skip
                skipped=$((skipped + 1))
            fi
            ;;
        *)
            result=FAILED
            failed=$((failed + 1))
            ;;
    esac
    printf '%-52s %-6s %5.1fs\n' "${t#test_}" "$result" "$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{print e-s}')"
    [ -s "$log" ] && cat "$log"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
