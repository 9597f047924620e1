#!/usr/bin/env bash
# Runs Nomad's own api package tests (github.com/hashicorp/nomad/api) against
# Drover: they start a binary named `nomad` from PATH, which here is a wrapper
# around our binary. The checked-in list tools/apisuite/passing.txt names the
# tests that pass; any of them failing, or any test skipping, fails the run.
#
# Usage: scripts/apisuite.sh [-update]   (-update rewrites the pass list)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .tmp/apisuite
go build -o .tmp/apisuite/drover ./cmd/drover
cp tools/apisuite/nomad tools/apisuite/loopback.json .tmp/apisuite/
export PATH="$PWD/.tmp/apisuite:$PATH"
export NOMAD_TEST_LOG_LEVEL=ERROR
command -v nomad >/dev/null
set +e
# TestAcquireLock_MultipleInstances is left out of the pass list (see its
# header) and is not run: under load it fails early and a goroutine it
# leaves behind calls t.Fail after it returned, which panics the whole test
# binary and turns every later test into a failure.
go test -json -count=1 -timeout 25m -p 1 -parallel 4 -skip '^TestAcquireLock_MultipleInstances$' \
	github.com/hashicorp/nomad/api/... > .tmp/apisuite/results.json 2> .tmp/apisuite/stderr.txt
set -e
# A failing test can leave its agent running: TestAgent_ForceLeavePrune starts
# a second server without a deferred Stop and fails (at Join) before stopping
# it. Reap what the run left behind so it does not outlive CI.
pkill -f "^$PWD/.tmp/apisuite/drover agent " || true
go run ./tools/apisuite -passlist tools/apisuite/passing.txt "$@" < .tmp/apisuite/results.json
