# shellcheck shell=bash
# One simulated host: its own network, mount, UTS, IPC, PID and cgroup namespaces with tini as
# PID 1, private copies of the directories an RKE-style orchestrator writes, a tmpfs /run, its own
# cgroup subtree seen as the root, and its own dockerd and sshd. Sourced by scripts/sandbox after
# scripts/lib/common.sh and scripts/lib/sandbox-net.sh.

# Host paths that get a private per-host directory (bind-mounted inside the host's mount namespace).
SANDBOX_PRIVATE_DIRS=(
    /var/lib/docker /etc/kubernetes /var/lib/etcd /var/lib/kubelet /var/lib/rancher /var/lib/cni
    /var/lib/calico /var/lib/dockershim /var/lib/cri-dockerd /opt/rke /opt/cni /etc/cni /etc/ceph
    /var/log/containers /var/log/pods /var/log/kube-audit /tmp /root /root/.docker /etc/tmpfiles.d
)

sandbox_host_dir() { echo "$RKERS_SANDBOX_DIR/hosts/$1"; }
# Name of the cgroup directory that holds all hosts of this sandbox.
SANDBOX_CGROUP_NAME="rkers-sandbox${SANDBOX_INSTANCE:+-$SANDBOX_INSTANCE}"

# True while the process exists and is not a zombie (an exited child nobody reaped yet).
sandbox_pid_alive() {
    local state
    state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# PID (in the machine's PID namespace) of the process that launched the host: `unshare`, whose only
# child is the host's PID 1. Empty when the host is not running.
sandbox_host_launcher_pid() {
    local pidfile pid
    pidfile="$(sandbox_host_dir "$1")/launcher.pid"
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    # Guard against a reused PID: the process must still be our unshare for this host.
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "unshare .*sandbox __init $1\b"; then
        echo "$pid"
    fi
}

# PID of the host's PID 1 (tini) in the machine's PID namespace.
sandbox_host_init_pid() {
    local launcher
    launcher=$(sandbox_host_launcher_pid "$1")
    [ -n "$launcher" ] || return 0
    cat "/proc/$launcher/task/$launcher/children" 2>/dev/null | awk '{print $1}'
}

sandbox_host_running() { [ -n "$(sandbox_host_init_pid "$1")" ]; }

# The machine's cgroup hierarchies as "<mount point> <type> <options>" lines (v1 and v2).
sandbox_cgroup_mounts() {
    awk '$3 == "cgroup" || $3 == "cgroup2" { print $2, $3, $4 }' /proc/self/mounts | grep '^/sys/fs/cgroup/'
}

# Creates <hierarchy>/<our current cgroup>/rkers-sandbox/<host> in every hierarchy and prints the
# directories. Nesting below our own cgroup keeps the hosts inside whatever accounts for us.
sandbox_cgroup_create() {
    local host=$1 mnt type opts rel parent dir
    while read -r mnt type opts; do
        if [ "$type" = cgroup2 ]; then
            rel=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
        else
            # The /proc/self/cgroup line whose controller list equals this mount's controllers.
            rel=$(awk -F: -v o="$opts" '
                BEGIN { n = split(o, os, ","); for (i = 1; i <= n; i++) want[os[i]] = 1 }
                $1 != "0" { k = split($2, cs, ","); ok = k > 0
                            for (i = 1; i <= k; i++) if (!(cs[i] in want)) ok = 0
                            if (ok) { print $3; exit } }' /proc/self/cgroup)
        fi
        rel=${rel%/}
        # When called from inside an earlier sandbox cgroup, start from the top of our tree.
        rel=${rel%%/rkers-sandbox*}
        parent="$mnt$rel/$SANDBOX_CGROUP_NAME"
        dir="$parent/$host"
        mkdir -p "$dir"
        if [ -f "$parent/cpuset.cpus" ]; then
            # A v1 cpuset child starts empty and refuses tasks until cpus and mems are set.
            [ -n "$(cat "$parent/cpuset.cpus")" ] || cat "$mnt$rel/cpuset.cpus" >"$parent/cpuset.cpus"
            [ -n "$(cat "$parent/cpuset.mems")" ] || cat "$mnt$rel/cpuset.mems" >"$parent/cpuset.mems"
            [ -n "$(cat "$dir/cpuset.cpus")" ] || cat "$parent/cpuset.cpus" >"$dir/cpuset.cpus"
            [ -n "$(cat "$dir/cpuset.mems")" ] || cat "$parent/cpuset.mems" >"$dir/cpuset.mems"
        fi
        echo "$dir"
    done < <(sandbox_cgroup_mounts)
}

# Moves the calling shell (and so whatever it execs) into the host's cgroups.
sandbox_cgroup_enter() {
    local dir
    while read -r dir; do
        [ -n "$dir" ] && echo "$BASHPID" >"$dir/cgroup.procs"
    done <"$(sandbox_host_dir "$1")/cgroups"
}

# Removes the host's cgroup subtrees depth-first, retrying while dying processes leave them.
sandbox_cgroup_remove() {
    local list dir left
    list="$(sandbox_host_dir "$1")/cgroups"
    [ -f "$list" ] || return 0
    for _ in $(seq 1 50); do
        left=0
        while read -r dir; do
            [ -d "$dir" ] || continue
            find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
            [ -d "$dir" ] && left=1
        done <"$list"
        [ $left -eq 0 ] && break
        sleep 0.2
    done
    [ $left -eq 0 ] || sandbox_warn "$1: some cgroups could not be removed yet (see $list)"
    # The shared parent goes too once the last host is gone.
    while read -r dir; do rmdir "$(dirname "$dir")" 2>/dev/null || true; done <"$list"
}

# Prepares the host's files on the machine: private directories, machine-id, sshd and dockerd
# configuration, host key. Safe to repeat.
sandbox_host_prepare() {
    local host=$1 dir ip p
    dir=$(sandbox_host_dir "$host")
    ip=$(sandbox_host_ip "$host")
    mkdir -p "$dir/root" "$dir/log"
    for p in "${SANDBOX_PRIVATE_DIRS[@]}"; do
        mkdir -p "$dir/root$p" "$p"
    done
    chmod 1777 "$dir/root/tmp"
    chmod 700 "$dir/root/root" "$dir/root/root/.docker" 2>/dev/null || true
    # root's home is the host's own, as on an installed machine: this machine's dotfiles (a
    # pyenv init in its .bashrc took 0.2 s of CPU for every command an SSH session ran, 30
    # hosts' worth at once) stay out of the hosts' shells.
    for p in .bashrc .profile; do
        [ -e "$dir/root/root/$p" ] || [ ! -e "/etc/skel/$p" ] || cp "/etc/skel/$p" "$dir/root/root/$p"
    done
    [ -s "$dir/machine-id" ] || od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/machine-id"
    # The host's own name resolves, as on an installed machine (its installer or its cloud's
    # DNS sees to that). Without it kubelet, which looks its node name up before it
    # registers, waits out the machine's DNS timeouts: 10 s before every node registered.
    {
        grep -vw -- "$host" /etc/hosts 2>/dev/null || true
        printf '%s\t%s\n' "$ip" "$host"
    } >"$dir/etc-hosts"
    [ -f "$dir/ssh_host_ed25519_key" ] ||
        ssh-keygen -q -t ed25519 -N '' -C "root@$host" -f "$dir/ssh_host_ed25519_key"
    cat >"$dir/sshd_config" <<CFG
# sshd of sandbox host $host; generated by scripts/sandbox.
ListenAddress $ip
Port 22
HostKey $dir/ssh_host_ed25519_key
PidFile /run/sshd.pid
AuthorizedKeysFile $SANDBOX_SSH_DIR/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
StreamLocalBindUnlink yes
MaxSessions 256
MaxStartups 256:30:512
PrintMotd no
AcceptEnv LANG LC_*
Subsystem sftp /usr/lib/openssh/sftp-server
CFG
    cat >"$dir/daemon.json" <<CFG
{
  "hosts": ["unix:///var/run/docker.sock"],
  "data-root": "/var/lib/docker",
  "exec-root": "/run/docker",
  "pidfile": "/run/docker.pid",
  "insecure-registries": ["$SANDBOX_REGISTRY"],
  "runtimes": { "rkers-runc": { "path": "$SANDBOX_RUNC_WRAPPER" } },
  "default-runtime": "rkers-runc",
  "oom-score-adjust": 0,
  "storage-driver": "overlay2",
  "log-driver": "json-file"
}
CFG
}

# Starts the host detached from the caller: launcher -> own cgroups -> namespaces -> tini -> __init.
sandbox_host_start() {
    local host=$1 dir ns
    dir=$(sandbox_host_dir "$host")
    ns=$(sandbox_netns "$host")
    sandbox_cgroup_create "$host" >"$dir/cgroups"
    rm -f "$dir/ready" "$dir/launcher.pid"
    # The subshell enters the host's cgroups first, so everything unshared below sees its own
    # subtree as the root of the new cgroup namespace.
    (
        sandbox_cgroup_enter "$host"
        echo "$BASHPID" >"$dir/launcher.pid"
        exec setsid nsenter --net="/var/run/netns/$ns" \
            unshare --mount --uts --ipc --pid --cgroup --fork --mount-proc --propagation private \
            tini -s -- "$SANDBOX_SELF" __init "$host"
    ) </dev/null >>"$dir/log/init.log" 2>&1 9>&- &
    disown || true
}

# Runs inside the new namespaces (PID 2 under tini): mounts, hostname, daemons, then waits.
sandbox_host_init() {
    local host=$1 dir p mnt type opts
    dir=$(sandbox_host_dir "$host")
    set -e
    hostname "$host"
    # Fresh sysfs for this network namespace; fresh cgroup hierarchies rooted at our subtree.
    local cgroup_mounts
    cgroup_mounts=$(sandbox_cgroup_mounts)
    # Detach the machine's /sys tree first: hidden cgroup mounts would still show in mountinfo.
    umount -l /sys
    mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
    mount -t tmpfs -o nosuid,nodev,noexec,mode=755 tmpfs /sys/fs/cgroup
    while read -r mnt type opts; do
        mkdir -p "$mnt"
        if [ "$type" = cgroup2 ]; then
            mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$mnt"
        else
            mount -t cgroup -o "nosuid,nodev,noexec,$(sandbox_cgroup_v1_options "$opts")" cgroup "$mnt"
        fi
    done <<<"$cgroup_mounts"
    mount -t tmpfs -o nosuid,nodev,mode=755 tmpfs /run
    mkdir -p /run/sshd /run/lock /run/netns
    for p in "${SANDBOX_PRIVATE_DIRS[@]}"; do
        mount --bind "$dir/root$p" "$p"
    done
    mount --bind "$dir/machine-id" /etc/machine-id
    mount --bind "$dir/etc-hosts" /etc/hosts
    # With a compressed store (scripts/lib/sandbox-store.sh) Docker's data lives there instead.
    local store
    store=$(sandbox_store_host_dir "$host")
    [ -z "$store" ] || mount --bind "$store" /var/lib/docker
    # kubelet binds /var/lib/kubelet with shared propagation; that needs a shared root.
    mount --make-rshared /
    set +e
    sandbox_daemon_start sshd
    sandbox_daemon_start dockerd
    date +%s >"$dir/ready"
    exec sleep infinity
}

# Keeps only the controller (or name=) options of a v1 cgroup mount's option string.
sandbox_cgroup_v1_options() {
    local o p out=()
    IFS=, read -ra o <<<"$1"
    for p in "${o[@]}"; do
        case $p in rw | ro | relatime | noatime | nosuid | nodev | noexec | clone_children | xattr) ;; name=*) out+=(none "$p") ;; *) out+=("$p") ;; esac
    done
    (IFS=,; echo "${out[*]}")
}

