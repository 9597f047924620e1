package cli

import (
	"sort"
	"strings"
	"testing"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
	"github.com/posener/complete"
)

// TestIDPredictorsAskTheAgentByPrefix: each predictor sends the typed prefix
// to the agent and offers only IDs that complete it.
func TestIDPredictorsAskTheAgentByPrefix(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/jobs": []*api.JobListStub{{ID: "web"}, {ID: "web-canary"}, {ID: "batch"}},
		"GET /v1/allocations": []*api.AllocationListStub{{ID: allocID}, {ID: "8ba8ffff-0000-4000-8000-000000000009"},
			{ID: "ffff0000-0000-4000-8000-000000000000"}},
		"GET /v1/evaluations": []*api.Evaluation{{ID: evalID}},
		"GET /v1/nodes":       []*api.NodeListStub{{ID: nodeID}, {ID: "22220000-0000-4000-8000-000000000000"}},
	}}
	srv := f.server(t)
	newClient := func() (*api.Client, error) {
		cfg := api.DefaultConfig()
		cfg.Address = srv.URL
		return api.NewClient(cfg)
	}
	for _, tc := range []struct {
		kind, typed, path string
		want              []string
	}{
		{"jobs", "we", "/v1/jobs", []string{"web", "web-canary"}},
		{"allocs", "8ba8", "/v1/allocations", []string{allocID, "8ba8ffff-0000-4000-8000-000000000009"}},
		{"evals", "61b", "/v1/evaluations", []string{evalID}},
		{"nodes", "171a", "/v1/nodes", []string{nodeID}},
		{"jobs", "zzz", "/v1/jobs", nil},
	} {
		f.seen = nil
		got := idPredictor(newClient, tc.kind).Predict(complete.Args{Last: tc.typed})
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s %q: got %v, want %v", tc.kind, tc.typed, got, tc.want)
		}
		if len(f.seen) != 1 || !strings.HasPrefix(f.seen[0], "GET "+tc.path+"?") || !strings.Contains(f.seen[0], "prefix="+tc.typed) {
			t.Errorf("%s: want one request to %s?prefix=%s, got %v", tc.kind, tc.path, tc.typed, f.seen)
		}
	}
	// An unreachable agent predicts nothing and does not panic.
	down := func() (*api.Client, error) {
		cfg := api.DefaultConfig()
		cfg.Address = "http://127.0.0.1:1"
		return api.NewClient(cfg)
	}
	if got := idPredictor(down, "jobs").Predict(complete.Args{Last: "w"}); len(got) != 0 {
		t.Errorf("unreachable agent: got %v", got)
	}
}

// TestCommandsCompleteTheirFlags: every command (not the group verbs) offers
// its own flags and the global ones, and the ID commands an ID predictor.
func TestCommandsCompleteTheirFlags(t *testing.T) {
	cmds := Commands(nil, nil)
	for name, want := range map[string][]string{
		"job run":        {"-detach", "-var-file", "-check-index", "-address"},
		"run":            {"-detach", "-var"},
		"job status":     {"-json", "-t", "-all-allocs", "-evals", "-namespace"},
		"alloc logs":     {"-f", "-stderr", "-tail", "-n"},
		"eval list":      {"-status", "-json", "-t"},
		"server members": {"-json"},
	} {
		cmd, err := cmds[name]()
		if err != nil {
			t.Fatal(err)
		}
		ac, ok := cmd.(mcli.CommandAutocomplete)
		if !ok {
			t.Fatalf("%s does not complete", name)
		}
		flags := ac.AutocompleteFlags()
		for _, w := range want {
			if _, ok := flags[w]; !ok {
				t.Errorf("%s: no completion for %s", name, w)
			}
		}
	}
	cmd, _ := cmds["server members"]()
	if _, ok := cmd.(mcli.CommandAutocomplete).AutocompleteFlags()["-t"]; ok {
		t.Error("server members takes -json only, yet completes -t")
	}
	for _, name := range []string{"job status", "alloc status", "eval status", "node status"} {
		cmd, _ := cmds[name]()
		if p := cmd.(mcli.CommandAutocomplete).AutocompleteArgs(); p == nil {
			t.Errorf("%s: no ID predictor", name)
		}
	}
}
