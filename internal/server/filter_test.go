package server

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// filterFixture writes, straight into the state store, three objects of each
// listed kind that differ in the fields the filter cases select on:
//
//	jobs        web-a (team a, dc1)   web-b (team b, dc1+dc2)   batch-c (team a, batch)
//	nodes       n1 (rack r1, gpu)     n2 (rack r2)              n3 (rack r1)
//	allocs      a1 (web-a, complete)  a2 (web-b, failed)        a3 (web-a, complete)
//	evals       e1 (web-a, complete)  e2 (web-b, failed)        e3 (web-a, complete)
//	deployments d1 (web-a, successful) d2 (web-b, cancelled)    d3 (web-a, successful)
//
// Every status is terminal, so nothing on the leader acts on them.
func filterFixture(t *testing.T, s *Server) {
	t.Helper()
	st := s.State()
	idx := uint64(1000)
	next := func() uint64 { idx++; return idx }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	job := func(id, typ, team string, dcs ...string) *structs.Job {
		j := testJob(id, 1)
		j.Type, j.Datacenters, j.Meta = typ, dcs, map[string]string{"team": team}
		return j
	}
	jobs := []*structs.Job{
		job("web-a", structs.JobTypeService, "a", "dc1"),
		job("web-b", structs.JobTypeService, "b", "dc1", "dc2"),
		job("batch-c", structs.JobTypeBatch, "a", "dc1"),
	}
	for _, j := range jobs {
		must(st.UpsertJob(next(), nil, j))
	}
	for i, rack := range []string{"r1", "r2", "r1"} {
		n := &structs.Node{ID: fmt.Sprintf("n%d", i+1), SecretID: fmt.Sprintf("secret-%d", i+1), Name: fmt.Sprintf("node-%d", i+1),
			Datacenter: "dc1", Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible,
			Meta: map[string]string{"rack": rack}, Attributes: map[string]string{"kernel.name": "linux"}}
		if i == 0 {
			n.NodeClass = "gpu"
		}
		must(st.UpsertNode(next(), n))
	}
	byJob := []struct{ job, client, eval, dep string }{
		{"web-a", structs.AllocClientStatusComplete, structs.EvalStatusComplete, "successful"},
		{"web-b", structs.AllocClientStatusFailed, structs.EvalStatusFailed, "cancelled"},
		{"web-a", structs.AllocClientStatusComplete, structs.EvalStatusComplete, "successful"},
	}
	for i, b := range byJob {
		n := i + 1
		var j *structs.Job
		for _, x := range jobs {
			if x.ID == b.job {
				j = x
			}
		}
		must(st.UpsertAllocs(next(), []*structs.Allocation{{ID: fmt.Sprintf("a%d", n), Namespace: "default", JobID: b.job, Job: j,
			TaskGroup: "web", NodeID: "n1", Name: b.job + ".web[0]", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: b.client}}))
		must(st.UpsertEvals(next(), []*structs.Evaluation{{ID: fmt.Sprintf("e%d", n), Namespace: "default", JobID: b.job,
			Type: structs.JobTypeService, TriggeredBy: structs.EvalTriggerJobRegister, Status: b.eval, LeaderACL: "leader-secret"}}))
		must(st.UpsertDeployment(next(), &structs.Deployment{ID: fmt.Sprintf("d%d", n), Namespace: "default", JobID: b.job, Status: b.dep}))
	}
}

// listIDs calls one list endpoint and returns the IDs of its page.
type listIDs func(s *Server, q structs.QueryOptions) ([]string, string, error)