# Inside a host: starts one of its daemons unless it answers already, and waits until it does.
sandbox_daemon_start() {
    local name=$1 host dir i
    host=$(hostname)
    dir=$(sandbox_host_dir "$host")
    sandbox_daemon_alive "$name" && return 0
    case $name in
        sshd)
            mkdir -p /run/sshd
            setsid -f /usr/sbin/sshd -D -f "$dir/sshd_config" -E "$dir/log/sshd.log" </dev/null >>"$dir/log/sshd.out" 2>&1 9>&-
            ;;
        dockerd)
            rm -f /run/docker.pid /var/run/docker.sock
            local config="$dir/daemon.json" bin
            bin=$(sandbox_docker_binaries "$host")
            if [ -n "$bin" ]; then
                # Docker 28 removed oom-score-adjust (and refuses to start with it); the
                # packaged 20.10 needs it at 0, its -500 being more than this machine grants.
                config="$dir/daemon-modules.json"
                jq 'del(."oom-score-adjust")' "$dir/daemon.json" >"$config"
            fi
            PATH="${bin:+$bin:}$PATH" setsid -f dockerd --config-file "$config" </dev/null >>"$dir/log/dockerd.log" 2>&1 9>&-
            ;;
        *) sandbox_die "unknown daemon $name (sshd or dockerd)" ;;
    esac
    for i in $(seq 1 120); do
        sandbox_daemon_alive "$name" && return 0
        sleep 0.25
    done
    sandbox_warn "$host: $name did not answer within 30 s (log: $dir/log/$name.log)"
    return 1
}

