package feasible

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func u64(v uint64) *uint64 { return &v }

// devGroup is a device group with n healthy instances "<name>-<i>".
func devGroup(vendor, typ, name string, n int, attrs map[string]string) *structs.NodeDeviceResource {
	d := &structs.NodeDeviceResource{Vendor: vendor, Type: typ, Name: name, Attributes: map[string]*structs.Attribute{}}
	for i := 0; i < n; i++ {
		d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("%s-%d", name, i), Healthy: true})
	}
	for k, v := range attrs {
		d.Attributes[k] = structs.ParseDeviceAttribute(v)
	}
	return d
}

func devNode(id string, groups ...*structs.NodeDeviceResource) *structs.Node {
	return &structs.Node{ID: id, Datacenter: "dc1", Attributes: map[string]string{},
		NodeResources: &structs.NodeResources{
			Cpu:     structs.NodeCpuResources{CpuShares: 4000},
			Memory:  structs.NodeMemoryResources{MemoryMB: 4096},
			Disk:    structs.NodeDiskResources{DiskMB: 10000},
			Devices: groups,
		}}
}

func devGroupTG(asks ...*structs.RequestedDevice) *structs.TaskGroup {
	return &structs.TaskGroup{Name: "g", Count: 1, Tasks: []*structs.Task{{
		Name: "t", Driver: "exec", Resources: &structs.Resources{CPU: 100, MemoryMB: 64, Devices: asks},
	}}}
}

func TestDeviceChecker(t *testing.T) {
	node := devNode("n1",
		devGroup("nvidia", "gpu", "1080ti", 2, map[string]string{"memory": "11 GiB", "cuda": "6.1"}),
		devGroup("drover", "gpu", "fake-1", 4, map[string]string{"memory": "8 GiB"}),
		devGroup("intel", "fpga", "arria", 1, nil),
	)
	con := func(l, op, r string) *structs.Constraint {
		return &structs.Constraint{LTarget: l, Operand: op, RTarget: r}
	}
	cases := []struct {
		name string
		asks []*structs.RequestedDevice
		want bool
	}{
		{"no asks", nil, true},
		{"type only", []*structs.RequestedDevice{{Name: "gpu"}}, true},
		{"vendor/type", []*structs.RequestedDevice{{Name: "intel/fpga"}}, true},
		{"vendor/type/name", []*structs.RequestedDevice{{Name: "drover/gpu/fake-1", Count: u64(4)}}, true},
		{"wrong vendor", []*structs.RequestedDevice{{Name: "amd/gpu"}}, false},
		{"wrong name", []*structs.RequestedDevice{{Name: "nvidia/gpu/2080"}}, false},
		{"type is not a name", []*structs.RequestedDevice{{Name: "1080ti"}}, false},
		{"count above every group", []*structs.RequestedDevice{{Name: "gpu", Count: u64(5)}}, false},
		{"uint64-max count (stored before validation) fits nowhere", []*structs.RequestedDevice{{Name: "gpu", Count: u64(1<<64 - 1)}}, false},
		{"count fits only the larger group", []*structs.RequestedDevice{{Name: "gpu", Count: u64(3)}}, true},
		{"two asks drain one group", []*structs.RequestedDevice{{Name: "intel/fpga"}, {Name: "fpga"}}, false},
		{"memory >= 8 GiB", []*structs.RequestedDevice{{Name: "gpu", Count: u64(3),
			Constraints: []*structs.Constraint{con("${device.attr.memory}", ">=", "8 GiB")}}}, true},
		{"memory > 8 GiB excludes the 4-instance group", []*structs.RequestedDevice{{Name: "gpu", Count: u64(3),
			Constraints: []*structs.Constraint{con("${device.attr.memory}", ">", "8 GiB")}}}, false},
		{"units convert: 11 GiB > 10000 MiB", []*structs.RequestedDevice{{Name: "gpu",
			Constraints: []*structs.Constraint{con("${device.attr.memory}", ">", "10000 MiB"), con("${device.vendor}", "=", "nvidia")}}}, true},
		{"units convert: 8 GiB = 8192 MiB", []*structs.RequestedDevice{{Name: "drover/gpu",
			Constraints: []*structs.Constraint{con("${device.attr.memory}", "=", "8192 MiB")}}}, true},
		{"decimal GB is not GiB", []*structs.RequestedDevice{{Name: "drover/gpu",
			Constraints: []*structs.Constraint{con("${device.attr.memory}", "=", "8 GB")}}}, false},
		{"incomparable units", []*structs.RequestedDevice{{Name: "gpu",
			Constraints: []*structs.Constraint{con("${device.attr.memory}", ">", "1 GHz")}}}, false},
		{"model and type targets", []*structs.RequestedDevice{{Name: "gpu",
			Constraints: []*structs.Constraint{con("${device.model}", "regexp", "^fake"), con("${device.type}", "=", "gpu")}}}, true},
		{"missing attribute", []*structs.RequestedDevice{{Name: "gpu",
			Constraints: []*structs.Constraint{con("${device.attr.clock}", ">", "1")}}}, false},
		{"is_not_set on missing attribute", []*structs.RequestedDevice{{Name: "fpga",
			Constraints: []*structs.Constraint{con("${device.attr.memory}", "is_not_set", "")}}}, true},
		{"version on attribute", []*structs.RequestedDevice{{Name: "gpu",
			Constraints: []*structs.Constraint{con("${device.attr.cuda}", "version", ">= 6.0")}}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := NewContext(newTestState(node), nil, nil, 1, 2)
			ok, reason := (&deviceChecker{ctx: ctx, asks: c.asks}).Feasible(node)
			if ok != c.want {
				t.Fatalf("Feasible = %v (%q), want %v", ok, reason, c.want)
			}
			if !ok && reason != "missing devices" {
				t.Fatalf("reason = %q", reason)
			}
		})
	}
	if ok, _ := (&deviceChecker{ctx: NewContext(nil, nil, nil, 1, 2), asks: []*structs.RequestedDevice{{Name: "gpu"}}}).Feasible(devNode("bare")); ok {
		t.Fatal("node without devices passed a device ask")
	}
}