var filterEndpoints = map[string]listIDs{
	"Job.List": func(s *Server, q structs.QueryOptions) ([]string, string, error) {
		var r structs.JobListResponse
		err := s.RPC("Job.List", &structs.JobListRequest{QueryOptions: q}, &r)
		return ids(r.Jobs, func(j *structs.JobListStub) string { return j.ID }), r.NextToken, err
	},
	"Node.List": func(s *Server, q structs.QueryOptions) ([]string, string, error) {
		var r structs.NodeListResponse
		err := s.RPC("Node.List", &structs.NodeListRequest{QueryOptions: q}, &r)
		return ids(r.Nodes, func(n *structs.NodeListStub) string { return n.ID }), r.NextToken, err
	},
	"Alloc.List": func(s *Server, q structs.QueryOptions) ([]string, string, error) {
		var r structs.AllocListResponse
		err := s.RPC("Alloc.List", &structs.AllocListRequest{QueryOptions: q}, &r)
		return ids(r.Allocations, func(a *structs.AllocListStub) string { return a.ID }), r.NextToken, err
	},
	"Eval.List": func(s *Server, q structs.QueryOptions) ([]string, string, error) {
		var r structs.EvalListResponse
		err := s.RPC("Eval.List", &structs.EvalListRequest{QueryOptions: q}, &r)
		return ids(r.Evaluations, func(e *structs.Evaluation) string { return e.ID }), r.NextToken, err
	},
	"Deployment.List": func(s *Server, q structs.QueryOptions) ([]string, string, error) {
		var r structs.DeploymentListResponse
		err := s.RPC("Deployment.List", &structs.GenericRequest{QueryOptions: q}, &r)
		return ids(r.Deployments, func(d *structs.Deployment) string { return d.ID }), r.NextToken, err
	},
}

