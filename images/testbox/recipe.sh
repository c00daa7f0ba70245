# The workload of the real-cluster tests (tests/e2e_real_cluster.rs): Debian's busybox-static alone,
# with its applets linked in /bin (httpd to serve, wget to fetch, nslookup to resolve, sh).
RECIPE_IMAGE=${TESTBOX_IMAGE:-rkers/testbox:1.35-rkers1}
RECIPE_SCRATCH=true
RECIPE_PACKAGES=()
RECIPE_CHANGES=('ENV PATH=/bin' 'CMD ["/bin/sh"]')
recipe_inputs() { [ -x /bin/busybox ] || apt_install busybox-static; sha256sum /bin/busybox | cut -d' ' -f1; }
recipe_populate() {
    local root=$1 applet
    mkdir -p "$root/bin" "$root/tmp" "$root/www" "$root/etc"
    install -m 0755 /bin/busybox "$root/bin/busybox"
    for applet in $("$root/bin/busybox" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    chmod 1777 "$root/tmp"
    echo 'root:x:0:0:root:/:/bin/sh' >"$root/etc/passwd"
    echo 'root:x:0:' >"$root/etc/group"
}
