# shellcheck shell=bash
# The sandbox network on the machine: one bridge, a network namespace per host joined to it by a
# veth pair, the FORWARD rule that lets bridge ports talk to each other, and the static routes
# between the hosts' pod subnets. Sourced by scripts/sandbox after scripts/lib/common.sh.

# A second, independent sandbox (for the sandbox's own tests, while others use the main one) sets
# SANDBOX_INSTANCE to a short tag plus its own RKERS_SANDBOX_DIR, SANDBOX_BRIDGE,
# SANDBOX_SUBNET_PREFIX, SANDBOX_POD_PREFIX and SANDBOX_REGISTRY_LOCAL.
SANDBOX_INSTANCE="${SANDBOX_INSTANCE:-}"
# An instance left with the main sandbox's bridge, subnet or directory would act on the main
# sandbox's network: `down --purge` for instance z deleted the main bridge (seen 2026-12-06).
if [ -n "$SANDBOX_INSTANCE" ] && { [ "$SANDBOX_BRIDGE" = rkbr0 ] || [ "$SANDBOX_SUBNET_PREFIX" = 10.77.0 ] ||
    [ "$RKERS_SANDBOX_DIR" = /var/lib/rkers-sandbox ]; }; then
    echo "sandbox: error: SANDBOX_INSTANCE=$SANDBOX_INSTANCE needs its own SANDBOX_BRIDGE, SANDBOX_SUBNET_PREFIX and RKERS_SANDBOX_DIR (it has the main sandbox's $SANDBOX_BRIDGE, $SANDBOX_SUBNET_PREFIX, $RKERS_SANDBOX_DIR)" >&2
    exit 1
fi
# Every firewall rule the sandbox adds carries this comment, so `down` removes exactly those.
SANDBOX_RULE_COMMENT="rkers-sandbox${SANDBOX_INSTANCE:+-$SANDBOX_INSTANCE}"

sandbox_netns() { echo "rkers${SANDBOX_INSTANCE}-$1"; }
sandbox_veth() { echo "rkv${SANDBOX_INSTANCE}-$1"; }

# host<N> -> N; the number fixes the host's address and pod subnet.
sandbox_host_index() {
    local idx=${1#host}
    case $idx in '' | *[!0-9]*) sandbox_die "not a sandbox host name: $1 (expected host<N>)" ;; esac
    echo "$idx"
}
sandbox_host_ip() { echo "${SANDBOX_SUBNET_PREFIX}.$((10 + $(sandbox_host_index "$1")))"; }
sandbox_host_pod_subnet() { echo "${SANDBOX_POD_PREFIX}.$(sandbox_host_index "$1").0/24"; }

sandbox_bridge_up() {
    if ! ip link show "$SANDBOX_BRIDGE" >/dev/null 2>&1; then
        ip link add "$SANDBOX_BRIDGE" type bridge
    fi
    ip addr replace "$SANDBOX_BRIDGE_IP/24" dev "$SANDBOX_BRIDGE"
    ip link set "$SANDBOX_BRIDGE" up
    # The machine's dockerd (if any) sets the FORWARD policy to DROP; bridged traffic between
    # hosts then only passes with an explicit rule (br_netfilter hands it to iptables).
    if ! iptables -C FORWARD -i "$SANDBOX_BRIDGE" -o "$SANDBOX_BRIDGE" -m comment --comment "$SANDBOX_RULE_COMMENT" -j ACCEPT 2>/dev/null; then
        iptables -I FORWARD -i "$SANDBOX_BRIDGE" -o "$SANDBOX_BRIDGE" -m comment --comment "$SANDBOX_RULE_COMMENT" -j ACCEPT
    fi
}

# Removes every rule carrying the sandbox comment from the filter table, then the bridge.
sandbox_bridge_down() {
    local rule
    while read -r rule; do
        [ -n "$rule" ] || continue
        # `iptables -S` prints rules as arguments for -A; turn them into deletions.
        eval "iptables -D ${rule#-A }"
    done < <(iptables -S 2>/dev/null | grep -E -- "--comment $SANDBOX_RULE_COMMENT( |\$)" || true)
    if ip link show "$SANDBOX_BRIDGE" >/dev/null 2>&1; then
        ip link del "$SANDBOX_BRIDGE"
    fi
}

# Creates the host's network namespace with eth0 on the bridge; leaves an existing one alone.
sandbox_netns_up() {
    local host=$1 ns veth ip
    ns=$(sandbox_netns "$host")
    veth=$(sandbox_veth "$host")
    ip=$(sandbox_host_ip "$host")
    [ -e "/var/run/netns/$ns" ] || ip netns add "$ns"
    if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
        ip link del "$veth" 2>/dev/null || true
        ip link add "$veth" type veth peer name eth0 netns "$ns"
    fi
    ip link set "$veth" master "$SANDBOX_BRIDGE" up
    ip -n "$ns" addr replace "$ip/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    # The machine's bridge is the only way out; it also reaches the registry there.
    ip -n "$ns" route replace default via "$SANDBOX_BRIDGE_IP" dev eth0
    # The cloud metadata address fails at once (no route), as on a machine whose network
    # refuses it. Where it is silently dropped instead (this machine's network), kubelet
    # v1.20's AWS credential provider waits about 6 s for it at every start, and every
    # kubelet in the sandbox answered its health check that much later.
    ip -n "$ns" route replace unreachable 169.254.169.254/32
}

sandbox_netns_down() {
    local host=$1 ns veth
    ns=$(sandbox_netns "$host")
    veth=$(sandbox_veth "$host")
    [ -e "/var/run/netns/$ns" ] && ip netns del "$ns"
    ip link del "$veth" 2>/dev/null || true
}

# In every running host: a route to each other host's pod /24 via that host's address, and
# forwarding on (pod traffic crosses the host's eth0).
sandbox_pod_routes() {
    local hosts=("$@") host other ns
    for host in "${hosts[@]}"; do
        ns=$(sandbox_netns "$host")
        nsenter --net="/var/run/netns/$ns" sysctl -qw net.ipv4.ip_forward=1
        for other in "${hosts[@]}"; do
            [ "$other" = "$host" ] && continue
            ip -n "$ns" route replace "$(sandbox_host_pod_subnet "$other")" via "$(sandbox_host_ip "$other")" dev eth0
        done
    done
}
