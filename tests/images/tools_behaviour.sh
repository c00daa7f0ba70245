# shellcheck shell=bash
# Holds the tools image to images/tools/BEHAVIOUR.md: the files each command leaves (bytes, mode,
# owner, when rewritten) must be the ones rancher/rke-tools leaves, since rkers adopts hosts whose
# files were made by it. Sourced by tests/images/run.sh (uses its on/dk/fail helpers, $TOOLS,
# $H1/$H2, $work); every expected value is computed here from the documented rule, not read back
# from the image.

# Sets EXPECTED to the bytes the cert-deployer rule gives for VALUE: all trailing newlines
# dropped, exactly one added. Written without command substitution or echo, so the test does not
# share the mechanism it checks.
expect_bytes() {
    local v=$1
    while [[ $v == *$'\n' ]]; do v=${v%$'\n'}; done
    EXPECTED=$v$'\n'
}

# cd_run HOST DIR [NAME=VALUE...]: runs the image's cert-deployer as RKE1 does (privileged, DIR as
# /etc/kubernetes). Values travel through the docker CLI's environment (`-e NAME`) from a sourced
# file, so newlines and any other byte arrive unchanged.
cd_run() {
    local h=$1 dir=$2 kv envfile="$work/cd-env.sh" names=()
    shift 2
    : >"$envfile"
    for kv in "$@"; do
        printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}" >>"$envfile"
        names+=(-e "${kv%%=*}")
    done
    on "$h" bash -c 'mkdir -p /tmp/imgtest && cat >/tmp/imgtest/cd-env.sh' <"$envfile" || return 1
    on "$h" bash -c "source /tmp/imgtest/cd-env.sh && docker run --rm --privileged -v '$dir:/etc/kubernetes' ${names[*]} '$TOOLS' cert-deployer" </dev/null >"$work/cd.out" 2>&1 ||
        fail "cert-deployer exited non-zero: $(tail -c 300 "$work/cd.out")"
}

# file_is HOST PATH EXPECTED_BYTES MODE OWNER: compares a host file's bytes (by SHA-256), mode and
# numeric owner.
file_is() {
    local h=$1 p=$2 bytes=$3 mode=$4 owner=$5 got want
    got=$(on "$h" bash -c "stat -c '%a %u:%g' '$p' && sha256sum <'$p' | cut -d' ' -f1" 2>&1 | tr '\n' ' ')
    want="$mode $owner $(printf '%s' "$bytes" | sha256sum | cut -d' ' -f1) "
    [ "$got" = "$want" ] && return 0
    fail "$p: got '$got' (mode owner sha256), want '$want'; last bytes on the host: $(on "$h" bash -c "tail -c 24 '$p' | od -An -c" 2>&1 | tr -s ' ' | tr '\n' ' ')"
}

