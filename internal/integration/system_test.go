package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// runningByNode maps node ID to the job's running allocs there.
func runningByNode(a *agent, jobID string) map[string][]string {
	out := make(map[string][]string)
	for _, al := range a.allocsOf(jobID) {
		if al.DesiredStatus == "run" && al.ClientStatus == "running" {
			out[al.NodeID] = append(out[al.NodeID], al.ID)
		}
	}
	return out
}

// A system job runs once on every client agent, reaches a client that
// joins later, and stays on a client marked ineligible.
func TestSystemJobOnEveryClient(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	startClient := func() {
		startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
			"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		})
	}
	readyNodes := func() []*api.NodeListStub {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err != nil {
			return nil
		}
		var out []*api.NodeListStub
		for _, n := range nodes {
			if n.Status == "ready" {
				out = append(out, n)
			}
		}
		return out
	}
	for i := 0; i < 3; i++ {
		startClient()
	}
	waitFor(t, 30*time.Second, "3 ready client nodes", func() bool { return len(readyNodes()) == 3 })

	if _, _, err := srv.client.Jobs().Register(rawExecJob("sys", "system", 1, "sleep 600"), nil); err != nil {
		t.Fatal(err)
	}
	onEach := func(n int) func() bool {
		return func() bool {
			byNode := runningByNode(srv, "sys")
			if len(byNode) != n {
				return false
			}
			for _, ids := range byNode {
				if len(ids) != 1 {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 30*time.Second, "one running alloc on each of 3 nodes", onEach(3))

	startClient()
	waitFor(t, 30*time.Second, "4 ready client nodes", func() bool { return len(readyNodes()) == 4 })
	waitFor(t, 30*time.Second, "one running alloc on each of 4 nodes", onEach(4))
	for _, al := range srv.allocsOf("sys") {
		if al.Name != "sys.g[0]" {
			t.Fatalf("alloc name %q, want sys.g[0]", al.Name)
		}
	}

	victim := readyNodes()[0].ID
	before := runningByNode(srv, "sys")[victim]
	if _, err := srv.client.Nodes().ToggleEligibility(victim, false, nil); err != nil {
		t.Fatal(err)
	}
	// Force a re-evaluation of the job; the ineligible node keeps its alloc.
	evalID, _, err := srv.client.Jobs().EvaluateWithOpts("sys", api.EvalOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "re-evaluation complete", func() bool {
		ev, _, err := srv.client.Evaluations().Info(evalID, nil)
		return err == nil && ev.Status == "complete"
	})
	after := runningByNode(srv, "sys")
	if len(after) != 4 || len(after[victim]) != 1 || after[victim][0] != before[0] {
		t.Fatalf("ineligible node %s: allocs before %v, after %v (all nodes %v)", victim, before, after[victim], after)
	}
}
