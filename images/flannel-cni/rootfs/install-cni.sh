#!/bin/bash
# Installs the CNI plugins and the flannel network configuration on the host, then stays running
# (the DaemonSet's container), rewriting the configuration if it goes missing.
set -euo pipefail
bin_dir=/host/opt/cni/bin
conf_dir=/host/etc/cni/net.d
conf_name=${CNI_CONF_NAME:-10-flannel.conflist}
mkdir -p "$bin_dir" "$conf_dir"
for p in /opt/cni/bin/*; do
    # Copy then rename, so a running plugin binary is never written in place.
    cp "$p" "$bin_dir/.$(basename "$p").new"
    mv -f "$bin_dir/.$(basename "$p").new" "$bin_dir/$(basename "$p")"
done
write_conf() {
    [ -n "${CNI_NETWORK_CONFIG:-}" ] || { echo "install-cni: CNI_NETWORK_CONFIG is empty" >&2; exit 1; }
    printf '%s\n' "$CNI_NETWORK_CONFIG" >"$conf_dir/.$conf_name.new"
    mv -f "$conf_dir/.$conf_name.new" "$conf_dir/$conf_name"
}
write_conf
echo "install-cni: plugins in /opt/cni/bin, $conf_name in /etc/cni/net.d"
trap 'exit 0' TERM INT
while :; do
    [ -f "$conf_dir/$conf_name" ] || write_conf
    sleep 10 &
    wait $!
done