# The state's PEM ends in one newline, its kubeconfigs in none; both are covered, with zero, one
# and two trailing newlines. Blank lines inside and trailing spaces must survive.
test_tools_cert_deployer_newline_rule() {
    local d=/tmp/imgtest/cd-nl s=/tmp/imgtest/cd-nl/ssl ok=0 out
    local pem=$'-----BEGIN CERTIFICATE-----\nMIIBfakefakefake\n\nline after a blank line  \n-----END CERTIFICATE-----'
    local key=$'  -----BEGIN RSA PRIVATE KEY-----\nMIIEkey\n-----END RSA PRIVATE KEY-----'
    local cfg=$'apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: "https://127.0.0.1:6443"\n  name: local'
    on "$H1" bash -c "rm -rf $d && mkdir -p $d"
    cd_run "$H1" "$d" "KUBE_CA=$pem"$'\n' "KUBE_NODE=$pem" "KUBE_NODE_KEY=$key"$'\n\n' \
        "KUBECFG_KUBE_NODE=$cfg" "KUBECFG_KUBE_PROXY=$cfg"$'\n' "KUBECFG_KUBE_SCHEDULER=$cfg"$'\n\n' || return 1
    expect_bytes "$pem"$'\n' && file_is "$H1" "$s/kube-ca.pem" "$EXPECTED" 600 0:0 || ok=1
    expect_bytes "$pem" && file_is "$H1" "$s/kube-node.pem" "$EXPECTED" 600 0:0 || ok=1
    expect_bytes "$key"$'\n\n' && file_is "$H1" "$s/kube-node-key.pem" "$EXPECTED" 600 0:0 || ok=1
    expect_bytes "$cfg" && file_is "$H1" "$s/kubecfg-kube-node.yaml" "$EXPECTED" 600 0:0 || ok=1
    expect_bytes "$cfg"$'\n' && file_is "$H1" "$s/kubecfg-kube-proxy.yaml" "$EXPECTED" 600 0:0 || ok=1
    expect_bytes "$cfg"$'\n\n' && file_is "$H1" "$s/kubecfg-kube-scheduler.yaml" "$EXPECTED" 600 0:0 || ok=1
    # KUBECFG_KUBE_PROXY also names KUBE_PROXY in the certificate pass; unset, it gives "\n".
    file_is "$H1" "$s/kube-proxy.pem" $'\n' 600 0:0 || ok=1
    file_is "$H1" "$s/kube-scheduler.pem" $'\n' 600 0:0 || ok=1
    out=$(on "$H1" bash -c "cd $s && ls -A | tr '\n' ' ' && stat -c '%a %u:%g' .")
    [ "$out" = "kube-ca.pem kube-node-key.pem kube-node.pem kube-proxy.pem kube-scheduler.pem kubecfg-kube-node.yaml kubecfg-kube-proxy.yaml kubecfg-kube-scheduler.yaml 755 0:0" ] ||
        fail "files and directory: $out" || ok=1
    # No value may reach the log.
    if grep -q 'MIIB\|MIIEkey\|server:' "$work/cd.out"; then fail "cert-deployer printed a value"; ok=1; fi
    return $ok
}

# Certificates are rewritten only when absent or with FORCE_DEPLOY=true (exactly), kubeconfigs only
# when absent; a skipped file keeps bytes, mode and owner, a rewritten one keeps its owner.
test_tools_cert_deployer_rewrite_rules() {
    local d=/tmp/imgtest/cd-rw s=/tmp/imgtest/cd-rw/ssl ok=0
    on "$H1" bash -c "rm -rf $d && mkdir -p $d"
    cd_run "$H1" "$d" KUBE_CA=ca-1 KUBE_CA_KEY=cakey-1 KUBE_NODE=node-1 KUBECFG_KUBE_NODE=cfg-1 || return 1
    on "$H1" bash -c "cd $s && chmod 644 kube-ca.pem && chown 1234:2345 kube-ca.pem && chmod 640 kubecfg-kube-node.yaml"
    for force in '' TRUE 1 yes; do
        cd_run "$H1" "$d" KUBE_CA=ca-2 KUBE_CA_KEY=cakey-2 KUBE_NODE=node-2 KUBECFG_KUBE_NODE=cfg-2 ${force:+FORCE_DEPLOY=$force} || return 1
        file_is "$H1" "$s/kube-ca.pem" $'ca-1\n' 644 1234:2345 || { fail "(FORCE_DEPLOY='$force' must not rewrite)"; return 1; }
        file_is "$H1" "$s/kube-ca-key.pem" $'cakey-1\n' 600 0:0 || return 1
        file_is "$H1" "$s/kubecfg-kube-node.yaml" $'cfg-1\n' 640 0:0 || return 1
    done
    cd_run "$H1" "$d" KUBE_CA=ca-3 KUBE_CA_KEY=cakey-3 KUBE_NODE=node-3 KUBECFG_KUBE_NODE=cfg-3 FORCE_DEPLOY=true || return 1
    file_is "$H1" "$s/kube-ca.pem" $'ca-3\n' 600 1234:2345 || ok=1
    file_is "$H1" "$s/kube-ca-key.pem" $'cakey-3\n' 600 0:0 || ok=1
    file_is "$H1" "$s/kube-node.pem" $'node-3\n' 600 0:0 || ok=1
    file_is "$H1" "$s/kubecfg-kube-node.yaml" $'cfg-1\n' 640 0:0 || { fail "(a kubeconfig is never rewritten)"; ok=1; }
    # An absent kubeconfig is written again.
    on "$H1" rm -f "$s/kubecfg-kube-node.yaml"
    cd_run "$H1" "$d" KUBE_CA=ca-4 KUBECFG_KUBE_NODE=cfg-4 KUBE_NODE=node-4 || return 1
    file_is "$H1" "$s/kubecfg-kube-node.yaml" $'cfg-4\n' 600 0:0 || ok=1
    file_is "$H1" "$s/kube-ca.pem" $'ca-3\n' 600 1234:2345 || ok=1
    return $ok
}