sandbox_daemon_stop() {
    local name=$1 pidfile pid i
    case $name in
        sshd) pidfile=/run/sshd.pid ;;
        dockerd) pidfile=/run/docker.pid ;;
        *) sandbox_die "unknown daemon $name (sshd or dockerd)" ;;
    esac
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
    for i in $(seq 1 200); do
        sandbox_pid_alive "$pid" || break
        sleep 0.1
    done
    sandbox_pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null
    rm -f "$pidfile"
    [ "$name" = sshd ] || rm -f /var/run/docker.sock
}

# The Docker release a host runs: its own choice ($dir/docker-version, `scripts/sandbox docker`),
# else the sandbox's (`up --docker`), else the machine's packaged Docker ("system").
sandbox_docker_version() {
    local dir
    dir=$(sandbox_host_dir "$1")
    cat "$dir/docker-version" 2>/dev/null || cat "$SANDBOX_DOCKER_VERSION_FILE" 2>/dev/null || echo system
}

# Inside a host, before its dockerd starts: prints the bin directory of a Docker built from its
# Go modules (scripts/build-modules docker), which dockerd then finds first on its PATH, and so
# do the containerd, shim and runc it starts. Only the CLI is bound over the packaged one, in the
# host's own mount namespace, so a shell on the host speaks that release's API. The daemons are
# not bound over the packaged files: runc re-executes itself through an overlay of its own
# directory, which shows the file underneath a bind (Debian's runc 1.1), and the container's
# init then fails ("can't get final child's PID from pipe"). "system" removes the bind again.
sandbox_docker_binaries() {
    local version bin t
    version=$(sandbox_docker_version "$1")
    for t in $(type -ap docker); do
        while mountpoint -q "$t" 2>/dev/null; do umount "$t" 2>/dev/null || break; done
    done
    [ "$version" = system ] && return 0
    bin="$RKERS_CACHE/modules/docker/$version/bin"
    for t in $SANDBOX_DOCKER_BINARIES; do
        [ -x "$bin/$t" ] || sandbox_die "$1: Docker $version is not built ($bin/$t is missing): scripts/build-modules docker $version"
    done
    for t in $(type -ap docker); do mount --bind "$bin/docker" "$t"; done
    echo "$bin"
}

