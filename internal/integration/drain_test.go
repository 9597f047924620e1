package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// One server and three client agents as separate processes: draining the
// node that runs all 6 allocations of a group whose migrate.max_parallel is
// 2 never has more than 2 replacements unhealthy at once, and ends with all
// 6 running elsewhere, the drain complete and the node ineligible.
func TestDrainAcrossClientAgents(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	client := func() *agent {
		return startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
			"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		})
	}
	readyNodes := func(n int) []*api.NodeListStub {
		var nodes []*api.NodeListStub
		waitFor(t, 30*time.Second, fmt.Sprintf("%d ready nodes", n), func() bool {
			var err error
			nodes, _, err = srv.client.Nodes().List(nil)
			ready := 0
			for _, x := range nodes {
				if x.Status == "ready" {
					ready++
				}
			}
			return err == nil && ready == n
		})
		return nodes
	}
	client()
	drained := readyNodes(1)[0].ID

	minHealthy := time.Second
	job := rawExecJob("web", "service", 6, "exec sleep 600")
	job.TaskGroups[0].Migrate = &api.MigrateStrategy{MaxParallel: ptr(2), MinHealthyTime: ptr(minHealthy),
		HealthyDeadline: ptr(30 * time.Second), HealthCheck: ptr("task_states")}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "6 running on the first node", func() bool {
		n := 0
		for _, a := range srv.allocsOf("web") {
			if a.ClientStatus == "running" && a.NodeID == drained {
				n++
			}
		}
		return n == 6
	})
	client()
	client()
	readyNodes(3)

	if _, err := srv.client.Nodes().UpdateDrainOpts(drained, &api.DrainOptions{
		DrainSpec: &api.DrainSpec{Deadline: 2 * time.Minute}}, nil); err != nil {
		t.Fatal(err)
	}
	worst := 0
	waitFor(t, 90*time.Second, "all 6 running elsewhere", func() bool {
		unhealthy, elsewhere := 0, 0
		for _, a := range srv.allocsOf("web") {
			if a.NodeID == drained || a.DesiredStatus != "run" {
				continue
			}
			healthy := a.ClientStatus == "running"
			for _, ts := range a.TaskStates {
				if ts.State != "running" || time.Since(ts.StartedAt) < minHealthy {
					healthy = false
				}
			}
			if healthy {
				elsewhere++
			} else {
				unhealthy++
			}
		}
		worst = max(worst, unhealthy)
		if unhealthy > 2 {
			t.Fatalf("%d replacements not yet healthy at once (migrate.max_parallel 2)", unhealthy)
		}
		return elsewhere == 6
	})
	if worst == 0 {
		t.Fatal("never saw a replacement being started")
	}
	waitFor(t, 30*time.Second, "drain complete", func() bool {
		n, _, err := srv.client.Nodes().Info(drained, nil)
		return err == nil && n.DrainStrategy == nil && n.LastDrain != nil && n.LastDrain.Status == api.DrainStatusComplete
	})
	n, _, _ := srv.client.Nodes().Info(drained, nil)
	if n.SchedulingEligibility != "ineligible" {
		t.Fatalf("drained node is %s", n.SchedulingEligibility)
	}
	for _, a := range srv.allocsOf("web") {
		if a.NodeID == drained && a.ClientStatus == "running" {
			t.Fatalf("alloc %s still running on the drained node", a.ID)
		}
	}
}
