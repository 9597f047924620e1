package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Garbage collection as an operator sees it: with short thresholds a
// finished batch job, its evaluation and allocations leave the servers by
// themselves, the client's alloc dirs leave the disk, a running job is
// untouched; `system gc`, `system reconcile summaries` and `eval delete`
// answer as Nomad's.
func TestGarbageCollectionEndToEnd(t *testing.T) {
	allocDir := t.TempDir()
	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"server": map[string]any{"job_gc_interval": "200ms", "job_gc_threshold": "1s", "eval_gc_threshold": "1s",
			"batch_eval_gc_threshold": "1s", "deployment_gc_threshold": "1s"},
		"client": map[string]any{"alloc_dir": allocDir},
	})
	a.waitReady(true)
	if _, _, err := a.client.Jobs().Register(rawExecJob("live", "service", 1, "exec sleep 600"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.client.Jobs().Register(rawExecJob("once", "batch", 2, "echo done"), nil); err != nil {
		t.Fatal(err)
	}
	var onceAllocs []*api.AllocationListStub
	waitFor(t, 30*time.Second, "batch job done and service job running", func() bool {
		onceAllocs = a.allocsOf("once")
		done := len(onceAllocs) == 2
		for _, s := range onceAllocs {
			done = done && s.ClientStatus == "complete"
		}
		live := a.allocsOf("live")
		return done && len(live) == 1 && live[0].ClientStatus == "running"
	})
	for _, s := range onceAllocs {
		if _, err := os.Stat(filepath.Join(allocDir, s.ID)); err != nil {
			t.Fatalf("alloc dir of %s: %v", s.ID, err)
		}
	}
	waitFor(t, 30*time.Second, "finished job collected, alloc dirs removed", func() bool {
		if _, _, err := a.client.Jobs().Info("once", nil); err == nil {
			return false
		}
		for _, s := range onceAllocs {
			if _, err := os.Stat(filepath.Join(allocDir, s.ID)); err == nil {
				return false
			}
		}
		return true
	})
	count, _, err := a.client.Evaluations().Count(&api.QueryOptions{Filter: `JobID == "once"`})
	if err != nil || count.Count != 0 {
		t.Fatalf("evaluations of the collected job: %+v %v", count, err)
	}
	live := a.allocsOf("live")
	if len(live) != 1 || live[0].ClientStatus != "running" {
		t.Fatalf("the running job was touched: %+v", live)
	}
	if _, err := os.Stat(filepath.Join(allocDir, live[0].ID)); err != nil {
		t.Fatalf("the running allocation's dir: %v", err)
	}

	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"system", "gc"}, 0, ""},
		{[]string{"system", "reconcile", "summaries"}, 0, "Successfully reconciled job summaries"},
		{[]string{"eval", "delete", "abc"}, 1, "eval broker must be paused"},
		{[]string{"eval", "delete"}, 1, "<evaluation_id>, or the -filter flag"},
	} {
		out, code := a.cli(dir, c.args...)
		if code != c.code || !strings.Contains(out, c.out) {
			t.Errorf("%v: exit %d\n%s", c.args, code, out)
		}
	}
	if live := a.allocsOf("live"); len(live) != 1 || live[0].ClientStatus != "running" {
		t.Fatalf("system gc touched the running job: %+v", live)
	}
}
