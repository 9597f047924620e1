package structs

import (
	"reflect"
	"testing"
)

func TestParsePortSpec(t *testing.T) {
	cases := []struct {
		spec    string
		want    []uint64
		wantErr bool
	}{
		{"", []uint64{}, false},
		{"22", []uint64{22}, false},
		{"22,80,8000-8003", []uint64{22, 80, 8000, 8001, 8002, 8003}, false},
		{" 80 , 22,80 ", []uint64{22, 80}, false},
		{"65535", []uint64{65535}, false},
		{"65536", nil, true},
		{"abc", nil, true},
		{"10-5", nil, true},
		{"1-x", nil, true},
	}
	for _, c := range cases {
		got, err := ParsePortSpec(c.spec)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: err = %v, wantErr %v", c.spec, err, c.wantErr)
			continue
		}
		if !c.wantErr && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.spec, got, c.want)
		}
	}
}

func fitNode() *Node {
	return &Node{
		ID: "n1",
		NodeResources: &NodeResources{
			Cpu:      NodeCpuResources{CpuShares: 4000},
			Memory:   NodeMemoryResources{MemoryMB: 8192},
			Disk:     NodeDiskResources{DiskMB: 10000},
			Networks: []*NetworkResource{{IP: "10.0.0.1"}},
		},
		ReservedResources: &NodeReservedResources{
			Cpu:    NodeReservedCpuResources{CpuShares: 1000},
			Memory: NodeReservedMemoryResources{MemoryMB: 192},
		},
	}
}

func fitAlloc(id string, cpu, mem, disk int64, ports ...int) *Allocation {
	a := &Allocation{ID: id, ClientStatus: AllocClientStatusRunning, AllocatedResources: &AllocatedResources{
		Tasks: map[string]*AllocatedTaskResources{"t": {
			Cpu:    AllocatedCpuResources{CpuShares: cpu},
			Memory: AllocatedMemoryResources{MemoryMB: mem},
		}},
		Shared: AllocatedSharedResources{DiskMB: disk},
	}}
	for _, p := range ports {
		a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports,
			AllocatedPortMapping{Label: "p", Value: p, HostIP: "10.0.0.1"})
	}
	return a
}

func TestAllocsFit(t *testing.T) {
	failed := fitAlloc("f", 3000, 100, 0)
	failed.ClientStatus = AllocClientStatusFailed
	cases := []struct {
		name    string
		maxA    int
		allocs  []*Allocation
		fit     bool
		dim     string
		usedCPU int64
	}{
		{"empty", 0, nil, true, "", 0},
		{"fits exactly after reserve", 0, []*Allocation{fitAlloc("a", 1500, 4000, 100), fitAlloc("b", 1500, 4000, 100)}, true, "", 3000},
		{"cpu exhausted by reserve", 0, []*Allocation{fitAlloc("a", 3001, 1, 0)}, false, "cpu", 3001},
		{"memory", 0, []*Allocation{fitAlloc("a", 10, 8001, 0)}, false, "memory", 10},
		{"disk", 0, []*Allocation{fitAlloc("a", 10, 10, 10001)}, false, "disk", 10},
		{"client terminal ignored", 0, []*Allocation{failed, fitAlloc("a", 3000, 1, 0)}, true, "", 3000},
		{"max allocs", 1, []*Allocation{fitAlloc("a", 1, 1, 0), fitAlloc("b", 1, 1, 0)}, false, "max allocs", 2},
		{"port collision", 0, []*Allocation{fitAlloc("a", 1, 1, 0, 25000), fitAlloc("b", 1, 1, 0, 25000)}, false, "network: port collision", 2},
		{"distinct ports", 0, []*Allocation{fitAlloc("a", 1, 1, 0, 25000), fitAlloc("b", 1, 1, 0, 25001)}, true, "", 2},
	}
	for _, c := range cases {
		n := fitNode()
		n.NodeMaxAllocs = c.maxA
		fit, dim, used, err := AllocsFit(n, c.allocs, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if fit != c.fit || dim != c.dim || used.CPU != c.usedCPU {
			t.Errorf("%s: got fit=%v dim=%q cpu=%d, want fit=%v dim=%q cpu=%d", c.name, fit, dim, used.CPU, c.fit, c.dim, c.usedCPU)
		}
	}
	// A caller-supplied index skips the port check.
	idx := NewNetworkIndex()
	if fit, _, _, _ := AllocsFit(fitNode(), []*Allocation{fitAlloc("a", 1, 1, 0, 25000), fitAlloc("b", 1, 1, 0, 25000)}, idx); !fit {
		t.Fatal("with netIdx the port check must be skipped")
	}
	// Ports held through task or shared networks (not Shared.Ports) are
	// still checked: the port-less shortcut must not skip them.
	viaTask := func(id string) *Allocation {
		a := fitAlloc(id, 1, 1, 0)
		a.AllocatedResources.Tasks = map[string]*AllocatedTaskResources{"t": {Networks: []*NetworkResource{
			{IP: "10.0.0.1", DynamicPorts: []Port{{Label: "http", Value: 25000}}}}}}
		return a
	}
	viaShared := func(id string) *Allocation {
		a := fitAlloc(id, 1, 1, 0)
		a.AllocatedResources.Shared.Networks = []*NetworkResource{
			{IP: "10.0.0.1", ReservedPorts: []Port{{Label: "http", Value: 25000}}}}
		return a
	}
	for name, pair := range map[string][]*Allocation{
		"task networks":   {viaTask("a"), viaTask("b")},
		"shared networks": {viaShared("a"), viaShared("b")},
		"task and shared": {viaTask("a"), viaShared("b")},
	} {
		if fit, dim, _, _ := AllocsFit(fitNode(), pair, nil); fit || dim != "network: port collision" {
			t.Errorf("%s: fit=%v dim=%q, want a port collision", name, fit, dim)
		}
	}
	// A node with a broken reserved port spec is an error, not a silent fit.
	bad := fitNode()
	bad.ReservedResources.Networks.ReservedHostPorts = "x"
	if _, _, _, err := AllocsFit(bad, nil, nil); err == nil {
		t.Fatal("want error for bad reserved spec")
	}
	if _, _, _, err := AllocsFit(bad, []*Allocation{fitAlloc("a", 1, 1, 0)}, nil); err == nil {
		t.Fatal("want error for bad reserved spec with port-less allocations too")
	}
}
