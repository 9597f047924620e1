package fsm

import (
	"bytes"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// The autopilot configuration (Raft type 34) honours CAS and survives a
// snapshot and restore.
func TestApply_AutopilotConfigCASAndSnapshot(t *testing.T) {
	f := newFSM(t, nil)
	set := func(index uint64, cfg structs.AutopilotConfig, cas bool) any {
		t.Helper()
		return f.Apply(entry(t, index, structs.AutopilotConfigRequestType, &structs.AutopilotSetConfigRequest{Config: cfg, CAS: cas}))
	}
	if got := set(5, *structs.DefaultAutopilotConfig(), true); got != true {
		t.Fatalf("first CAS write (index 0 over nothing): %v", got)
	}
	next := structs.AutopilotConfig{MinQuorum: 3, ServerStabilizationTime: time.Second, ModifyIndex: 4}
	if got := set(6, next, true); got != false {
		t.Fatalf("CAS with a stale index wrote: %v", got)
	}
	next.ModifyIndex = 5
	if got := set(7, next, true); got != true {
		t.Fatalf("CAS with the current index: %v", got)
	}
	c, _ := f.State().AutopilotConfig(nil)
	if c.MinQuorum != 3 || c.CleanupDeadServers || c.CreateIndex != 5 || c.ModifyIndex != 7 {
		t.Fatalf("config after CAS: %+v", c)
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
	r, _ := dst.State().AutopilotConfig(nil)
	if r == nil || *r != *c {
		t.Fatalf("restored %+v, want %+v", r, c)
	}
}
