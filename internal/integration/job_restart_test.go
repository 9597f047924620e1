package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// pidsOf reads the PIDs the task appended to local/pids at each start.
func (a *agent) pidsOf(allocID string) []int {
	a.t.Helper()
	resp, err := http.Get(a.url("/v1/client/fs/cat/" + allocID + "?path=t/local/pids"))
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// `job restart -batch-size 1` on three raw_exec allocations restarts their
// tasks in place one allocation at a time: same allocation IDs, a new PID
// each, the old process gone, one restart counted per task, never two
// allocations down at once, and the CLI follows it to the end.
func TestJobRestartRollsInPlace(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("roll", "service", 3, `echo $$ >> "$NOMAD_TASK_DIR/pids"; exec sleep 600`)
	// An allocation counts as back once its tasks ran min_healthy_time.
	job.TaskGroups[0].Update = &api.UpdateStrategy{MinHealthyTime: ptr(time.Second)}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	waitFor(t, 30*time.Second, "3 running allocations with a PID each", func() bool {
		ids = ids[:0]
		for _, s := range a.allocsOf("roll") {
			if s.ClientStatus == "running" && len(a.pidsOf(s.ID)) == 1 {
				ids = append(ids, s.ID)
			}
		}
		return len(ids) == 3
	})
	before := map[string]int{}
	for _, id := range ids {
		before[id] = a.pidsOf(id)[0]
	}

	// Sample the allocations while the restart runs: at most one may have
	// its task not running.
	stop := make(chan struct{})
	var mu sync.Mutex
	maxDown, samples := 0, 0
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			down := 0
			for _, id := range ids {
				al, _, err := a.client.Allocations().Info(id, nil)
				if err != nil {
					continue
				}
				if ts := al.TaskStates["t"]; ts == nil || ts.State != "running" {
					down++
				}
			}
			mu.Lock()
			maxDown, samples = max(maxDown, down), samples+1
			mu.Unlock()
		}
	}()
	out, code := a.cli(t.TempDir(), "job", "restart", "-batch-size", "1", "-batch-wait", "500ms", "-yes", "roll")
	close(stop)
	wg.Wait()
	if code != 0 || !strings.Contains(out, "Finished job restart") || strings.Count(out, "is running again") != 3 {
		t.Fatalf("job restart (%d):\n%s", code, out)
	}
	if maxDown > 1 || samples < 5 {
		t.Fatalf("%d allocations were down at once (%d samples)", maxDown, samples)
	}

	// The record says the same: three batches, each after the last.
	resp, err := http.Get(a.url("/v1/job/roll/restart"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Status string
		Batch  int
		Allocs []struct {
			AllocID, Status    string
			Batch              int
			StartTime, EndTime int64
		}
	}
	json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	if rec.Status != "complete" || rec.Batch != 3 || len(rec.Allocs) != 3 {
		t.Fatalf("record: %+v", rec)
	}
	for i := range rec.Allocs {
		if i > 0 && rec.Allocs[i].StartTime < rec.Allocs[i-1].EndTime {
			t.Fatalf("allocation %d started before %d came back: %+v", i, i-1, rec.Allocs)
		}
		if took := time.Duration(rec.Allocs[i].EndTime - rec.Allocs[i].StartTime); took < time.Second {
			t.Fatalf("allocation %d counted back after %s, before min_healthy_time", i, took)
		}
	}

	now := a.allocsOf("roll")
	live := 0
	for _, s := range now {
		if s.ClientStatus == "running" {
			live++
		}
	}
	if live != 3 {
		t.Fatalf("%d running allocations after the restart", live)
	}
	for _, id := range ids {
		pids := a.pidsOf(id)
		if len(pids) != 2 || pids[0] != before[id] || pids[1] == pids[0] {
			t.Fatalf("alloc %s PIDs %v (before %d)", id, pids, before[id])
		}
		if pidAlive(pids[0]) || !pidAlive(pids[1]) {
			t.Fatalf("alloc %s: old PID alive %v, new PID alive %v", id, pidAlive(pids[0]), pidAlive(pids[1]))
		}
		al, _, err := a.client.Allocations().Info(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		ts := al.TaskStates["t"]
		if ts.Restarts != 1 || !hasEvent(ts.Events, "Restart Signaled") {
			t.Fatalf("alloc %s: restarts %d, events %v", id, ts.Restarts, eventTypes(ts.Events))
		}
	}

	// A second restart while none runs is fine; bad input is a clear 400.
	req, _ := http.NewRequest("PUT", a.url("/v1/job/roll/restart"), strings.NewReader(`{"BatchSize":"0%"}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "BatchSize") {
		t.Fatalf("bad batch size: %d %s", resp.StatusCode, b)
	}
}

func hasEvent(evs []*api.TaskEvent, typ string) bool {
	for _, e := range evs {
		if e.Type == typ {
			return true
		}
	}
	return false
}

func eventTypes(evs []*api.TaskEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// `job restart -reschedule` replaces the allocations one at a time through
// the scheduler (a migrate transition: stop and replacement in one plan):
// new allocation IDs with the same names, linked to the old ones, which are
// stopped; the count kept.
func TestJobRestartReschedules(t *testing.T) {
	a := devAgent(t)
	if _, _, err := a.client.Jobs().Register(rawExecJob("resched", "service", 2, "exec sleep 600"), nil); err != nil {
		t.Fatal(err)
	}
	old := map[string]string{} // name -> ID
	waitFor(t, 30*time.Second, "2 running allocations", func() bool {
		clear(old)
		for _, s := range a.allocsOf("resched") {
			if s.ClientStatus == "running" {
				old[s.Name] = s.ID
			}
		}
		return len(old) == 2
	})
	out, code := a.cli(t.TempDir(), "job", "restart", "-reschedule", "-yes", "resched")
	if code != 0 || strings.Count(out, "replaced by") != 2 || !strings.Contains(out, "Finished job restart") {
		t.Fatalf("job restart -reschedule (%d):\n%s", code, out)
	}
	running := map[string]string{}
	for _, s := range a.allocsOf("resched") {
		switch {
		case s.ClientStatus == "running" && s.DesiredStatus == "run":
			running[s.Name] = s.ID
		case old[s.Name] == s.ID && s.DesiredStatus != "stop":
			t.Fatalf("old allocation %s not stopped: %s/%s", s.ID, s.DesiredStatus, s.ClientStatus)
		}
	}
	if len(running) != 2 {
		t.Fatalf("running after the restart: %v", running)
	}
	for name, id := range running {
		if old[name] == "" || old[name] == id {
			t.Fatalf("%s: %s was not replaced (before %s)", name, id, old[name])
		}
		al, _, err := a.client.Allocations().Info(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if al.PreviousAllocation != old[name] {
			t.Fatalf("%s: replacement %s follows %q, want %s", name, id, al.PreviousAllocation, old[name])
		}
	}
}

// -batch-wait ask: the servers pause the restart after each batch and the
// CLI asks; "y" resumes it, and the restart ends only after every batch.
func TestJobRestartAsksBetweenBatches(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("ask", "service", 2, "exec sleep 600")
	job.TaskGroups[0].Update = &api.UpdateStrategy{MinHealthyTime: ptr(100 * time.Millisecond)}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "2 running allocations", func() bool {
		n := 0
		for _, s := range a.allocsOf("ask") {
			if s.ClientStatus == "running" {
				n++
			}
		}
		return n == 2
	})
	cmd := exec.Command(droverBin, "job", "restart", "-batch-wait", "ask", "-yes", "ask")
	cmd.Env = append(cmd.Environ(), "NOMAD_ADDR="+a.url(""))
	cmd.Stdin = strings.NewReader("y\n")
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err != nil || strings.Count(out, "resume to restart the next batch. Continue? [y/N]") != 1 ||
		!strings.Contains(out, "Finished job restart: restarted 2 allocations in 2 batches") {
		t.Fatalf("job restart -batch-wait ask (%v):\n%s", err, out)
	}

	// Answering no cancels it: nothing after the first batch is restarted.
	cmd = exec.Command(droverBin, "job", "restart", "-batch-wait", "ask", "-yes", "ask")
	cmd.Env = append(cmd.Environ(), "NOMAD_ADDR="+a.url(""))
	cmd.Stdin = strings.NewReader("n\n")
	b, err = cmd.CombinedOutput()
	if out = string(b); err == nil || !strings.Contains(out, "Job restart canceled") {
		t.Fatalf("answered no (%v):\n%s", err, out)
	}
	restarts := 0
	for _, s := range a.allocsOf("ask") {
		al, _, err := a.client.Allocations().Info(s.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		restarts += int(al.TaskStates["t"].Restarts)
	}
	if restarts != 3 {
		t.Fatalf("%d task restarts in all, want 2 + 1", restarts)
	}
}
