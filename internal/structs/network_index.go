package structs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
)

// DefaultHostNetwork is the alias of addresses that name no host network.
const DefaultHostNetwork = "default"

// maxRandomPortProbes bounds the random probing for a dynamic port before
// falling back to enumerating the free ports of the range.
const maxRandomPortProbes = 20

// NetworkIndex is a throw-away view of the ports used on one node. Build a
// fresh one for every check (a candidate node during ranking, a node in the
// plan applier): NewNetworkIndex, SetNode, AddAllocs, then ask with
// AssignPorts. It is not safe for concurrent use.
type NetworkIndex struct {
	// HostNetworks maps a host network alias to its addresses, in node order.
	HostNetworks map[string][]NodeNetworkAddress
	// UsedPorts maps an IP address to the ports in use on it.
	UsedPorts map[string]Bitmap

	MinDynamicPort int
	MaxDynamicPort int

	// Rand, when set, drives dynamic port choice (tests and schedulers seed
	// it for reproducibility); nil uses the global source.
	Rand *rand.Rand

	globalReserved []uint64
}

// NewNetworkIndex returns an empty index with the default dynamic range.
func NewNetworkIndex() *NetworkIndex {
	return &NetworkIndex{
		HostNetworks:   make(map[string][]NodeNetworkAddress),
		UsedPorts:      make(map[string]Bitmap),
		MinDynamicPort: DefaultMinDynamicPort,
		MaxDynamicPort: DefaultMaxDynamicPort,
	}
}

// bitmapFor returns the bitmap of ip, creating it (with the node's global
// reserved ports already marked) if needed.
func (idx *NetworkIndex) bitmapFor(ip string) Bitmap {
	if b, ok := idx.UsedPorts[ip]; ok {
		return b
	}
	b := NewBitmap()
	for _, p := range idx.globalReserved {
		b.Set(uint(p))
	}
	idx.UsedPorts[ip] = b
	return b
}

func (idx *NetworkIndex) addAddress(addr NodeNetworkAddress) error {
	if addr.Alias == "" {
		addr.Alias = DefaultHostNetwork
	}
	for _, have := range idx.HostNetworks[addr.Alias] {
		if have.Address == addr.Address {
			return nil
		}
	}
	idx.HostNetworks[addr.Alias] = append(idx.HostNetworks[addr.Alias], addr)
	b := idx.bitmapFor(addr.Address)
	if addr.ReservedPorts != "" {
		ports, err := ParsePortSpec(addr.ReservedPorts)
		if err != nil {
			return fmt.Errorf("host network %q address %s: %v", addr.Alias, addr.Address, err)
		}
		for _, p := range ports {
			b.Set(uint(p))
		}
	}
	return nil
}

// SetNode loads the node's addresses, reserved ports, ports bound by
// processes outside Drover, and dynamic port range. It returns an error
// when a reserved port spec cannot be parsed. Malformed ForeignPorts
// entries (observed, best-effort data) are skipped.
func (idx *NetworkIndex) SetNode(node *Node) error {
	if node == nil {
		return errors.New("network index: nil node")
	}
	if r := node.ReservedResources; r != nil && r.Networks.ReservedHostPorts != "" {
		ports, err := ParsePortSpec(r.Networks.ReservedHostPorts)
		if err != nil {
			return fmt.Errorf("node reserved ports: %v", err)
		}
		idx.globalReserved = ports
		for _, b := range idx.UsedPorts {
			for _, p := range ports {
				b.Set(uint(p))
			}
		}
	}
	if res := node.NodeResources; res != nil {
		for _, nn := range res.NodeNetworks {
			if nn == nil {
				continue
			}
			for _, a := range nn.Addresses {
				if err := idx.addAddress(a); err != nil {
					return err
				}
			}
		}
		for _, n := range res.Networks {
			if n == nil || n.IP == "" {
				continue
			}
			if err := idx.addAddress(NodeNetworkAddress{Alias: DefaultHostNetwork, Address: n.IP}); err != nil {
				return err
			}
		}
		if res.MinDynamicPort > 0 {
			idx.MinDynamicPort = res.MinDynamicPort
		}
		if res.MaxDynamicPort > 0 {
			idx.MaxDynamicPort = res.MaxDynamicPort
		}
	}
	if len(idx.HostNetworks) == 0 {
		// A node that fingerprinted no network still has its primary address.
		if ip := node.Attributes["unique.network.ip-address"]; ip != "" {
			_ = idx.addAddress(NodeNetworkAddress{Alias: DefaultHostNetwork, Address: ip})
		}
	}
	if idx.MinDynamicPort > idx.MaxDynamicPort {
		return fmt.Errorf("node dynamic port range %d-%d is empty", idx.MinDynamicPort, idx.MaxDynamicPort)
	}
	for _, fp := range node.ForeignPorts {
		ip, port, ok := parseForeignPort(fp)
		if !ok {
			continue
		}
		if ip == "0.0.0.0" || ip == "::" {
			for _, b := range idx.UsedPorts {
				b.Set(uint(port))
			}
			continue
		}
		idx.bitmapFor(ip).Set(uint(port))
	}
	return nil
}

