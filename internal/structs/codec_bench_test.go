package structs

import (
	"fmt"
	"testing"
)

// benchPlanRequest is the Raft entry of a plan placing n allocations of one
// job, shaped as the plan applier writes it (planResultRequest): the job once,
// allocations without it, each with its resources and placement metrics.
func benchPlanRequest(n int) *ApplyPlanResultsRequest {
	job := &Job{
		Region: "global", Namespace: "default", ID: "bench-job", Name: "bench-job", Type: JobTypeService,
		Priority: 50, Datacenters: []string{"dc1"}, NodePool: "default", Status: "running", Version: 1,
		Meta: map[string]string{"team": "bench"},
		TaskGroups: []*TaskGroup{{
			Name: "web", Count: n,
			RestartPolicy: &RestartPolicy{Attempts: 2, Mode: RestartPolicyModeFail},
			EphemeralDisk: &EphemeralDisk{SizeMB: 300},
			Networks:      []*NetworkResource{{Mode: "host", DynamicPorts: []Port{{Label: "http", To: 8080}}}},
			Tasks: []*Task{{
				Name: "server", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Env:       map[string]string{"PORT": "8080"},
				Resources: &Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	req := &ApplyPlanResultsRequest{Job: job, EvalID: "eval-0123456789abcdef", UpdatedAt: 1_700_000_000_000_000_000}
	for i := range n {
		node := fmt.Sprintf("node-%08d-0000-0000-0000-000000000000", i)
		req.Alloc = append(req.Alloc, &Allocation{
			ID:        fmt.Sprintf("alloc-%08d-0000-0000-0000-000000000000", i),
			Namespace: "default", EvalID: req.EvalID, Name: AllocName(job.ID, "web", uint(i)),
			NodeID: node, NodeName: fmt.Sprintf("sim-%d", i), JobID: job.ID, TaskGroup: "web",
			AllocatedResources: &AllocatedResources{
				Tasks: map[string]*AllocatedTaskResources{"server": {
					Cpu:    AllocatedCpuResources{CpuShares: 100},
					Memory: AllocatedMemoryResources{MemoryMB: 64},
				}},
				Shared: AllocatedSharedResources{
					DiskMB:   300,
					Networks: []*NetworkResource{{Mode: "host", IP: "10.0.0.1", DynamicPorts: []Port{{Label: "http", Value: 20000 + i%10000, To: 8080}}}},
					Ports:    AllocatedPorts{{Label: "http", Value: 20000 + i%10000, To: 8080, HostIP: "10.0.0.1"}},
				},
			},
			Metrics: &AllocMetric{
				NodesEvaluated: 3, NodesInPool: 1000, NodePool: "default",
				NodesAvailable: map[string]int{"dc1": 1000},
				ScoreMetaData: []*NodeScoreMeta{{
					NodeID: node, NormScore: 0.7,
					Scores: map[string]float64{"binpack": 0.6, "job-anti-affinity": 0, "node-reschedule-penalty": 0},
				}},
				AllocationTime: 12_345,
			},
			DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusPending,
			CreateTime: req.UpdatedAt, ModifyTime: req.UpdatedAt,
		})
	}
	return req
}

// BenchmarkPlanResultsCodec encodes a 1,000-allocation plan entry as the
// leader does and decodes it as every server's FSM does.
func BenchmarkPlanResultsCodec(b *testing.B) {
	req := benchPlanRequest(1000)
	buf, err := Encode(ApplyPlanResultsRequestType, req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if _, err := Encode(ApplyPlanResultsRequestType, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			var out ApplyPlanResultsRequest
			if err := Decode(buf[1:], &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
