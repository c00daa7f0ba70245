# busybox of the conformance suite (registry.k8s.io/e2e-test-images/busybox, upstream busybox:1.36.1):
# busybox built from Debian bookworm's busybox source package with Debian's static configuration,
# alone in the image with its applets linked in /bin. One option differs from Debian's
# busybox-static: FEATURE_DI_ENV_HACK (Debian's own, on in its installer build), which keeps
# environment variables whose names are not shell identifiers. The suite's envFrom tests
# (ConfigMap and Secret keys such as data-1, prefixes such as p-) read them back with `sh -c env`,
# as upstream's image passes them; Debian's busybox-static drops them. Its ash stays the shell,
# whose error messages other tests compare word for word.
# Set by scripts/conformance-images: E2E_IMAGE.
RECIPE_IMAGE=${E2E_IMAGE:?scripts/conformance-images sets E2E_IMAGE}
RECIPE_SCRATCH=true
RECIPE_PACKAGES=()
RECIPE_CHANGES=('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' 'CMD ["sh"]')
# Bump when the build below changes.
E2E_BUSYBOX_BUILD_REVISION=1

# Builds busybox once per source package version into $RKERS_CACHE/busybox-di-env/<version>;
# prints the binary's path. The source comes through a private apt configuration (a deb-src line
# for bookworm), so the machine's apt sources stay untouched.
e2e_busybox_binary() {
    local base="$RKERS_CACHE/busybox-di-env" apt="$RKERS_CACHE/busybox-di-env/apt" opts dsc version out src
    opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives" -o "APT::Sandbox::User=root")
    mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$base/src"
    echo "deb-src $(images_debian_mirror) $IMAGES_SUITE main" >"$apt/sources.list"
    dsc=$(find "$base/src" -maxdepth 1 -name 'busybox_*.dsc' | sort | tail -1)
    if [ -z "$dsc" ]; then
        apt-get "${opts[@]}" -qq update >&2
        (cd "$base/src" && apt-get "${opts[@]}" -qq source --download-only busybox >&2)
        dsc=$(find "$base/src" -maxdepth 1 -name 'busybox_*.dsc' | sort | tail -1)
    fi
    [ -n "$dsc" ] || images_die "no busybox source package"
    version=$(sed -n 's/^Version: //p' "$dsc")
    out="$base/$version-r$E2E_BUSYBOX_BUILD_REVISION"
    if [ ! -x "$out/busybox" ]; then
        command -v dpkg-source >/dev/null && command -v make >/dev/null || apt_install dpkg-dev make gcc libc6-dev
        src="$base/build"
        rm -rf "$src"
        dpkg-source -x "$dsc" "$src" >&2
        cp "$src/debian/config/pkg/static" "$src/.config"
        sed -i 's/^# CONFIG_FEATURE_DI_ENV_HACK is not set$/CONFIG_FEATURE_DI_ENV_HACK=y/' "$src/.config"
        grep -qx 'CONFIG_FEATURE_DI_ENV_HACK=y' "$src/.config" || images_die "busybox $version has no FEATURE_DI_ENV_HACK"
        images_log "e2e-busybox: compiling busybox $version (static, FEATURE_DI_ENV_HACK)"
        (cd "$src" && make oldconfig </dev/null >"$src.log" 2>&1 && make -j"$(nproc)" busybox >>"$src.log" 2>&1) ||
            { tail -20 "$src.log" >&2; images_die "compiling busybox failed (log: $src.log)"; }
        [ "$(env -i data-1=x "$src/busybox" sh -c env | grep -c '^data-1=x$')" = 1 ] ||
            images_die "the busybox built drops data-1 from the environment"
        mkdir -p "$out"
        install -m 0755 "$src/busybox" "$out/busybox"
        rm -rf "$src" "$src.log"
    fi
    echo "$out/busybox"
}
recipe_inputs() { sha256sum "$(e2e_busybox_binary)" | cut -d' ' -f1; }
recipe_populate() {
    local root=$1 applet bin
    bin=$(e2e_busybox_binary)
    mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/usr/bin" "$root/sbin" "$root/usr/sbin"
    install -m 0755 "$bin" "$root/bin/busybox"
    for applet in $("$root/bin/busybox" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    chmod 1777 "$root/tmp"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$root/etc/passwd"
    printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
}
