package cli

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// placementFailureBlock is the failed-placement block of a status view
// (job status's "Placement Failure", eval status's "Failed Placements"):
// the task group lines flush left and their reasons indented under them.
func placementFailureBlock(failed map[string]*api.AllocationMetric) string {
	return formatFailedTGs(failed, "", "  ")
}

// formatFailedTGs explains, per task group, why allocations were not placed:
// a `Task Group "<tg>" (failed to place N allocations):` line after prefix,
// then one "<indent>* <reason>" line per reason of its AllocMetric. It is the
// one placement-failure formatter of the CLI: job run and plan, job status
// and eval status all print it.
func formatFailedTGs(failed map[string]*api.AllocationMetric, prefix, indent string) string {
	var lines []string
	for _, n := range sortedKeys(failed) {
		metric := failed[n]
		count := 1
		if metric != nil {
			count += metric.CoalescedFailures
		}
		plural := "s"
		if count == 1 {
			plural = ""
		}
		lines = append(lines, fmt.Sprintf("%sTask Group %q (failed to place %d allocation%s):", prefix, n, count, plural))
		for _, l := range formatAllocMetric(metric) {
			lines = append(lines, indent+"* "+l)
		}
	}
	return strings.Join(lines, "\n")
}

// formatAllocMetric lists the reasons an AllocMetric records, one line each
// (none for a group the server named without metrics).
func formatAllocMetric(m *api.AllocationMetric) []string {
	if m == nil {
		return nil
	}
	var out []string
	if m.NodesEvaluated == 0 {
		out = append(out, "No nodes were eligible for evaluation")
	}
	// NodesInPool counts the pool's ready nodes in the job's datacenters;
	// a server that does not report the pool leaves NodePool empty.
	if m.NodePool != "" && m.NodesInPool == 0 {
		out = append(out, fmt.Sprintf("No nodes are available in node pool %q", m.NodePool))
	}
	for _, dc := range sortedKeys(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, fmt.Sprintf("No nodes are available in datacenter %q", dc))
		}
	}
	for _, k := range sortedKeys(m.ClassFiltered) {
		out = append(out, fmt.Sprintf("Class %q: %d nodes excluded by filter", k, m.ClassFiltered[k]))
	}
	for _, k := range sortedKeys(m.ConstraintFiltered) {
		out = append(out, fmt.Sprintf("Constraint %q: %d nodes excluded by filter", k, m.ConstraintFiltered[k]))
	}
	if m.NodesExhausted > 0 {
		out = append(out, fmt.Sprintf("Resources exhausted on %d nodes", m.NodesExhausted))
	}
	for _, k := range sortedKeys(m.ClassExhausted) {
		out = append(out, fmt.Sprintf("Class %q exhausted on %d nodes", k, m.ClassExhausted[k]))
	}
	for _, k := range sortedKeys(m.DimensionExhausted) {
		out = append(out, fmt.Sprintf("Dimension %q exhausted on %d nodes", k, m.DimensionExhausted[k]))
	}
	for _, q := range m.QuotaExhausted {
		out = append(out, fmt.Sprintf("Quota limit hit %q", q))
	}
	return out
}
