#!/bin/sh
# The docker:*-dind entrypoint's contract: dockerd with the given arguments, on the Unix socket
# and, without TLS material (DOCKER_TLS_CERTDIR empty), on tcp://0.0.0.0:2375.
set -e
set -- --host=unix:///var/run/docker.sock "$@"
if [ -z "${DOCKER_TLS_CERTDIR:-}" ]; then
    set -- --host=tcp://0.0.0.0:2375 "$@"
fi
if [ -x /usr/local/bin/rkers-runc ]; then
    set -- --add-runtime=rkers-runc=/usr/local/bin/rkers-runc --default-runtime=rkers-runc "$@"
fi
exec dockerd --insecure-registry=10.0.0.0/8 --insecure-registry=127.0.0.0/8 "$@"
