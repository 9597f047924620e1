package state

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

func testStore(t *testing.T) *StateStore {
	t.Helper()
	s, err := NewStateStore()
	if err != nil {
		t.Fatalf("NewStateStore: %v", err)
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mockJob(id string) *structs.Job {
	return &structs.Job{
		Namespace: structs.DefaultNamespace,
		ID:        id,
		Name:      id,
		Type:      structs.JobTypeService,
		Priority:  50,
		TaskGroups: []*structs.TaskGroup{{
			Name:  "web",
			Count: 2,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "sleep"}}},
		}},
	}
}

func mockNode(id string) *structs.Node {
	return &structs.Node{
		ID:         id,
		SecretID:   "secret-" + id,
		Name:       "node-" + id,
		Datacenter: "dc1",
		Attributes: map[string]string{"kernel.name": "linux"},
	}
}

func mockEval(id string, job *structs.Job, status string) *structs.Evaluation {
	return &structs.Evaluation{
		ID:        id,
		Namespace: job.Namespace,
		JobID:     job.ID,
		Type:      job.Type,
		Status:    status,
		Priority:  50,
	}
}

func mockAlloc(id, nodeID string, job *structs.Job) *structs.Allocation {
	return &structs.Allocation{
		ID:            id,
		Namespace:     job.Namespace,
		EvalID:        "eval-" + id,
		NodeID:        nodeID,
		JobID:         job.ID,
		Job:           job,
		TaskGroup:     "web",
		Name:          structs.AllocName(job.ID, "web", 0),
		DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus:  structs.AllocClientStatusPending,
	}
}

// storedJob registers job at index and returns the stored copy.
func storedJob(t *testing.T, s *StateStore, index uint64, job *structs.Job) *structs.Job {
	t.Helper()
	must(t, s.UpsertJob(index, nil, job))
	j, err := s.JobByID(nil, job.Namespace, job.ID)
	must(t, err)
	return j
}

func jobStatusOf(t *testing.T, s *StateStore, id string) string {
	t.Helper()
	j, err := s.JobByID(nil, structs.DefaultNamespace, id)
	must(t, err)
	if j == nil {
		t.Fatalf("job %s missing", id)
	}
	return j.Status
}

func tgSummary(t *testing.T, s *StateStore, jobID, group string) structs.TaskGroupSummary {
	t.Helper()
	sum, err := s.JobSummaryByID(nil, structs.DefaultNamespace, jobID)
	must(t, err)
	if sum == nil {
		t.Fatalf("no summary for %s", jobID)
	}
	return sum.Summary[group]
}

// fires reports whether ws fires within a short deadline.
func fires(ws memdb.WatchSet) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	return ws.WatchCtx(ctx) == nil
}

// quiet reports whether ws stays silent (used for "unrelated write" checks).
func quiet(ws memdb.WatchSet) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	return ws.WatchCtx(ctx) != nil
}

func iterCount(t *testing.T, it memdb.ResultIterator, err error) int {
	t.Helper()
	must(t, err)
	n := 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		n++
	}
	return n
}
