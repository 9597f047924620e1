package feasible

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func sizedNode(id string, cpu, mem int64, maxAllocs int) *structs.Node {
	return &structs.Node{ID: id, Datacenter: "dc1", NodeMaxAllocs: maxAllocs,
		Attributes: map[string]string{"unique.network.ip-address": "10.0.0.1"},
		NodeResources: &structs.NodeResources{
			Cpu: structs.NodeCpuResources{CpuShares: cpu}, Memory: structs.NodeMemoryResources{MemoryMB: mem},
			Disk: structs.NodeDiskResources{DiskMB: 10_000}},
		ReservedResources: &structs.NodeReservedResources{Cpu: structs.NodeReservedCpuResources{CpuShares: 100}}}
}

func sizedAlloc(id, node string, cpu, mem int64, client string) *structs.Allocation {
	return &structs.Allocation{ID: id, Namespace: "default", JobID: "other", TaskGroup: "g", NodeID: node,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: client,
		AllocatedResources: &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{"t": {
				Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: mem}}},
			Shared: structs.AllocatedSharedResources{DiskMB: 100}}}
}

// The arithmetic fit of a group without ports or devices decides exactly
// as the fit on a fresh port index does: same outcome, dimension, demand
// and granted resources, beside existing, stopped, client-terminal and
// planned allocations.
func TestBinPack_PlainFitMatchesIndexed(t *testing.T) {
	nodes := []*structs.Node{
		sizedNode("roomy", 8000, 16000, 0),
		sizedNode("tight-cpu", 1700, 16000, 0),
		sizedNode("tight-mem", 8000, 1000, 0),
		sizedNode("max-allocs", 8000, 16000, 2),
		sizedNode("bad-net", 8000, 16000, 0),
		sizedNode("stopped-frees", 1700, 16000, 0),
	}
	nodes[4].ReservedResources.Networks.ReservedHostPorts = "nope"
	st := newTestState(nodes...)
	for _, n := range nodes {
		st.allocs = append(st.allocs,
			sizedAlloc(n.ID+"-a", n.ID, 500, 512, structs.AllocClientStatusRunning),
			sizedAlloc(n.ID+"-dead", n.ID, 4000, 4000, structs.AllocClientStatusFailed))
	}
	plan := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{}, NodeUpdate: map[string][]*structs.Allocation{}}
	plan.NodeAllocation["max-allocs"] = []*structs.Allocation{sizedAlloc("p1", "max-allocs", 10, 10, structs.AllocClientStatusPending)}
	plan.NodeAllocation["tight-cpu"] = []*structs.Allocation{sizedAlloc("p2", "tight-cpu", 200, 10, structs.AllocClientStatusPending)}
	plan.NodeUpdate["stopped-frees"] = []*structs.Allocation{st.allocs[10]}
	ctx := NewContext(st, plan, nil, 1, 2)

	tg := &structs.TaskGroup{Name: "web", Count: 1, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 300},
		Tasks: []*structs.Task{
			{Name: "a", Resources: &structs.Resources{CPU: 600, MemoryMB: 600, MemoryMaxMB: 900}},
			{Name: "b", Resources: &structs.Resources{CPU: 500, MemoryMB: 100}},
			{Name: "c"},
		}}
	b := &BinPackIterator{ctx: ctx, tg: tg, oversub: true}
	ask := b.groupAsk()
	if !ask.plain {
		t.Fatal("a group without networks and devices is not plain")
	}
	outcomes := map[string]int{}
	for _, n := range nodes {
		u, err := ctx.proposedUsage(n)
		if err != nil {
			t.Fatal(err)
		}
		if u.Ports || u.Devices {
			t.Fatalf("%s: allocations without ports or devices flagged", n.ID)
		}
		plain := b.tryFitPlain(n, u, ask)
		indexed := b.tryFitIndexed(n, u)
		outcomes[fmt.Sprintf("%v %s", plain.ok, plain.dim)]++
		if plain.ok != indexed.ok || plain.dim != indexed.dim || plain.used != indexed.used ||
			plain.preemptible != indexed.preemptible || !reflect.DeepEqual(plain.shared, indexed.shared) ||
			len(plain.proposed) != len(indexed.proposed) {
			t.Errorf("%s: plain %+v, indexed %+v", n.ID, plain, indexed)
		}
		// Recounting from scratch gives the cached sums.
		if fresh := usageOf(u.allocs); fresh.Used != u.Used || fresh.Live != u.Live {
			t.Errorf("%s: cached usage %+v/%d, recounted %+v/%d", n.ID, u.Used, u.Live, fresh.Used, fresh.Live)
		}
		if plain.ok {
			p := &RankedNode{TaskResources: plain.tasks, plainTasks: plain.plainTasks, Shared: plain.shared, offers: plain.offers}
			x := &RankedNode{TaskResources: indexed.tasks, plainTasks: indexed.plainTasks, Shared: indexed.shared, offers: indexed.offers}
			b.complete(p)
			b.complete(x)
			if !reflect.DeepEqual(p.TaskResources, x.TaskResources) || !reflect.DeepEqual(p.Shared, x.Shared) {
				t.Errorf("%s: granted %v %+v, indexed %v %+v", n.ID, p.TaskResources, p.Shared, x.TaskResources, x.Shared)
			}
			a := p.TaskResources["a"]
			if len(p.TaskResources) != 3 || a.Cpu.CpuShares != 600 || a.Memory.MemoryMB != 600 || a.Memory.MemoryMaxMB != 900 ||
				p.Shared.DiskMB != 300 {
				t.Errorf("%s: granted %v %+v", n.ID, p.TaskResources, p.Shared)
			}
		}
	}
	// roomy, tight-mem (memory), max-allocs, bad-net, tight-cpu (cpu),
	// stopped-frees: every outcome appears.
	for _, want := range []string{"true ", "false cpu", "false memory", "false max allocs", "false network: invalid node network"} {
		if outcomes[want] == 0 {
			t.Errorf("no node had outcome %q: %v", want, outcomes)
		}
	}
}