# A custom etcd user: its certificate and key change owner, kube-ca.pem becomes 0644, and the ACL
# calls leave a mask entry on every file (--- on 0600 files, r-- on kube-ca.pem).
test_tools_cert_deployer_etcd_owner() {
    local d=/tmp/imgtest/cd-etcd s=/tmp/imgtest/cd-etcd/ssl ok=0 out
    on "$H1" bash -c "rm -rf $d && mkdir -p $d"
    cd_run "$H1" "$d" KUBE_CA=ca KUBE_ETCD_10_77_0_11=etcd KUBE_ETCD_10_77_0_11_KEY=etcdkey KUBE_NODE=node \
        KUBECFG_KUBE_NODE=cfg ETCD_UID=52034 ETCD_GID=52035 || return 1
    file_is "$H1" "$s/kube-etcd-10-77-0-11.pem" $'etcd\n' 600 52034:52035 || ok=1
    file_is "$H1" "$s/kube-etcd-10-77-0-11-key.pem" $'etcdkey\n' 600 52034:52035 || ok=1
    file_is "$H1" "$s/kube-ca.pem" $'ca\n' 644 0:0 || ok=1
    file_is "$H1" "$s/kube-node.pem" $'node\n' 600 0:0 || ok=1
    file_is "$H1" "$s/kubecfg-kube-node.yaml" $'cfg\n' 600 0:0 || ok=1
    out=$(dk "$H1" run --rm -v "$s:/s" "$TOOLS" sh -c 'cd /s && for f in kube-node.pem kube-ca.pem .; do getfacl -cp "$f" | grep "^mask"; done; stat -c %a .' 2>&1 | tr '\n' ' ')
    [ "$out" = "mask::--- mask::r-- mask::r-x 755 " ] || fail "ACL masks (kube-node.pem, kube-ca.pem, dir) and dir mode: $out" || ok=1
    return $ok
}

# /etc/nginx/nginx.conf holds the bytes upstream's confd template renders from CP_HOSTS (the
# command's CP_HOSTS=... is ignored); nginx must accept them.
test_tools_nginx_proxy_config_bytes() {
    local out want i
    want=$'error_log stderr notice;\n\nworker_processes auto;\nevents {\n  multi_accept on;\n  use epoll;\n  worker_connections 1024;\n}\n\n'
    want+=$'stream {\n        upstream kube_apiserver {\n            '
    for i in 10.77.0.11 10.77.0.12 10.77.0.13; do want+=$'\n            server '"$i"$':6443;\n            '; done
    want+=$'\n        }\n\n        server {\n            listen        6443;\n            proxy_pass    kube_apiserver;\n'
    want+=$'            proxy_timeout 10m;\n            proxy_connect_timeout 2s;\n\n        }\n\n}\n'
    dk "$H1" rm -f imgtest-nginx-bytes >/dev/null 2>&1
    dk "$H1" run -d --name imgtest-nginx-bytes --net none -e CP_HOSTS=10.77.0.11,10.77.0.12,10.77.0.13 \
        --entrypoint nginx-proxy "$TOOLS" CP_HOSTS=10.99.99.99 >/dev/null || fail "nginx-proxy did not start" || return 1
    sleep 2
    out=$(dk "$H1" inspect -f '{{.State.Running}}' imgtest-nginx-bytes)
    [ "$out" = true ] || fail "nginx-proxy stopped: $(dk "$H1" logs --tail 5 imgtest-nginx-bytes 2>&1)" || return 1
    out=$(dk "$H1" exec imgtest-nginx-bytes stat -c '%a %u:%g' /etc/nginx/nginx.conf)
    [ "$out" = "644 0:0" ] || fail "nginx.conf mode/owner: $out" || return 1
    dk "$H1" exec imgtest-nginx-bytes cat /etc/nginx/nginx.conf >"$work/nginx.conf"
    dk "$H1" rm -f imgtest-nginx-bytes >/dev/null 2>&1
    printf '%s' "$want" >"$work/nginx.want"
    cmp -s "$work/nginx.conf" "$work/nginx.want" ||
        fail "nginx.conf differs from the upstream rendering: $(diff "$work/nginx.want" "$work/nginx.conf" | head -8 | tr '\n' '|')"
}

