package server

import (
	"testing"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// A node pulling a replacement whose group migrates its ephemeral disk gets
// a token for it made with the previous node's secret, which that node
// accepts; no token when the previous allocation ran on the same node or
// the disk does not migrate.
func TestMigrateTokensForReplacementsOnOtherNodes(t *testing.T) {
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"n1", "n2"} {
		if err := st.UpsertNode(uint64(10+i), &structs.Node{ID: id, SecretID: "secret-" + id, Status: structs.NodeStatusReady}); err != nil {
			t.Fatal(err)
		}
	}
	job := func(migrate bool) *structs.Job {
		j := testJob("j", 1)
		j.Namespace = "default"
		j.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 10, Sticky: true, Migrate: migrate}
		return j
	}
	alloc := func(id, node, prev string, j *structs.Job) *structs.Allocation {
		return &structs.Allocation{ID: id, Namespace: "default", NodeID: node, JobID: "j", Job: j, TaskGroup: "web",
			PreviousAllocation: prev, DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}
	}
	mig, sticky := job(true), job(false)
	allocs := []*structs.Allocation{
		alloc("old", "n1", "", mig),
		alloc("moved", "n2", "old", mig),     // another node, migrate: token
		alloc("same", "n1", "old", mig),      // same node: moved locally
		alloc("sticky", "n2", "old", sticky), // sticky only: nothing fetched
		alloc("fresh", "n2", "", mig),        // replaces nothing
	}
	if err := st.UpsertAllocs(20, allocs); err != nil {
		t.Fatal(err)
	}
	got := migrateTokens(st, "n2", []*structs.Allocation{allocs[1], allocs[3], allocs[4]})
	if len(got) != 1 || !structs.CompareMigrateToken("old", "secret-n1", got["moved"]) {
		t.Fatalf("tokens for n2 %v, want one for \"moved\" that n1 accepts", got)
	}
	if structs.CompareMigrateToken("old", "secret-n2", got["moved"]) {
		t.Fatal("the token is accepted with another node's secret")
	}
	if got := migrateTokens(st, "n1", []*structs.Allocation{allocs[2]}); len(got) != 0 {
		t.Fatalf("tokens for a same-node replacement: %v", got)
	}
}
