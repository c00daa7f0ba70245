#!/bin/bash
# End-to-end check of scripts/sandbox against the real thing: namespaces, sshd, dockerd, registry,
# CNI routes, teardown. Runs as root. By default it uses its own sandbox instance (tag "t", bridge
# rkbrt, 10.77.9.0/24, state in /var/lib/rkers-sandbox-t) so it never disturbs the main sandbox
# others may be using; SMOKE_MAIN=1 runs it against the main one instead (which it tears down!).
# Prints "N passed, N failed" last and exits non-zero on any failure.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SANDBOX="$REPO/scripts/sandbox"

if [ "${SMOKE_MAIN:-0}" != 1 ]; then
    export SANDBOX_INSTANCE=t
    export RKERS_SANDBOX_DIR=/var/lib/rkers-sandbox-t
    export SANDBOX_BRIDGE=rkbrt
    export SANDBOX_SUBNET_PREFIX=10.77.9
    export SANDBOX_POD_PREFIX=10.79
    export SANDBOX_REGISTRY_LOCAL=127.0.0.1:5009
fi
# shellcheck source=../../scripts/lib/common.sh
. "$REPO/scripts/lib/common.sh"
NETNS_PREFIX="rkers${SANDBOX_INSTANCE:-}-"
COMMENT="rkers-sandbox${SANDBOX_INSTANCE:+-$SANDBOX_INSTANCE}"
CGROUP_NAME="$COMMENT"
D=$RKERS_SANDBOX_DIR
KEY="$D/ssh/id_ed25519"
KNOWN="$D/ssh/known_hosts"
IP1="$SANDBOX_SUBNET_PREFIX.11" IP2="$SANDBOX_SUBNET_PREFIX.12" IP3="$SANDBOX_SUBNET_PREFIX.13"
IMAGE="$SANDBOX_REGISTRY/rkers/smoke-busybox:1.0"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   - $*"; }
nok() { failed=$((failed + 1)); echo "FAIL - $*"; }
# check <description> <command...>: passes when the command succeeds.
check() {
    local what=$1
    shift
    if "$@" >"$WORK/out" 2>&1; then ok "$what"; else nok "$what"; sed 's/^/       /' "$WORK/out" | tail -15; fi
}
sb() { "$SANDBOX" "$@"; }
ssh_to() {
    local ip=$1
    shift
    ssh -i "$KEY" -o UserKnownHostsFile="$KNOWN" -o StrictHostKeyChecking=yes -o BatchMode=yes \
        -o ConnectTimeout=5 "root@$ip" "$@"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

[ "$(id -u)" = 0 ] || { echo "smoke.sh must run as root" >&2; exit 2; }

echo "# sandbox smoke test (instance '${SANDBOX_INSTANCE:-main}', state $D)"

# --- cold up ------------------------------------------------------------------------------------
sb down --purge >/dev/null 2>&1
t0=$(now)
if sb up --hosts 3 >"$WORK/up1.out" 2>"$WORK/up1.err"; then ok "cold up --hosts 3 ($(elapsed "$t0") s)"; else nok "cold up --hosts 3"; cat "$WORK/up1.err"; fi
COLD=$(elapsed "$t0")
CLUSTER_YML=$(tail -1 "$WORK/up1.out")
check "up prints the cluster.yml path last" test "$CLUSTER_YML" = "$D/cluster.yml" -a -s "$CLUSTER_YML"
check "cluster.yml is private (0600)" test "$(stat -c %a "$CLUSTER_YML")" = 600
check "registry password file is 0600" test "$(stat -c %a "$D/registry-password")" = 600
check "cluster.yml lists three nodes with their roles" bash -c "
    grep -c '^  - address: $SANDBOX_SUBNET_PREFIX.1[123]\$' '$CLUSTER_YML' | grep -qx 3 &&
    grep -q 'role: \[controlplane, etcd, worker\]' '$CLUSTER_YML' && grep -c 'role: \[worker\]' '$CLUSTER_YML' | grep -qx 2"
check "cluster.yml: network none, private registry, conntrack extra arg" bash -c "
    grep -q '^  plugin: none' '$CLUSTER_YML' && grep -q '  - url: $SANDBOX_REGISTRY' '$CLUSTER_YML' &&
    grep -q 'conntrack-max-per-core: \"0\"' '$CLUSTER_YML' && grep -q 'kubernetes_version: $KUBERNETES_VERSION_SANDBOX' '$CLUSTER_YML'"
pids_before=$(cat "$D"/hosts/host*/launcher.pid | tr '\n' ' ')

# --- warm up (idempotent) ------------------------------------------------------------------------
t0=$(now)
if sb up --hosts 3 >"$WORK/up2.out" 2>"$WORK/up2.err"; then ok "warm up ($(elapsed "$t0") s)"; else nok "warm up"; cat "$WORK/up2.err"; fi
WARM=$(elapsed "$t0")
check "warm up started nothing" grep -q "(0 started)" "$WORK/up2.err"
check "warm up kept the same host processes" test "$pids_before" = "$(cat "$D"/hosts/host*/launcher.pid | tr '\n' ' ')"
check "warm up prints the same path" test "$(tail -1 "$WORK/up2.out")" = "$CLUSTER_YML"

# --- ssh and docker per host ---------------------------------------------------------------------
for i in 1 2 3; do
    ip="$SANDBOX_SUBNET_PREFIX.$((10 + i))"
    check "ssh root@$ip with the generated key and known_hosts: docker info names host$i" \
        bash -c "[ \"\$(ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o StrictHostKeyChecking=yes -o BatchMode=yes root@$ip docker info --format '{{.Name}}')\" = host$i ]"
done
check "ssh with the RSA key (rsa-sha2) works" ssh -i "$D/ssh/id_rsa" -o UserKnownHostsFile="$KNOWN" -o StrictHostKeyChecking=yes -o BatchMode=yes "root@$IP2" true
check "passphrase key needs its passphrase" bash -c "! ssh-keygen -y -P '' -f '$D/ssh/id_ed25519_passphrase' >/dev/null 2>&1 &&
    [ \"\$(ssh-keygen -y -P \"\$(cat '$D/ssh/passphrase')\" -f '$D/ssh/id_ed25519_passphrase' | cut -d' ' -f2)\" = \"\$(cut -d' ' -f2 '$KEY.pub')\" ]"
check "an unknown host key is refused (known_hosts is checked)" bash -c "
    ! ssh -i '$KEY' -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes root@$IP1 true"
check "each host has its own hostname, /run and machine-id" bash -c "
    [ \"\$('$SANDBOX' exec host1 hostname)\" = host1 ] &&
    [ \"\$('$SANDBOX' exec host1 cat /etc/machine-id)\" != \"\$('$SANDBOX' exec host2 cat /etc/machine-id)\" ] &&
    [ \"\$('$SANDBOX' exec host1 cat /run/docker.pid)\" != '' ] && [ ! -e /run/docker.pid -o \"\$(cat /run/docker.pid 2>/dev/null)\" != \"\$('$SANDBOX' exec host1 cat /run/docker.pid)\" ]"

check "inside a host: one cgroup mount per hierarchy, rooted at the host's subtree" bash -c "
    [ \"\$('$SANDBOX' exec host1 grep -c ' /sys/fs/cgroup/memory ' /proc/self/mountinfo)\" = 1 ] &&
    [ \"\$('$SANDBOX' exec host1 cat /proc/self/cgroup | grep -c ':/\$')\" = \"\$(grep -c . /proc/self/cgroup)\" ]"

# Docker over an SSH-forwarded unix socket, as rkers does it.
sock="$WORK/docker.sock"
ssh -i "$KEY" -o UserKnownHostsFile="$KNOWN" -o StrictHostKeyChecking=yes -o BatchMode=yes \
    -o ExitOnForwardFailure=yes -N -L "$sock:/var/run/docker.sock" "root@$IP1" &
fwd=$!
for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
check "docker over ssh -L to /var/run/docker.sock" bash -c "[ \"\$(docker -H unix://$sock info --format '{{.Name}}')\" = host1 ]"
kill "$fwd" 2>/dev/null
wait "$fwd" 2>/dev/null

# --- registry -------------------------------------------------------------------------------------
check "registry on the bridge wants credentials (401)" bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://$SANDBOX_REGISTRY/v2/)\" = 401 ]"
check "registry on the bridge accepts the generated password" bash -c "
    [ \"\$(curl -s -o /dev/null -w '%{http_code}' -u $SANDBOX_REGISTRY_USER:\"\$(cat '$D/registry-password')\" http://$SANDBOX_REGISTRY/v2/)\" = 200 ]"
check "registry on $SANDBOX_REGISTRY_LOCAL needs no credentials" curl -fsS -o /dev/null "http://$SANDBOX_REGISTRY_LOCAL/v2/"

# A one-binary image from Debian's busybox-static, pushed through the local listener.
mkdir -p "$WORK/rootfs/bin" "$WORK/rootfs/tmp" "$WORK/rootfs/etc"
cp /bin/busybox "$WORK/rootfs/bin/busybox"
for applet in sh ls cat echo grep ip ps mkdir httpd wget ping sleep mount hostname true; do ln -sf busybox "$WORK/rootfs/bin/$applet"; done
tar --numeric-owner --owner=0 --group=0 -C "$WORK/rootfs" -cf "$WORK/rootfs.tar" .
check "push a busybox image via the local registry listener" sb push-rootfs "$WORK/rootfs.tar" rkers/smoke-busybox 1.0 /bin/sh
check "anonymous pull on a host is refused" bash -c "! '$SANDBOX' exec host1 docker pull '$IMAGE'"
check "pull on every host with the registry credentials" bash -c "
    for h in host1 host2 host3; do
        '$SANDBOX' exec \$h docker --config /tmp/smoke-docker login -u $SANDBOX_REGISTRY_USER --password-stdin $SANDBOX_REGISTRY <'$D/registry-password' >/dev/null &&
        '$SANDBOX' exec \$h docker --config /tmp/smoke-docker pull -q '$IMAGE' >/dev/null &&
        '$SANDBOX' exec \$h rm -rf /tmp/smoke-docker || exit 1
    done"

# --- containers on the hosts ---------------------------------------------------------------------
check "--privileged --net=host --pid=host container runs and sees the host's address" bash -c "
    out=\$(ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes root@$IP1 docker run --rm --privileged --net=host --pid=host '$IMAGE' sh -c \"'ip -4 addr show eth0; ps'\") &&
    echo \"\$out\" | grep -q 'inet $IP1/24' && echo \"\$out\" | grep -q 'dockerd'"
check "privileged container can mount (it has CAP_SYS_ADMIN)" \
    "$SANDBOX" exec host2 docker run --rm --privileged "$IMAGE" sh -c 'mkdir -p /mnt/t && mount -t tmpfs t /mnt/t'
check "--net=host server on host1 is reachable from host2" bash -c "
    '$SANDBOX' exec host1 docker run -d --name smoke-http --net=host '$IMAGE' sh -c 'mkdir -p /www && echo hello-from-host1 >/www/index.html && exec httpd -f -p $IP1:18080 -h /www' >/dev/null &&
    for i in \$(seq 1 50); do '$SANDBOX' exec host2 docker run --rm --net=host '$IMAGE' wget -qO- http://$IP1:18080/ 2>/dev/null | grep -q hello-from-host1 && exit 0; sleep 0.2; done; exit 1"
"$SANDBOX" exec host1 docker rm -f smoke-http >/dev/null 2>&1
check "a container's bind of /etc/kubernetes lands in the host's private dir" bash -c "
    rm -f /etc/kubernetes/smoke-marker
    '$SANDBOX' exec host1 docker run --rm -v /etc/kubernetes:/etc/kubernetes '$IMAGE' sh -c 'echo host1 >/etc/kubernetes/smoke-marker' &&
    [ \"\$(cat '$D/hosts/host1/root/etc/kubernetes/smoke-marker')\" = host1 ] && [ ! -e /etc/kubernetes/smoke-marker ] &&
    [ ! -e '$D/hosts/host2/root/etc/kubernetes/smoke-marker' ]"
check "a bind with shared propagation (kubelet style) is accepted" \
    "$SANDBOX" exec host3 docker run --rm -v /var/lib/kubelet:/var/lib/kubelet:shared "$IMAGE" true
check "a container's cgroup lands in the host's own cgroup subtree" bash -c "
    id=\$('$SANDBOX' exec host2 docker run -d '$IMAGE' sleep 30) &&
    mem=\$(grep /memory/ '$D/hosts/host2/cgroups') && [ -d \"\$mem/docker/\$id\" ] &&
    '$SANDBOX' exec host2 docker rm -f \$id >/dev/null"

# --- CNI: pods on different hosts reach each other --------------------------------------------------
check "CNI config with the host's /24 and plugin binaries on every host" bash -c "
    for i in 1 2 3; do
        jq -e '.plugins[0].ipam.ranges[0][0].subnet == \"$SANDBOX_POD_PREFIX.'\$i'.0/24\"' '$D/hosts/host'\$i'/root/etc/cni/net.d/10-rkers-sandbox.conflist' >/dev/null &&
        [ -x '$D/hosts/host'\$i'/root/opt/cni/bin/bridge' ] && [ -x '$D/hosts/host'\$i'/root/opt/cni/bin/loopback' ] || exit 1
    done"
check "routes to the other hosts' pod subnets" bash -c "
    ip -n ${NETNS_PREFIX}host1 route | grep -q '^$SANDBOX_POD_PREFIX.2.0/24 via $IP2' &&
    ip -n ${NETNS_PREFIX}host3 route | grep -q '^$SANDBOX_POD_PREFIX.1.0/24 via $IP1'"
# cni_add <host> <container id>: runs the host's conflist (bridge, portmap, firewall) for the
# container's network namespace, as kubelet would; prints the pod IP.
cni_add() {
    "$SANDBOX" exec "$1" bash -c '
        set -e
        pid=$(docker inspect -f "{{.State.Pid}}" "$1")
        conf=/etc/cni/net.d/10-rkers-sandbox.conflist
        export CNI_COMMAND=ADD CNI_CONTAINERID="$1" CNI_NETNS=/proc/$pid/ns/net CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin
        prev=null
        for i in $(jq ".plugins | keys[]" $conf); do
            conf_one=$(jq -c --argjson prev "$prev" --argjson i "$i" "(.plugins[\$i] + {cniVersion, name}) | if \$prev != null then . + {prevResult: \$prev} else . end" $conf)
            prev=$(echo "$conf_one" | /opt/cni/bin/$(echo "$conf_one" | jq -r .type))
        done
        echo "$prev" | jq -r ".ips[0].address" | cut -d/ -f1
    ' cni-add "$2"
}
c1=$("$SANDBOX" exec host1 docker run -d --net=none "$IMAGE" sleep 300 2>/dev/null)
c2=$("$SANDBOX" exec host2 docker run -d --net=none "$IMAGE" sleep 300 2>/dev/null)
pod1=$(cni_add host1 "$c1" 2>"$WORK/cni1.err")
pod2=$(cni_add host2 "$c2" 2>"$WORK/cni2.err")
check "CNI gives pods addresses from their host's /24" bash -c "
    case '$pod1' in $SANDBOX_POD_PREFIX.1.*) ;; *) cat '$WORK/cni1.err'; exit 1 ;; esac
    case '$pod2' in $SANDBOX_POD_PREFIX.2.*) ;; *) cat '$WORK/cni2.err'; exit 1 ;; esac"
check "a pod on host1 reaches a pod on host2 (ping $pod2)" \
    "$SANDBOX" exec host1 docker exec "$c1" ping -c 2 -W 2 "$pod2"
check "a pod on host2 reaches host1's address" \
    "$SANDBOX" exec host2 docker exec "$c2" ping -c 1 -W 2 "$IP1"
"$SANDBOX" exec host1 docker rm -f "$c1" >/dev/null 2>&1
"$SANDBOX" exec host2 docker rm -f "$c2" >/dev/null 2>&1
check "cni is idempotent and restores a wiped /etc/cni and /opt/cni" bash -c "
    rm -rf '$D/hosts/host2/root/etc/cni/'* '$D/hosts/host2/root/opt/cni/'* &&
    '$SANDBOX' cni && '$SANDBOX' cni &&
    [ -s '$D/hosts/host2/root/etc/cni/net.d/10-rkers-sandbox.conflist' ] && [ -x '$D/hosts/host2/root/opt/cni/bin/bridge' ] &&
    [ \"\$(ip -n ${NETNS_PREFIX}host1 route | grep -c '^$SANDBOX_POD_PREFIX.2.0/24')\" = 1 ]"

# --- provoking failures -----------------------------------------------------------------------------
check "svc stop sshd: ssh to host2 is refused" bash -c "
    '$SANDBOX' svc host2 stop sshd && ! ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes -o ConnectTimeout=3 root@$IP2 true"
check "svc start sshd: ssh to host2 works again" bash -c "
    '$SANDBOX' svc host2 start sshd && ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes root@$IP2 true"
check "svc stop dockerd: docker on host2 does not answer over ssh" bash -c "
    '$SANDBOX' svc host2 stop dockerd && ! ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes root@$IP2 docker version"
check "svc start dockerd: docker on host2 answers again" bash -c "
    '$SANDBOX' svc host2 start dockerd && ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes root@$IP2 docker version"
check "stop-host host3: its address no longer answers" bash -c "
    '$SANDBOX' stop-host host3 && ! ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes -o ConnectTimeout=3 root@$IP3 true &&
    '$SANDBOX' status | grep -q '^host3 .* down *down'"
check "start-host host3 brings it back with its data" bash -c "
    '$SANDBOX' start-host host3 && ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes root@$IP3 docker image inspect '$IMAGE' >/dev/null"
check "status shows three hosts with sshd and dockerd up" bash -c "
    [ \"\$('$SANDBOX' status | grep -cE '^host[123] .*up\\(pid [0-9]+\\) +up\\(pid [0-9]+\\)')\" = 3 ]"
check "up repairs a stopped dockerd and sshd" bash -c "
    '$SANDBOX' svc host1 stop dockerd && '$SANDBOX' svc host2 stop sshd && '$SANDBOX' up >/dev/null 2>&1 &&
    ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes root@$IP1 docker version >/dev/null &&
    ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes root@$IP2 true"
check "--roles changes the nodes' roles, persists, and 'default' restores them" bash -c "
    '$SANDBOX' up --roles 'host1=controlplane,etcd host2=worker,etcd host3=worker' >/dev/null 2>&1 &&
    grep -q 'role: \[controlplane, etcd\]' '$CLUSTER_YML' && grep -q 'role: \[worker, etcd\]' '$CLUSTER_YML' &&
    '$SANDBOX' up >/dev/null 2>&1 && grep -q 'role: \[worker, etcd\]' '$CLUSTER_YML' &&
    '$SANDBOX' up --roles default >/dev/null 2>&1 && grep -q 'role: \[controlplane, etcd, worker\]' '$CLUSTER_YML' &&
    ! grep -q 'role: \[worker, etcd\]' '$CLUSTER_YML'"
check "bad --roles and --hosts are refused with a clear message" bash -c "
    '$SANDBOX' up --roles 'host1=master' 2>&1 | grep -q \"unknown role 'master'\" &&
    '$SANDBOX' up --hosts x 2>&1 | grep -q 'positive number'"
MEM=$("$SANDBOX" status | awk '/^host/ { print $1 "=" $NF }' | tr '\n' ' ')
echo "# memory per host (containers stopped, images pulled): $MEM"

# --- down leaves nothing behind, and up works again --------------------------------------------------
all_pids=$(cat "$D"/hosts/host*/launcher.pid "$D"/registry/*.pid 2>/dev/null | tr '\n' ' ')
inner_pids=$(cat "$D"/hosts/host*/launcher.pid | while read -r p; do cat "/proc/$p/task/$p/children"; done 2>/dev/null | tr '\n' ' ')
t0=$(now)
check "down" sb down
DOWN=$(elapsed "$t0")
check "down ended every process it started" bash -c "for p in $all_pids $inner_pids; do [ -d /proc/\$p ] && ! grep -q '^State:.*Z' /proc/\$p/status && { echo \"pid \$p alive\"; exit 1; }; done; exit 0"
check "no sandbox sshd/dockerd/registry left" bash -c "! pgrep -f '$D/(hosts|registry)/' >/dev/null"
check "no namespaces left" bash -c "! ip netns list | grep -q '^${NETNS_PREFIX}'"
check "no bridge or veth left" bash -c "! ip link show '$SANDBOX_BRIDGE' >/dev/null 2>&1 && ! ip -br link | grep -q '^rkv${SANDBOX_INSTANCE:-}-'"
check "no firewall rule left" bash -c "! iptables -S | grep -qE -- '--comment $COMMENT( |\$)'"
check "no cgroups left" bash -c "[ -z \"\$(find /sys/fs/cgroup -maxdepth 4 -type d -name '$CGROUP_NAME' 2>/dev/null)\" ]"
t0=$(now)
check "up again after down" sb up --hosts 3
AGAIN=$(elapsed "$t0")
check "after up again: docker info over ssh on host3 and images kept" bash -c "
    ssh -i '$KEY' -o UserKnownHostsFile='$KNOWN' -o BatchMode=yes root@$IP3 docker image inspect '$IMAGE' >/dev/null"
MEM_IDLE=$("$SANDBOX" status | awk '/^host/ { print $1 "=" $NF }' | tr '\n' ' ')
echo "# timings: cold up ${COLD}s, warm up ${WARM}s, down ${DOWN}s, up after down ${AGAIN}s"
echo "# memory per idle host right after up: $MEM_IDLE"
if [ "${SMOKE_KEEP:-0}" != 1 ]; then
    sb down >/dev/null 2>&1 || nok "final down"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
