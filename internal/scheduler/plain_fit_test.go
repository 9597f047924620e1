package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// A group that asks for no ports is packed by arithmetic alone: nodes fill
// to their CPU (allocations already running count), each placement still
// receives its task and disk resources, and the rest is reported short of
// cpu.
func TestServicePortlessGroupFillsNodes(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1")) // 3900 MHz usable
	h.State.UpsertNode(mockNode("n2"))
	running := &structs.Allocation{ID: "old", Namespace: "default", JobID: "other", TaskGroup: "g", NodeID: "n1",
		Name: "other.g[0]", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 1500}}}}}
	h.State.UpsertAllocs(running)
	job := mockJob("web", 8)
	job.TaskGroups[0].Networks = nil
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 1000, MemoryMB: 256, MemoryMaxMB: 512}
	h.State.UpsertJob(job)
	sched, err := NewScheduler(structs.JobTypeService, Config{Clock: func() time.Time { return testNow }, MemoryOversubscription: true}, h.State, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Process(mockEval(job)); err != nil {
		t.Fatal(err)
	}

	perNode := map[string]int{}
	for _, a := range liveAllocs(h, "web") {
		perNode[a.NodeID]++
		tr := a.AllocatedResources.Tasks["server"]
		if tr == nil || tr.Cpu.CpuShares != 1000 || tr.Memory.MemoryMB != 256 || tr.Memory.MemoryMaxMB != 512 {
			t.Fatalf("%s: task resources %+v", a.Name, a.AllocatedResources.Tasks)
		}
		if a.AllocatedResources.Shared.DiskMB != 150 || len(a.AllocatedResources.Shared.Ports) != 0 {
			t.Fatalf("%s: shared resources %+v", a.Name, a.AllocatedResources.Shared)
		}
	}
	// n1: 3900 - 1500 = 2400 -> 2; n2: 3900 -> 3.
	if perNode["n1"] != 2 || perNode["n2"] != 3 {
		t.Fatalf("placed per node %v, want n1:2 n2:3", perNode)
	}
	m := lastEval(t, h).FailedTGAllocs["web"]
	if m == nil || m.DimensionExhausted["cpu"] == 0 {
		t.Fatalf("failed metrics = %+v, want cpu exhausted", m)
	}
}

// Ports are granted on the chosen node only, and the allocation's group
// network records the same values as its port list.
func TestServicePortsRecordedInNetworks(t *testing.T) {
	h := NewHarness()
	for i := 0; i < 4; i++ {
		h.State.UpsertNode(mockNode(fmt.Sprintf("n%d", i)))
	}
	job := mockJob("web", 6)
	job.TaskGroups[0].Networks[0].ReservedPorts = []structs.Port{{Label: "admin", Value: 9000}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))

	allocs := liveAllocs(h, "web")
	if len(allocs) != 4 { // the static port fits once per node
		t.Fatalf("placed %d, want 4", len(allocs))
	}
	for _, a := range allocs {
		sh := a.AllocatedResources.Shared
		if len(sh.Ports) != 2 || len(sh.Networks) != 1 {
			t.Fatalf("%s: ports %+v networks %+v", a.Name, sh.Ports, sh.Networks)
		}
		nw := sh.Networks[0]
		http, _ := sh.Ports.Get("http")
		admin, _ := sh.Ports.Get("admin")
		if admin.Value != 9000 || http.Value < 20000 || http.Value > 32000 ||
			len(nw.DynamicPorts) != 1 || nw.DynamicPorts[0].Value != http.Value ||
			len(nw.ReservedPorts) != 1 || nw.ReservedPorts[0].Value != 9000 || nw.IP != "10.0.0.1" {
			t.Fatalf("%s: ports %+v, network %+v", a.Name, sh.Ports, nw)
		}
	}
}

// memory_max is granted only with memory oversubscription enabled in the
// scheduler configuration; without it tasks get their memory alone (as
// Nomad drops MemoryMaxMB at placement), with or without devices.
func TestMemoryMaxOnlyWithOversubscription(t *testing.T) {
	for _, oversub := range []bool{false, true} {
		t.Run(fmt.Sprint("oversubscription=", oversub), func(t *testing.T) {
			h := NewHarness()
			h.State.UpsertNode(mockNode("n1"))
			job := mockJob("web", 1)
			job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 256, MemoryMaxMB: 1024}
			h.State.UpsertJob(job)
			sched, err := NewScheduler(structs.JobTypeService, Config{Clock: func() time.Time { return testNow }, MemoryOversubscription: oversub}, h.State, h)
			if err != nil {
				t.Fatal(err)
			}
			if err := sched.Process(mockEval(job)); err != nil {
				t.Fatal(err)
			}
			allocs := liveAllocs(h, "web")
			if len(allocs) != 1 {
				t.Fatalf("placed %d", len(allocs))
			}
			tr := allocs[0].AllocatedResources.Tasks["server"]
			want := int64(0)
			if oversub {
				want = 1024
			}
			if tr.Memory.MemoryMB != 256 || tr.Memory.MemoryMaxMB != want {
				t.Fatalf("granted memory %d max %d, want 256 max %d", tr.Memory.MemoryMB, tr.Memory.MemoryMaxMB, want)
			}
		})
	}
}
