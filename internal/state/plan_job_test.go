package state

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// A placement's job is the stored row when the plan's job is that row (a
// decoded copy, equal indexes), and the plan's own copy when the row has
// moved on or differs in what equal indexes do not settle.
func TestPlanJobSharesTheStoredRow(t *testing.T) {
	place := func(t *testing.T, s *StateStore, index uint64, id string, job *structs.Job) *structs.Job {
		t.Helper()
		a := mockAlloc(id, "n1", job)
		must(t, s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{Job: job, Alloc: []*structs.Allocation{a}}))
		got, err := s.AllocByID(nil, id)
		must(t, err)
		return got.Job
	}
	copyOf := func(j *structs.Job) *structs.Job {
		c := j.Copy()
		return c
	}

	t.Run("current row", func(t *testing.T) {
		s := testStore(t)
		stored := storedJob(t, s, 10, mockJob("j"))
		if got := place(t, s, 11, "a1", copyOf(stored)); got != stored {
			t.Fatal("a copy of the current row was stored instead of the row")
		}
	})
	t.Run("same indexes, other status", func(t *testing.T) {
		// The snapshot between a registration's two transactions at one
		// index: the status differs, the indexes do not.
		s := testStore(t)
		stored := storedJob(t, s, 10, mockJob("j"))
		plan := copyOf(stored)
		plan.Status = structs.JobStatusDead
		if stored.Status == plan.Status {
			t.Fatal("test needs another status")
		}
		if got := place(t, s, 11, "a1", plan); got == stored || got.Status != structs.JobStatusDead {
			t.Fatal("the plan's job was replaced by a row with another status")
		}
	})
	t.Run("older version", func(t *testing.T) {
		s := testStore(t)
		v0 := storedJob(t, s, 10, mockJob("j"))
		next := mockJob("j")
		next.Priority = 70
		storedJob(t, s, 12, next)
		old, err := s.JobByIDAndVersion(nil, structs.DefaultNamespace, "j", v0.Version)
		must(t, err)
		if got := place(t, s, 13, "a1", copyOf(v0)); got != old {
			t.Fatal("a copy of the version row was stored instead of the row")
		}
		// A version row changed in place (stability) without a new
		// ModifyIndex: the contents decide.
		must(t, s.UpdateJobStability(14, structs.DefaultNamespace, "j", v0.Version, true))
		if got := place(t, s, 15, "a2", copyOf(v0)); got.Stable {
			t.Fatal("the plan's job was replaced by a version row with other contents")
		}
	})
}
