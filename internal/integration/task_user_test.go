package integration

import (
	"os"
	"os/user"
	"strings"
	"testing"
	"time"
)

// A raw_exec task's `user` is honoured when the agent runs as root, and a
// user the node does not have fails the task with a Driver Failure event
// that says so.
func TestRawExecTaskUser(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI is set but the tests do not run as root: cannot test running a task as another user")
		}
		t.Skip("needs root to run a task as another user")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("the node has no user nobody: %v", err)
	}
	a := devAgent(t)
	job := rawExecJob("as-nobody", "service", 1, `id -u > "$NOMAD_TASK_DIR/uid"; sleep 300`)
	job.TaskGroups[0].Tasks[0].User = "nobody"
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 20*time.Second, "the task's uid file", func() bool {
		for _, s := range a.allocsOf("as-nobody") {
			if s.ClientStatus == "running" {
				allocID = s.ID
				out, code := a.cli("", "alloc", "fs", s.ID, "t/local/uid")
				return code == 0 && strings.TrimSpace(out) == nobody.Uid
			}
		}
		return false
	})
	if out, code := a.cli("", "alloc", "exec", "-i=false", "-t=false", allocID, "id", "-u"); code != 0 || strings.TrimSpace(out) != nobody.Uid {
		t.Fatalf("alloc exec ran as %q (exit %d), want uid %s", out, code, nobody.Uid)
	}

	bad := rawExecJob("as-nobody-known", "batch", 1, "true")
	bad.TaskGroups[0].Tasks[0].User = "no-such-user-drover"
	if _, _, err := a.client.Jobs().Register(bad, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "a Driver Failure naming the unknown user", func() bool {
		for _, s := range a.allocsOf("as-nobody-known") {
			full, _, err := a.client.Allocations().Info(s.ID, nil)
			if err != nil || full.TaskStates["t"] == nil {
				continue
			}
			for _, e := range full.TaskStates["t"].Events {
				if e.Type == "Driver Failure" && strings.Contains(e.DisplayMessage, `task user "no-such-user-drover": no such user on this node`) {
					return true
				}
			}
		}
		return false
	})
}
