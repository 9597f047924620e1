#!/usr/bin/env bash
# Server memory for big jobs: starts a non-dev server on free loopback ports,
# registers a job of about SIZE bytes (task meta padding) as four versions,
# then purges it, printing the server's RSS after each step.
#
# Usage: bench/bigjob/run.sh [BINARY] [SIZE_BYTES]   (default: build ./cmd/drover, 4000000)
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
bin=${1:-}
if [ -z "$bin" ]; then
	bin=$work/drover
	go build -o "$bin" ./cmd/drover
fi
size=${2:-4000000}
http=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
rpc=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
cat > "$work/agent.json" <<JSON
{"name":"bigjob","bind_addr":"127.0.0.1","ports":{"http":$http,"rpc":$rpc},
 "data_dir":"$work/data","server":{"enabled":true,"bootstrap_expect":1},"log_level":"WARN"}
JSON
"$bin" agent -config "$work/agent.json" > "$work/agent.log" 2>&1 &
pid=$!
addr=http://127.0.0.1:$http
for _ in $(seq 1 100); do
	curl -sf "$addr/v1/status/leader" | grep -q ":$rpc" && break
	sleep 0.2
done
rss() { awk '/VmRSS/ {printf "%d MiB", $2/1024}' "/proc/$pid/status"; }
echo "start: $(rss)"
for v in 1 2 3 4; do
	python3 - "$size" "$v" > "$work/job.json" <<'PY'
import json, sys
size, v = int(sys.argv[1]), int(sys.argv[2])
job = {"Job": {"ID": "big", "Name": "big", "Type": "batch", "Datacenters": ["*"],
  "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "raw_exec",
    "Config": {"command": "/bin/true"}, "Meta": {"pad": "x" * (size + v)},
    "Resources": {"CPU": 20, "MemoryMB": 32}}]}]}}
sys.stdout.write(json.dumps(job))
PY
	code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @"$work/job.json" "$addr/v1/jobs")
	echo "version $v: HTTP $code, RSS $(rss)"
done
sleep 2
echo "after 4 versions (+2 s): $(rss)"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$addr/v1/job/big?purge=true")
sleep 3
echo "purge: HTTP $code; after purge (+3 s): $(rss)"
