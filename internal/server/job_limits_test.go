package server

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// A count above job_max_count is refused at register, scale and plan with
// a 400 naming the group, and reported by validate; nothing is written
// and the earlier job is untouched.
func TestJobMaxCountRefusedEverywhere(t *testing.T) {
	s := testServer(t, func(c *Config) { c.JobMaxCount = 10 })
	register(t, s, testJob("keep", 1))
	want := `Task group "web": count 1000000000 exceeds the server's job_max_count (10)`
	refused := func(what string, err error) {
		t.Helper()
		code, msg := structs.ErrorCode(err)
		if code != 400 || !strings.Contains(msg, want) {
			t.Fatalf("%s: got %d %q, want 400 containing %q", what, code, msg, want)
		}
	}

	var rr structs.JobRegisterResponse
	refused("register", s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("huge", 1_000_000_000)}, &rr))
	if j, _ := s.State().JobByID(nil, "default", "huge"); j != nil {
		t.Fatal("job over the limit was stored")
	}

	n := int64(1_000_000_000)
	refused("scale", s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: "keep", Target: map[string]string{"Group": "web"}, Count: &n}, &rr))
	if j, _ := s.State().JobByID(nil, "default", "keep"); j == nil || j.TaskGroups[0].Count != 1 || j.Version != 0 {
		t.Fatalf("scale over the limit changed the job: %+v", j)
	}

	var pr structs.JobPlanResponse
	refused("plan", s.RPC("Job.Plan", &structs.JobPlanRequest{Job: testJob("huge", 1_000_000_000)}, &pr))

	var vr structs.JobValidateResponse
	if err := s.RPC("Job.Validate", &structs.JobValidateRequest{Job: testJob("huge", 1_000_000_000)}, &vr); err != nil {
		t.Fatal(err)
	}
	if len(vr.ValidationErrors) != 1 || vr.ValidationErrors[0] != want || !strings.Contains(vr.Error, want) {
		t.Fatalf("validate: errors %q, error %q", vr.ValidationErrors, vr.Error)
	}

	// Groups each within the limit but over it together.
	two := testJob("two", 6)
	g := *two.TaskGroups[0]
	g.Name = "api"
	two.TaskGroups = append(two.TaskGroups, &g)
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: two}, &rr)
	if code, msg := structs.ErrorCode(err); code != 400 || !strings.Contains(msg, `Job "two": the sum of its group counts (12) exceeds the server's job_max_count (10)`) {
		t.Fatalf("sum over the limit: got %d %q", code, msg)
	}
	// Canaries are placements too: a canary count over the limit is refused.
	canaries := testJob("canaries", 1)
	huge := 1_000_000_000
	canaries.TaskGroups[0].Update = &structs.UpdateStrategy{Canary: &huge}
	err = s.RPC("Job.Register", &structs.JobRegisterRequest{Job: canaries}, &rr)
	if code, msg := structs.ErrorCode(err); code != 400 || !strings.Contains(msg, `Task group "web": update.canary 1000000000 exceeds the server's job_max_count (10)`) {
		t.Fatalf("canaries over the limit: got %d %q", code, msg)
	}
	// At the limit is fine.
	register(t, s, testJob("ten", 10))
}

// Without a configured limit the server applies the default; a negative
// limit (job_max_count = 0 in the agent file) turns it off.
func TestJobMaxCountDefaultAndOff(t *testing.T) {
	if errs := jobCountErrors(testJob("a", DefaultJobMaxCount+1), DefaultJobMaxCount); len(errs) != 1 {
		t.Fatalf("default limit not applied: %q", errs)
	}
	if errs := jobCountErrors(testJob("a", DefaultJobMaxCount), DefaultJobMaxCount); len(errs) != 0 {
		t.Fatalf("count at the default limit refused: %q", errs)
	}
	if errs := jobCountErrors(testJob("a", 1_000_000_000), -1); len(errs) != 0 {
		t.Fatalf("limit off still refuses: %q", errs)
	}
	c := &Config{}
	c.fill()
	if c.JobMaxCount != DefaultJobMaxCount {
		t.Fatalf("fill: JobMaxCount = %d", c.JobMaxCount)
	}
}

// The workers' Superseded check sees a purge, a stop and a new version
// of the job a scheduler is working on, and nothing else.
func TestJobSupersededSeesPurgeStopAndNewVersion(t *testing.T) {
	s := testServer(t, nil)
	register(t, s, testJob("web", 1))
	current := func() *structs.Job {
		j, err := s.State().JobByID(nil, "default", "web")
		if err != nil || j == nil {
			t.Fatalf("job: %v %v", j, err)
		}
		return j
	}
	v0 := current()
	if s.jobSuperseded(v0) {
		t.Fatal("current job reported superseded")
	}
	register(t, s, testJob("web", 1)) // same spec: a new eval, same version
	if s.jobSuperseded(v0) {
		t.Fatal("re-registering the same spec superseded the job")
	}
	register(t, s, testJob("web", 2))
	if !s.jobSuperseded(v0) {
		t.Fatal("new version not seen")
	}
	v1 := current()
	var dr structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "web"}, &dr); err != nil {
		t.Fatal(err)
	}
	if !s.jobSuperseded(v1) {
		t.Fatal("stop not seen")
	}
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "web", Purge: true}, &dr); err != nil {
		t.Fatal(err)
	}
	if !s.jobSuperseded(v1) {
		t.Fatal("purge not seen")
	}
}