// parseForeignPort parses "ip:port/proto" (proto tcp or udp; IPv6 in brackets).
func parseForeignPort(s string) (string, int, bool) {
	hostPort, proto, hasProto := strings.Cut(s, "/")
	if hasProto && proto != "tcp" && proto != "udp" {
		return "", 0, false
	}
	host, portStr, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", 0, false
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port >= MaxValidPort {
		return "", 0, false
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsUnspecified() {
			if ip.To4() != nil {
				return "0.0.0.0", port, true
			}
			return "::", port, true
		}
		return ip.String(), port, true
	}
	return "", 0, false
}

// markPort sets port on ip; it reports a collision when the bit was
// already set and ignore is false.
func (idx *NetworkIndex) markPort(ip string, port int, ignore bool) (bool, string) {
	if port < 0 || port >= MaxValidPort {
		return true, fmt.Sprintf("invalid port %d", port)
	}
	b := idx.bitmapFor(ip)
	if b.Check(uint(port)) && !ignore {
		return true, fmt.Sprintf("port %d already in use on %s", port, ip)
	}
	b.Set(uint(port))
	return false, ""
}

// AddAllocs marks the ports of every allocation that still holds node
// resources (not client terminal). It reports the first collision found;
// all ports are marked regardless.
func (idx *NetworkIndex) AddAllocs(allocs []*Allocation) (bool, string) {
	collide, reason := false, ""
	note := func(c bool, r string, a *Allocation) {
		if c && !collide {
			collide, reason = true, r+" (alloc "+a.ID+")"
		}
	}
	for _, a := range allocs {
		if a == nil || a.ClientTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		ar := a.AllocatedResources
		for _, p := range ar.Shared.Ports {
			c, r := idx.markPort(p.HostIP, p.Value, p.IgnoreCollision)
			note(c, r, a)
		}
		if len(ar.Shared.Ports) == 0 {
			for _, n := range ar.Shared.Networks {
				c, r := idx.addNetworkPorts(n)
				note(c, r, a)
			}
		}
		for _, tr := range ar.Tasks {
			if tr == nil {
				continue
			}
			for _, n := range tr.Networks {
				c, r := idx.addNetworkPorts(n)
				note(c, r, a)
			}
		}
	}
	return collide, reason
}

func (idx *NetworkIndex) addNetworkPorts(n *NetworkResource) (bool, string) {
	if n == nil {
		return false, ""
	}
	collide, reason := false, ""
	for _, set := range [][]Port{n.ReservedPorts, n.DynamicPorts} {
		for _, p := range set {
			if c, r := idx.markPort(n.IP, p.Value, p.IgnoreCollision); c && !collide {
				collide, reason = true, r
			}
		}
	}
	return collide, reason
}

// AddReserved marks an offer (typically from AssignPorts) as used so that
// later asks on the same index avoid it.
func (idx *NetworkIndex) AddReserved(ports AllocatedPorts) (bool, string) {
	collide, reason := false, ""
	for _, p := range ports {
		if c, r := idx.markPort(p.HostIP, p.Value, p.IgnoreCollision); c && !collide {
			collide, reason = true, r
		}
	}
	return collide, reason
}

