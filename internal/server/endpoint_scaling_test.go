package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// scalingJob is testJob with a group policy (count 2 within [1, 5]) and a
// vertical CPU policy on its task.
func scalingJob(id string, max int64) *structs.Job {
	job := testJob(id, 2)
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: new(int64(1)), Max: &max,
		Policy: map[string]any{"cooldown": "1m"}}
	job.TaskGroups[0].Tasks[0].ScalingPolicies = []*structs.ScalingPolicy{{Type: structs.ScalingPolicyTypeVerticalCPU, Max: new(int64(1000))}}
	return job
}

func listPolicies(t *testing.T, s *Server, req structs.ScalingPolicyListRequest) map[string]*structs.ScalingPolicyListStub {
	t.Helper()
	var resp structs.ScalingPolicyListResponse
	if err := s.RPC("Scaling.ListPolicies", &req, &resp); err != nil {
		t.Fatal(err)
	}
	out := map[string]*structs.ScalingPolicyListStub{}
	for _, p := range resp.Policies {
		out[p.Type] = p
	}
	if len(out) != len(resp.Policies) {
		t.Fatalf("two policies of one type: %+v", resp.Policies)
	}
	return out
}

func getPolicy(t *testing.T, s *Server, id string) *structs.ScalingPolicy {
	t.Helper()
	var resp structs.SingleScalingPolicyResponse
	if err := s.RPC("Scaling.GetPolicy", &structs.ScalingPolicySpecificRequest{ID: id}, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Policy
}

func TestScalingPoliciesFollowTheJob(t *testing.T) {
	s := testServer(t, nil)
	register(t, s, scalingJob("sp", 5))
	ps := listPolicies(t, s, structs.ScalingPolicyListRequest{})
	h, v := ps[structs.ScalingPolicyTypeHorizontal], ps[structs.ScalingPolicyTypeVerticalCPU]
	if len(ps) != 2 || h == nil || v == nil || h.ID == "" || v.ID == "" || h.ID == v.ID {
		t.Fatalf("policies after register: %+v", ps)
	}
	if h.Target["Namespace"] != "default" || h.Target["Job"] != "sp" || h.Target["Group"] != "web" || h.Target["Task"] != "" || !h.Enabled {
		t.Fatalf("horizontal target: %+v", h)
	}
	if v.Target["Task"] != "t" || v.Target["Group"] != "web" {
		t.Fatalf("vertical target: %+v", v)
	}
	full := getPolicy(t, s, h.ID)
	if full == nil || *full.Min != 1 || *full.Max != 5 || full.Policy["cooldown"] != "1m" || full.CreateIndex == 0 {
		t.Fatalf("GetPolicy: %+v", full)
	}
	if p := getPolicy(t, s, "no-such-policy"); p != nil {
		t.Fatalf("unknown ID: %+v", p)
	}

	// Filters: type is a prefix, job is exact.
	if got := listPolicies(t, s, structs.ScalingPolicyListRequest{Type: "vertical"}); len(got) != 1 || got[structs.ScalingPolicyTypeVerticalCPU] == nil {
		t.Fatalf("type=vertical: %+v", got)
	}
	if got := listPolicies(t, s, structs.ScalingPolicyListRequest{Type: "horizontal"}); len(got) != 1 || got["horizontal"] == nil {
		t.Fatalf("type=horizontal: %+v", got)
	}
	if got := listPolicies(t, s, structs.ScalingPolicyListRequest{Job: "s"}); len(got) != 0 {
		t.Fatalf("job=s matched job sp: %+v", got)
	}
	if got := listPolicies(t, s, structs.ScalingPolicyListRequest{Job: "sp"}); len(got) != 2 {
		t.Fatalf("job=sp: %+v", got)
	}
	if got := listPolicies(t, s, structs.ScalingPolicyListRequest{QueryOptions: structs.QueryOptions{Namespace: "*"}}); len(got) != 2 {
		t.Fatalf("namespace *: %+v", got)
	}

	// A new version keeps each target's ID; a changed policy moves its
	// ModifyIndex, not its CreateIndex; an unchanged one keeps both.
	register(t, s, scalingJob("sp", 8))
	ps2 := listPolicies(t, s, structs.ScalingPolicyListRequest{})
	h2, v2 := ps2["horizontal"], ps2[structs.ScalingPolicyTypeVerticalCPU]
	if h2.ID != h.ID || v2.ID != v.ID {
		t.Fatalf("IDs changed across versions: %s/%s -> %s/%s", h.ID, v.ID, h2.ID, v2.ID)
	}
	if h2.CreateIndex != h.CreateIndex || h2.ModifyIndex <= h.ModifyIndex || *getPolicy(t, s, h.ID).Max != 8 {
		t.Fatalf("changed policy indexes: %+v then %+v", h, h2)
	}
	if v2.CreateIndex != v.CreateIndex || v2.ModifyIndex != v.ModifyIndex {
		t.Fatalf("unchanged policy rewritten: %+v then %+v", v, v2)
	}

	// A policy dropped from the spec is gone.
	noVertical := scalingJob("sp", 8)
	noVertical.TaskGroups[0].Tasks[0].ScalingPolicies = nil
	register(t, s, noVertical)
	if got := listPolicies(t, s, structs.ScalingPolicyListRequest{}); len(got) != 1 || got["horizontal"].ID != h.ID {
		t.Fatalf("after dropping the vertical policy: %+v", got)
	}

	// A stopped job has no policies; run again, it has them back, same ID.
	var dresp structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "sp"}, &dresp); err != nil {
		t.Fatal(err)
	}
	if got := listPolicies(t, s, structs.ScalingPolicyListRequest{}); len(got) != 0 {
		t.Fatalf("stopped job's policies: %+v", got)
	}
	register(t, s, scalingJob("sp", 8))
	got := listPolicies(t, s, structs.ScalingPolicyListRequest{})
	if len(got) != 2 || got["horizontal"].ID != h.ID {
		t.Fatalf("after running again: %+v", got)
	}
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "sp", Purge: true}, &dresp); err != nil {
		t.Fatal(err)
	}
	if got := listPolicies(t, s, structs.ScalingPolicyListRequest{}); len(got) != 0 {
		t.Fatalf("purged job's policies: %+v", got)
	}
	if p := getPolicy(t, s, h.ID); p != nil {
		t.Fatalf("purged job's policy by ID: %+v", p)
	}
}

