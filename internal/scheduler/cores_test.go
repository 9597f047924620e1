package scheduler

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// coreNode is mockNode with 4 cores of 1000 MHz, core 0 reserved by the
// operator.
func coreNode(id string) *structs.Node {
	n := mockNode(id)
	n.NodeResources.Cpu = structs.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4, ReservableCpuCores: []uint16{0, 1, 2, 3}}
	n.ReservedResources.Cpu.ReservedCpuCores = []uint16{0}
	n.ComputeClass()
	return n
}

func coresJob(id string, count, cores int) *structs.Job {
	job := mockJob(id, count)
	job.TaskGroups[0].Networks = nil
	r := job.TaskGroups[0].Tasks[0].Resources
	r.CPU, r.Cores = 0, cores
	return job
}

// Allocations asking `cores = 1` each get a different reservable core (never
// the operator's reserved one), counted at the node's MHz per core; once
// the free cores are gone, the next is blocked on "cores".
func TestCoresReservedPerAllocation(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(coreNode("n1"))
	job := coresJob("pinned", 3, 1)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))

	allocs := liveAllocs(h, "pinned")
	if len(allocs) != 3 {
		t.Fatalf("placed %d, want 3", len(allocs))
	}
	seen := map[uint16]string{}
	for _, a := range allocs {
		c := a.AllocatedResources.Tasks["server"].Cpu
		if len(c.ReservedCores) != 1 || c.ReservedCores[0] == 0 || c.CpuShares != 1000 {
			t.Fatalf("%s cpu = %+v, want one core other than 0 at 1000 MHz", a.Name, c)
		}
		if other, dup := seen[c.ReservedCores[0]]; dup {
			t.Fatalf("core %d given to %s and %s", c.ReservedCores[0], other, a.Name)
		}
		seen[c.ReservedCores[0]] = a.Name
	}
	if err := h.CheckInvariants(); err != nil {
		t.Fatal(err)
	}

	more := coresJob("more", 1, 1)
	h.State.UpsertJob(more)
	process(t, h, mockEval(more))
	if got := len(liveAllocs(h, "more")); got != 0 {
		t.Fatalf("an allocation was placed on a node with no free core")
	}
	if len(h.CreateEvals) != 1 {
		t.Fatalf("blocked evals = %d, want 1", len(h.CreateEvals))
	}
	if m := h.CreateEvals[0].FailedTGAllocs["web"]; m == nil || m.DimensionExhausted["cores"] != 1 {
		t.Fatalf("blocked eval metrics = %+v", m)
	}
}

// Two allocations holding the same core never fit (the plan applier's
// check, against concurrent schedulers).
func TestAllocsFitRefusesSharedCore(t *testing.T) {
	n := coreNode("n1")
	mk := func(id string, core uint16) *structs.Allocation {
		return &structs.Allocation{ID: id, AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 1000, ReservedCores: []uint16{core}}}}}}
	}
	if ok, dim, _, _ := structs.AllocsFit(n, []*structs.Allocation{mk("a", 1), mk("b", 2)}, nil); !ok {
		t.Fatalf("distinct cores do not fit: %s", dim)
	}
	if ok, dim, _, _ := structs.AllocsFit(n, []*structs.Allocation{mk("a", 1), mk("b", 1)}, nil); ok || dim != structs.DimensionCores {
		t.Fatalf("a shared core fits (%v, %q)", ok, dim)
	}
	if ok, dim, _, _ := structs.AllocsFit(n, []*structs.Allocation{mk("a", 0)}, nil); ok || dim != structs.DimensionCores {
		t.Fatalf("the operator's reserved core fits (%v, %q)", ok, dim)
	}
}

// A system job asking cores gets a core on every node, beside a service
// allocation already holding one there.
func TestCoresSystemJobBesideService(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(coreNode("n1"))
	h.State.UpsertNode(coreNode("n2"))
	svc := coresJob("svc", 1, 1)
	h.State.UpsertJob(svc)
	process(t, h, mockEval(svc))
	sys := coresJob("sys", 1, 2)
	sys.Type = structs.JobTypeSystem
	h.State.UpsertJob(sys)
	process(t, h, mockEval(sys))

	held := map[string]map[uint16]string{}
	for _, id := range []string{"svc", "sys"} {
		for _, a := range liveAllocs(h, id) {
			if held[a.NodeID] == nil {
				held[a.NodeID] = map[uint16]string{}
			}
			for _, c := range a.AllocatedResources.Tasks["server"].Cpu.ReservedCores {
				if other, dup := held[a.NodeID][c]; dup || c == 0 {
					t.Fatalf("node %s core %d: %s and %s", a.NodeID, c, other, a.Name)
				}
				held[a.NodeID][c] = a.Name
			}
		}
	}
	if got := len(liveAllocs(h, "sys")); got != 2 {
		t.Fatalf("system allocs %d, want one per node", got)
	}
	if total := len(held["n1"]) + len(held["n2"]); total != 5 {
		t.Fatalf("cores held %v, want 5 (1 service + 2 system on each node)", held)
	}
	if err := h.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
