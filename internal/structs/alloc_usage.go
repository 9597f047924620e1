package structs

// AllocsUsage is what a set of allocations holds on a node: the summed
// resources of those that are not client-terminal (a finished allocation
// holds nothing) and how many they are, plus whether any of them holds
// ports or networks, or devices. Totals answer the capacity question by
// arithmetic; ports and devices need the exact checks (a port index,
// device instances) on top. The flags may stay set after the allocation
// that set them is removed: they only cost those exact checks.
type AllocsUsage struct {
	Used    ComparableResources
	Live    int
	Ports   bool
	Devices bool
}

// SumAllocs counts allocs.
func SumAllocs(allocs []*Allocation) AllocsUsage {
	var u AllocsUsage
	for _, a := range allocs {
		u.Add(a)
	}
	return u
}

// Add counts a: its comparable resources (as AllocatedResources.Comparable
// sums them, saturating: resources_sum.go) and whether it holds ports, networks or devices, in one walk
// over its tasks.
func (u *AllocsUsage) Add(a *Allocation) {
	if a == nil || a.ClientTerminalStatus() {
		return
	}
	u.Live++
	ar := a.AllocatedResources
	if ar == nil {
		return
	}
	if len(ar.Shared.Ports) > 0 || len(ar.Shared.Networks) > 0 {
		u.Ports = true
	}
	for _, t := range ar.Tasks {
		if t == nil {
			continue
		}
		u.Used.addTask(t)
		if len(t.Networks) > 0 {
			u.Ports = true
		}
		if len(t.Devices) > 0 {
			u.Devices = true
		}
	}
	u.Used.DiskMB = SatAdd(u.Used.DiskMB, Counted(ar.Shared.DiskMB))
}

// Remove uncounts a, which was counted.
func (u *AllocsUsage) Remove(a *Allocation) {
	if a == nil || a.ClientTerminalStatus() {
		return
	}
	u.Live--
	u.Used.Sub(a.AllocatedResources.Comparable())
}

// FitsTotals checks the totals against node: its allocation limit and its
// cpu, memory and disk. dimension names what ran out ("max allocs", "cpu",
// "memory", "disk").
func (u AllocsUsage) FitsTotals(node *Node) (bool, string) {
	if node.NodeMaxAllocs > 0 && u.Live > node.NodeMaxAllocs {
		return false, "max allocs"
	}
	return node.Comparable().Superset(u.Used)
}