func TestRegisterRefusesCountOutsideScalingBounds(t *testing.T) {
	s := testServer(t, nil)
	for _, tc := range []struct {
		count    int
		min, max int64
		want     string
	}{
		{9, 1, 5, "count must not be greater than maximum count in scaling policy (9 > 5)"},
		{1, 2, 5, "count must not be less than minimum count in scaling policy (1 < 2)"},
		{3, 4, 2, "maximum count must not be less than minimum count (2 < 4)"},
	} {
		job := testJob("bounds", tc.count)
		job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Min: &tc.min, Max: &tc.max}
		var resp structs.JobRegisterResponse
		err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `Task group "web": Scaling`) {
			t.Errorf("count %d in [%d, %d]: %v, want %q", tc.count, tc.min, tc.max, err, tc.want)
		}
	}
	// A group policy needs a max.
	job := testJob("nomax", 1)
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{}
	var resp structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err == nil || !strings.Contains(err.Error(), "Scaling.Max: maximum count must be specified") {
		t.Fatalf("no max: %v", err)
	}
	// Min defaults to the count.
	job = testJob("defmin", 3)
	job.TaskGroups[0].Scaling = &structs.ScalingPolicy{Max: new(int64(10))}
	register(t, s, job)
	ps := listPolicies(t, s, structs.ScalingPolicyListRequest{Job: "defmin"})
	if p := getPolicy(t, s, ps["horizontal"].ID); *p.Min != 3 || !*p.Enabled || p.Type != "horizontal" {
		t.Fatalf("defaults: %+v", p)
	}
}

// An autoscaler long-polls the list: a query at the current index returns
// when a job write changes the policies, not before.
func TestListPoliciesBlocksUntilAPolicyChanges(t *testing.T) {
	s := testServer(t, nil)
	var first structs.ScalingPolicyListResponse
	if err := s.RPC("Scaling.ListPolicies", &structs.ScalingPolicyListRequest{}, &first); err != nil {
		t.Fatal(err)
	}
	if first.Index == 0 || len(first.Policies) != 0 {
		t.Fatalf("empty list: index %d, %d policies", first.Index, len(first.Policies))
	}
	done := make(chan *structs.ScalingPolicyListResponse, 1)
	go func() {
		var resp structs.ScalingPolicyListResponse
		req := &structs.ScalingPolicyListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: 10 * time.Second}}
		if err := s.RPC("Scaling.ListPolicies", req, &resp); err != nil {
			t.Error(err)
		}
		done <- &resp
	}()
	// A job without a policy does not wake it.
	register(t, s, testJob("plain", 1))
	select {
	case r := <-done:
		t.Fatalf("woke without a policy change: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	register(t, s, scalingJob("auto", 5))
	select {
	case r := <-done:
		if len(r.Policies) != 2 || r.Index <= first.Index {
			t.Fatalf("after the write: index %d, %+v", r.Index, r.Policies)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query did not return after the policy was written")
	}
}

// A dispatched child carries its parent's spec, policy IDs included; the
// parent's policy stays the only one listed and is not rewritten.
func TestDispatchedChildrenHaveNoPoliciesOfTheirOwn(t *testing.T) {
	s := testServer(t, nil)
	parent := scalingJob("proc", 5)
	parent.Type = structs.JobTypeBatch
	parent.TaskGroups[0].Tasks[0].ScalingPolicies = nil
	parent.ParameterizedJob = &structs.ParameterizedJobConfig{}
	register(t, s, parent)
	before := listPolicies(t, s, structs.ScalingPolicyListRequest{})["horizontal"]
	if before == nil {
		t.Fatal("parameterized parent has no policy")
	}
	var resp structs.JobDispatchResponse
	if err := s.RPC("Job.Dispatch", &structs.JobDispatchRequest{JobID: "proc"}, &resp); err != nil {
		t.Fatal(err)
	}
	if child, _ := s.State().JobByID(nil, "default", resp.DispatchedJobID); child == nil || child.TaskGroups[0].Scaling == nil {
		t.Fatalf("child %q has no scaling block to test with", resp.DispatchedJobID)
	}
	got := listPolicies(t, s, structs.ScalingPolicyListRequest{QueryOptions: structs.QueryOptions{Namespace: "*"}})
	if len(got) != 1 || got["horizontal"].Target["Job"] != "proc" || got["horizontal"].ModifyIndex != before.ModifyIndex {
		t.Fatalf("policies after dispatch: %+v", got["horizontal"])
	}
}
