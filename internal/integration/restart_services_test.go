package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// `alloc restart` of a task with a Nomad service, as Nomad does it: the
// service is gone from /v1/service/<name> when the task gets its signal
// (the task itself asks the API from its signal handler), and registered
// again once the task runs again.
func TestRestart_ServiceGoneBeforeSignal(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but curl is missing: %v", err)
		}
		t.Skip("curl is missing")
	}
	a := devAgent(t)
	mark := filepath.Join(t.TempDir(), "restart.mark")
	job := rawExecJob("rs", "service", 1, fmt.Sprintf(
		`trap '%s -s "%s/v1/service/rs-svc" >> %s; echo >> %s; exit 0' TERM; : > %s.ready; while true; do sleep 0.05; done`,
		curl, a.url(""), mark, mark, mark))
	task := job.TaskGroups[0].Tasks[0]
	task.KillTimeout = ptr(5 * time.Second)
	task.Services = []*api.Service{{Name: "rs-svc", Provider: "nomad"}}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	allocID := runningAlloc(t, a, "rs", "rs-svc")
	trapReady(t, mark)
	if err := a.client.Allocations().Restart(&api.Allocation{ID: allocID}, "t", nil); err != nil {
		t.Fatal(err)
	}
	var seen string
	waitFor(t, 20*time.Second, "the task's signal handler", func() bool {
		b, _ := os.ReadFile(mark)
		seen = string(b)
		return strings.HasSuffix(seen, "\n")
	})
	if strings.TrimSpace(seen) != "[]" {
		t.Fatalf("when the task got its signal, /v1/service/rs-svc answered %q, want [] (deregistered first)", seen)
	}
	waitFor(t, 20*time.Second, "the task running again with rs-svc registered", func() bool {
		al, _, err := a.client.Allocations().Info(allocID, nil)
		if err != nil || al.TaskStates["t"] == nil || al.TaskStates["t"].State != "running" || al.TaskStates["t"].Restarts != 1 {
			return false
		}
		regs, _, err := a.client.Services().Get("rs-svc", nil)
		return err == nil && len(regs) == 1 && regs[0].AllocID == allocID
	})
}
