package state

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// The changes of every transaction between CollectEntryChanges and
// TakeEntryChanges are handed over in commit order, with the stored
// objects; writes outside that window are not kept.
func TestEntryChangesCollectsOneEntry(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(1, &structs.Node{ID: "before", Status: structs.NodeStatusReady}))
	s.BeginEntry(2)
	s.CollectEntryChanges()
	must(t, s.UpsertNode(2, &structs.Node{ID: "n1", Status: structs.NodeStatusReady}))
	must(t, s.UpsertEvals(2, []*structs.Evaluation{{ID: "e1", Namespace: "default", JobID: "j", Status: structs.EvalStatusPending}}))
	got := s.TakeEntryChanges()
	s.EndEntry()
	must(t, s.UpsertNode(3, &structs.Node{ID: "after", Status: structs.NodeStatusReady}))
	if len(got) != 2 {
		t.Fatalf("%d transactions collected, want 2", len(got))
	}
	var keys []string
	for _, cs := range got {
		for _, c := range cs {
			switch o := c.After.(type) {
			case *structs.Node:
				stored, _ := s.NodeByID(nil, o.ID)
				if stored != o {
					t.Errorf("node %s: the change does not hold the stored object", o.ID)
				}
				keys = append(keys, "node:"+o.ID)
			case *structs.Evaluation:
				keys = append(keys, "eval:"+o.ID)
			}
		}
	}
	if len(keys) != 2 || keys[0] != "node:n1" || keys[1] != "eval:e1" {
		t.Fatalf("collected %v, want [node:n1 eval:e1]", keys)
	}
	if more := s.TakeEntryChanges(); len(more) != 0 {
		t.Fatalf("collected after Take: %d", len(more))
	}
}
