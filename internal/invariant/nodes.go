package invariant

import (
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

// checkNodes runs the per-node checks on every node that has live
// allocations.
func (c *checker) checkNodes() []Violation {
	var out []Violation
	for _, id := range c.nodeIDs {
		allocs := c.liveByNode[id]
		if len(allocs) == 0 {
			continue
		}
		node := c.nodes[id]
		out = append(out, checkResources(node, allocs)...)
		out = append(out, c.checkPorts(node, allocs)...)
		out = append(out, checkDevices(node, allocs)...)
	}
	return out
}

func allocIDs(allocs []*structs.Allocation) []string {
	ids := make([]string, len(allocs))
	for i, a := range allocs {
		ids[i] = a.ID
	}
	return ids
}

// checkResources sums cpu, memory and disk of the live allocations and
// compares each with the node's offer after reservations. It does its own
// arithmetic rather than calling structs.AllocsFit, so a bug there cannot
// hide one here.
func checkResources(node *structs.Node, allocs []*structs.Allocation) []Violation {
	var used structs.ComparableResources
	for _, a := range allocs {
		used.Add(a.AllocatedResources.Comparable())
	}
	avail := node.Comparable()
	var out []Violation
	over := func(dim string, u, have int64) {
		if u > have {
			out = append(out, Violation{Kind: KindOvercommit, NodeID: node.ID, Allocs: allocIDs(allocs),
				Detail: fmt.Sprintf("%s: %d allocations use %d, node offers %d after reservations", dim, len(allocs), u, have)})
		}
	}
	over("cpu", used.CPU, avail.CPU)
	over("memory", used.MemoryMB, avail.MemoryMB)
	over("disk", used.DiskMB, avail.DiskMB)
	if node.NodeMaxAllocs > 0 && len(allocs) > node.NodeMaxAllocs {
		out = append(out, Violation{Kind: KindOvercommit, NodeID: node.ID, Allocs: allocIDs(allocs),
			Detail: fmt.Sprintf("max allocs: %d allocations, node allows %d", len(allocs), node.NodeMaxAllocs)})
	}
	return out
}

// portUse is one host port an allocation holds.
type portUse struct {
	ip      string
	port    int
	label   string
	dynamic bool // known to be a dynamic port of the ask
	ignore  bool // IgnoreCollision: sharing is allowed
}

// portsOf lists the host ports an allocation holds: the group network's
// granted ports (or, for allocations without them, the group networks'
// ports) and the legacy task networks' ports.
func (c *checker) portsOf(a *structs.Allocation) []portUse {
	ar := a.AllocatedResources
	if ar == nil {
		return nil
	}
	dynLabels := map[string]bool{}
	if job := c.jobOf(a); job != nil {
		for _, tg := range job.TaskGroups {
			if tg == nil || tg.Name != a.TaskGroup {
				continue
			}
			for _, n := range tg.Networks {
				if n == nil {
					continue
				}
				for _, p := range n.DynamicPorts {
					dynLabels[p.Label] = true
				}
			}
		}
	}
	var out []portUse
	for _, p := range ar.Shared.Ports {
		out = append(out, portUse{ip: p.HostIP, port: p.Value, label: p.Label, dynamic: dynLabels[p.Label], ignore: p.IgnoreCollision})
	}
	networks := func(ns []*structs.NetworkResource) {
		for _, n := range ns {
			if n == nil {
				continue
			}
			for _, p := range n.ReservedPorts {
				out = append(out, portUse{ip: n.IP, port: p.Value, label: p.Label, ignore: p.IgnoreCollision})
			}
			for _, p := range n.DynamicPorts {
				out = append(out, portUse{ip: n.IP, port: p.Value, label: p.Label, dynamic: true, ignore: p.IgnoreCollision})
			}
		}
	}
	if len(ar.Shared.Ports) == 0 {
		networks(ar.Shared.Networks)
	}
	for _, name := range sortedKeys(ar.Tasks) {
		if t := ar.Tasks[name]; t != nil {
			networks(t.Networks)
		}
	}
	return out
}

// nodePorts is what the node itself says about its ports: its addresses,
// the ports it reserves on each (or on all), and its dynamic range.
type nodePorts struct {
	addrs          map[string]bool
	reservedAll    map[int]bool
	reservedOnAddr map[string]map[int]bool
	min, max       int
}

func describeNodePorts(node *structs.Node) nodePorts {
	np := nodePorts{addrs: map[string]bool{}, reservedAll: map[int]bool{}, reservedOnAddr: map[string]map[int]bool{},
		min: structs.DefaultMinDynamicPort, max: structs.DefaultMaxDynamicPort}
	if r := node.ReservedResources; r != nil && r.Networks.ReservedHostPorts != "" {
		if ports, err := structs.ParsePortSpec(r.Networks.ReservedHostPorts); err == nil {
			for _, p := range ports {
				np.reservedAll[int(p)] = true
			}
		}
	}
	if res := node.NodeResources; res != nil {
		for _, nn := range res.NodeNetworks {
			if nn == nil {
				continue
			}
			for _, addr := range nn.Addresses {
				np.addrs[addr.Address] = true
				if addr.ReservedPorts == "" {
					continue
				}
				ports, err := structs.ParsePortSpec(addr.ReservedPorts)
				if err != nil {
					continue
				}
				m := np.reservedOnAddr[addr.Address]
				if m == nil {
					m = map[int]bool{}
					np.reservedOnAddr[addr.Address] = m
				}
				for _, p := range ports {
					m[int(p)] = true
				}
			}
		}
		for _, n := range res.Networks {
			if n != nil && n.IP != "" {
				np.addrs[n.IP] = true
			}
		}
		if res.MinDynamicPort > 0 {
			np.min = res.MinDynamicPort
		}
		if res.MaxDynamicPort > 0 {
			np.max = res.MaxDynamicPort
		}
	}
	if ip := node.Attributes["unique.network.ip-address"]; ip != "" && len(np.addrs) == 0 {
		np.addrs[ip] = true
	}
	return np
}

// checkPorts finds host ports used twice, ports the node reserves, ports
// on addresses the node lacks, and dynamic ports outside the node's range.
func (c *checker) checkPorts(node *structs.Node, allocs []*structs.Allocation) []Violation {
	np := describeNodePorts(node)
	type key struct {
		ip   string
		port int
	}
	holders := map[key][]string{}
	var order []key
	var out []Violation
	for _, a := range allocs {
		for _, p := range c.portsOf(a) {
			v := func(detail string) {
				out = append(out, Violation{Kind: KindPort, NodeID: node.ID, JobID: a.JobID, Allocs: []string{a.ID}, Detail: detail})
			}
			where := fmt.Sprintf("%s:%d (label %q)", p.ip, p.port, p.label)
			switch {
			case p.port <= 0 || p.port >= structs.MaxValidPort:
				v("invalid port " + where)
				continue
			case len(np.addrs) > 0 && !np.addrs[p.ip]:
				v("port on an address the node does not have: " + where)
			}
			if !p.ignore && (np.reservedAll[p.port] || np.reservedOnAddr[p.ip][p.port]) {
				v("port reserved by the node: " + where)
			}
			if p.dynamic && (p.port < np.min || p.port > np.max) {
				v(fmt.Sprintf("dynamic port %s outside the node's range %d-%d", where, np.min, np.max))
			}
			if p.ignore {
				continue
			}
			k := key{p.ip, p.port}
			if _, seen := holders[k]; !seen {
				order = append(order, k)
			}
			holders[k] = append(holders[k], a.ID)
		}
	}
	for _, k := range order {
		if ids := holders[k]; len(ids) > 1 {
			out = append(out, Violation{Kind: KindPort, NodeID: node.ID, Allocs: ids,
				Detail: fmt.Sprintf("%s:%d used %d times", k.ip, k.port, len(ids))})
		}
	}
	return out
}

// checkDevices finds device instances granted twice and instances the
// node does not have.
func checkDevices(node *structs.Node, allocs []*structs.Allocation) []Violation {
	type key struct{ vendor, typ, name, id string }
	have := map[key]bool{}
	if node.NodeResources != nil {
		for _, d := range node.NodeResources.Devices {
			if d == nil {
				continue
			}
			for _, inst := range d.Instances {
				if inst != nil {
					have[key{d.Vendor, d.Type, d.Name, inst.ID}] = true
				}
			}
		}
	}
	holders := map[key][]string{}
	var order []key
	var out []Violation
	for _, a := range allocs {
		if a.AllocatedResources == nil {
			continue
		}
		for _, task := range sortedKeys(a.AllocatedResources.Tasks) {
			tr := a.AllocatedResources.Tasks[task]
			if tr == nil {
				continue
			}
			for _, d := range tr.Devices {
				if d == nil {
					continue
				}
				for _, id := range d.DeviceIDs {
					k := key{d.Vendor, d.Type, d.Name, id}
					if !have[k] {
						out = append(out, Violation{Kind: KindDevice, NodeID: node.ID, JobID: a.JobID, Allocs: []string{a.ID},
							Detail: fmt.Sprintf("task %q holds device %s/%s/%s instance %s, which the node does not have", task, d.Vendor, d.Type, d.Name, id)})
					}
					if _, seen := holders[k]; !seen {
						order = append(order, k)
					}
					holders[k] = append(holders[k], a.ID)
				}
			}
		}
	}
	for _, k := range order {
		if ids := holders[k]; len(ids) > 1 {
			out = append(out, Violation{Kind: KindDevice, NodeID: node.ID, Allocs: ids,
				Detail: fmt.Sprintf("device %s/%s/%s instance %s granted %d times", k.vendor, k.typ, k.name, k.id, len(ids))})
		}
	}
	return out
}
