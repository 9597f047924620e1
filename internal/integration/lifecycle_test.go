package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// catAlloc reads a file of an allocation through the client fs API; ok is
// false while the file does not exist.
func (a *agent) catAlloc(allocID, path string) (string, bool) {
	a.t.Helper()
	resp, err := http.Get(a.url("/v1/client/fs/cat/" + allocID + "?path=" + path))
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode == 200
}

// ranOnceOK fails unless the task is dead, not failed, never restarted,
// and its last termination had exit code 0.
func ranOnceOK(t *testing.T, name string, st *api.TaskState) {
	t.Helper()
	if st == nil {
		t.Fatalf("no state for task %s", name)
	}
	if st.State != "dead" || st.Failed || st.Restarts != 0 {
		t.Fatalf("task %s: state %s failed %v restarts %d, want dead, not failed, 0 restarts", name, st.State, st.Failed, st.Restarts)
	}
	exit := -1
	for _, e := range st.Events {
		if e.Type == api.TaskTerminated {
			exit = e.ExitCode
		}
	}
	if exit != 0 {
		t.Fatalf("task %s: last exit code %d, want 0", name, exit)
	}
}

// A service job with an init-style prestart task: the task writes a file to
// the shared alloc dir and exits 0; it runs once, and the main task starts
// after it and reads the file. A poststop task runs once when the job is
// stopped. (Regression: the prestart task was restarted after each exit 0
// until the restart policy failed the allocation.)
func TestLifecyclePrestartInitRunsOnce(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("life", "service", 1,
		`test -f "$NOMAD_ALLOC_DIR/ready" || exit 3; cp "$NOMAD_ALLOC_DIR/ready" "$NOMAD_TASK_DIR/seen"; exec sleep 600`)
	tg := job.TaskGroups[0]
	// A quick restart policy so that a wrong restart shows within the test.
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(2), Interval: ptr(time.Minute), Delay: ptr(200 * time.Millisecond), Mode: ptr("fail")}
	tg.Update = &api.UpdateStrategy{MinHealthyTime: ptr(time.Second)}
	init := api.NewTask("init", "raw_exec")
	init.Config = map[string]any{"command": "/bin/sh", "args": []string{"-c", `echo prepared > "$NOMAD_ALLOC_DIR/ready"`}}
	init.Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(32)}
	init.Lifecycle = &api.TaskLifecycle{Hook: "prestart"}
	cleanup := api.NewTask("cleanup", "raw_exec")
	cleanup.Config = map[string]any{"command": "/bin/sh", "args": []string{"-c", `echo cleaned >> "$NOMAD_ALLOC_DIR/stopped"`}}
	cleanup.Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(32)}
	cleanup.Lifecycle = &api.TaskLifecycle{Hook: "poststop"}
	tg.Tasks = append([]*api.Task{init}, append(tg.Tasks, cleanup)...)
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}

	var alloc *api.Allocation
	waitFor(t, 30*time.Second, "the main task running and having read the prestart file", func() bool {
		stubs := a.allocsOf("life")
		if len(stubs) != 1 {
			return false
		}
		got, _, err := a.client.Allocations().Info(stubs[0].ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.ClientStatus == "failed" {
			t.Fatalf("allocation failed: %+v", got.TaskStates["init"])
		}
		alloc = got
		seen, ok := a.catAlloc(got.ID, "t/local/seen")
		return got.ClientStatus == "running" && got.TaskStates["t"] != nil &&
			got.TaskStates["t"].State == "running" && ok && strings.TrimSpace(seen) == "prepared"
	})
	ranOnceOK(t, "init", alloc.TaskStates["init"])
	if alloc.TaskStates["t"].Restarts != 0 {
		t.Fatalf("main task restarted %d times", alloc.TaskStates["t"].Restarts)
	}
	if _, ok := a.catAlloc(alloc.ID, "alloc/stopped"); ok {
		t.Fatal("poststop task ran while the main task runs")
	}

	if _, _, err := a.client.Jobs().Deregister("life", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the stopped allocation complete", func() bool {
		got, _, err := a.client.Allocations().Info(alloc.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		alloc = got
		return got.ClientStatus == "complete"
	})
	ranOnceOK(t, "cleanup", alloc.TaskStates["cleanup"])
	if out, ok := a.catAlloc(alloc.ID, "alloc/stopped"); !ok || out != "cleaned\n" {
		t.Fatalf("poststop output %q (found %v), want one line", out, ok)
	}
	if cs, ts := alloc.TaskStates["cleanup"].StartedAt, alloc.TaskStates["t"].FinishedAt; cs.Before(ts) {
		t.Fatalf("poststop started %v before the main task finished %v", cs, ts)
	}
}
