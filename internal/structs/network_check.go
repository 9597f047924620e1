package structs

import (
	"errors"
	"fmt"
)

// NodeNetworkErr returns the error NetworkIndex.SetNode would
// return for n, without building the index (no bitmaps, no maps): a
// reserved port spec that does not parse, or an empty dynamic port range.
// Groups that ask for no ports still must not land on such a node, as the
// plan applier would reject it.
func NodeNetworkErr(n *Node) error {
	if n != nil && n.netChecked {
		return n.netErr
	}
	return nodeNetworkErr(n)
}

func nodeNetworkErr(n *Node) error {
	if n == nil {
		return errors.New("network index: nil node")
	}
	if r := n.ReservedResources; r != nil && r.Networks.ReservedHostPorts != "" {
		if _, err := ParsePortSpec(r.Networks.ReservedHostPorts); err != nil {
			return fmt.Errorf("node reserved ports: %v", err)
		}
	}
	lo, hi := DefaultMinDynamicPort, DefaultMaxDynamicPort
	if res := n.NodeResources; res != nil {
		for i, nn := range res.NodeNetworks {
			if nn == nil {
				continue
			}
			for j, a := range nn.Addresses {
				if a.ReservedPorts == "" || seenAddress(res.NodeNetworks, i, j) {
					// The index keeps the first of equal addresses and
					// never parses the spec of a repeat.
					continue
				}
				if _, err := ParsePortSpec(a.ReservedPorts); err != nil {
					return fmt.Errorf("host network %q address %s: %v", aliasOrDefault(a.Alias), a.Address, err)
				}
			}
		}
		if res.MinDynamicPort > 0 {
			lo = res.MinDynamicPort
		}
		if res.MaxDynamicPort > 0 {
			hi = res.MaxDynamicPort
		}
	}
	if lo > hi {
		return fmt.Errorf("node dynamic port range %d-%d is empty", lo, hi)
	}
	return nil
}

func aliasOrDefault(a string) string {
	if a == "" {
		return DefaultHostNetwork
	}
	return a
}

// seenAddress reports whether the address at networks[i].Addresses[j] has
// the alias and address of one before it.
func seenAddress(networks []*NodeNetworkResource, i, j int) bool {
	want := networks[i].Addresses[j]
	for x := 0; x <= i; x++ {
		if networks[x] == nil {
			continue
		}
		for y, a := range networks[x].Addresses {
			if x == i && y == j {
				return false
			}
			if aliasOrDefault(a.Alias) == aliasOrDefault(want.Alias) && a.Address == want.Address {
				return true
			}
		}
	}
	return false
}
