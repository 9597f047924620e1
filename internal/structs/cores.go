package structs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DimensionCores is what AllocsFit and the scheduler report when a node
// has too few free cores for `resources { cores = N }`, or two allocations
// hold the same core.
const DimensionCores = "cores"

// ReservableCores is the sorted list of the node's cores a task may
// reserve: ReservableCpuCores less the operator's reserved cores.
func (n *Node) ReservableCores() []uint16 {
	if n == nil || n.NodeResources == nil {
		return nil
	}
	held := map[uint16]bool{}
	if r := n.ReservedResources; r != nil {
		for _, c := range r.Cpu.ReservedCpuCores {
			held[c] = true
		}
	}
	var out []uint16
	for _, c := range n.NodeResources.Cpu.ReservableCpuCores {
		if !held[c] {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// MHzPerCore is what one reserved core counts in CPU shares on the node:
// its total compute over its cores (0 when unknown).
func (n *Node) MHzPerCore() int64 {
	if n == nil || n.NodeResources == nil || n.NodeResources.Cpu.TotalCpuCores == 0 {
		return 0
	}
	return n.NodeResources.Cpu.CpuShares / int64(n.NodeResources.Cpu.TotalCpuCores)
}

// HeldCores is the set of cores the live allocations among allocs hold.
func HeldCores(allocs []*Allocation) map[uint16]bool {
	held := map[uint16]bool{}
	for _, a := range allocs {
		if a == nil || a.ClientTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			if t != nil {
				for _, c := range t.Cpu.ReservedCores {
					held[c] = true
				}
			}
		}
	}
	return held
}

// coreCollision reports the first core that allocs hold twice or that the
// node cannot reserve; "" when none.
func coreCollision(node *Node, allocs []*Allocation) string {
	var reservable map[uint16]bool
	used := map[uint16]string{}
	for _, a := range allocs {
		if a == nil || a.ClientTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			if t == nil || len(t.Cpu.ReservedCores) == 0 {
				continue
			}
			if reservable == nil {
				reservable = map[uint16]bool{}
				for _, c := range node.ReservableCores() {
					reservable[c] = true
				}
			}
			for _, c := range t.Cpu.ReservedCores {
				if !reservable[c] {
					return fmt.Sprintf("core %d is not reservable on the node", c)
				}
				if other, dup := used[c]; dup {
					return fmt.Sprintf("core %d held by %s and %s", c, other, a.ID)
				}
				used[c] = a.ID
			}
		}
	}
	return ""
}

// ParseCores reads a cpuset list such as "0-3,6" (Nomad's
// client.reserved.cores and client.reservable_cores), sorted, without
// duplicates.
func ParseCores(spec string) ([]uint16, error) {
	seen := map[uint16]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
		b := a
		if err == nil && isRange {
			b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
		}
		if err != nil || a > b || b >= MaxTaskCores {
			return nil, fmt.Errorf("%q is not a core ID or range of core IDs (such as 0-3)", part)
		}
		for c := a; c <= b; c++ {
			seen[uint16(c)] = true
		}
	}
	out := make([]uint16, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
