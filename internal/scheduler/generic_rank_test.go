package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
)

func weight(v int8) *int8 { return &v }

// placedPerNode counts the job's live allocs per node.
func placedPerNode(h *Harness, jobID string) map[string]int {
	out := map[string]int{}
	for _, a := range liveAllocs(h, jobID) {
		out[a.NodeID]++
	}
	return out
}

func TestAffinityPrefersMatchingNodes(t *testing.T) {
	cases := []struct {
		name    string
		weight  int8
		wantSSD int // placements on ssd nodes out of 5
	}{
		{"positive weight attracts", 100, 5},
		{"negative weight repels", -100, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness()
			for i := 0; i < 10; i++ {
				n := mockNode(fmt.Sprintf("node-%02d", i))
				n.Meta = map[string]string{"disk": "hdd"}
				if i%2 == 0 {
					n.Meta["disk"] = "ssd"
				}
				n.ComputeClass()
				h.State.UpsertNode(n)
			}
			job := mockJob("aff", 5)
			job.TaskGroups[0].Affinities = []*structs.Affinity{{LTarget: "${meta.disk}", Operand: "=", RTarget: "ssd", Weight: weight(c.weight)}}
			h.State.UpsertJob(job)
			process(t, h, mockEval(job))
			ssd := 0
			for nodeID, n := range placedPerNode(h, "aff") {
				if h.State.nodes[nodeID].Meta["disk"] == "ssd" {
					ssd += n
				}
			}
			if ssd != c.wantSSD {
				t.Fatalf("on ssd nodes: %d, want %d (placement %v)", ssd, c.wantSSD, placedPerNode(h, "aff"))
			}
			if c.weight < 0 {
				return
			}
			// The winner's metric explains the affinity.
			a := liveAllocs(h, "aff")[0]
			found := false
			for _, m := range a.Metrics.ScoreMetaData {
				if _, ok := m.Scores["node-affinity"]; ok {
					found = true
				}
			}
			if !found || len(a.Metrics.ScoreMetaData) > 5 {
				t.Fatalf("score metadata = %+v", a.Metrics.ScoreMetaData)
			}
		})
	}
}

func TestSpreadAcrossDatacenters(t *testing.T) {
	cases := []struct {
		name    string
		targets []*api.SpreadTarget
		count   int
		want    map[string]int
	}{
		{"50/50 targets", []*api.SpreadTarget{{Value: "dc1", Percent: 50}, {Value: "dc2", Percent: 50}}, 10, map[string]int{"dc1": 5, "dc2": 5}},
		{"70/30 targets", []*api.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}, 10, map[string]int{"dc1": 7, "dc2": 3}},
		{"even without targets", nil, 10, map[string]int{"dc1": 5, "dc2": 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness()
			// dc1 has three times the nodes of dc2: without spread it
			// would take most allocations.
			for i := 0; i < 16; i++ {
				n := mockNode(fmt.Sprintf("node-%02d", i))
				n.Datacenter = "dc1"
				if i%4 == 0 {
					n.Datacenter = "dc2"
				}
				n.ComputeClass()
				h.State.UpsertNode(n)
			}
			job := mockJob("spread", c.count)
			job.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: weight(100), SpreadTarget: c.targets}}
			h.State.UpsertJob(job)
			process(t, h, mockEval(job))
			got := map[string]int{}
			for _, a := range liveAllocs(h, "spread") {
				got[h.State.nodes[a.NodeID].Datacenter]++
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("per dc = %v, want %v", got, c.want)
			}
		})
	}
}

func TestDistinctPropertyLimitsPerValue(t *testing.T) {
	cases := []struct {
		count, allowed int
		wantPlaced     int
	}{
		{6, 2, 6},
		{8, 2, 6}, // three racks × 2
		{8, 1, 3},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("count %d allowed %d", c.count, c.allowed), func(t *testing.T) {
			h := NewHarness()
			for i := 0; i < 9; i++ {
				n := mockNode(fmt.Sprintf("node-%02d", i))
				n.Meta = map[string]string{"rack": fmt.Sprintf("r%d", i%3)}
				n.ComputeClass()
				h.State.UpsertNode(n)
			}
			job := mockJob("dp", c.count)
			job.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: fmt.Sprint(c.allowed)}}
			h.State.UpsertJob(job)
			process(t, h, mockEval(job))
			perRack := map[string]int{}
			for _, a := range liveAllocs(h, "dp") {
				perRack[h.State.nodes[a.NodeID].Meta["rack"]]++
			}
			placed := 0
			for rack, n := range perRack {
				placed += n
				if n > c.allowed {
					t.Errorf("rack %s holds %d, allowed %d", rack, n, c.allowed)
				}
			}
			if placed != c.wantPlaced {
				t.Fatalf("placed %d, want %d (%v)", placed, c.wantPlaced, perRack)
			}
			if e := lastEval(t, h); placed < c.count && e.FailedTGAllocs["web"] == nil {
				t.Fatal("unplaced allocations must be reported")
			}
		})
	}
}

