package state

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// Reconciling summaries recounts a drifted summary from the allocations
// (keeping queued counts) and writes nothing when all agree.
func TestUpdateJobSummariesFromAllocs(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	a1, a2 := mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job)
	must(t, s.UpsertAllocs(11, []*structs.Allocation{a1, a2}))
	must(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning},
		{ID: "a2", ClientStatus: structs.AllocClientStatusFailed}}))

	// Drift: a summary that says something else.
	txn := s.db.Txn(true)
	sum, _ := summaryFor(txn, "default", "web")
	bad := sum.Copy()
	bad.Summary["web"] = structs.TaskGroupSummary{Queued: 3, Complete: 7, Running: 0}
	must(t, putSummary(txn, 13, bad))
	txn.Commit()

	must(t, s.UpdateJobSummariesFromAllocs(14))
	if got := tgSummary(t, s, "web", "web"); got != (structs.TaskGroupSummary{Queued: 3, Running: 1, Failed: 1}) {
		t.Fatalf("reconciled summary %+v", got)
	}
	idx, _ := s.Index(tableJobSummary)
	must(t, s.UpdateJobSummariesFromAllocs(15))
	if again, _ := s.Index(tableJobSummary); again != idx {
		t.Fatalf("a reconcile with nothing to fix wrote summaries (index %d -> %d)", idx, again)
	}
}

// A collected down node takes its pull-index row with it, and deleting
// its leftover allocations afterwards does not bring the row back.
func TestDeleteNodesGC_LeavesNoIndexRow(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(10, mockNode("n1")))
	job := storedJob(t, s, 11, mockJob("web"))
	a := mockAlloc("a1", "n1", job)
	a.DesiredStatus = structs.AllocDesiredStatusStop
	must(t, s.UpsertAllocs(12, []*structs.Allocation{a, mockAlloc("a2", "n1", job)}))
	must(t, s.DeleteEval(13, nil, []string{"a2"}))
	must(t, s.UpdateNodeStatus(14, "n1", structs.NodeStatusDown, 0, nil))
	if raw, _ := s.db.Txn(false).First(tableIndex, "id", nodeAllocsDeletedKey("n1")); raw == nil {
		t.Fatal("no pull-index row after an allocation was deleted")
	}
	deleted, err := s.DeleteNodesGC(15, []string{"n1"})
	must(t, err)
	if len(deleted) != 1 {
		t.Fatalf("deleted %v", deleted)
	}
	must(t, s.DeleteEval(16, nil, []string{"a1"}))
	if raw, _ := s.db.Txn(false).First(tableIndex, "id", nodeAllocsDeletedKey("n1")); raw != nil {
		t.Fatal("the collected node's pull-index row is still stored")
	}
}
