package integration

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// r5Tasks is how many counting tasks the R5 figure runs.
const r5Tasks = 50

// counterScript prints "<pid> <n> <epoch seconds>" every 100 ms. Its wait is
// bash's builtin read on a FIFO nobody writes, so each task is exactly one
// process, forking nothing.
const counterScript = `mkfifo "$NOMAD_TASK_DIR/tick" 2>/dev/null; exec 9<>"$NOMAD_TASK_DIR/tick"
i=0; while :; do i=$((i+1)); echo "$$ $i $EPOCHREALTIME"; read -t 0.1 -u 9; done`

// exitScript waits for a file named go in its task dir, then exits with code.
func exitScript(code int) string {
	return fmt.Sprintf(`mkfifo "$NOMAD_TASK_DIR/tick" 2>/dev/null; exec 9<>"$NOMAD_TASK_DIR/tick"
echo $$ > "$NOMAD_TASK_DIR/pid"; while [ ! -f "$NOMAD_TASK_DIR/go" ]; do read -t 0.1 -u 9; done; exit %d`, code)
}

func bashJob(id, typ string, count int, script string) *api.Job {
	job := rawExecJob(id, typ, count, script)
	tg := job.TaskGroups[0]
	tg.Tasks[0].Config["command"] = "/bin/bash"
	tg.Tasks[0].Resources = &api.Resources{CPU: ptr(10), MemoryMB: ptr(16)}
	// Any restart or replacement would show: none is allowed.
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail"), Interval: ptr(time.Hour), Delay: ptr(time.Second)}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)}
	return job
}