// runningAlloc stores a running alloc of a job with the given priority on
// node, holding cpu MHz.
func runningAlloc(h *Harness, jobID string, priority int, node *structs.Node, cpu int64) *structs.Allocation {
	job := mockJob(jobID, 1)
	job.Priority = priority
	h.State.UpsertJob(job)
	a := &structs.Allocation{
		ID: uuid.NewString(), Namespace: "default", JobID: jobID, Job: job, TaskGroup: "web",
		Name: structs.AllocName(jobID, "web", 0), NodeID: node.ID,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"server": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: 128}},
		}},
	}
	h.State.UpsertAllocs(a)
	return a
}

func TestPreemptionByPriority(t *testing.T) {
	cases := []struct {
		name      string
		enabled   bool
		askCPU    int
		wantEvict []string // job IDs evicted; nil means none
		wantPlace bool
	}{
		{"disabled for service by default", false, 1000, nil, false},
		{"evicts the lowest priority first", true, 1000, []string{"low20"}, true},
		{"evicts two lower ones when one is not enough", true, 1900, []string{"low20", "low30"}, true},
		{"never an equal priority", true, 2500, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness()
			node := mockNode("full")
			h.State.UpsertNode(node)
			// 3900 MHz schedulable; 3500 used: 400 free.
			runningAlloc(h, "low20", 20, node, 1000)
			runningAlloc(h, "low30", 30, node, 1000)
			runningAlloc(h, "peer70", 70, node, 1500)

			job := mockJob("urgent", 1)
			job.Priority = 70
			job.TaskGroups[0].Tasks[0].Resources.CPU = c.askCPU
			h.State.UpsertJob(job)
			cfg := Config{Clock: func() time.Time { return testNow }}
			if c.enabled {
				cfg.PreemptionEnabled = map[string]bool{structs.JobTypeService: true}
			}
			s, err := NewScheduler(job.Type, cfg, h.State, h)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Process(mockEval(job)); err != nil {
				t.Fatal(err)
			}
			placed := liveAllocs(h, "urgent")
			if (len(placed) == 1) != c.wantPlace {
				t.Fatalf("placed %d, want placed=%v", len(placed), c.wantPlace)
			}
			var evicted []string
			byID := map[string]string{}
			for _, jobID := range []string{"low20", "low30", "peer70"} {
				all, _ := h.State.AllocsByJob(nil, "default", jobID, true)
				for _, a := range all {
					byID[a.ID] = jobID
					if a.DesiredStatus == structs.AllocDesiredStatusEvict {
						evicted = append(evicted, jobID)
						if !c.wantPlace || a.PreemptedByAllocation != placed[0].ID {
							t.Errorf("%s evicted by %q", jobID, a.PreemptedByAllocation)
						}
					}
				}
			}
			if fmt.Sprint(evicted) != fmt.Sprint(c.wantEvict) && !(len(evicted) == 0 && c.wantEvict == nil) {
				t.Fatalf("evicted %v, want %v", evicted, c.wantEvict)
			}
			if c.wantPlace {
				var listed []string
				for _, id := range placed[0].PreemptedAllocations {
					listed = append(listed, byID[id])
				}
				if len(listed) != len(c.wantEvict) {
					t.Fatalf("PreemptedAllocations = %v, want allocs of %v", listed, c.wantEvict)
				}
				var planned int
				for _, p := range h.Plans {
					planned += len(p.NodePreemptions["full"])
				}
				if planned != len(c.wantEvict) {
					t.Fatalf("plan NodePreemptions = %d, want %d", planned, len(c.wantEvict))
				}
			}
			if err := h.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