// offerSet remembers every port value already chosen for one ask, on any
// address: later choices of the same ask never reuse one (seed 000).
type offerSet map[int]struct{}

func (o offerSet) has(p int) bool { _, ok := o[p]; return ok }

// AssignPorts picks host ports for a group network ask: static ports first
// (first address of the port's host network where it is free), then dynamic
// ports chosen at random in [MinDynamicPort, MaxDynamicPort]. Every port
// chosen for the ask is excluded from its later choices. The index is not
// modified; callers that keep the offer add it with AddReserved.
func (idx *NetworkIndex) AssignPorts(ask *NetworkResource) (AllocatedPorts, error) {
	if ask == nil {
		return nil, nil
	}
	var offer AllocatedPorts
	inOffer := offerSet{}
	toValue := func(to, value int) int {
		if to == -1 {
			return value
		}
		return to
	}

	for _, p := range ask.ReservedPorts {
		netName := hostNetworkOf(p)
		addrs := idx.HostNetworks[netName]
		if len(addrs) == 0 {
			return nil, fmt.Errorf("no addresses available for %s network", netName)
		}
		if p.Value <= 0 || p.Value >= MaxValidPort {
			return nil, fmt.Errorf("invalid static port %s=%d", p.Label, p.Value)
		}
		chosen := ""
		for _, a := range addrs {
			used := idx.UsedPorts[a.Address]
			busy := (used != nil && used.Check(uint(p.Value))) || inOffer.has(p.Value)
			if !busy || p.IgnoreCollision {
				chosen = a.Address
				break
			}
		}
		if chosen == "" {
			return nil, fmt.Errorf("reserved port collision %s=%d", p.Label, p.Value)
		}
		inOffer[p.Value] = struct{}{}
		offer = append(offer, AllocatedPortMapping{
			Label: p.Label, Value: p.Value, To: toValue(p.To, p.Value),
			HostIP: chosen, IgnoreCollision: p.IgnoreCollision,
		})
	}

	for _, p := range ask.DynamicPorts {
		netName := hostNetworkOf(p)
		addrs := idx.HostNetworks[netName]
		if len(addrs) == 0 {
			return nil, fmt.Errorf("no addresses available for %s network", netName)
		}
		value, chosen := 0, ""
		for _, a := range addrs {
			if v, ok := idx.pickDynamic(idx.UsedPorts[a.Address], inOffer); ok {
				value, chosen = v, a.Address
				break
			}
		}
		if chosen == "" {
			return nil, fmt.Errorf("dynamic port selection failed for %s: no free port in %d-%d",
				p.Label, idx.MinDynamicPort, idx.MaxDynamicPort)
		}
		inOffer[value] = struct{}{}
		offer = append(offer, AllocatedPortMapping{
			Label: p.Label, Value: value, To: toValue(p.To, value), HostIP: chosen,
		})
	}
	return offer, nil
}

func hostNetworkOf(p Port) string {
	if p.HostNetwork == "" {
		return DefaultHostNetwork
	}
	return p.HostNetwork
}

func (idx *NetworkIndex) intn(n int) int {
	if idx.Rand != nil {
		return idx.Rand.IntN(n)
	}
	return rand.IntN(n)
}

// pickDynamic chooses a free port of the dynamic range not already in the
// offer: a few random probes, then a precise enumeration of what is free.
func (idx *NetworkIndex) pickDynamic(used Bitmap, inOffer offerSet) (int, bool) {
	lo, hi := idx.MinDynamicPort, idx.MaxDynamicPort
	if lo < 0 || hi >= MaxValidPort || lo > hi {
		return 0, false
	}
	free := func(p int) bool {
		return (used == nil || !used.Check(uint(p))) && !inOffer.has(p)
	}
	span := hi - lo + 1
	for i := 0; i < maxRandomPortProbes; i++ {
		if p := lo + idx.intn(span); free(p) {
			return p, true
		}
	}
	var candidates []int
	for p := lo; p <= hi; p++ {
		if free(p) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return 0, false
	}
	return candidates[idx.intn(len(candidates))], true
}