# Inside a host: does the daemon answer? sshd: its banner on the host address; dockerd: the API.
sandbox_daemon_alive() {
    local ip
    case $1 in
        sshd)
            ip=$(sandbox_host_ip "$(hostname)")
            timeout 2 bash -c "exec 3<>/dev/tcp/$ip/22 && head -c 4 <&3" 2>/dev/null | grep -q SSH
            ;;
        dockerd) timeout 5 docker --host unix:///var/run/docker.sock version --format '{{.Server.Version}}' >/dev/null 2>&1 ;;
    esac
}

# Runs a command inside a running host's namespaces and cgroups.
sandbox_host_exec() {
    local host=$1 pid
    shift
    pid=$(sandbox_host_init_pid "$host")
    [ -n "$pid" ] || sandbox_die "$host is not running"
    [ $# -gt 0 ] || set -- bash -l
    (
        sandbox_cgroup_enter "$host"
        # fd 9 is the command lock; nothing started in a host may keep it.
        exec nsenter --target "$pid" --net --mount --uts --ipc --pid --cgroup -- "$@" 9>&-
    )
}

# Stops a host: its dockerd first (so containers get their stop signal), then its PID 1, which
# takes every process of its PID namespace with it; then its cgroups.
sandbox_host_stop() {
    local host=$1 launcher init i
    launcher=$(sandbox_host_launcher_pid "$host")
    init=$(sandbox_host_init_pid "$host")
    if [ -n "$init" ]; then
        sandbox_host_exec "$host" "$SANDBOX_SELF" __daemon "$host" stop dockerd >/dev/null 2>&1 || true
        kill -KILL "$init" 2>/dev/null || true
    fi
    if [ -n "$launcher" ]; then
        for i in $(seq 1 100); do
            sandbox_pid_alive "$launcher" || break
            sleep 0.1
        done
        sandbox_pid_alive "$launcher" && sandbox_warn "$host: launcher $launcher still running"
    fi
    rm -f "$(sandbox_host_dir "$host")/launcher.pid" "$(sandbox_host_dir "$host")/ready"
    sandbox_cgroup_remove "$host"
}

# Waits until a freshly started host reports ready and both daemons answer.
sandbox_host_wait() {
    local host=$1 dir i
    dir=$(sandbox_host_dir "$host")
    for i in $(seq 1 240); do
        [ -f "$dir/ready" ] && return 0
        if [ "$i" -gt 8 ] && ! sandbox_host_running "$host"; then
            sandbox_die "$host: exited during start (log: $dir/log/init.log)"
        fi
        sleep 0.25
    done
    sandbox_die "$host: not ready within 60 s (log: $dir/log/init.log)"
}
