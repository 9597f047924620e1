package state

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestUpdateJobStability(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertJob(10, nil, mockJob("web")))
	v1 := mockJob("web")
	v1.TaskGroups[0].Count = 5
	must(t, s.UpsertJob(11, nil, v1))

	// An old version: only the version row changes.
	must(t, s.UpdateJobStability(12, "default", "web", 0, true))
	old, _ := s.JobByIDAndVersion(nil, "default", "web", 0)
	cur, _ := s.JobByID(nil, "default", "web")
	if !old.Stable || cur.Stable || cur.ModifyIndex != 11 {
		t.Fatalf("old stable=%v cur stable=%v cur modify=%d", old.Stable, cur.Stable, cur.ModifyIndex)
	}
	// The current version: the job changes too, its spec index does not.
	must(t, s.UpdateJobStability(13, "default", "web", 1, true))
	cur, _ = s.JobByID(nil, "default", "web")
	v, _ := s.JobByIDAndVersion(nil, "default", "web", 1)
	if !cur.Stable || !v.Stable || cur.ModifyIndex != 13 || cur.JobModifyIndex != 11 {
		t.Fatalf("current: %+v", cur)
	}
	if err := s.UpdateJobStability(14, "default", "web", 7, true); err == nil {
		t.Fatal("unknown version accepted")
	}
}

func TestUpdateJobVersionTag(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertJob(10, nil, mockJob("web")))
	tag := func(v uint64, name string, unset bool) error {
		return s.UpdateJobVersionTag(20, "default", &structs.JobTagRequest{JobID: "web", Name: name, Version: v,
			Unset: unset, Tag: &structs.JobVersionTag{Name: name, Description: "d", TaggedTime: 5}})
	}
	must(t, tag(0, "golden", false))
	// The tagged version survives pruning.
	for i := 1; i <= structs.JobTrackedVersions+2; i++ {
		j := mockJob("web")
		j.TaskGroups[0].Count = 10 + i
		must(t, s.UpsertJob(uint64(30+i), nil, j))
	}
	v0, _ := s.JobByIDAndVersion(nil, "default", "web", 0)
	if v0 == nil || v0.VersionTag == nil || v0.VersionTag.Name != "golden" {
		t.Fatalf("tagged version 0: %+v", v0)
	}
	if err := tag(3, "golden", false); err == nil {
		t.Fatal("a tag name used twice was accepted")
	}
	must(t, tag(0, "golden", true))
	if v0, _ = s.JobByIDAndVersion(nil, "default", "web", 0); v0.VersionTag != nil {
		t.Fatal("untag left the tag")
	}
	if err := tag(0, "golden", true); err == nil {
		t.Fatal("untagging a missing tag succeeded")
	}
}

func TestScalingEvents(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertJob(10, nil, mockJob("web")))
	for i := 0; i < structs.JobTrackedScalingEvents+3; i++ {
		n := int64(i)
		must(t, s.UpsertScalingEvent(uint64(20+i), &structs.ScalingEventRequest{JobID: "web", TaskGroup: "web",
			ScalingEvent: &structs.ScalingEvent{Count: &n, Message: "m", Time: uint64(i)}}))
	}
	ev, err := s.ScalingEventsByJob(nil, "default", "web")
	must(t, err)
	got := ev.ScalingEvents["web"]
	if len(got) != structs.JobTrackedScalingEvents || *got[0].Count != int64(structs.JobTrackedScalingEvents+2) || got[0].CreateIndex != uint64(20+structs.JobTrackedScalingEvents+2) {
		t.Fatalf("events: %d, newest %+v", len(got), got[0])
	}
	must(t, s.DeleteJob(99, "default", "web"))
	if ev, _ := s.ScalingEventsByJob(nil, "default", "web"); ev != nil {
		t.Fatal("purge left scaling events")
	}
}
