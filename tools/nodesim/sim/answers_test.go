package sim

import (
	"bytes"
	"fmt"
	"net/rpc"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/apiconv"
	"github.com/drover-project/drover/internal/structs"
)

// Realistic answers for the decoding tests and benchmarks: allocations of a
// service job submitted as bench/schedbench submits its jobs (one raw_exec
// task, cpu 20 / mem 32), converted and canonicalized as the HTTP API does,
// with the fields the server fills when it places and updates allocations.

func testJob(i int) *structs.Job {
	id := fmt.Sprintf("bench-%05d", i)
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", 1000)
	task := api.NewTask("t", "raw_exec")
	task.Config = map[string]any{"command": "/bin/sleep", "args": []string{"600"}}
	cpu, mem := 20, 32
	task.Resources = &api.Resources{CPU: &cpu, MemoryMB: &mem}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	sj := apiconv.ApiJobToStructJob(job)
	sj.Canonicalize()
	sj.CreateIndex, sj.ModifyIndex, sj.JobModifyIndex = 100+uint64(i), 100+uint64(i), 100+uint64(i)
	sj.SubmitTime = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano()
	return sj
}

// testAlloc is the i-th allocation of job as the server stores it; running
// ones carry the task state their client reported.
func testAlloc(job *structs.Job, i int, running bool) *structs.Allocation {
	tg := job.TaskGroups[0]
	a := &structs.Allocation{
		ID: fmt.Sprintf("a%07d-1c2d-4e5f-8a9b-0c1d2e3f4a5b", i), Namespace: job.Namespace,
		EvalID: "e0000000-1c2d-4e5f-8a9b-0c1d2e3f4a5b", Name: fmt.Sprintf("%s.%s[%d]", job.ID, tg.Name, i),
		NodeID: "n0000000-1c2d-4e5f-8a9b-0c1d2e3f4a5b", NodeName: "sim-00042",
		JobID: job.ID, Job: job, TaskGroup: tg.Name,
		AllocatedResources: &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{tg.Tasks[0].Name: {
				Cpu:    structs.AllocatedCpuResources{CpuShares: 20},
				Memory: structs.AllocatedMemoryResources{MemoryMB: 32},
			}},
			Shared: structs.AllocatedSharedResources{DiskMB: 300},
		},
		Metrics:       &structs.AllocMetric{NodesEvaluated: 5000, NodesFiltered: 12},
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		DeploymentID: "d0000000-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
		CreateIndex:  1000 + uint64(i), ModifyIndex: 1000 + uint64(i), AllocModifyIndex: 1000 + uint64(i),
		CreateTime: 1767323045000000000 + int64(i), ModifyTime: 1767323045000000000 + int64(i),
	}
	if running {
		started := time.Date(2026, 1, 2, 3, 4, 6, 7, time.UTC)
		a.ClientStatus = structs.AllocClientStatusRunning
		a.ClientDescription = "Tasks are running"
		a.TaskStates = map[string]*structs.TaskState{tg.Tasks[0].Name: {State: "running", StartedAt: started}}
		a.ModifyIndex += 10
	}
	return a
}

// testPullAnswer is a pull's answer for a node holding ten allocations, of
// which three changed.
func testPullAnswer() *structs.NodeClientAllocsResponse {
	job := testJob(1)
	r := &structs.NodeClientAllocsResponse{Allocs: map[string]uint64{}, QueryMeta: structs.QueryMeta{Index: 5000, KnownLeader: true}}
	for i := 0; i < 10; i++ {
		a := testAlloc(job, i, i%2 == 0)
		r.Allocs[a.ID] = a.AllocModifyIndex
		if i < 3 {
			r.Changed = append(r.Changed, a)
		}
	}
	return r
}

// testAllocsAnswer is an Alloc.GetAllocs answer of ten allocations of two
// jobs.
func testAllocsAnswer() *structs.AllocsGetResponse {
	jobs := []*structs.Job{testJob(1), testJob(2)}
	r := &structs.AllocsGetResponse{QueryMeta: structs.QueryMeta{Index: 5000, KnownLeader: true}}
	for i := 0; i < 10; i++ {
		r.Allocs = append(r.Allocs, testAlloc(jobs[i%2], i, i%3 == 0))
	}
	return r
}

// encodeResponse returns the bytes a server's net/rpc codec writes for a
// successful answer: the response header, then the body.
func encodeResponse(t testing.TB, seq uint64, method string, body any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
	if err := enc.Encode(&rpc.Response{ServiceMethod: method, Seq: seq}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(body); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
