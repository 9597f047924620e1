// Package hoststats samples the client host's resource usage: memory, CPU
// time per core, the filesystems of physical devices, the allocation
// directory's filesystem and uptime. It reads /proc and statfs(2) and owns
// nothing else; the client publishes what it samples through
// /v1/client/stats and, with telemetry.publish_node_metrics, as
// nomad.client.host.* gauges.
package hoststats
