package state

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// The allocs table's compound indexes build the keys memdb.CompoundIndex
// built of the same fields (what the stored trees and every read's
// arguments were made with), missing where it was missing, with room for
// the primary key memdb appends to a non-unique index's values.
func TestCompoundKeysAsCompoundIndex(t *testing.T) {
	old := map[string]*memdb.CompoundIndex{
		"node_terminal": {Indexes: []memdb.Indexer{
			&memdb.StringFieldIndex{Field: "NodeID"},
			&memdb.ConditionalIndex{Conditional: func(obj any) (bool, error) {
				return obj.(*structs.Allocation).TerminalStatus(), nil
			}},
		}},
		"job": {Indexes: []memdb.Indexer{
			&memdb.StringFieldIndex{Field: "Namespace"},
			&memdb.StringFieldIndex{Field: "JobID"},
		}},
	}
	var allocs []*structs.Allocation
	for _, node := range []string{"", "n1", "n10", "3f6e9a02-5d0c-4b7e-a1a2-9c7c2b0d6f11"} {
		for _, ns := range []string{"", "default"} {
			for _, job := range []string{"", "web"} {
				for _, st := range [][2]string{{structs.AllocDesiredStatusRun, structs.AllocClientStatusRunning},
					{structs.AllocDesiredStatusStop, structs.AllocClientStatusRunning},
					{structs.AllocDesiredStatusRun, structs.AllocClientStatusComplete}} {
					allocs = append(allocs, &structs.Allocation{ID: fmt.Sprintf("a%d", len(allocs)), NodeID: node,
						Namespace: ns, JobID: job, DesiredStatus: st[0], ClientStatus: st[1]})
				}
			}
		}
	}
	tables := schema().Tables
	for name, want := range old {
		idx := tables[tableAllocs].Indexes[name]
		if idx.Unique {
			t.Fatalf("%s: unique", name)
		}
		for _, a := range allocs {
			okWant, keyWant, err := want.FromObject(a)
			must(t, err)
			ok, key, err := idx.Indexer.(memdb.SingleIndexer).FromObject(a)
			must(t, err)
			if ok != okWant || !bytes.Equal(key, keyWant) {
				t.Fatalf("%s of %+v: %v %q, want %v %q", name, a, ok, key, okWant, keyWant)
			}
			if ok && cap(key)-len(key) != len(a.ID)+1 {
				t.Errorf("%s of %s: room for %d bytes, want %d", name, a.ID, cap(key)-len(key), len(a.ID)+1)
			}
		}
	}
	// Reads: the arguments make the same keys.
	for _, args := range [][]any{{"n1", false}, {"n1", true}} {
		got, err := tables[tableAllocs].Indexes["node_terminal"].Indexer.FromArgs(args...)
		must(t, err)
		want, err := old["node_terminal"].FromArgs(args...)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("node_terminal args %v: %q, want %q", args, got, want)
		}
	}
	got, err := tables[tableAllocs].Indexes["job"].Indexer.(memdb.PrefixIndexer).PrefixFromArgs("default", "we")
	must(t, err)
	want, err := old["job"].PrefixFromArgs("default", "we")
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Errorf("job prefix: %q, want %q", got, want)
	}
	// A unique compound index leaves no room.
	_, key, err := tables[tableJobs].Indexes["id"].Indexer.(memdb.SingleIndexer).FromObject(&structs.Job{Namespace: "default", ID: "web"})
	must(t, err)
	if string(key) != "default\x00web\x00" || cap(key) != len(key) {
		t.Errorf("jobs id key %q (cap %d)", key, cap(key))
	}
}
