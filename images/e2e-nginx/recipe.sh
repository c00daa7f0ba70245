# nginx of the conformance suite (registry.k8s.io/e2e-test-images/nginx, upstream nginx:1.1x-alpine):
# Debian's nginx, in the foreground, serving a page on port 80, which is what the tests use of it.
# Both tags the suite names (1.14-4 and 1.15-4, the "new" one of rollout tests) are this image: the
# tests only tell them apart by name. Set by scripts/conformance-images: E2E_IMAGE.
RECIPE_IMAGE=${E2E_IMAGE:?scripts/conformance-images sets E2E_IMAGE}
RECIPE_PACKAGES=(nginx-light)
RECIPE_CHANGES=('ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' 'EXPOSE 80' 'CMD ["nginx", "-g", "daemon off;"]')
recipe_inputs() { :; }
recipe_populate() {
    local root=$1
    rm -f "$root/etc/nginx/sites-enabled/default"
    cat >"$root/etc/nginx/conf.d/default.conf" <<'CONF'
server {
    listen 80 default_server;
    listen [::]:80 default_server;
    root /usr/share/nginx/html;
    index index.html;
}
CONF
    mkdir -p "$root/usr/share/nginx/html"
    echo '<html><body><h1>Welcome to nginx!</h1></body></html>' >"$root/usr/share/nginx/html/index.html"
    ln -sf /dev/stdout "$root/var/log/nginx/access.log"
    ln -sf /dev/stderr "$root/var/log/nginx/error.log"
}
