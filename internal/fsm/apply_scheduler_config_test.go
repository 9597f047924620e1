package fsm

import (
	"bytes"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// The scheduler configuration is written through Raft, honours CAS, and
// survives a snapshot and restore.
func TestApply_SchedulerConfigCASAndSnapshot(t *testing.T) {
	f := newFSM(t, nil)
	set := func(index uint64, cfg structs.SchedulerConfiguration, cas bool) any {
		t.Helper()
		l := entry(t, index, structs.SchedulerConfigRequestType, &structs.SchedulerSetConfigRequest{Config: cfg, CAS: cas})
		return f.Apply(l)
	}
	if got := set(5, *structs.DefaultSchedulerConfiguration(), false); got != true {
		t.Fatalf("first write: %v", got)
	}
	spread := structs.SchedulerConfiguration{SchedulerAlgorithm: "spread", PauseEvalBroker: true, ModifyIndex: 4}
	if got := set(6, spread, true); got != false {
		t.Fatalf("CAS with a stale index wrote: %v", got)
	}
	if c, _ := f.State().SchedulerConfig(nil); c.SchedulerAlgorithm != "binpack" || c.ModifyIndex != 5 {
		t.Fatalf("stale CAS changed the config: %+v", c)
	}
	spread.ModifyIndex = 5
	if got := set(7, spread, true); got != true {
		t.Fatalf("CAS with the current index: %v", got)
	}
	c, _ := f.State().SchedulerConfig(nil)
	if c.SchedulerAlgorithm != "spread" || !c.PauseEvalBroker || c.CreateIndex != 5 || c.ModifyIndex != 7 {
		t.Fatalf("config after CAS: %+v", c)
	}
	if idx, _ := f.State().Index("scheduler_config"); idx != 7 {
		t.Fatalf("table index %d, want 7", idx)
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
	r, _ := dst.State().SchedulerConfig(nil)
	if r == nil || *r != *c {
		t.Fatalf("restored %+v, want %+v", r, c)
	}
}
