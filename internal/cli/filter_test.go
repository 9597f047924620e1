package cli

import (
	"net/url"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// The list verbs hand -filter to the server as ?filter=, as Nomad's do:
// a listing that silently dropped it would show (and a script would act
// on) every object.
func TestListVerbsPassFilter(t *testing.T) {
	cases := []struct {
		args       []string
		path, want string // the list request and the filter it must carry
	}{
		{[]string{"job", "status", "-filter", `Meta.team == "web"`}, "/v1/jobs", `Meta.team == "web"`},
		{[]string{"job", "status", "-json", "-filter", `Type == "batch"`}, "/v1/jobs", `Type == "batch"`},
		{[]string{"node", "status", "-filter", `Meta.rack == "r1"`}, "/v1/nodes", `Meta.rack == "r1"`},
		{[]string{"eval", "list", "-filter", `TriggeredBy == "node-update"`}, "/v1/evaluations", `TriggeredBy == "node-update"`},
		// -job and -status join the expression instead of being dropped.
		{[]string{"eval", "list", "-filter", `TriggeredBy == "x"`, "-job", "web", "-status", "complete"}, "/v1/evaluations",
			`(TriggeredBy == "x") and JobID == "web" and Status == "complete"`},
	}
	for _, c := range cases {
		f := &fake{routes: map[string]any{
			"GET /v1/jobs":        []*api.JobListStub{},
			"GET /v1/nodes":       []*api.NodeListStub{},
			"GET /v1/evaluations": []*api.Evaluation{},
		}}
		_, errb, code := run(t, f.server(t), c.args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", c.args, code, errb)
			continue
		}
		var got []string
		for _, s := range f.seen {
			if p, q, _ := strings.Cut(s, "?"); p == "GET "+c.path {
				v, _ := url.ParseQuery(q)
				got = append(got, v.Get("filter"))
			}
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%v: filters sent %q, want [%q]", c.args, got, c.want)
		}
	}
}

// A filter the server refuses is an error, never an unfiltered listing.
func TestListVerbsReportFilterError(t *testing.T) {
	f := &fake{routes: map[string]any{}}
	srv := f.server(t)
	for _, args := range [][]string{
		{"job", "status", "-filter", "bogus("},
		{"node", "status", "-filter", "bogus("},
		{"eval", "list", "-filter", "bogus("},
	} {
		out, errb, code := run(t, srv, args...)
		if code != 1 || out != "" || errb == "" {
			t.Errorf("%v: exit %d, out %q, err %q", args, code, out, errb)
		}
	}
}
