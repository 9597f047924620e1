package integration

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// ?filter= through the official Go client against the built binary: every
// list Nomad filters answers only the matching objects, pages count matching
// objects only, and a bad expression is a 400 (never an unfiltered 200 that
// a script would go on to act on).
func TestListFiltersEndToEnd(t *testing.T) {
	a := devAgent(t)
	for _, j := range []struct{ id, team string }{{"blue-1", "blue"}, {"blue-2", "blue"}, {"green-1", "green"}} {
		job := rawExecJob(j.id, "batch", 1, "exit 0")
		job.Meta = map[string]string{"team": j.team}
		if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "three completed allocations", func() bool {
		allocs, _, err := a.client.Allocations().List(nil)
		done := 0
		for _, al := range allocs {
			if al.ClientStatus == "complete" {
				done++
			}
		}
		return err == nil && done == 3
	})
	q := func(filter string) *api.QueryOptions { return &api.QueryOptions{Filter: filter} }

	jobs, _, err := a.client.Jobs().List(q(`Meta.team == "blue"`))
	if got := jobIDs(jobs); err != nil || !slices.Equal(got, []string{"blue-1", "blue-2"}) {
		t.Fatalf("jobs of team blue: %v %v", got, err)
	}
	// A page of one holds one match and points at the next match.
	jobs, meta, err := a.client.Jobs().List(&api.QueryOptions{Filter: `Meta.team == "blue"`, PerPage: 1})
	if got := jobIDs(jobs); err != nil || !slices.Equal(got, []string{"blue-1"}) || meta.NextToken == "" {
		t.Fatalf("first page: %v next %q %v", got, meta.NextToken, err)
	}
	jobs, meta, err = a.client.Jobs().List(&api.QueryOptions{Filter: `Meta.team == "blue"`, PerPage: 1, NextToken: meta.NextToken})
	if got := jobIDs(jobs); err != nil || !slices.Equal(got, []string{"blue-2"}) || meta.NextToken != "" {
		t.Fatalf("second page: %v next %q %v", got, meta.NextToken, err)
	}

	allocs, _, err := a.client.Allocations().List(q(`JobID == "green-1" and ClientStatus == "complete"`))
	if err != nil || len(allocs) != 1 || allocs[0].JobID != "green-1" {
		t.Fatalf("allocations of green-1: %+v %v", allocs, err)
	}
	evals, _, err := a.client.Evaluations().List(q(`JobID == "green-1"`))
	if err != nil || len(evals) == 0 {
		t.Fatalf("evaluations of green-1: %v", err)
	}
	for _, e := range evals {
		if e.JobID != "green-1" {
			t.Fatalf("filtered evaluations hold one of %s", e.JobID)
		}
	}
	nodes, _, err := a.client.Nodes().List(q(`Attributes["kernel.name"] == "linux" and Status == "ready"`))
	if err != nil || len(nodes) != 1 {
		t.Fatalf("ready linux nodes: %d %v", len(nodes), err)
	}
	if nodes, _, err = a.client.Nodes().List(q(`Status == "down"`)); err != nil || len(nodes) != 0 {
		t.Fatalf("down nodes: %d %v", len(nodes), err)
	}
	if deps, _, err := a.client.Deployments().List(q(`Status == "running"`)); err != nil || len(deps) != 0 {
		t.Fatalf("running deployments: %d %v", len(deps), err)
	}

	// A malformed expression and a selector that names no field are 400s
	// on every list, with a reason.
	lists := map[string]func(*api.QueryOptions) error{
		"jobs":        func(o *api.QueryOptions) error { _, _, err := a.client.Jobs().List(o); return err },
		"allocations": func(o *api.QueryOptions) error { _, _, err := a.client.Allocations().List(o); return err },
		"evaluations": func(o *api.QueryOptions) error { _, _, err := a.client.Evaluations().List(o); return err },
		"nodes":       func(o *api.QueryOptions) error { _, _, err := a.client.Nodes().List(o); return err },
		"deployments": func(o *api.QueryOptions) error { _, _, err := a.client.Deployments().List(o); return err },
	}
	for name, list := range lists {
		if err := list(q(`bogus(`)); err == nil || !strings.Contains(err.Error(), "400") ||
			!strings.Contains(err.Error(), "failed to read filter expression") {
			t.Errorf("%s with a malformed filter: %v", name, err)
		}
	}
	for name, list := range lists {
		if name == "deployments" {
			continue // none exist: nothing is evaluated, as in Nomad
		}
		if err := list(q(`NoSuchField == "x"`)); err == nil || !strings.Contains(err.Error(), "400") ||
			!strings.Contains(err.Error(), "NoSuchField") {
			t.Errorf("%s filtered on an unknown field: %v", name, err)
		}
	}
	resp, err := http.Get(a.url("/v1/jobs?filter=" + url.QueryEscape("bogus(")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.HasPrefix(string(body), "failed to read filter expression: ") {
		t.Fatalf("GET /v1/jobs?filter=bogus(: %d %q", resp.StatusCode, body)
	}

	// The CLI's -filter reaches the server.
	out, code := a.cli(t.TempDir(), "job", "status", "-filter", `Meta.team == "green"`)
	if code != 0 || !strings.Contains(out, "green-1") || strings.Contains(out, "blue-") {
		t.Fatalf("job status -filter: exit %d\n%s", code, out)
	}
	if out, code := a.cli(t.TempDir(), "node", "status", "-filter", "bogus("); code == 0 || !strings.Contains(out, "failed to read filter expression") {
		t.Fatalf("node status -filter bogus(: exit %d\n%s", code, out)
	}
}

func jobIDs(jobs []*api.JobListStub) []string {
	out := []string{}
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}
