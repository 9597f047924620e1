package server

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// testGPUNode registers a ready node with instances fake GPUs.
func testGPUNode(t *testing.T, s *Server, instances int) *structs.Node {
	t.Helper()
	n := testNode(t, s, 8000, 8192)
	n, err := s.State().NodeByID(nil, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	n = n.Copy()
	d := &structs.NodeDeviceResource{Vendor: "drover", Type: "gpu", Name: "fake-1"}
	for i := 0; i < instances; i++ {
		d.Instances = append(d.Instances, &structs.NodeDevice{ID: fmt.Sprintf("gpu-%d", i), Healthy: true})
	}
	n.NodeResources.Devices = []*structs.NodeDeviceResource{d}
	n.ComputeClass()
	var resp structs.NodeUpdateResponse
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n}, &resp); err != nil {
		t.Fatal(err)
	}
	return n
}

func deviceIDsOn(t *testing.T, s *Server, nodeID string) map[string]string {
	t.Helper()
	live, err := s.State().AllocsByNodeTerminal(nil, nodeID, false)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, a := range live {
		for _, tr := range a.AllocatedResources.Tasks {
			for _, d := range tr.Devices {
				for _, id := range d.DeviceIDs {
					if other, dup := held[id]; dup {
						t.Fatalf("instance %s held by %s and %s", id, other, a.ID)
					}
					held[id] = a.ID
				}
			}
		}
	}
	return held
}

// Two plans computed from the same snapshot both hand instance gpu-0 to a
// new allocation. The applier verifies them one after the other against
// the newest state: exactly one commits, the other's node is rejected.
func TestPlanApplierRejectsDoubleBookedDevice(t *testing.T) {
	s := testServer(t, nil)
	node := testGPUNode(t, s, 1)
	job := testJob("gpu", 0)
	// The registration's own pass (count 0) must be over before the
	// hand-made plans commit: run after them, it stops their allocation
	// as one too many.
	if resp := register(t, s, job); resp.EvalID != "" {
		evalDone(t, s, resp.EvalID)
	}
	stored, err := s.State().JobByID(nil, "default", "gpu")
	if err != nil || stored == nil {
		t.Fatalf("job: %v", err)
	}

	plan := func() *structs.Plan {
		a := &structs.Allocation{ID: uuid.NewString(), Namespace: "default", JobID: "gpu", Job: stored,
			TaskGroup: "web", Name: "gpu.web[0]", NodeID: node.ID, DesiredStatus: structs.AllocDesiredStatusRun,
			ClientStatus: structs.AllocClientStatusPending,
			AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
				"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64},
					Devices: []*structs.AllocatedDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1", DeviceIDs: []string{"gpu-0"}}}},
			}}}
		return &structs.Plan{Priority: 50, Job: stored, NodeAllocation: map[string][]*structs.Allocation{node.ID: {a}}}
	}

	var wg sync.WaitGroup
	results := make([]*structs.PlanResult, 2)
	errs := make([]error, 2)
	for i := range results {
		p, err := s.planQueue.Enqueue(plan())
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = p.Wait()
		}()
	}
	wg.Wait()
	committed := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("plan %d: %v", i, errs[i])
		}
		if len(r.NodeAllocation[node.ID]) == 1 {
			committed++
		} else if len(r.RejectedNodes) != 1 {
			t.Fatalf("plan %d neither committed nor rejected: %+v", i, r)
		}
	}
	if committed != 1 {
		t.Fatalf("%d plans committed gpu-0, want exactly 1", committed)
	}
	if held := deviceIDsOn(t, s, node.ID); len(held) != 1 {
		t.Fatalf("held instances = %v", held)
	}
}

// Many jobs asking one GPU each race through concurrent schedulers onto a
// node with three: three are placed on distinct instances, every eval
// ends, and no instance is ever held twice.
func TestConcurrentSchedulersNeverDoubleBookDevices(t *testing.T) {
	s := testServer(t, func(cfg *Config) { cfg.NumSchedulers = 4 })
	node := testGPUNode(t, s, 3)
	one := uint64(1)
	var evals []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := testJob(fmt.Sprintf("gpu-%d", i), 1)
			job.TaskGroups[0].Tasks[0].Resources.Devices = []*structs.RequestedDevice{{Name: "gpu", Count: &one}}
			var resp structs.JobRegisterResponse
			if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			evals = append(evals, resp.EvalID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, id := range evals {
		evalDone(t, s, id)
	}
	held := deviceIDsOn(t, s, node.ID)
	if len(held) != 3 {
		t.Fatalf("held instances = %v, want all 3", held)
	}
}