func ids[T any](items []T, id func(T) string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

func TestListFilters(t *testing.T) {
	s := testServer(t, nil)
	filterFixture(t, s)
	cases := []struct {
		endpoint, filter string
		perPage          int32
		next             string
		want             []string // the page, in the endpoint's order
		wantNext         string
		wantErr          string // non-empty: a 400 whose message contains it
	}{
		// Jobs: fields of the stored job, including ones the stub lacks.
		{endpoint: "Job.List", filter: `Meta.team == "a"`, want: []string{"batch-c", "web-a"}},
		{endpoint: "Job.List", filter: `Datacenters contains "dc2"`, want: []string{"web-b"}},
		{endpoint: "Job.List", filter: `Type == "batch" and Meta.team == "a"`, want: []string{"batch-c"}},
		{endpoint: "Job.List", filter: `TaskGroups is not empty and Priority == 0`, want: []string{"batch-c", "web-a", "web-b"}},
		{endpoint: "Job.List", filter: `Meta.team == "z"`, want: []string{}},
		{endpoint: "Job.List", filter: `Meta.team == "a"`, perPage: 1, want: []string{"batch-c"}, wantNext: "default/web-a"},
		{endpoint: "Job.List", filter: `Meta.team == "a"`, perPage: 1, next: "default/web-a", want: []string{"web-a"}},
		{endpoint: "Job.List", filter: `bogus(`, wantErr: "failed to read filter expression: "},
		{endpoint: "Job.List", filter: `NoSuchField == "x"`, wantErr: `"NoSuchField"`},

		// Nodes: the stored node's Meta and Attributes, not only the stub.
		{endpoint: "Node.List", filter: `Meta.rack == "r1"`, want: []string{"n1", "n3"}},
		{endpoint: "Node.List", filter: `Attributes["kernel.name"] == "linux" and NodeClass == "gpu"`, want: []string{"n1"}},
		{endpoint: "Node.List", filter: `Meta.rack == "r9"`, want: []string{}},
		{endpoint: "Node.List", filter: `Meta.rack == "r1"`, perPage: 1, want: []string{"n1"}, wantNext: "n3"},
		{endpoint: "Node.List", filter: `Meta.rack == "r1"`, perPage: 1, next: "n3", want: []string{"n3"}},
		{endpoint: "Node.List", filter: `Status ==`, wantErr: "failed to read filter expression: "},
		{endpoint: "Node.List", filter: `Rack == "r1"`, wantErr: `"Rack"`},
		// The secret a node authenticates with is not a filterable field.
		{endpoint: "Node.List", filter: `SecretID matches "^secret"`, wantErr: `"SecretID"`},

		// Allocations (newest first).
		{endpoint: "Alloc.List", filter: `ClientStatus == "complete"`, want: []string{"a3", "a1"}},
		{endpoint: "Alloc.List", filter: `Job.Meta.team == "b"`, want: []string{"a2"}},
		{endpoint: "Alloc.List", filter: `ClientStatus == "lost"`, want: []string{}},
		{endpoint: "Alloc.List", filter: `JobID == "web-a"`, perPage: 1, want: []string{"a3"}, wantNext: "a1"},
		{endpoint: "Alloc.List", filter: `JobID == "web-a"`, perPage: 1, next: "a1", want: []string{"a1"}},
		{endpoint: "Alloc.List", filter: `ClientStatus = "x"`, wantErr: "failed to read filter expression: "},
		{endpoint: "Alloc.List", filter: `Nope is empty`, wantErr: `"Nope"`},

		// Evaluations (newest first).
		{endpoint: "Eval.List", filter: `Status == "complete"`, want: []string{"e3", "e1"}},
		{endpoint: "Eval.List", filter: `JobID != "web-a"`, want: []string{"e2"}},
		{endpoint: "Eval.List", filter: `Status == "blocked"`, want: []string{}},
		{endpoint: "Eval.List", filter: `Status == "complete"`, perPage: 1, want: []string{"e3"}, wantNext: "e1"},
		{endpoint: "Eval.List", filter: `Status == "complete"`, perPage: 1, next: "e1", want: []string{"e1"}},
		{endpoint: "Eval.List", filter: `(Status == "complete"`, wantErr: "failed to read filter expression: "},
		{endpoint: "Eval.List", filter: `Bogus == "x"`, wantErr: `"Bogus"`},
		{endpoint: "Eval.List", filter: `LeaderACL is not empty`, wantErr: `"LeaderACL"`},

		// Deployments.
		{endpoint: "Deployment.List", filter: `Status != "successful"`, want: []string{"d2"}},
		{endpoint: "Deployment.List", filter: `JobID == "web-a"`, want: []string{"d1", "d3"}},
		{endpoint: "Deployment.List", filter: `Status == "running"`, want: []string{}},
		{endpoint: "Deployment.List", filter: `JobID == "web-a"`, perPage: 1, want: []string{"d1"}, wantNext: "d3"},
		{endpoint: "Deployment.List", filter: `JobID == "web-a"`, perPage: 1, next: "d3", want: []string{"d3"}},
		{endpoint: "Deployment.List", filter: `Status matches`, wantErr: "failed to read filter expression: "},
		{endpoint: "Deployment.List", filter: `Missing == 1`, wantErr: `"Missing"`},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s %s per=%d next=%s", c.endpoint, c.filter, c.perPage, c.next)
		got, next, err := filterEndpoints[c.endpoint](s, structs.QueryOptions{Filter: c.filter, PerPage: c.perPage, NextToken: c.next})
		if c.wantErr != "" {
			code, msg := structs.ErrorCode(errOrEmpty(err))
			if err == nil || code != 400 || !strings.Contains(msg, c.wantErr) {
				t.Errorf("%s: got %v (code %d), want a 400 containing %q", name, err, code, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) || next != c.wantNext {
			t.Errorf("%s: got %v next %q, want %v next %q", name, got, next, c.want, c.wantNext)
		}
	}
	// Without a filter every endpoint still lists everything.
	for name, list := range filterEndpoints {
		got, _, err := list(s, structs.QueryOptions{})
		if err != nil || len(got) != 3 {
			t.Errorf("%s unfiltered: %v %v", name, got, err)
		}
	}
}

// A script pages through a filtered list while the cluster changes: the
// object whose token began the next page stops matching in between. The next
// page must still follow on from its place in the list, not come back empty
// (which would end the walk early and leave matching objects unseen).
func TestFilteredPageFollowsOnWhenTokenStopsMatching(t *testing.T) {
	s := testServer(t, nil)
	node := func(id, rack string) *structs.Node {
		return &structs.Node{ID: id, SecretID: "s-" + id, Name: id, Datacenter: "dc1", Status: structs.NodeStatusReady,
			SchedulingEligibility: structs.NodeSchedulingEligible, Meta: map[string]string{"rack": rack}}
	}
	for i, id := range []string{"n1", "n2", "n3", "n4"} {
		if err := s.State().UpsertNode(uint64(1000+i), node(id, "r1")); err != nil {
			t.Fatal(err)
		}
	}
	list := filterEndpoints["Node.List"]
	page, next, err := list(s, structs.QueryOptions{Filter: `Meta.rack == "r1"`, PerPage: 2})
	if err != nil || !reflect.DeepEqual(page, []string{"n1", "n2"}) || next != "n3" {
		t.Fatalf("first page: %v next %q %v", page, next, err)
	}
	if err := s.State().UpsertNode(1010, node("n3", "r2")); err != nil {
		t.Fatal(err)
	}
	page, next, err = list(s, structs.QueryOptions{Filter: `Meta.rack == "r1"`, PerPage: 2, NextToken: next})
	if err != nil || !reflect.DeepEqual(page, []string{"n4"}) || next != "" {
		t.Fatalf("second page after n3 left the filter: %v next %q %v, want [n4]", page, next, err)
	}
}

func errOrEmpty(err error) error {
	if err == nil {
		return fmt.Errorf("no error")
	}
	return err
}

// The legacy job/status parameters of the eval list and a filter expression
// do not mix: Nomad answers 400 rather than silently dropping either.
func TestEvalListFilterWithLegacyParams(t *testing.T) {
	s := testServer(t, nil)
	filterFixture(t, s)
	for _, args := range []*structs.EvalListRequest{
		{FilterJobID: "web-a", QueryOptions: structs.QueryOptions{Filter: `Status == "complete"`}},
		{FilterEvalStatus: "complete", QueryOptions: structs.QueryOptions{Filter: `JobID == "web-a"`}},
	} {
		var r structs.EvalListResponse
		err := s.RPC("Eval.List", args, &r)
		code, msg := structs.ErrorCode(errOrEmpty(err))
		if err == nil || code != 400 || !strings.Contains(msg, "cannot be used with other filter parameters") {
			t.Errorf("%+v: got %v (code %d), want 400", args, err, code)
		}
	}
	var r structs.EvalListResponse
	if err := s.RPC("Eval.List", &structs.EvalListRequest{FilterJobID: "web-b"}, &r); err != nil || len(r.Evaluations) != 1 {
		t.Fatalf("job parameter alone: %v %d evals", err, len(r.Evaluations))
	}
}

// BenchmarkAllocListFilter lists 10,000 allocations with and without a
// filter that keeps a tenth of them (go test -run x -bench AllocListFilter).
func BenchmarkAllocListFilter(b *testing.B) {
	s := testServer(b, nil)
	j := testJob("bench", 1)
	if err := s.State().UpsertJob(1000, nil, j); err != nil {
		b.Fatal(err)
	}
	allocs := make([]*structs.Allocation, 10000)
	for i := range allocs {
		status := structs.AllocClientStatusComplete
		if i%10 == 0 {
			status = structs.AllocClientStatusFailed
		}
		allocs[i] = &structs.Allocation{ID: fmt.Sprintf("%08d-0000-0000-0000-000000000000", i), Namespace: "default",
			JobID: j.ID, Job: j, TaskGroup: "web", NodeID: "n1", Name: fmt.Sprintf("bench.web[%d]", i),
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: status}
	}
	if err := s.State().UpsertAllocs(1001, allocs); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, filter string }{
		{"none", ""},
		{"status", `ClientStatus == "failed"`},
		{"job-id-regex-and-two-fields", `Job.ID matches "^ben" and TaskGroup == "web" and ClientStatus != "complete"`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				var r structs.AllocListResponse
				if err := s.RPC("Alloc.List", &structs.AllocListRequest{QueryOptions: structs.QueryOptions{Filter: bc.filter}}, &r); err != nil {
					b.Fatal(err)
				}
				if bc.filter != "" && len(r.Allocations) != 1000 {
					b.Fatalf("%d allocs", len(r.Allocations))
				}
			}
		})
	}
}