// R5: a client agent restarted with 50 running raw_exec tasks, first after
// SIGKILL, then after SIGINT, restarts none of them and duplicates none:
// the same processes keep running, their logs have no line lost or doubled
// and no gap longer than the outage, a task that exited during the outage
// is reported with its exit code, and an allocation stopped during the
// outage is stopped on restore.
func TestR5ClientRestartKeepsTasks(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	// Runs after the client agent's own cleanup: whatever a failed run
	// left running under this data dir goes too.
	t.Cleanup(func() { killProcsUnder(clientDir) })
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin":             map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		"client":             map[string]any{"cpu_total_compute": 100000},
		"leave_on_interrupt": false,
		"log_level":          "INFO",
	})
	waitFor(t, 20*time.Second, "client node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	jobs := map[string]*api.Job{
		"r5":        bashJob("r5", "service", r5Tasks, counterScript),
		"r5-exit-1": bashJob("r5-exit-1", "batch", 1, exitScript(7)),
		"r5-exit-2": bashJob("r5-exit-2", "batch", 1, exitScript(9)),
		"r5-stop":   bashJob("r5-stop", "service", 1, counterScript),
	}
	for _, j := range jobs {
		if _, _, err := srv.client.Jobs().Register(j, nil); err != nil {
			t.Fatal(err)
		}
	}
	running := func(id string, n int) []*api.AllocationListStub {
		var out []*api.AllocationListStub
		waitFor(t, 60*time.Second, fmt.Sprintf("%d allocations of %s running", n, id), func() bool {
			out = srv.allocsOf(id)
			c := 0
			for _, a := range out {
				if a.ClientStatus == "running" {
					c++
				}
			}
			return c == n && len(out) == n
		})
		return out
	}
	allocs := running("r5", r5Tasks)
	exit1, exit2, stop := running("r5-exit-1", 1)[0], running("r5-exit-2", 1)[0], running("r5-stop", 1)[0]
	logPath := func(allocID string) string {
		return filepath.Join(clientDir, "client", "alloc", allocID, "alloc", "logs", "t.stdout.0")
	}
	taskFile := func(allocID, name string) string {
		return filepath.Join(clientDir, "client", "alloc", allocID, "t", "local", name)
	}
	pids := map[string]int{}
	waitFor(t, 20*time.Second, "every task's first line", func() bool {
		for _, a := range allocs {
			if pids[a.ID] == 0 {
				if l := readCounterLog(t, logPath(a.ID)); len(l) > 0 {
					pids[a.ID] = l[0].pid
				}
			}
		}
		return len(pids) == r5Tasks
	})
	stopPID := func() int {
		var l []counterLine
		waitFor(t, 30*time.Second, "r5-stop's first line", func() bool {
			l = readCounterLog(t, logPath(stop.ID))
			return len(l) > 0
		})
		return l[0].pid
	}()
	pidFile := func(allocID string) int {
		var pid int
		waitFor(t, 30*time.Second, "pid file", func() bool {
			b, _ := os.ReadFile(taskFile(allocID, "pid"))
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return pid > 0
		})
		return pid
	}

	shims, rssKB := shimsUnder(clientDir)
	t.Logf("R5: %d task supervisors, %d KiB proportional set size (PSS) each on average", shims, rssKB/max(shims, 1))

	// `alloc logs -f` against the client agent, and through the server
	// (which answers 503 while the agent is away), across both restarts.
	followers := []*logFollow{
		startLogFollow(t, "at the client agent", cli.http, allocs[0].ID, "t"),
		startLogFollow(t, "through the server", srv.http, allocs[0].ID, "t"),
	}

	type phase struct {
		name   string
		down   func()
		exit   *api.AllocationListStub
		code   int
		during func() // what happens while the client is down
	}
	phases := []phase{
		{name: "SIGKILL", down: cli.kill, exit: exit1, code: 7},
		{name: "SIGINT", down: func() {
			cli.cmd.Process.Signal(os.Interrupt)
			<-cli.exited
		}, exit: exit2, code: 9, during: func() {
			if _, _, err := srv.client.Jobs().Deregister("r5-stop", false, nil); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, ph := range phases {
		exitPID := pidFile(ph.exit.ID)
		downAt := time.Now()
		ph.down()
		for id, pid := range pids {
			if !pidAlive(pid) {
				t.Fatalf("%s: task of %s (pid %d) died with the client agent", ph.name, id, pid)
			}
		}
		if err := os.WriteFile(taskFile(ph.exit.ID, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the exiting task gone", func() bool { return !pidAlive(exitPID) })
		if ph.during != nil {
			ph.during()
		}
		// Stay down until every task has logged a second's worth of lines
		// with no agent running: their output is captured meanwhile.
		sizes := map[string]int{}
		for id := range pids {
			sizes[id] = len(readCounterLog(t, logPath(id)))
		}
		waitFor(t, 30*time.Second, "every task logging while the agent is down", func() bool {
			for id, n := range sizes {
				if len(readCounterLog(t, logPath(id))) < n+10 {
					return false
				}
			}
			return true
		})
		upAt := float64(time.Now().UnixNano()) / 1e9
		cli.start()
		// The restart is over when the servers hear the exit that happened
		// while the client was down.
		waitFor(t, 60*time.Second, ph.name+": exit during the outage reported", func() bool {
			a, _, err := srv.client.Allocations().Info(ph.exit.ID, nil)
			return err == nil && a.ClientStatus == "failed"
		})
		outage := time.Since(downAt)
		a, _, _ := srv.client.Allocations().Info(ph.exit.ID, nil)
		var code = -1
		for _, ev := range a.TaskStates["t"].Events {
			if ev.Type == api.TaskTerminated {
				code = ev.ExitCode
			}
		}
		if code != ph.code {
			t.Fatalf("%s: task that exited during the outage reported exit code %d, want %d (events %+v)", ph.name, code, ph.code, a.TaskStates["t"].Events)
		}
		if ph.during != nil {
			waitFor(t, 30*time.Second, "the allocation stopped during the outage stopped", func() bool {
				return !pidAlive(stopPID)
			})
		}

		// Every log runs on past the restart.
		waitFor(t, 30*time.Second, "every task logging after the restart", func() bool {
			for id := range pids {
				l := readCounterLog(t, logPath(id))
				if len(l) == 0 || l[len(l)-1].at < upAt+1 {
					return false
				}
			}
			return true
		})
		restarted, duplicated, samePID := 0, 0, 0
		var maxGap float64
		lines := 0
		for _, stub := range srv.allocsOf("r5") {
			al, _, err := srv.client.Allocations().Info(stub.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			ts := al.TaskStates["t"]
			starts := 0
			for _, ev := range ts.Events {
				if ev.Type == api.TaskStarted {
					starts++
				}
			}
			if ts.Restarts != 0 || starts != 1 || al.ClientStatus != "running" {
				restarted++
				t.Errorf("%s: alloc %s: status %s, %d restarts, %d Started events", ph.name, al.ID, al.ClientStatus, ts.Restarts, starts)
			}
			if n := countTaskProcs(al.ID); n != 1 {
				duplicated++
				t.Errorf("%s: alloc %s runs %d processes", ph.name, al.ID, n)
			}
			l := readCounterLog(t, logPath(al.ID))
			lines += len(l)
			same := true
			for i, ln := range l {
				if ln.pid != pids[al.ID] {
					same = false
				}
				if ln.n != i+1 {
					t.Fatalf("%s: alloc %s: line %d has counter %d: output lost or doubled", ph.name, al.ID, i+1, ln.n)
				}
				if i > 0 {
					maxGap = math.Max(maxGap, ln.at-l[i-1].at)
				}
			}
			if same && pidAlive(pids[al.ID]) {
				samePID++
			}
			// Output still flows (a stop shows as many seconds of
			// silence); on a loaded machine a line may wait a few
			// seconds for the task or its logger to be scheduled.
			if last := l[len(l)-1].at; float64(time.Now().UnixNano())/1e9-last > 5 {
				t.Errorf("%s: alloc %s: no output for %.1fs", ph.name, al.ID, float64(time.Now().UnixNano())/1e9-last)
			}
		}
		if len(srv.allocsOf("r5")) != r5Tasks {
			t.Fatalf("%s: job has %d allocations, want %d (something was replaced)", ph.name, len(srv.allocsOf("r5")), r5Tasks)
		}
		t.Logf("R5 %s: outage %.2fs (down until the restarted client reported the exit); tasks restarted %d, duplicated %d, same PID %d/%d; %d log lines, none lost or doubled; longest gap between lines %.3fs; exit during outage reported with code %d",
			ph.name, outage.Seconds(), restarted, duplicated, samePID, r5Tasks, lines, maxGap, code)
		if maxGap > outage.Seconds() {
			t.Errorf("%s: a log gap of %.2fs is longer than the outage (%.2fs)", ph.name, maxGap, outage.Seconds())
		}
		if samePID != r5Tasks {
			t.Errorf("%s: %d of %d tasks kept their process", ph.name, samePID, r5Tasks)
		}
		for _, f := range followers {
			f.running(t, "across the "+ph.name+" restart")
		}
	}

	// The logs are served across the restart: the API shows lines written
	// before the first restart and after the last.
	resp, err := httpGet(cli.url(fmt.Sprintf("/v1/client/fs/logs/%s?task=t&type=stdout&plain=true&origin=start", allocs[0].ID)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp, fmt.Sprintf("%d 1 ", pids[allocs[0].ID])) || strings.Count(resp, "\n") < 30 {
		t.Fatalf("logs through the API after the restarts: %.200q", resp)
	}

	// The followers saw exactly the log, through both restarts.
	for _, f := range followers {
		f.caughtUp(t, logPath(allocs[0].ID))
	}

	// Stop everything before the agents go.
	if _, _, err := srv.client.Jobs().Deregister("r5", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "every task stopped", func() bool {
		for _, pid := range pids {
			if pidAlive(pid) {
				return false
			}
		}
		return true
	})
}

type counterLine struct {
	pid, n int
	at     float64
}

// readCounterLog parses a counter task's log (a partial last line is left
// out).
func readCounterLog(t *testing.T, path string) []counterLine {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		return nil
	}
	var out []counterLine
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("%s: malformed line %q", path, l)
		}
		pid, _ := strconv.Atoi(f[0])
		n, _ := strconv.Atoi(f[1])
		at, _ := strconv.ParseFloat(f[2], 64)
		out = append(out, counterLine{pid, n, at})
	}
	return out
}

// killProcsUnder SIGKILLs every process whose command line names dir (the
// task shims of a client whose data dir it is) and their children.
func killProcsUnder(dir string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if !strings.Contains(string(b), dir) {
			continue
		}
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		for _, k := range strings.Fields(string(kids)) {
			if kp, err := strconv.Atoi(k); err == nil {
				syscall.Kill(kp, syscall.SIGKILL)
			}
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// shimsUnder counts the task supervisors of a client data dir and sums
// their proportional set sizes (shared pages split among their users).
func shimsUnder(dir string) (n, rssKB int) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), "__drover_rawexec_shim") || !strings.Contains(string(b), dir) {
			continue
		}
		n++
		st, _ := os.ReadFile("/proc/" + e.Name() + "/smaps_rollup")
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "Pss:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				rssKB += kb
			}
		}
	}
	return n, rssKB
}

