package structs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParsePortSpec parses a port list such as "22,80,8000-8100" into sorted,
// de-duplicated port numbers. An empty spec yields no ports.
func ParsePortSpec(spec string) ([]uint64, error) {
	seen := make(map[uint64]struct{})
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		start, err := parsePort(lo)
		if err != nil {
			return nil, fmt.Errorf("invalid port spec %q: %v", part, err)
		}
		end := start
		if isRange {
			if end, err = parsePort(hi); err != nil {
				return nil, fmt.Errorf("invalid port spec %q: %v", part, err)
			}
			if end < start {
				return nil, fmt.Errorf("invalid port range %q: end is below start", part)
			}
		}
		for p := start; p <= end; p++ {
			seen[p] = struct{}{}
		}
	}
	out := make([]uint64, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func parsePort(s string) (uint64, error) {
	p, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a port number", s)
	}
	if p >= MaxValidPort {
		return 0, fmt.Errorf("port %d is above the maximum %d", p, MaxValidPort-1)
	}
	return p, nil
}

// AllocsFit reports whether allocs fit on node together. It sums the
// resources of the allocations that still hold resources (not client
// terminal) and compares them with what the node offers after its
// reservations. When netIdx is nil it builds a fresh NetworkIndex from the
// node and allocs and fails on any port used twice; a caller that already
// indexed the ports passes its index to skip that check.
//
// Device instances are always checked: an instance held by two allocations,
// or one the node does not offer, fails with "device oversubscribed", so
// concurrent schedulers cannot double-book a device. Reserved cores are
// checked the same way ("cores").
//
// dimension names what ran out ("cpu", "memory", "disk", "max allocs",
// "network: port collision", "device oversubscribed"); used is the summed demand. err is returned
// only when the node's own network description cannot be parsed.
func AllocsFit(node *Node, allocs []*Allocation, netIdx *NetworkIndex) (bool, string, ComparableResources, error) {
	u := SumAllocs(allocs)
	used := u.Used
	if ok, dim := u.FitsTotals(node); !ok {
		return false, dim, used, nil
	}
	if reason := deviceCollision(node, allocs); reason != "" {
		return false, DimensionDeviceOversubscribed, used, nil
	}
	if reason := coreCollision(node, allocs); reason != "" {
		return false, DimensionCores, used, nil
	}
	if netIdx == nil {
		if !anyHoldsPorts(allocs) {
			// Nothing can collide: only the node's network must be valid,
			// which needs no index (no bitmaps, no maps).
			if err := NodeNetworkErr(node); err != nil {
				return false, "network: invalid node", used, err
			}
			return true, "", used, nil
		}
		idx := NewNetworkIndex()
		if err := idx.SetNode(node); err != nil {
			return false, "network: invalid node", used, err
		}
		if collide, _ := idx.AddAllocs(allocs); collide {
			return false, "network: port collision", used, nil
		}
	}
	return true, "", used, nil
}

// anyHoldsPorts reports whether a live allocation among allocs holds a port
// NetworkIndex.AddAllocs would mark.
func anyHoldsPorts(allocs []*Allocation) bool {
	for _, a := range allocs {
		if a == nil || a.ClientTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		ar := a.AllocatedResources
		if len(ar.Shared.Ports) > 0 || networksHoldPorts(ar.Shared.Networks) {
			return true
		}
		for _, tr := range ar.Tasks {
			if tr != nil && networksHoldPorts(tr.Networks) {
				return true
			}
		}
	}
	return false
}

func networksHoldPorts(nets []*NetworkResource) bool {
	for _, n := range nets {
		if n != nil && len(n.ReservedPorts)+len(n.DynamicPorts) > 0 {
			return true
		}
	}
	return false
}