# RKE1's rke-log-linker and rke-log-cleaner commands, verbatim, in the image.
test_tools_log_linker_and_cleaner() {
    local v=/tmp/imgtest/varlib out target=/var/lib/docker/containers/abc/abc-json.log rc
    local link_cmd="mkdir -p /var/lib/rancher/rke/log ; ln -s $target /var/lib/rancher/rke/log/kubelet_abc.log"
    on "$H1" bash -c "rm -rf $v && mkdir -p $v/docker/containers/abc && echo log > $v/docker/containers/abc/abc-json.log"
    dk "$H1" run --rm --privileged -v "$v:/var/lib" "$TOOLS" sh -c "$link_cmd" >/dev/null 2>&1 || fail "log linker failed" || return 1
    out=$(on "$H1" bash -c "stat -c '%a %u:%g' $v/rancher/rke/log && stat -c '%F %u:%g' $v/rancher/rke/log/kubelet_abc.log && readlink $v/rancher/rke/log/kubelet_abc.log" | tr '\n' ' ')
    [ "$out" = "755 0:0 symbolic link 0:0 $target " ] || fail "after linking: $out" || return 1
    # A second link for the same container fails and leaves the first.
    dk "$H1" run --rm --privileged -v "$v:/var/lib" "$TOOLS" sh -c "${link_cmd/abc-json.log/other.log}" >/dev/null 2>&1
    rc=$?
    out=$(on "$H1" readlink "$v/rancher/rke/log/kubelet_abc.log")
    [ "$rc" = 1 ] && [ "$out" = "$target" ] || fail "second link: exit $rc, link now $out" || return 1
    on "$H1" ln -s /var/lib/docker/containers/gone/gone-json.log "$v/rancher/rke/log/kube-proxy_gone.log"
    out=$(dk "$H1" run --rm --privileged -v "$v:/var/lib" "$TOOLS" sh -c \
        'find /var/lib/rancher/rke/log -type l ! -exec test -e {} \; -print -delete' 2>&1)
    [ "$out" = /var/lib/rancher/rke/log/kube-proxy_gone.log ] || fail "cleaner printed: $out" || return 1
    out=$(on "$H1" ls "$v/rancher/rke/log")
    [ "$out" = kubelet_abc.log ] || fail "after cleaning: $out"
}

# The kubelet branch writes RKE_KUBELET_DOCKER_FILE: the decoded bytes, a new file 0644 root, an
# existing one rewritten in place (mode and owner kept).
test_tools_kubelet_registry_file() {
    local d=/tmp/imgtest/kubelet-cfg json out
    json='{"auths":{"10.77.0.1:5000":{"auth":"dXNlcjpwYXNz"}}}'
    on "$H1" bash -c "rm -rf $d && mkdir -p $d"
    dk "$H1" rm -f imgtest-sidekick >/dev/null 2>&1
    dk "$H1" create --name imgtest-sidekick --net none --entrypoint /bin/bash "$TOOLS" >/dev/null || fail "creating the sidekick failed" || return 1
    run_kubelet_version() {
        dk "$H1" run --rm --privileged -v /var/run/docker.sock:/var/run/docker.sock -v "$d:/var/lib/kubelet" \
            --volumes-from imgtest-sidekick -e "RKE_KUBELET_DOCKER_CONFIG=$(printf '%s' "$1" | base64 -w0)" \
            -e RKE_KUBELET_DOCKER_FILE=/var/lib/kubelet/config.json --entrypoint /opt/rke-tools/entrypoint.sh "$HK" \
            kubelet --version >"$work/kubelet.out" 2>&1
    }
    run_kubelet_version "$json" || fail "entrypoint kubelet --version: $(tail -c 300 "$work/kubelet.out")" || return 1
    file_is "$H1" "$d/config.json" "$json" 644 0:0 || return 1
    if grep -q dXNlcjpwYXNz "$work/kubelet.out"; then fail "the credentials reached the log"; return 1; fi
    on "$H1" bash -c "chmod 600 $d/config.json && chown 1234:2345 $d/config.json"
    run_kubelet_version '{"auths":{}}' || fail "second run: $(tail -c 300 "$work/kubelet.out")" || return 1
    file_is "$H1" "$d/config.json" '{"auths":{}}' 600 1234:2345
}

