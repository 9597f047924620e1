package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// shutdownDelayJob runs a task with a nomad service and the given
// shutdown_delay; on its kill signal it writes the time (ns) to mark. It
// creates mark.ready once its trap is installed (trapReady).
func shutdownDelayJob(id, svc, mark string, delay time.Duration) *api.Job {
	job := rawExecJob(id, "service", 1,
		fmt.Sprintf(`trap 'date +%%s%%N > %s; exit 0' INT TERM; : > %s.ready; while true; do sleep 0.05; done`, mark, mark))
	task := job.TaskGroups[0].Tasks[0]
	task.ShutdownDelay = delay
	task.KillTimeout = ptr(5 * time.Second)
	task.Services = []*api.Service{{Name: svc, Provider: "nomad"}}
	return job
}

func runningAlloc(t *testing.T, a *agent, jobID, svc string) string {
	t.Helper()
	var allocID string
	waitFor(t, 30*time.Second, jobID+" running", func() bool {
		for _, s := range a.allocsOf(jobID) {
			if s.ClientStatus == "running" {
				allocID = s.ID
				return true
			}
		}
		return false
	})
	waitFor(t, 30*time.Second, svc+" registered", func() bool {
		regs, _, err := a.client.Services().Get(svc, nil)
		return err == nil && len(regs) == 1
	})
	return allocID
}

// trapReady waits until a task script has created mark.ready, which it
// does after installing its signal trap: the task runs (and its service
// is registered) before its shell has read the trap line, and a signal
// before it kills the shell instead of running the trap.
func trapReady(t *testing.T, mark string) {
	t.Helper()
	waitFor(t, 30*time.Second, "the task's signal trap installed", func() bool {
		_, err := os.Stat(mark + ".ready")
		return err == nil
	})
}

func readMark(path string) (time.Time, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// Stopping a job whose task has shutdown_delay 2s and a service: the
// service is gone from /v1/service/<name> before the task gets its signal,
// and the signal comes no earlier than the delay. `-no-shutdown-delay`
// (job stop and alloc stop) skips a long delay.
func TestShutdownDelay_ServiceGoneBeforeSignal(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()

	mark := filepath.Join(dir, "sd.mark")
	if _, _, err := a.client.Jobs().Register(shutdownDelayJob("sd", "sd-svc", mark, 2*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	runningAlloc(t, a, "sd", "sd-svc")
	trapReady(t, mark)
	stopped := time.Now()
	if _, _, err := a.client.Jobs().Deregister("sd", false, nil); err != nil {
		t.Fatal(err)
	}
	// lastSeen is when a read that still listed the service was sent: the
	// registration existed at that moment or later. A signal before it
	// came while the service was registered. (Seeing the mark once the
	// poll sees the service gone would prove nothing: a poll slowed by a
	// loaded machine can see it gone after the 2 s delay ran out.)
	var lastSeen time.Time
	waitFor(t, 30*time.Second, "sd-svc deregistered", func() bool {
		sent := time.Now()
		regs, _, err := a.client.Services().Get("sd-svc", nil)
		if err == nil && len(regs) > 0 {
			lastSeen = sent
		}
		return err == nil && len(regs) == 0
	})
	var signalled time.Time
	waitFor(t, 20*time.Second, "the task's signal", func() bool {
		var ok bool
		signalled, ok = readMark(mark)
		return ok
	})
	if signalled.Before(lastSeen) {
		t.Fatalf("the task got its signal %s after the stop, while its service was still registered (seen %s after the stop)",
			signalled.Sub(stopped), lastSeen.Sub(stopped))
	}
	if d := signalled.Sub(stopped); d < 2*time.Second {
		t.Fatalf("the task got its signal %s after the stop, before its shutdown_delay of 2s", d)
	}

	// -no-shutdown-delay: a delay of ten minutes is skipped.
	for _, via := range []string{"job stop", "alloc stop"} {
		id := strings.ReplaceAll(via, " ", "-")
		mark := filepath.Join(dir, id+".mark")
		if _, _, err := a.client.Jobs().Register(shutdownDelayJob(id, id+"-svc", mark, 10*time.Minute), nil); err != nil {
			t.Fatal(err)
		}
		allocID := runningAlloc(t, a, id, id+"-svc")
		trapReady(t, mark)
		if via == "job stop" {
			_, _, err := a.client.Jobs().DeregisterOpts(id, &api.DeregisterOptions{NoShutdownDelay: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			q := &api.QueryOptions{Params: map[string]string{"no_shutdown_delay": "true"}}
			if _, err := a.client.Allocations().Stop(&api.Allocation{ID: allocID}, q); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, 20*time.Second, via+" -no-shutdown-delay: the task's signal", func() bool {
			_, ok := readMark(mark)
			return ok
		})
		waitFor(t, 30*time.Second, via+": a 'Skipping shutdown delay' event", func() bool {
			alloc, _, err := a.client.Allocations().Info(allocID, nil)
			if err != nil || alloc.TaskStates["t"] == nil {
				return false
			}
			for _, e := range alloc.TaskStates["t"].Events {
				if e.Type == "Skipping shutdown delay" {
					return true
				}
			}
			return false
		})
		if via == "alloc stop" {
			if _, _, err := a.client.Jobs().DeregisterOpts(id, &api.DeregisterOptions{NoShutdownDelay: true}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}
