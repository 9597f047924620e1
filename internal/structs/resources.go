package structs

// Resources is what a task asks for.
type Resources struct {
	CPU         int
	Cores       int
	MemoryMB    int
	MemoryMaxMB int
	DiskMB      int
	IOPS        int
	SecretsMB   int
	Networks    []*NetworkResource
	Devices     []*RequestedDevice
	NUMA        *NUMAResource
}

// NetworkResource is a network ask (group or legacy task level) or, on a
// node, an interface it offers.
type NetworkResource struct {
	Mode          string
	Device        string
	CIDR          string
	IP            string
	Hostname      string `json:",omitempty"`
	MBits         int
	DNS           *DNSConfig
	CNI           *CNIConfig
	ReservedPorts []Port
	DynamicPorts  []Port
}

// Port is a static (ReservedPorts) or dynamic (DynamicPorts) port ask.
type Port struct {
	Label           string
	Value           int
	To              int
	HostNetwork     string
	IgnoreCollision bool
}

// AllocatedResources is what the scheduler granted an allocation.
type AllocatedResources struct {
	Tasks          map[string]*AllocatedTaskResources
	TaskLifecycles map[string]*TaskLifecycle
	Shared         AllocatedSharedResources
}

// AllocatedTaskResources is one task's grant.
type AllocatedTaskResources struct {
	Cpu      AllocatedCpuResources
	Memory   AllocatedMemoryResources
	Networks []*NetworkResource
	Devices  []*AllocatedDeviceResource
}

// AllocatedSharedResources is the group-wide grant (disk, group network ports).
type AllocatedSharedResources struct {
	DiskMB   int64
	Networks []*NetworkResource
	Ports    AllocatedPorts
}

// AllocatedCpuResources is a CPU grant in MHz shares.
type AllocatedCpuResources struct {
	CpuShares     int64
	ReservedCores []uint16
}

// AllocatedMemoryResources is a memory grant.
type AllocatedMemoryResources struct {
	MemoryMB    int64
	MemoryMaxMB int64
}

// AllocatedPortMapping is one port granted to a group network.
type AllocatedPortMapping struct {
	Label           string
	Value           int
	To              int
	HostIP          string
	IgnoreCollision bool `json:",omitempty"`
}

// AllocatedPorts is the list of ports of one allocation.
type AllocatedPorts []AllocatedPortMapping

// Get returns the mapping with the given label.
func (p AllocatedPorts) Get(label string) (AllocatedPortMapping, bool) {
	for _, m := range p {
		if m.Label == label {
			return m, true
		}
	}
	return AllocatedPortMapping{}, false
}

// Comparable sums an allocation's grant into flat numbers.
func (a *AllocatedResources) Comparable() ComparableResources {
	var c ComparableResources
	if a == nil {
		return c
	}
	for _, t := range a.Tasks {
		if t == nil {
			continue
		}
		c.addTask(t)
	}
	c.DiskMB = Counted(a.Shared.DiskMB)
	return c
}

// ComparableResources are flat totals used for fit checks.
type ComparableResources struct {
	CPU         int64
	MemoryMB    int64
	MemoryMaxMB int64
	DiskMB      int64
}

// Add adds o into c (saturating: see resources_sum.go).
func (c *ComparableResources) Add(o ComparableResources) {
	c.CPU = SatAdd(c.CPU, o.CPU)
	c.MemoryMB = SatAdd(c.MemoryMB, o.MemoryMB)
	c.MemoryMaxMB = SatAdd(c.MemoryMaxMB, o.MemoryMaxMB)
	c.DiskMB = SatAdd(c.DiskMB, o.DiskMB)
}

// Superset reports whether c covers o, and if not the first dimension short.
func (c ComparableResources) Superset(o ComparableResources) (bool, string) {
	switch {
	case c.CPU < o.CPU:
		return false, "cpu"
	case c.MemoryMB < o.MemoryMB:
		return false, "memory"
	case c.DiskMB < o.DiskMB:
		return false, "disk"
	}
	return true, ""
}

// NodeResources is what a node offers.
type NodeResources struct {
	Cpu            NodeCpuResources
	Memory         NodeMemoryResources
	Disk           NodeDiskResources
	Networks       []*NetworkResource
	NodeNetworks   []*NodeNetworkResource
	Devices        []*NodeDeviceResource
	MinDynamicPort int
	MaxDynamicPort int
}

// NodeCpuResources describes a node's CPU.
type NodeCpuResources struct {
	CpuShares          int64
	TotalCpuCores      uint16
	ReservableCpuCores []uint16
}

// NodeMemoryResources describes a node's memory.
type NodeMemoryResources struct {
	MemoryMB int64
}

// NodeDiskResources describes a node's allocatable disk.
type NodeDiskResources struct {
	DiskMB int64
}

// NodeNetworkResource is one interface of a node and its addresses.
type NodeNetworkResource struct {
	Mode       string
	Device     string
	MacAddress string
	Speed      int
	Addresses  []NodeNetworkAddress
}

// NodeNetworkAddress is one address on a node interface.
type NodeNetworkAddress struct {
	Family        string
	Alias         string
	Address       string
	ReservedPorts string
	Gateway       string
}

// NodeReservedResources is what the operator held back from scheduling.
type NodeReservedResources struct {
	Cpu      NodeReservedCpuResources
	Memory   NodeReservedMemoryResources
	Disk     NodeReservedDiskResources
	Networks NodeReservedNetworkResources
}

// NodeReservedCpuResources reserves CPU.
type NodeReservedCpuResources struct {
	CpuShares        uint64
	ReservedCpuCores []uint16
}

// NodeReservedMemoryResources reserves memory.
type NodeReservedMemoryResources struct {
	MemoryMB uint64
}

// NodeReservedDiskResources reserves disk.
type NodeReservedDiskResources struct {
	DiskMB uint64
}

// NodeReservedNetworkResources reserves host ports ("22,80,8000-8100").
type NodeReservedNetworkResources struct {
	ReservedHostPorts string
}

// Comparable returns the node's schedulable totals after reservations.
func (n *Node) Comparable() ComparableResources {
	var c ComparableResources
	if n == nil || n.NodeResources == nil {
		return c
	}
	// Figures as sums count them (resources_sum.go); a reservation larger
	// than the resource leaves nothing (a node of 0), never a negative
	// capacity or a uint64 reservation wrapped into a gift.
	c.CPU = Counted(n.NodeResources.Cpu.CpuShares)
	c.MemoryMB = Counted(n.NodeResources.Memory.MemoryMB)
	c.DiskMB = Counted(n.NodeResources.Disk.DiskMB)
	if r := n.ReservedResources; r != nil {
		c.CPU = max(0, c.CPU-CountedU(r.Cpu.CpuShares))
		c.MemoryMB = max(0, c.MemoryMB-CountedU(r.Memory.MemoryMB))
		c.DiskMB = max(0, c.DiskMB-CountedU(r.Disk.DiskMB))
	}
	c.MemoryMaxMB = c.MemoryMB
	return c
}
