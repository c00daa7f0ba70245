#!/bin/bash
# rkers' entrypoint wrapper for Kubernetes component containers.
#
# The tools image exports /opt/rke-tools as a volume; the service-sidekick container carries it and
# every component container mounts it (volumes-from) and starts `/opt/rke-tools/entrypoint.sh
# <component> <flags...>`. The wrapper runs inside the component's own image, so it only relies on
# what the Kubernetes image has (bash, coreutils, util-linux, iptables, procps) plus the docker CLI
# shipped next to it in /opt/rke-tools/bin.
#
# What it prepares, per component, before exec'ing it:
#   kubelet, kube-proxy  pick the iptables backend the host already uses; add --hostname-override
#                        when missing
#   kube-proxy           load br_netfilter when RKE_KUBE_PROXY_BR_NETFILTER=true
#   kubelet              match Docker's cgroup driver, drop stale mounts inherited from the host,
#                        expose the host's /dev, cgroup v1 layout kubelet expects, bridge netfilter,
#                        the host's os-release, systemd-resolved's resolv.conf, the registry
#                        credentials file
# Nothing here prints environment values: RKE_KUBELET_DOCKER_CONFIG holds registry credentials.
set -euo pipefail

say() { echo "rke-tools entrypoint: $*" >&2; }

[ $# -ge 1 ] || {
    say "usage: entrypoint.sh <command> [args...]"
    exit 64
}
component=$(basename "$1")
args=("$@")
tools_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
docker_cli="$tools_dir/bin/docker"

has_flag() {
    local name=$1 a
    for a in "${args[@]:1}"; do
        case "$a" in "--$name" | "--$name="*) return 0 ;; esac
    done
    return 1
}

# kube-proxy and kubelet program iptables; their rules must land in the backend (legacy or nft)
# the host's Docker already uses, or the two rule sets never meet. The backend with rules wins.
choose_iptables_backend() {
    command -v update-alternatives >/dev/null || return 0
    [ -x /usr/sbin/iptables-legacy ] && [ -x /usr/sbin/iptables-nft ] || return 0
    local legacy nft mode
    legacy=$( (iptables-legacy-save 2>/dev/null || true) | grep -c '^-' || true)
    nft=$( (iptables-nft-save 2>/dev/null || true) | grep -c '^-' || true)
    if [ "${legacy:-0}" -gt "${nft:-0}" ]; then mode=legacy; else mode=nft; fi
    update-alternatives --set iptables "/usr/sbin/iptables-$mode" >/dev/null 2>&1 || true
    update-alternatives --set ip6tables "/usr/sbin/ip6tables-$mode" >/dev/null 2>&1 || true
    say "iptables backend: $mode (legacy rules: ${legacy:-0}, nft rules: ${nft:-0})"
}

case "$component" in
    kubelet | kube-proxy)
        choose_iptables_backend
        if ! has_flag hostname-override; then
            # RKE leaves the flag out only for AWS with instance-metadata hostnames; without an EC2
            # metadata service the host's own name is the answer.
            args+=("--hostname-override=$(hostname -f 2>/dev/null || hostname)")
        fi
        ;;
esac

if [ "$component" = kube-proxy ] && [ "${RKE_KUBE_PROXY_BR_NETFILTER:-}" = "true" ]; then
    modprobe br_netfilter 2>/dev/null || say "modprobe br_netfilter failed (continuing)"
fi

if has_flag cloud-provider && printf '%s\n' "${args[@]}" | grep -q -- '--cloud-provider=azure'; then
    say "warning: Azure cloud-config enrichment is not provided by this image"
fi

if [ "$component" != kubelet ]; then
    exec "${args[@]}"
fi

