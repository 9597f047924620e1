#!/usr/bin/env bash
# Builds localhost/drover-hello:local in podman's storage, the image
# examples/podman.nomad.hcl runs: the same FROM-scratch static Go HTTP
# server as scripts/docker-example-image.sh. Needs go and podman; no
# registry is contacted. With SAVE=<file> it also writes the image as a
# docker-archive tarball (for `image = "docker-archive:<file>"`).
set -euo pipefail
cd "$(dirname "$0")/.."
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -ldflags='-s -w' -o "$ctx/hello" ./examples/docker/hello
cp examples/docker/Dockerfile "$ctx/"
podman build -q -t "${IMAGE:-localhost/drover-hello:local}" "$ctx"
if [ -n "${SAVE:-}" ]; then
	podman save --format docker-archive -o "$SAVE" "${IMAGE:-localhost/drover-hello:local}"
fi
