package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Namespaces and node pools end to end on a dev agent, through the CLI
// and the api client: a namespace that disables raw_exec refuses a job
// using it; a namespace with a job cannot be deleted until the job is
// purged; a job of pool "gpu" stays blocked until a client of that pool
// joins, lands on it, and the pool's spread algorithm (the cluster's is
// binpack) sends the next gpu job to the second gpu node.
func TestNamespacesAndNodePoolsOnDevAgent(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(want string, args ...string) string {
		t.Helper()
		out, code := a.cli(dir, args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("%v (%d), want %q:\n%s", args, code, want, out)
		}
		return out
	}
	fail := func(want string, args ...string) {
		t.Helper()
		out, code := a.cli(dir, args...)
		if code == 0 || !strings.Contains(out, want) {
			t.Fatalf("%v (%d) should fail with %q:\n%s", args, code, want, out)
		}
	}

	// Namespaces.
	spec := write("locked.hcl", `
name        = "locked"
description = "no raw_exec here"
capabilities {
  disabled_task_drivers = ["raw_exec"]
}
meta {
  owner = "ops"
}
`)
	run(`Successfully applied namespace "locked"!`, "namespace", "apply", spec)
	run(`Successfully applied namespace "team-a"!`, "namespace", "apply", "-description", "Team A", "team-a")
	out := run("team-a", "namespace", "list")
	for _, n := range []string{"default", "locked", "Team A"} {
		if !strings.Contains(out, n) {
			t.Fatalf("namespace list lacks %q:\n%s", n, out)
		}
	}
	out = run("no raw_exec here", "namespace", "status", "locked")
	if !strings.Contains(out, "DisabledDrivers      = raw_exec") || !strings.Contains(out, "owner = ops") {
		t.Fatalf("namespace status:\n%s", out)
	}
	fail(`invalid name "bad name"`, "namespace", "apply", "-description", "x", "bad name")

	_, _, err := a.client.Jobs().Register(rawExecJob("sleeper", "service", 1, "exec sleep 600"), &api.WriteOptions{Namespace: "locked"})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `used task driver "raw_exec" is not allowed in namespace "locked"`) {
		t.Fatalf("raw_exec job in locked: %v", err)
	}
	_, _, err = a.client.Jobs().Register(rawExecJob("sleeper", "service", 1, "exec sleep 600"), &api.WriteOptions{Namespace: "ghost"})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `nonexistent namespace "ghost"`) {
		t.Fatalf("job in a missing namespace: %v", err)
	}

	inTeam := &api.QueryOptions{Namespace: "team-a"}
	if _, _, err := a.client.Jobs().Register(rawExecJob("sleeper", "service", 1, "exec sleep 600"), &api.WriteOptions{Namespace: "team-a"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "sleeper running in team-a", func() bool {
		allocs, _, err := a.client.Jobs().Allocations("sleeper", false, inTeam)
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running"
	})
	if jobs, _, _ := a.client.Jobs().List(nil); len(jobs) != 0 {
		t.Fatalf("default namespace lists team-a's job: %+v", jobs)
	}
	if jobs, _, _ := a.client.Jobs().List(&api.QueryOptions{Namespace: "*"}); len(jobs) != 1 || jobs[0].Namespace != "team-a" {
		t.Fatalf("namespace=* jobs: %+v", jobs)
	}
	fail(`namespace "team-a" has 1 job(s) in it`, "namespace", "delete", "team-a")
	fail("default namespace can not be deleted", "namespace", "delete", "default")
	if _, _, err := a.client.Jobs().Deregister("sleeper", true, &api.WriteOptions{Namespace: "team-a"}); err != nil {
		t.Fatal(err)
	}
	run(`Successfully deleted namespace "team-a"!`, "namespace", "delete", "team-a")

	// Node pools.
	poolSpec := write("gpu.hcl", `
node_pool "gpu" {
  description = "GPU nodes"
  meta {
    vendor = "acme"
  }
  scheduler_config {
    scheduler_algorithm = "spread"
  }
}
`)
	run(`Successfully applied node pool "gpu"!`, "node", "pool", "apply", poolSpec)
	out = run("GPU nodes", "node", "pool", "list")
	if !strings.Contains(out, "all") || !strings.Contains(out, "default") {
		t.Fatalf("node pool list:\n%s", out)
	}
	out = run("Scheduler Algorithm", "node", "pool", "info", "gpu")
	if !strings.Contains(out, "spread") || !strings.Contains(out, "vendor = acme") {
		t.Fatalf("node pool info:\n%s", out)
	}

	gpuJob := func(id string) *api.Job {
		j := rawExecJob(id, "service", 1, "exec sleep 600")
		j.NodePool = ptr("gpu")
		j.TaskGroups[0].Tasks[0].Resources = &api.Resources{CPU: ptr(200), MemoryMB: ptr(64)}
		return j
	}
	if _, _, err := a.client.Jobs().Register(gpuJob("train1"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "train1's blocked eval", func() bool {
		evals, _, err := a.client.Jobs().Evaluations("train1", nil)
		for _, e := range evals {
			if err == nil && e.Status == "blocked" {
				return true
			}
		}
		return false
	})
	if allocs := a.allocsOf("train1"); len(allocs) != 0 {
		t.Fatalf("train1 placed with no gpu node: %+v", allocs)
	}
	fail(`node pool "gpu" has 1 job(s) in it`, "node", "pool", "delete", "gpu")
	fail(`built-in node pool "default" cannot be deleted`, "node", "pool", "delete", "default")

	joinGPU := func() string {
		c := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", a.rpc)}, map[string]any{
			"client": map[string]any{"node_pool": "gpu"},
			"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		})
		var id string
		waitFor(t, 30*time.Second, "gpu client ready", func() bool {
			nodes, _, err := a.client.Nodes().List(nil)
			for _, n := range nodes {
				if err == nil && n.NodePool == "gpu" && n.Status == "ready" && n.Name == fmt.Sprintf("it-%d", c.http) {
					id = n.ID
					return true
				}
			}
			return false
		})
		return id
	}
	gpu1 := joinGPU()
	placedOn := func(job string) string {
		var node string
		waitFor(t, 30*time.Second, job+" running", func() bool {
			for _, al := range a.allocsOf(job) {
				if al.ClientStatus == "running" {
					node = al.NodeID
					return true
				}
			}
			return false
		})
		return node
	}
	if node := placedOn("train1"); node != gpu1 {
		t.Fatalf("train1 on %s, want the gpu node %s", node, gpu1)
	}
	run(gpu1[:8], "node", "pool", "nodes", "gpu")
	run("train1", "node", "pool", "jobs", "gpu")
	fail(`node pool "gpu" has 1 node(s) in it`, "node", "pool", "delete", "gpu")

	// The cluster is binpack; the pool's spread sends the next job to the
	// empty gpu node.
	gpu2 := joinGPU()
	if _, _, err := a.client.Jobs().Register(gpuJob("train2"), nil); err != nil {
		t.Fatal(err)
	}
	if node := placedOn("train2"); node != gpu2 {
		t.Fatalf("train2 on %s with train1, want the empty gpu node %s (pool algorithm spread)", node, gpu2)
	}
}