# Zip layout and the modes of what `save --once`, `save` (rolling) and `extractstatefile` leave.
# The rolling save reads the cluster state with kubectl; a stand-in kubectl prints the Secret.
test_tools_etcd_backup_files() {
    local b=/tmp/imgtest/bk k=/tmp/imgtest/bk-k8s name=imgtest-once out i state_json
    dk "$H1" inspect imgtest-etcd >/dev/null 2>&1 || start_test_etcd || return 1
    on "$H1" bash -c "rm -rf $b $k && mkdir -p $b $k && printf '{\"once\":1}' > $k/$name.rkestate && chmod 400 $k/$name.rkestate"
    local run_tools=(run --rm --net host -v "$b:/backup" -v "$k:/etc/kubernetes" -v /tmp/imgtest/pki:/pki "$TOOLS")
    local tls=(--cacert /pki/kube-ca.pem --cert /pki/kube-node.pem --key /pki/kube-node-key.pem)
    out=$(dk "$H1" "${run_tools[@]}" /opt/rke-tools/rke-etcd-backup etcd-backup save "${tls[@]}" --name "$name" \
        --endpoints="$IP1:23790" --once 2>&1) || fail "save --once: $out" || return 1
    # name, mode, method and time of each entry; the archive's own mode and owner; what is left.
    zip_listing() { # ZIP
        on "$H1" python3 -c 'import struct, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
def unix_mtime(extra):  # the extended timestamp field (0x5455), which carries "modified"
    at = 0
    while at + 4 <= len(extra):
        tag, size = struct.unpack("<HH", extra[at:at + 4])
        if tag == 0x5455:
            return struct.unpack("<I", extra[at + 5:at + 9])[0]
        at += 4 + size
for i in z.infolist():
    print(i.filename, oct(i.external_attr >> 16 & 0o7777), i.compress_type, unix_mtime(i.extra))' "$1"
    }
    out=$(zip_listing "$b/$name.zip" | tr '\n' ' ')
    [ "$out" = "/backup/$name 0o600 8 0 /etc/kubernetes/$name.rkestate 0o400 8 0 " ] || fail "once archive entries: $out" || return 1
    out=$(on "$H1" bash -c "stat -c '%a %u:%g' $b/$name.zip; ls -A $b $k" | tr '\n' ' ')
    [ "$out" = "600 0:0 $b: $name.zip  $k: " ] || fail "after save --once: $out" || return 1
    out=$(dk "$H1" "${run_tools[@]}" sh -c "/opt/rke-tools/rke-etcd-backup etcd-backup extractstatefile --name $name >/dev/null 2>&1 && stat -c '%a %u:%g' /tmp/cluster.rkestate && cat /tmp/cluster.rkestate" 2>&1 | tr '\n' ' ')
    [ "$out" = '600 0:0 {"once":1}' ] || fail "extractstatefile: $out" || return 1
    # delete --cleanup drops only the unpacked copy, and only while the archive exists.
    dk "$H1" "${run_tools[@]}" /opt/rke-tools/rke-etcd-backup etcd-backup extract --name "$name" >/dev/null 2>&1
    out=$(on "$H1" stat -c '%a %u:%g' "$b/$name")
    [ "$out" = "600 0:0" ] || fail "extracted snapshot: $out" || return 1
    dk "$H1" "${run_tools[@]}" /opt/rke-tools/rke-etcd-backup etcd-backup delete --name "$name" --cleanup >/dev/null 2>&1
    out=$(on "$H1" ls -A "$b" | tr '\n' ' ')
    [ "$out" = "$name.zip " ] || fail "after delete --cleanup: $out" || return 1
    dk "$H1" "${run_tools[@]}" /opt/rke-tools/rke-etcd-backup etcd-backup delete --name "$name" >/dev/null 2>&1
    out=$(on "$H1" ls -A "$b" | tr '\n' ' ')
    [ -z "$out" ] || fail "after delete: $out" || return 1

    # Rolling: an expired snapshot goes, a file whose name is no time stays.
    state_json='{"desiredState":{"rkeConfig":{"nodes":[{"address":"10.77.0.11"}]}},"currentState":{}}'
    on "$H1" bash -c "touch '$b/2000-01-01T00:00:00Z_etcd.zip' $b/keep-me && cat > /tmp/imgtest/fake-kubectl && chmod 755 /tmp/imgtest/fake-kubectl" <<EOF
#!/bin/sh
printf '{"apiVersion":"v1","kind":"Secret","data":{"full-cluster-state":"%s"}}' '$(printf '%s' "$state_json" | base64 -w0)'
EOF
    dk "$H1" rm -f imgtest-rolling >/dev/null 2>&1
    dk "$H1" run -d --name imgtest-rolling --net host -v "$b:/backup" -v "$k:/etc/kubernetes" -v /tmp/imgtest/pki:/pki \
        -v /tmp/imgtest/fake-kubectl:/usr/local/bin/kubectl:ro "$TOOLS" /opt/rke-tools/rke-etcd-backup etcd-backup save "${tls[@]}" \
        --name ignored --endpoints="$IP1:23790" --retention=1h --creation=5s >/dev/null || fail "rolling save did not start" || return 1
    # The first tick comes after 5 s; the container is gone well before the second.
    for i in $(seq 1 40); do
        out=$(on "$H1" ls -A "$b" | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z_etcd\.zip$' | grep -v '^2000-' | head -1)
        [ -n "$out" ] && on "$H1" test ! -e "$b/2000-01-01T00:00:00Z_etcd.zip" && break
        sleep 0.5
    done
    dk "$H1" rm -f imgtest-rolling >/dev/null 2>&1
    [ -n "$out" ] || fail "no rolling snapshot appeared: $(on "$H1" ls -A "$b" | tr '\n' ' ')" || return 1
    local rolled=${out%.zip}
    out=$(on "$H1" bash -c "ls -A $b | grep -v '^$rolled\.zip\$'; ls -A $k; stat -c '%a %u:%g' $b/$rolled.zip" | tr '\n' ' ')
    [ "$out" = "keep-me 600 0:0 " ] || fail "after rolling save: $out" || return 1
    out=$(zip_listing "$b/$rolled.zip" | tr '\n' ' ')
    [ "$out" = "/backup/$rolled 0o600 8 0 /etc/kubernetes/$rolled.rkestate 0o644 8 0 " ] || fail "rolling archive entries: $out" || return 1
    # The state is the Secret's value indented by two spaces, no final newline.
    out=$(on "$H1" python3 -c 'import json, sys, zipfile
got = zipfile.ZipFile(sys.argv[1]).read("/etc/kubernetes/" + sys.argv[2] + ".rkestate").decode()
want = json.dumps(json.loads(sys.argv[3]), indent=2)
print("same" if got == want else "differs: " + repr(got[-40:]) + " vs " + repr(want[-40:]))' "$b/$rolled.zip" "$rolled" "$state_json")
    [ "$out" = same ] || fail "rolling state entry $out"
}

TOOLS_BEHAVIOUR_TESTS=(
    test_tools_cert_deployer_newline_rule
    test_tools_cert_deployer_rewrite_rules
    test_tools_cert_deployer_etcd_owner
    test_tools_nginx_proxy_config_bytes
    test_tools_log_linker_and_cleaner
    test_tools_kubelet_registry_file
    test_tools_etcd_backup_files
)
