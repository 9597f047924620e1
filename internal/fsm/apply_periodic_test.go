package fsm

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func TestPeriodicLaunchesRecordedSnapshottedAndNotified(t *testing.T) {
	sink := &recordingSink{}
	f := newFSM(t, sink)
	parent := testJob("cron")
	parent.Type = structs.JobTypeBatch
	spec := "* * * * *"
	parent.Periodic = &structs.PeriodicConfig{Spec: &spec}
	parent.SubmitTime = time.Unix(1000, 5).UnixNano()
	apply(t, f, entry(t, 5, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: parent}))

	l, _ := f.State().PeriodicLaunchByID(nil, "default", "cron")
	if l == nil || !l.Launch.Equal(time.Unix(1000, 5)) {
		t.Fatalf("new parent's launch = %+v, want its submit time", l)
	}
	child := structs.DerivePeriodicChild(parent, time.Unix(2000, 0))
	apply(t, f, entry(t, 6, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: child,
		Eval: testEval("e1", child.ID, structs.EvalStatusPending)}))
	if l, _ = f.State().PeriodicLaunchByID(nil, "default", "cron"); l == nil || !l.Launch.Equal(time.Unix(2000, 0)) || l.ModifyIndex != 6 {
		t.Fatalf("launch after child = %+v, want 2000s at index 6", l)
	}
	// Re-registering the parent keeps the launch record.
	apply(t, f, entry(t, 7, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: parent}))
	if l, _ = f.State().PeriodicLaunchByID(nil, "default", "cron"); !l.Launch.Equal(time.Unix(2000, 0)) {
		t.Fatalf("re-register reset the launch to %v", l.Launch)
	}
	want := []string{"default/cron", "default/" + child.ID, "default/cron"}
	if !reflect.DeepEqual(sink.jobs, want) {
		t.Fatalf("sink jobs %v, want %v", sink.jobs, want)
	}

	// Snapshot and restore keep the table.
	snap, _ := f.Snapshot()
	buf := &bufSink{}
	if err := snap.Persist(buf); err != nil {
		t.Fatal(err)
	}
	dst := newFSM(t, nil)
	if err := dst.Restore(nopCloser{bytes.NewReader(buf.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if rl, _ := dst.State().PeriodicLaunchByID(nil, "default", "cron"); rl == nil || !rl.Launch.Equal(l.Launch) {
		t.Fatalf("restored launch %+v, want %+v", rl, l)
	}

	// Stop: the sink sees the stopped parent; purge: the record goes.
	sink.reset()
	apply(t, f, entry(t, 8, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "cron",
		WriteRequest: structs.WriteRequest{Namespace: "default"}}))
	if len(sink.jobs) != 1 {
		t.Fatalf("stop notified %v", sink.jobs)
	}
	if j, _ := f.State().JobByID(nil, "default", "cron"); j == nil || !j.Stop {
		t.Fatal("parent not stopped")
	}
	apply(t, f, entry(t, 9, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "cron", Purge: true,
		WriteRequest: structs.WriteRequest{Namespace: "default"}}))
	if !reflect.DeepEqual(sink.deleted, []string{"default/cron"}) {
		t.Fatalf("purge notified %v", sink.deleted)
	}
	if l, _ := f.State().PeriodicLaunchByID(nil, "default", "cron"); l != nil {
		t.Fatalf("launch record survives purge: %+v", l)
	}
}
