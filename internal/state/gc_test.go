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
