#!/bin/bash
# OCI runtime registered as the default runtime of every sandbox host's dockerd. This machine's
# capability bounding set lacks CAP_SYS_RESOURCE, so runc cannot grant it: privileged containers
# fail with "unable to apply caps" and dockershim's negative oom_score_adj for pods kills `runc init`.
# The wrapper removes that capability and clamps negative oomScoreAdj to 0 in the bundle's
# config.json (create/run) or the process spec (exec), then hands over to runc unchanged.
# A property of the sandbox machine only: rkers keeps asking for exactly what RKE1 asks for.
set -u

RUNC=${RKERS_SANDBOX_RUNC:-runc}

# jq filter shared by both spec shapes; `$p` is the path of the process object inside the document.
adjust_process='
  def fix: (if .capabilities then .capabilities |= map_values(if type == "array" then map(select(. != "CAP_SYS_RESOURCE")) else . end) else . end)
         | (if (.oomScoreAdj // 0) < 0 then .oomScoreAdj = 0 else . end);
'

rewrite_json() {
    local file=$1 filter=$2 tmp
    [ -f "$file" ] || return 0
    tmp="$file.rkers.$$"
    if jq -c "$adjust_process $filter" "$file" >"$tmp"; then
        mv -f "$tmp" "$file"
    else
        rm -f "$tmp"
        echo "rkers-runc: could not adjust $file" >&2
    fi
}

# Find the subcommand and its --bundle / --process arguments without disturbing the argument list.
subcommand="" bundle="" process_file=""
args=("$@")
i=0
while [ $i -lt ${#args[@]} ]; do
    a=${args[$i]}
    if [ -z "$subcommand" ]; then
        case $a in
            --root|--log|--log-format|--criu|--rootless) i=$((i + 2)); continue ;;
            -*) i=$((i + 1)); continue ;;
            *) subcommand=$a ;;
        esac
    else
        case $a in
            --bundle|-b) bundle=${args[$((i + 1))]:-} ;;
            --bundle=*) bundle=${a#--bundle=} ;;
            --process|-p) process_file=${args[$((i + 1))]:-} ;;
            --process=*) process_file=${a#--process=} ;;
        esac
    fi
    i=$((i + 1))
done

case $subcommand in
    create|run)
        rewrite_json "${bundle:-.}/config.json" 'if .process then .process |= fix else . end'
        ;;
    exec)
        [ -n "$process_file" ] && rewrite_json "$process_file" 'fix'
        ;;
esac

exec "$RUNC" "$@"
