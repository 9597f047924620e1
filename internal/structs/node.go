package structs

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// Node is a client machine that runs allocations.
type Node struct {
	ID                string
	SecretID          string `bexpr:"-"` // never leaves the servers: endpoints blank it, ?filter= cannot see it
	Datacenter        string
	Name              string
	HTTPAddr          string
	TLSEnabled        bool
	Attributes        map[string]string
	NodeResources     *NodeResources
	ReservedResources *NodeReservedResources
	Links             map[string]string
	Meta              map[string]string
	NodeClass         string
	NodePool          string
	ComputedClass     string
	CgroupParent      string
	DrainStrategy     *DrainStrategy
	// Drain mirrors DrainStrategy != nil (Nomad's older field, still in
	// its JSON); the state store keeps it in step.
	Drain                 bool `codec:",omitempty"`
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	StatusUpdatedAt       int64
	Events                []*NodeEvent
	Drivers               map[string]*DriverInfo
	HostVolumes           map[string]*HostVolumeInfo
	HostNetworks          map[string]*HostNetworkInfo
	LastDrain             *DrainMetadata
	NodeMaxAllocs         int
	// ForeignPorts lists "ip:port/proto" bound on the node by processes the
	// client did not start (client.detect_foreign_ports).
	ForeignPorts []string `json:",omitempty"`

	LastMissedHeartbeatIndex uint64 `json:"-" bexpr:"-"`
	LastAllocUpdateIndex     uint64 `json:"-" bexpr:"-"`
	CreateIndex              uint64
	ModifyIndex              uint64

	// netChecked and netErr hold NodeNetworkErr's answer, recorded by
	// CheckNetwork before the node is stored (stored nodes are never
	// modified). Neither is encoded; Copy does not carry them.
	netChecked bool
	netErr     error
}

// CheckNetwork records NodeNetworkErr's answer on n, so that schedulers
// visiting the node in every pass need not walk its networks again (cold
// memory: 3% of server CPU). Call it only on a node about to be stored,
// never on one that is shared.
func (n *Node) CheckNetwork() {
	n.netErr, n.netChecked = nodeNetworkErr(n), true
}

// Ready reports whether the node may receive placements.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && n.DrainStrategy == nil &&
		n.SchedulingEligibility == NodeSchedulingEligible
}

// TerminalStatus reports whether the node is down.
func (n *Node) TerminalStatus() bool { return n.Status == NodeStatusDown }

// Copy returns a deep copy.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	var out Node
	mustDeepCopy(n, &out)
	out.SecretID = n.SecretID
	out.LastMissedHeartbeatIndex = n.LastMissedHeartbeatIndex
	out.LastAllocUpdateIndex = n.LastAllocUpdateIndex
	return &out
}

// ComputeClass sets ComputedClass: a hash of everything that can make a
// feasibility decision differ, excluding unique.* attributes.
func (n *Node) ComputeClass() {
	h := sha256.New()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(n.Datacenter)
	w(n.NodeClass)
	w(n.NodePool)
	writeMap := func(m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			if strings.HasPrefix(k, "unique.") {
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w(k)
			w(m[k])
		}
	}
	writeMap(n.Attributes)
	w("meta")
	writeMap(n.Meta)
	drivers := make([]string, 0, len(n.Drivers))
	for d, info := range n.Drivers {
		if info != nil && info.Detected && info.Healthy {
			drivers = append(drivers, d)
		}
	}
	sort.Strings(drivers)
	for _, d := range drivers {
		w("driver:" + d)
	}
	if n.NodeResources != nil {
		writeDevicesClass(w, n.NodeResources.Devices)
	}
	if len(n.HostVolumes) > 0 {
		// Host volumes decide placement: a node that gains one is a new
		// class, so blocked evaluations and node updates see the change.
		vols := make([]string, 0, len(n.HostVolumes))
		for name, hv := range n.HostVolumes {
			ro := "rw"
			if hv != nil && hv.ReadOnly {
				ro = "ro"
			}
			vols = append(vols, name+"\x00"+ro)
		}
		sort.Strings(vols)
		for _, v := range vols {
			w("host_volume:" + v)
		}
	}
	n.ComputedClass = "v1:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// NodeListStub is the list view of a node.
type NodeListStub struct {
	Address               string
	ID                    string
	Attributes            map[string]string `json:",omitempty"`
	Datacenter            string
	Name                  string
	NodeClass             string
	NodePool              string
	Version               string
	Drain                 bool
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	Drivers               map[string]*DriverInfo
	NodeResources         *NodeResources         `json:",omitempty"`
	ReservedResources     *NodeReservedResources `json:",omitempty"`
	LastDrain             *DrainMetadata
	CreateIndex           uint64
	ModifyIndex           uint64
}

// Stub returns the list view; resources and OS attributes on request.
func (n *Node) Stub(resources, os bool) *NodeListStub {
	addr := n.Attributes["unique.network.ip-address"]
	s := &NodeListStub{
		Address:               addr,
		ID:                    n.ID,
		Datacenter:            n.Datacenter,
		Name:                  n.Name,
		NodeClass:             n.NodeClass,
		NodePool:              n.NodePool,
		Version:               n.Attributes["nomad.version"],
		Drain:                 n.DrainStrategy != nil,
		SchedulingEligibility: n.SchedulingEligibility,
		Status:                n.Status,
		StatusDescription:     n.StatusDescription,
		Drivers:               n.Drivers,
		LastDrain:             n.LastDrain,
		CreateIndex:           n.CreateIndex,
		ModifyIndex:           n.ModifyIndex,
	}
	if resources {
		s.NodeResources = n.NodeResources
		s.ReservedResources = n.ReservedResources
	}
	if os {
		s.Attributes = map[string]string{"os.name": n.Attributes["os.name"], "os.version": n.Attributes["os.version"]}
	}
	return s
}
