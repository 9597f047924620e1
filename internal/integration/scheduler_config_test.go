package integration

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Setting the scheduler algorithm to spread through the operator API (here
// with the CLI) changes where the next job's allocation lands, on the
// running server without a restart: one server, two client agents; under
// binpack two jobs share a node, after `operator scheduler set-config
// -scheduler-algorithm=spread` the next one goes to the empty node.
func TestSchedulerAlgorithmSpreadAtRuntime(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	for i := 0; i < 2; i++ {
		startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
			"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		})
	}
	var nodes []string
	waitFor(t, 30*time.Second, "2 ready client nodes", func() bool {
		list, _, err := srv.client.Nodes().List(nil)
		nodes = nodes[:0]
		for _, n := range list {
			if err == nil && n.Status == "ready" {
				nodes = append(nodes, n.ID)
			}
		}
		return len(nodes) == 2
	})

	out, code := srv.cli(t.TempDir(), "operator", "scheduler", "get-config")
	if code != 0 || !strings.Contains(out, "Scheduler Algorithm           = binpack") {
		t.Fatalf("get-config (%d):\n%s", code, out)
	}
	place := func(id string) string {
		t.Helper()
		job := rawExecJob(id, "service", 1, "exec sleep 600")
		job.TaskGroups[0].Tasks[0].Resources = &api.Resources{CPU: ptr(500), MemoryMB: ptr(256)}
		if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
		var node string
		waitFor(t, 30*time.Second, id+" placed", func() bool {
			for _, a := range srv.allocsOf(id) {
				if a.DesiredStatus == "run" {
					node = a.NodeID
					return true
				}
			}
			return false
		})
		return node
	}
	first := place("bin1")
	if second := place("bin2"); second != first {
		t.Fatalf("binpack: second job on %s, first on %s", second, first)
	}

	out, code = srv.cli(t.TempDir(), "operator", "scheduler", "set-config", "-scheduler-algorithm=spread")
	if code != 0 || !strings.Contains(out, "Scheduler configuration updated!") {
		t.Fatalf("set-config (%d):\n%s", code, out)
	}
	cfg, _, err := srv.client.Operator().SchedulerGetConfiguration(nil)
	if err != nil || cfg.SchedulerConfig.SchedulerAlgorithm != api.SchedulerAlgorithmSpread ||
		!cfg.SchedulerConfig.PreemptionConfig.SystemSchedulerEnabled {
		t.Fatalf("after set-config: %+v %v", cfg, err)
	}
	if third := place("spread1"); third == first {
		t.Fatalf("spread: next job on %s with the other two, not on the empty node", third)
	}

	// A stale CAS write is refused and changes nothing.
	stale := *cfg.SchedulerConfig
	stale.SchedulerAlgorithm = api.SchedulerAlgorithmBinpack
	stale.ModifyIndex--
	resp, _, err := srv.client.Operator().SchedulerCASConfiguration(&stale, nil)
	if err != nil || resp.Updated {
		t.Fatalf("stale CAS: %+v %v", resp, err)
	}
	// Bad input is a 400 naming what is wrong.
	for _, bad := range []struct{ path, body, want string }{
		{"/v1/operator/scheduler/configuration?cas=abc", `{"SchedulerAlgorithm":"spread"}`, "cas"},
		{"/v1/operator/scheduler/configuration", `{"SchedulerAlgorithm":"random"}`, "SchedulerAlgorithm"},
		{"/v1/operator/scheduler/configuration", `{"PauseEvalBroker":"yes"}`, "PauseEvalBroker"},
	} {
		if code, body := srv.put(bad.path, []byte(bad.body)); code != 400 || !strings.Contains(body, bad.want) {
			t.Errorf("PUT %s %s: %d %q", bad.path, bad.body, code, body)
		}
	}
}

// A task's memory_max reaches it only while memory oversubscription is
// enabled in the scheduler configuration (Nomad's default is off, and the
// task is then limited to its memory): switched on through the API, the
// next job's task sees NOMAD_MEMORY_MAX_LIMIT.
func TestMemoryOversubscriptionAtRuntime(t *testing.T) {
	a := devAgent(t)
	maxLimit := func(id string) string {
		t.Helper()
		job := rawExecJob(id, "batch", 1, `echo "max=$NOMAD_MEMORY_MAX_LIMIT"`)
		job.TaskGroups[0].Tasks[0].Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(32), MemoryMaxMB: ptr(96)}
		if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
			t.Fatal(err)
		}
		var alloc *api.Allocation
		waitFor(t, 20*time.Second, id+" complete", func() bool {
			stubs := a.allocsOf(id)
			if len(stubs) != 1 || stubs[0].ClientStatus != "complete" {
				return false
			}
			var err error
			alloc, _, err = a.client.Allocations().Info(stubs[0].ID, nil)
			return err == nil
		})
		r, err := a.client.AllocFS().Cat(alloc, "alloc/logs/t.stdout.0", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return strings.TrimSpace(string(b))
	}
	if got := maxLimit("off"); got != "max=" {
		t.Fatalf("oversubscription off: task saw %q", got)
	}
	cfg, _, err := a.client.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SchedulerConfig.MemoryOversubscriptionEnabled = true
	if resp, _, err := a.client.Operator().SchedulerCASConfiguration(cfg.SchedulerConfig, nil); err != nil || !resp.Updated {
		t.Fatalf("enable oversubscription: %+v %v", resp, err)
	}
	if got := maxLimit("on"); got != "max=96" {
		t.Fatalf("oversubscription on: task saw %q", got)
	}
}
