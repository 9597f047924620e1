package fsm

import (
	"bytes"
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/structs"
)

// A restart step writes its record, the allocations' restart request or
// migrate transition and its eval in one entry; the record survives a snapshot, and a
// purge of the job forgets it.
func TestApply_JobRestart(t *testing.T) {
	b := events.NewBroker(100)
	f, err := New(Config{Events: b})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, f, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")}))
	apply(t, f, entry(t, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web")}))
	st := f.State()
	var allocs []*structs.Allocation
	for _, id := range []string{"a1", "a2", "a3"} {
		allocs = append(allocs, &structs.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "web", NodeID: "n1",
			Name: "web.web[0]", DesiredStatus: "run", ClientStatus: "running"})
	}
	if err := st.UpsertAllocs(3, allocs); err != nil {
		t.Fatal(err)
	}
	r := &structs.JobRestart{ID: "r1", Namespace: "default", JobID: "web", Status: structs.JobRestartStatusRunning, Batch: 1,
		ModifyTime: 77, Allocs: []*structs.JobRestartAlloc{{AllocID: "a1", Status: structs.JobRestartAllocRestarting, Tasks: []string{"t"}}}}
	apply(t, f, entry(t, 4, structs.JobRestartRequestType, &structs.JobRestartRequest{Restart: r,
		AllocWrites: []*structs.JobRestartAllocUpdate{
			{AllocID: "a1", Restart: &structs.AllocRestartRequest{Index: 1, Tasks: []string{"t"}}},
			{AllocID: "a2", Replace: true},
			{AllocID: "gone", Replace: true},
		},
		Evals: []*structs.Evaluation{testEval("e1", "web", structs.EvalStatusPending)}}))

	// Event stream readers see the allocations change and the eval.
	sub := b.Subscribe(&events.Request{Namespace: "*", Topics: map[string][]string{"*": {"*"}}, Index: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	idx, evs, err := sub.Next(ctx)
	cancel()
	var seen []string
	for _, e := range evs {
		seen = append(seen, e.Topic+":"+e.Type+":"+e.Key)
	}
	sort.Strings(seen)
	if err != nil || idx != 4 || strings.Join(seen, " ") != "Allocation:AllocationUpdated:a1 Allocation:AllocationUpdated:a2 Evaluation:AllocationUpdated:e1" {
		t.Fatalf("events at %d: %v (%v)", idx, seen, err)
	}

	a1, _ := st.AllocByID(nil, "a1")
	if a1.RestartRequest == nil || a1.RestartRequest.Index != 1 || a1.AllocModifyIndex != 4 || a1.ClientStatus != "running" {
		t.Fatalf("a1 = %+v", a1)
	}
	a2, _ := st.AllocByID(nil, "a2")
	if a2.DesiredStatus != "run" || a2.DesiredTransition.Migrate == nil || !*a2.DesiredTransition.Migrate || a2.RestartRequest != nil {
		t.Fatalf("a2 = %+v", a2)
	}
	if a3, _ := st.AllocByID(nil, "a3"); a3.ModifyIndex != 3 {
		t.Fatal("an allocation outside the step was written")
	}
	if e, _ := st.EvalByID(nil, "e1"); e == nil {
		t.Fatal("eval not stored")
	}
	got, _ := st.JobRestartByJob(nil, "default", "web")
	if got == nil || got.CreateIndex != 4 || got.ModifyIndex != 4 || got.Batch != 1 {
		t.Fatalf("record = %+v", got)
	}

	// The next step keeps CreateIndex.
	r2 := r.Copy()
	r2.Status = structs.JobRestartStatusComplete
	apply(t, f, entry(t, 5, structs.JobRestartRequestType, &structs.JobRestartRequest{Restart: r2}))
	got, _ = st.JobRestartByJob(nil, "default", "web")
	if got.CreateIndex != 4 || got.ModifyIndex != 5 || got.Status != structs.JobRestartStatusComplete {
		t.Fatalf("record after step = %+v", got)
	}

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	dst := newFSM(t, nil)
	if err := dst.Restore(nopCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	restored, _ := dst.State().JobRestartByJob(nil, "default", "web")
	if !reflect.DeepEqual(restored, got) {
		t.Fatalf("restored %+v, want %+v", restored, got)
	}

	apply(t, f, entry(t, 6, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "web", Purge: true,
		WriteRequest: structs.WriteRequest{Namespace: "default"}}))
	if got, _ := st.JobRestartByJob(nil, "default", "web"); got != nil {
		t.Fatal("restart kept after the job was purged")
	}
}