func TestDeviceAllocatorNeverGivesAnInstanceTwice(t *testing.T) {
	node := devNode("n1", devGroup("drover", "gpu", "fake-1", 4, map[string]string{"memory": "8 GiB"}))
	held := &structs.Allocation{ID: "old", NodeID: "n1", ClientStatus: structs.AllocClientStatusRunning,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Devices: []*structs.AllocatedDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1", DeviceIDs: []string{"fake-1-1"}}}},
		}}}
	done := &structs.Allocation{ID: "done", NodeID: "n1", ClientStatus: structs.AllocClientStatusComplete,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Devices: []*structs.AllocatedDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1", DeviceIDs: []string{"fake-1-0"}}}},
		}}}
	cases := []struct {
		name    string
		asks    []*structs.RequestedDevice
		want    [][]string // instance IDs per ask
		exhaust string
	}{
		{"one", []*structs.RequestedDevice{{Name: "gpu"}}, [][]string{{"fake-1-0"}}, ""},
		{"rest of the node", []*structs.RequestedDevice{{Name: "drover/gpu/fake-1", Count: u64(3)}}, [][]string{{"fake-1-0", "fake-1-2", "fake-1-3"}}, ""},
		{"two asks get distinct instances", []*structs.RequestedDevice{{Name: "gpu", Count: u64(2)}, {Name: "gpu"}},
			[][]string{{"fake-1-0", "fake-1-2"}, {"fake-1-3"}}, ""},
		{"count > available", []*structs.RequestedDevice{{Name: "gpu", Count: u64(4)}}, nil, `devices: no 4 unused instance(s) of "gpu"`},
		{"second ask exhausted", []*structs.RequestedDevice{{Name: "gpu", Count: u64(2)}, {Name: "gpu", Count: u64(2)}}, nil, `devices: no 2 unused instance(s) of "gpu"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := NewContext(newTestState(node), nil, nil, 1, 2)
			da := newDeviceAllocator(ctx, node, []*structs.Allocation{held, done})
			var got [][]string
			for _, ask := range c.asks {
				grant, dim := da.assign(ask)
				if grant == nil {
					if dim != c.exhaust {
						t.Fatalf("dimension = %q, want %q", dim, c.exhaust)
					}
					return
				}
				if grant.Vendor != "drover" || grant.Type != "gpu" || grant.Name != "fake-1" {
					t.Fatalf("grant names %s/%s/%s", grant.Vendor, grant.Type, grant.Name)
				}
				got = append(got, grant.DeviceIDs)
			}
			if c.exhaust != "" {
				t.Fatalf("placed %v, want exhausted %q", got, c.exhaust)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("instances = %v, want %v", got, c.want)
			}
		})
	}
}

func TestDeviceAffinityPicksGroupAndScores(t *testing.T) {
	small := devGroup("drover", "gpu", "small", 2, map[string]string{"memory": "4 GiB"})
	big := devGroup("drover", "gpu", "big", 2, map[string]string{"memory": "16 GiB"})
	node := devNode("n1", small, big)
	ask := &structs.RequestedDevice{Name: "gpu", Affinities: []*structs.Affinity{
		{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "12 GiB", Weight: w(50)},
	}}
	ctx := NewContext(newTestState(node), nil, nil, 1, 2)
	da := newDeviceAllocator(ctx, node, nil)
	grant, _ := da.assign(ask)
	if grant == nil || grant.Name != "big" {
		t.Fatalf("grant = %+v, want the 16 GiB group", grant)
	}
	if s := da.affinityScore(); s != 1 {
		t.Fatalf("affinity score = %v, want 1", s)
	}

	// Through the bin-packer: the score shows up as "devices".
	tg := devGroupTG(ask)
	b := &BinPackIterator{ctx: ctx, source: rankList(node), tg: tg}
	opt := b.Next()
	if opt == nil {
		t.Fatal("not placed")
	}
	if opt.ScoreMap()["devices"] != 1 {
		t.Fatalf("ScoreMeta = %v, want devices=1", opt.ScoreMap())
	}
	if d := opt.TaskResources["t"].Devices; len(d) != 1 || d[0].Name != "big" {
		t.Fatalf("task devices = %+v", d)
	}
}

func TestBinPackDeviceExhaustion(t *testing.T) {
	node := devNode("n1", devGroup("drover", "gpu", "fake-1", 2, nil))
	st := newTestState(node)
	for i := 0; i < 2; i++ {
		st.allocs = append(st.allocs, &structs.Allocation{ID: fmt.Sprint("a", i), NodeID: "n1",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
			AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
				"t": {Devices: []*structs.AllocatedDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1", DeviceIDs: []string{fmt.Sprint("fake-1-", i)}}}},
			}}})
	}
	ctx := NewContext(st, nil, nil, 1, 2)
	b := &BinPackIterator{ctx: ctx, source: rankList(node), tg: devGroupTG(&structs.RequestedDevice{Name: "gpu"})}
	if opt := b.Next(); opt != nil {
		t.Fatalf("placed on a node whose instances are all held: %+v", opt.TaskResources["t"].Devices)
	}
	m := ctx.Metrics()
	var keys []string
	for k := range m.DimensionExhausted {
		keys = append(keys, k)
	}
	if m.NodesExhausted != 1 || !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "devices: ") }) {
		t.Fatalf("NodesExhausted=%d DimensionExhausted=%v", m.NodesExhausted, m.DimensionExhausted)
	}
}

func TestComputedClassSeesDevices(t *testing.T) {
	a := devNode("a", devGroup("drover", "gpu", "fake-1", 4, map[string]string{"memory": "8 GiB"}))
	b := devNode("b", devGroup("drover", "gpu", "fake-1", 4, map[string]string{"memory": "8 GiB"}))
	c := devNode("c", devGroup("drover", "gpu", "fake-1", 4, map[string]string{"memory": "16 GiB"}))
	d := devNode("d", devGroup("drover", "gpu", "fake-1", 3, map[string]string{"memory": "8 GiB"}))
	for _, n := range []*structs.Node{a, b, c, d} {
		n.ComputeClass()
	}
	b.NodeResources.Devices[0].Instances[0].ID = "other" // instance IDs are unique, not class
	b.ComputeClass()
	if a.ComputedClass != b.ComputedClass {
		t.Fatal("same devices, different class")
	}
	if a.ComputedClass == c.ComputedClass || a.ComputedClass == d.ComputedClass {
		t.Fatal("different device attributes or healthy counts share a class: the device checker memo would be wrong")
	}
}
