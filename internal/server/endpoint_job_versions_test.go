package server

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestRevertRegistersOldVersionAsNew(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("rv", 1)).EvalID)
	evalDone(t, s, register(t, s, testJob("rv", 3)).EvalID) // version 1

	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Revert", &structs.JobRevertRequest{JobID: "rv", JobVersion: 1}, &resp)
	if err == nil || !strings.Contains(err.Error(), "can't revert to current version") {
		t.Fatalf("revert to current: %v", err)
	}
	wrong := uint64(7)
	err = s.RPC("Job.Revert", &structs.JobRevertRequest{JobID: "rv", JobVersion: 0, EnforcePriorVersion: &wrong}, &resp)
	if err == nil || !strings.Contains(err.Error(), "Current job has version 1; enforcing version 7") {
		t.Fatalf("enforce prior version: %v", err)
	}
	if err := s.RPC("Job.Revert", &structs.JobRevertRequest{JobID: "rv", JobVersion: 9}, &resp); err == nil {
		t.Fatal("revert to an unknown version succeeded")
	}
	prior := uint64(1)
	if err := s.RPC("Job.Revert", &structs.JobRevertRequest{JobID: "rv", JobVersion: 0, EnforcePriorVersion: &prior}, &resp); err != nil {
		t.Fatal(err)
	}
	evalDone(t, s, resp.EvalID)
	job, _ := s.State().JobByID(nil, "default", "rv")
	if job.Version != 2 || job.TaskGroups[0].Count != 1 {
		t.Fatalf("after revert: version %d count %d, want version 2 count 1", job.Version, job.TaskGroups[0].Count)
	}
	waitFor(t, 5e9, "one live alloc after revert", func() bool { return len(liveAllocs(t, s, "rv")) == 1 })
}

func TestStableMarksVersion(t *testing.T) {
	s := testServer(t, nil)
	register(t, s, testJob("st", 1))
	var resp structs.JobStabilityResponse
	if err := s.RPC("Job.Stable", &structs.JobStabilityRequest{JobID: "st", JobVersion: 0, Stable: true}, &resp); err != nil {
		t.Fatal(err)
	}
	if job, _ := s.State().JobByID(nil, "default", "st"); !job.Stable || resp.Index == 0 {
		t.Fatalf("stable=%v index=%d", job.Stable, resp.Index)
	}
	err := s.RPC("Job.Stable", &structs.JobStabilityRequest{JobID: "st", JobVersion: 4, Stable: true}, &resp)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown version: %v", err)
	}
}

func TestScaleChangesCountAndRecordsEvent(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("sc", 1)).EvalID)
	n := int64(3)
	var resp structs.JobRegisterResponse
	req := &structs.JobScaleRequest{JobID: "sc", Target: map[string]string{"Group": "web"}, Count: &n, Message: "more please",
		Meta: map[string]any{"by": "test"}}
	if err := s.RPC("Job.Scale", req, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" {
		t.Fatal("scale created no evaluation")
	}
	evalDone(t, s, resp.EvalID)
	waitFor(t, 5e9, "three live allocs", func() bool { return len(liveAllocs(t, s, "sc")) == 3 })
	job, _ := s.State().JobByID(nil, "default", "sc")
	if job.Version != 1 || job.TaskGroups[0].Count != 3 {
		t.Fatalf("job after scale: version %d count %d", job.Version, job.TaskGroups[0].Count)
	}
	// An event without a count records only the event.
	if err := s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: "sc", Target: map[string]string{"Group": "web"},
		Message: "autoscaler failed", Error: true}, &resp); err != nil {
		t.Fatal(err)
	}
	var st structs.JobScaleStatusResponse
	if err := s.RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: "sc"}, &st); err != nil {
		t.Fatal(err)
	}
	evs := st.JobScaleStatus.TaskGroups["web"].Events
	if len(evs) != 2 || !evs[0].Error || evs[1].Message != "more please" || evs[1].PreviousCount != 1 ||
		*evs[1].Count != 3 || evs[1].EvalID == nil || evs[1].Meta["by"] != "test" {
		t.Fatalf("events: %+v", evs)
	}
	if j, _ := s.State().JobByID(nil, "default", "sc"); j.Version != 1 {
		t.Fatalf("error event made a new version: %d", j.Version)
	}

	for _, tc := range []struct {
		req  structs.JobScaleRequest
		want string
	}{
		{structs.JobScaleRequest{JobID: "sc", Target: map[string]string{"Group": "nope"}, Count: &n}, "does not exist"},
		{structs.JobScaleRequest{JobID: "sc", Target: map[string]string{}, Count: &n}, "missing task group"},
		{structs.JobScaleRequest{JobID: "sc", Target: map[string]string{"Group": "web"}, Count: new(int64(-1))}, "negative"},
		{structs.JobScaleRequest{JobID: "sc", Target: map[string]string{"Group": "web"}, Count: &n, Error: true}, "error is true"},
		{structs.JobScaleRequest{JobID: "nojob", Target: map[string]string{"Group": "web"}, Count: &n}, "not found"},
	} {
		err := s.RPC("Job.Scale", &tc.req, &resp)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("scale %+v: %v, want %q", tc.req, err, tc.want)
		}
	}
}