# ---- kubelet ----
[ -x "$docker_cli" ] || {
    say "error: $docker_cli is missing; is the service-sidekick volume mounted?"
    exit 1
}
cgroup_driver=$("$docker_cli" info -f '{{.Info.CgroupDriver}}')
cgroup_version=$("$docker_cli" info -f '{{.Info.CgroupVersion}}' 2>/dev/null || echo 1)
# RKE1's entrypoint asks for Docker's root at API 1.24, which Docker 29 refuses (1.44 is its
# oldest until 29.3, 1.40 after); `docker info` then prints the refusal and nothing else, and
# exits 0, and RKE1's script goes on with an empty root. This one asks again at the version the
# CLI negotiates, so a data-root other than /var/lib/docker is still cleaned below.
docker_root=$(DOCKER_API_VERSION=1.24 "$docker_cli" info -f '{{.Info.DockerRootDir}}' 2>/dev/null || true)
[ -n "$docker_root" ] || docker_root=$("$docker_cli" info -f '{{.Info.DockerRootDir}}')
[ -n "$docker_root" ] || { say "error: docker info reports no root directory"; exit 1; }
say "docker: cgroup driver $cgroup_driver, cgroup v${cgroup_version:-1}, root $docker_root"

# The container inherits copies of the host's mounts below Docker's root and /run (other
# containers' layers, netns files). Holding them here keeps them busy on the host; only the direct
# children of Docker's root stay.
declare -A keep=()
while IFS= read -r d; do keep["$d"]=1; done < <(find "$docker_root" -mindepth 1 -maxdepth 1 2>/dev/null)
for dir in "$docker_root" /var/lib/docker /run /var/run; do
    while IFS= read -r m; do
        case "$m" in "$dir"/*) ;; *) continue ;; esac
        case "$m" in /run/nscd | /var/run/nscd) continue ;; esac
        [ -n "${keep[$m]:-}" ] && continue
        umount "$m" 2>/dev/null || true
    done < <(awk '{print $2}' /proc/mounts | tac)
done

mount --rbind /host/dev /dev 2>/dev/null || say "could not bind the host's /dev (is /dev:/host/dev mounted?)"
mount -o rw,remount /sys/fs/cgroup 2>/dev/null || true

if [ "${cgroup_version:-1}" = 1 ]; then
    for c in /sys/fs/cgroup/*; do
        [ -d "$c" ] && mkdir -p "$c/kubepods" 2>/dev/null || true
    done
    # kubelet looks the combined controllers up under both spellings.
    if [ -d /sys/fs/cgroup/cpu,cpuacct ]; then
        mkdir -p /sys/fs/cgroup/cpuacct,cpu
        mountpoint -q /sys/fs/cgroup/cpuacct,cpu || mount --bind /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/cpuacct,cpu
    fi
    if [ -d /sys/fs/cgroup/net_cls,net_prio ]; then
        mkdir -p /sys/fs/cgroup/net_prio,net_cls
        mountpoint -q /sys/fs/cgroup/net_prio,net_cls || mount --bind /sys/fs/cgroup/net_cls,net_prio /sys/fs/cgroup/net_prio,net_cls
    fi
fi

mkdir -p /opt/cni /etc/cni
if command -v chcon >/dev/null; then
    chcon -Rt svirt_sandbox_file_t /etc/cni 2>/dev/null || true
    chcon -Rt svirt_sandbox_file_t /opt/cni 2>/dev/null || true
fi

# Network plugins need bridged traffic to pass iptables.
sysctl -w net.bridge.bridge-nf-call-iptables=1 >/dev/null 2>&1 || say "could not set net.bridge.bridge-nf-call-iptables=1 (continuing)"

for os_release in /host/usr/lib/os-release /host/etc/os-release /host/usr/share/ros/os-release; do
    if [ -f "$os_release" ]; then
        ln -sf "$os_release" /usr/lib/os-release
        break
    fi
done

if printf '%s\n' "${args[@]}" | grep -qx -- '--resolv-conf=/etc/resolv.conf' &&
    pgrep -f systemd-resolved >/dev/null 2>&1 && [ -f /run/systemd/resolve/resolv.conf ]; then
    args+=("--resolv-conf=/run/systemd/resolve/resolv.conf")
fi

# The registry credentials file is what upstream leaves (images/tools/BEHAVIOUR.md): the decoded
# bytes, rewritten in place on every start, a new file 0644 under Docker's umask, no directory
# created; a failed write does not stop kubelet. Upstream also copies it to the log; not here.
if [ -n "${RKE_KUBELET_DOCKER_CONFIG:-}" ]; then
    if [ -z "${RKE_KUBELET_DOCKER_FILE:-}" ]; then
        say "RKE_KUBELET_DOCKER_CONFIG is set without RKE_KUBELET_DOCKER_FILE; no credentials file written"
    elif printf '%s' "$RKE_KUBELET_DOCKER_CONFIG" | base64 -d >"$RKE_KUBELET_DOCKER_FILE"; then
        say "wrote registry credentials to $RKE_KUBELET_DOCKER_FILE"
    else
        say "could not write registry credentials to $RKE_KUBELET_DOCKER_FILE (continuing)"
    fi
fi

if [ "${RKE_KUBELET_CRIDOCKERD:-}" != "true" ]; then
    exec "${args[@]}" "--cgroup-driver=$cgroup_driver"
fi

# Kubernetes 1.24 and later: kubelet reaches Docker through cri-dockerd, which runs beside it in
# this container, as upstream's entrypoint starts it; the container ends when either one ends.
# Upstream's place is the tools volume; rkers' own Kubernetes images (v1.33 on) carry one too.
cri_dockerd="$tools_dir/bin/cri-dockerd"
[ -x "$cri_dockerd" ] || cri_dockerd=$(command -v cri-dockerd || true)
[ -n "$cri_dockerd" ] && [ -x "$cri_dockerd" ] || {
    say "error: RKE_KUBELET_CRIDOCKERD=true but neither $tools_dir/bin/cri-dockerd nor a cri-dockerd on PATH exists"
    exit 1
}
# Registry credentials for the images cri-dockerd pulls, where Docker's client looks for them.
if [ -n "${RKE_KUBELET_DOCKER_CONFIG:-}" ] && [ -n "${RKE_KUBELET_DOCKER_FILE:-}" ] && [ -f "$RKE_KUBELET_DOCKER_FILE" ]; then
    mkdir -p /.docker && touch /.docker/config.json
    mount --bind "$RKE_KUBELET_DOCKER_FILE" /.docker/config.json || say "could not bind the registry credentials for cri-dockerd (continuing)"
fi
cri_args=(--network-plugin=cni --cni-conf-dir=/etc/cni/net.d --cni-bin-dir=/opt/cni/bin
    --container-runtime-endpoint=unix:///var/run/cri-dockerd.sock
    "--streaming-bind-addr=${CRIDOCKERD_STREAM_SERVER_ADDRESS:-127.0.0.1}:${CRIDOCKERD_STREAM_SERVER_PORT:-10010}")
for a in "${args[@]:1}"; do
    case "$a" in --pod-infra-container-image=*) cri_args+=("$a") ;; esac
done
# Kubernetes 1.35 dropped kubelet's flag; rkers then passes the sandbox image in the environment.
if [ -n "${RKE_KUBELET_PAUSE_IMAGE:-}" ] && ! printf '%s\n' "${cri_args[@]}" | grep -q '^--pod-infra-container-image='; then
    cri_args+=("--pod-infra-container-image=$RKE_KUBELET_PAUSE_IMAGE")
fi
[ "${RKE_KUBELET_CRIDOCKERD_DUALSTACK:-}" = "true" ] && cri_args+=(--ipv6-dual-stack=true)
rm -f /var/run/cri-dockerd.sock
"$cri_dockerd" "${cri_args[@]}" &
cri_pid=$!
# Upstream sleeps 10 s; waiting for the socket is as safe and starts kubelet as soon as it can.
for _ in $(seq 1 300); do
    [ -S /var/run/cri-dockerd.sock ] && break
    kill -0 "$cri_pid" 2>/dev/null || { wait "$cri_pid"; say "error: cri-dockerd exited before it listened"; exit 1; }
    sleep 0.1
done
[ -S /var/run/cri-dockerd.sock ] || say "cri-dockerd has not made /var/run/cri-dockerd.sock in 30 s; starting kubelet anyway"
"${args[@]}" "--cgroup-driver=$cgroup_driver" &
kubelet_pid=$!
trap 'kill -TERM "$kubelet_pid" "$cri_pid" 2>/dev/null' TERM INT
set +e
wait -n "$kubelet_pid" "$cri_pid"
status=$?
say "$( kill -0 "$kubelet_pid" 2>/dev/null && echo cri-dockerd || echo kubelet ) exited ($status); stopping the other"
kill -TERM "$kubelet_pid" "$cri_pid" 2>/dev/null
wait
exit "$status"
