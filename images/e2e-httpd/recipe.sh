# httpd of the conformance suite (registry.k8s.io/e2e-test-images/httpd, upstream httpd:2.4.3x-alpine):
# Debian's apache2 started by httpd-foreground as upstream's image is, serving "It works!" on
# port 80. Both tags the suite names (2.4.38-4 and 2.4.39-4, the "new" one of rollout tests) are
# this image: the tests only tell them apart by name. Set by scripts/conformance-images: E2E_IMAGE.
RECIPE_IMAGE=${E2E_IMAGE:?scripts/conformance-images sets E2E_IMAGE}
RECIPE_PACKAGES=(apache2)
RECIPE_CHANGES=('ENV PATH=/usr/local/apache2/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' 'EXPOSE 80' 'CMD ["httpd-foreground"]')
recipe_inputs() { :; }
recipe_populate() {
    local root=$1
    mkdir -p "$root/usr/local/apache2/bin" "$root/usr/local/apache2/htdocs"
    cat >"$root/usr/local/apache2/bin/httpd-foreground" <<'SH'
#!/bin/sh
set -e
. /etc/apache2/envvars
mkdir -p "$APACHE_RUN_DIR" "$APACHE_LOCK_DIR" "$APACHE_LOG_DIR"
rm -f "$APACHE_PID_FILE"
exec apache2 -DFOREGROUND "$@"
SH
    chmod 0755 "$root/usr/local/apache2/bin/httpd-foreground"
    echo '<html><body><h1>It works!</h1></body></html>' >"$root/usr/local/apache2/htdocs/index.html"
    sed -i 's#/var/www/html#/usr/local/apache2/htdocs#' "$root/etc/apache2/sites-available/000-default.conf"
    sed -i 's#<Directory /var/www/>#<Directory /usr/local/apache2/htdocs/>#' "$root/etc/apache2/apache2.conf"
    ln -sf /dev/stdout "$root/var/log/apache2/access.log"
    ln -sf /dev/stderr "$root/var/log/apache2/error.log"
    ln -sf /dev/stdout "$root/var/log/apache2/other_vhosts_access.log"
}
