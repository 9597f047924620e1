package scheduler

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// gpuNode is mockNode with four fake GPUs of 8 GiB.
func gpuNode(id string) *structs.Node {
	n := mockNode(id)
	d := &structs.NodeDeviceResource{Vendor: "drover", Type: "gpu", Name: "fake-1",
		Attributes: map[string]*structs.Attribute{"memory": structs.ParseDeviceAttribute("8 GiB")}}
	for i := 0; i < 4; i++ {
		d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("%s-gpu-%d", id, i), Healthy: true})
	}
	n.NodeResources.Devices = []*structs.NodeDeviceResource{d}
	n.ComputeClass()
	return n
}

func gpuJob(id string, count int) *structs.Job {
	job := mockJob(id, count)
	one := uint64(1)
	job.TaskGroups[0].Networks = nil
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*structs.RequestedDevice{{
		Name: "drover/gpu", Count: &one,
		Constraints: []*structs.Constraint{{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "4 GiB"}},
	}}
	return job
}

// Four allocations asking one GPU each fill a node with four; each holds a
// different instance. A fifth is blocked, and the blocked eval says the
// devices ran out.
func TestDevicesFourFitFifthBlocked(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(gpuNode("n1"))
	job := gpuJob("train", 4)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))

	allocs := liveAllocs(h, "train")
	if len(allocs) != 4 {
		t.Fatalf("placed %d, want 4", len(allocs))
	}
	seen := map[string]string{}
	for _, a := range allocs {
		devs := a.AllocatedResources.Tasks["server"].Devices
		if len(devs) != 1 || len(devs[0].DeviceIDs) != 1 || devs[0].Name != "fake-1" {
			t.Fatalf("%s devices = %+v", a.Name, devs)
		}
		id := devs[0].DeviceIDs[0]
		if other, dup := seen[id]; dup {
			t.Fatalf("instance %s given to %s and %s", id, other, a.Name)
		}
		seen[id] = a.Name
	}
	if err := h.CheckInvariants(); err != nil {
		t.Fatal(err)
	}

	more := gpuJob("more", 1)
	h.State.UpsertJob(more)
	process(t, h, mockEval(more))
	if got := len(liveAllocs(h, "more")); got != 0 {
		t.Fatalf("fifth alloc placed on a node with no free GPU")
	}
	if len(h.CreateEvals) != 1 {
		t.Fatalf("blocked evals = %d, want 1", len(h.CreateEvals))
	}
	m := h.CreateEvals[0].FailedTGAllocs["web"]
	if m == nil || m.NodesExhausted != 1 || m.DimensionExhausted[`devices: no 1 unused instance(s) of "drover/gpu"`] != 1 {
		t.Fatalf("blocked eval metrics = %+v", m)
	}
}

// A node without matching devices is filtered (not exhausted), by name.
func TestDevicesMissingFiltersNode(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("plain"))
	job := gpuJob("train", 1)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	m := lastEval(t, h).FailedTGAllocs["web"]
	if m == nil || m.ConstraintFiltered["missing devices"] != 1 {
		t.Fatalf("metrics = %+v", m)
	}
}

// The harness's applier (like the server's) refuses a plan that hands out
// an instance another alloc already holds, even if a scheduler proposed it.
func TestDevicesDoubleBookedPlanRejected(t *testing.T) {
	h := NewHarness()
	node := gpuNode("n1")
	h.State.UpsertNode(node)
	job := gpuJob("train", 1)
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	first := liveAllocs(h, "train")[0]

	dup := *first
	dup.ID, dup.Name = "dup", "train.web[1]"
	plan := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{"n1": {&dup}}}
	res, _, err := h.SubmitPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RejectedNodes) != 1 || len(res.NodeAllocation) != 0 {
		t.Fatalf("double-booking plan committed: %+v", res)
	}
}