// countTaskProcs counts live processes of an allocation (they alone have
// its NOMAD_ALLOC_ID in their environment).
func countTaskProcs(allocID string) int {
	want := "NOMAD_ALLOC_ID=" + allocID
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !pidAlive(pid) || syscall.Kill(pid, 0) != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		for _, v := range strings.Split(string(b), "\x00") {
			if v == want {
				n++
				break
			}
		}
	}
	return n
}

func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b), err
}

// A client agent that leaves (leave_on_terminate and SIGTERM here) and a
// dev agent stopped with SIGINT stop their tasks: no process is left
// behind, supervisors included.
func TestClientLeaveStopsTasks(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	t.Cleanup(func() { killProcsUnder(clientDir) })
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin":             map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		"leave_on_interrupt": false,
		"leave_on_terminate": true,
		"log_level":          "INFO",
	})
	waitFor(t, 20*time.Second, "client node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	if _, _, err := srv.client.Jobs().Register(bashJob("leave", "service", 2, counterScript), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "tasks running", func() bool {
		n := 0
		for _, a := range srv.allocsOf("leave") {
			if a.ClientStatus == "running" && countTaskProcs(a.ID) == 1 {
				n++
			}
		}
		return n == 2
	})
	leaveAt := time.Now()
	cli.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-cli.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("client agent did not exit after SIGTERM")
	}
	t.Logf("client left in %v", time.Since(leaveAt))
	for _, a := range srv.allocsOf("leave") {
		if n := countTaskProcs(a.ID); n != 0 {
			t.Fatalf("alloc %s: %d processes left after the client left", a.ID, n)
		}
		if a.ClientStatus != "complete" {
			t.Errorf("alloc %s: servers were told %q, want complete", a.ID, a.ClientStatus)
		}
	}
	if n, _ := shimsUnder(clientDir); n != 0 {
		t.Fatalf("%d task supervisors left after the client left", n)
	}

	dev := devAgent(t)
	if _, _, err := dev.client.Jobs().Register(bashJob("dev", "service", 1, counterScript), nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 30*time.Second, "dev task running", func() bool {
		stubs := dev.allocsOf("dev")
		if len(stubs) == 1 && stubs[0].ClientStatus == "running" && countTaskProcs(stubs[0].ID) == 1 {
			allocID = stubs[0].ID
			return true
		}
		return false
	})
	devAt := time.Now()
	dev.cmd.Process.Signal(os.Interrupt)
	<-dev.exited
	t.Logf("dev agent stopped in %v", time.Since(devAt))
	if n := countTaskProcs(allocID); n != 0 {
		t.Fatalf("dev agent left %d task processes", n)
	}
}

