#!/usr/bin/env bash
# Builds drover-hello:local, the image examples/docker.nomad.hcl runs: a
# static Go HTTP server in a FROM-scratch image. Needs go and a running
# docker engine; no registry is contacted.
set -euo pipefail
cd "$(dirname "$0")/.."
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -ldflags='-s -w' -o "$ctx/hello" ./examples/docker/hello
cp examples/docker/Dockerfile "$ctx/"
docker build -q -t "${IMAGE:-drover-hello:local}" "$ctx"