func TestScaleHonoursPolicyBounds(t *testing.T) {
	s := testServer(t, nil)
	job := testJob("pol", 1)
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: new(int64(1)), Max: new(int64(2))}
	register(t, s, job)
	var resp structs.JobRegisterResponse
	req := structs.JobScaleRequest{JobID: "pol", Target: map[string]string{"Group": "web"}, Count: new(int64(5))}
	if err := s.RPC("Job.Scale", &req, &resp); err == nil || !strings.Contains(err.Error(), "maximum: 5 > 2") {
		t.Fatalf("above max: %v", err)
	}
	req.PolicyOverride = true
	if err := s.RPC("Job.Scale", &req, &resp); err != nil {
		t.Fatalf("override: %v", err)
	}
}

func TestVersionsDiffsAndTags(t *testing.T) {
	s := testServer(t, nil)
	register(t, s, testJob("vd", 1))
	register(t, s, testJob("vd", 2))
	j := testJob("vd", 2)
	j.Priority = 70
	register(t, s, j)
	var vr structs.JobVersionsResponse
	if err := s.RPC("Job.GetJobVersions", &structs.JobVersionsRequest{JobID: "vd", Diffs: true}, &vr); err != nil {
		t.Fatal(err)
	}
	if len(vr.Versions) != 3 || len(vr.Diffs) != 2 {
		t.Fatalf("%d versions %d diffs", len(vr.Versions), len(vr.Diffs))
	}
	if d := vr.Diffs[0]; len(d.Fields) != 1 || d.Fields[0].Name != "Priority" || d.Fields[0].New != "70" {
		t.Fatalf("diff v2<-v1: %+v", d.Fields)
	}
	if d := vr.Diffs[1]; len(d.TaskGroups) != 1 || d.TaskGroups[0].Fields[0].Name != "Count" || d.TaskGroups[0].Fields[0].Old != "1" {
		t.Fatalf("diff v1<-v0: %+v", d.TaskGroups)
	}

	var gr structs.GenericResponse
	if err := s.RPC("Job.TagVersion", &structs.JobTagRequest{JobID: "vd", Name: "first", Version: 0,
		Tag: &structs.JobVersionTag{Description: "the original"}}, &gr); err != nil {
		t.Fatal(err)
	}
	err := s.RPC("Job.TagVersion", &structs.JobTagRequest{JobID: "vd", Name: "first", Version: 1}, &gr)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate tag: %v", err)
	}
	if err := s.RPC("Job.GetJobVersions", &structs.JobVersionsRequest{JobID: "vd", DiffTagName: "first"}, &vr); err != nil {
		t.Fatal(err)
	}
	if len(vr.Diffs) != 2 || vr.Versions[2].VersionTag == nil || vr.Versions[2].VersionTag.TaggedTime == 0 {
		t.Fatalf("diff against tag: %d diffs, v0 tag %+v", len(vr.Diffs), vr.Versions[2].VersionTag)
	}
	if err := s.RPC("Job.TagVersion", &structs.JobTagRequest{JobID: "vd", Name: "first", Unset: true}, &gr); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("Job.TagVersion", &structs.JobTagRequest{JobID: "vd", Name: "first", Unset: true}, &gr); err == nil {
		t.Fatal("untagging twice succeeded")
	}
}