// The client stays down long enough for its node to be declared down and
// its allocations lost and replaced: the restarted client stops the old
// tasks (never orphaned next to their replacements).
func TestClientRestartAfterAllocsReplaced(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server":    map[string]any{"bootstrap_expect": 1, "min_heartbeat_ttl": "1s", "heartbeat_grace": "1s"},
		"log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	t.Cleanup(func() { killProcsUnder(clientDir) })
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin":    map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		"log_level": "INFO",
	})
	waitFor(t, 20*time.Second, "client node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	job := bashJob("replaced", "service", 3, counterScript)
	job.TaskGroups[0].ReschedulePolicy = nil // lost allocations are replaced
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	waitFor(t, 30*time.Second, "3 tasks running", func() bool {
		for _, a := range srv.allocsOf("replaced") {
			if a.ClientStatus == "running" && countTaskProcs(a.ID) == 1 {
				old[a.ID] = true
			}
		}
		return len(old) == 3
	})
	cli.kill()
	waitFor(t, 30*time.Second, "the allocations lost", func() bool {
		n := 0
		for _, a := range srv.allocsOf("replaced") {
			if old[a.ID] && a.ClientStatus == "lost" {
				n++
			}
		}
		return n == 3
	})
	for id := range old {
		if countTaskProcs(id) != 1 {
			t.Fatalf("old task of %s died while the client was down", id)
		}
	}
	cli.start()
	waitFor(t, 60*time.Second, "old tasks stopped, replacements running", func() bool {
		running := 0
		for _, a := range srv.allocsOf("replaced") {
			n := countTaskProcs(a.ID)
			if old[a.ID] && n != 0 {
				return false
			}
			if !old[a.ID] && a.ClientStatus == "running" && n == 1 {
				running++
			}
		}
		return running == 3
	})
}
