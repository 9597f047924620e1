package integration

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// A batch job runs and its stdout is read back through the fs API.
func TestBatchJobOutputThroughFS(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("hello", "batch", 1, `echo "hello from $NOMAD_ALLOC_NAME"`)
	resp, _, err := a.client.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" {
		t.Fatal("no evaluation created")
	}
	var alloc *api.Allocation
	waitFor(t, 20*time.Second, "batch alloc complete", func() bool {
		stubs := a.allocsOf("hello")
		if len(stubs) != 1 || stubs[0].ClientStatus != "complete" {
			return false
		}
		alloc, _, err = a.client.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	})
	r, err := a.client.AllocFS().Cat(alloc, "alloc/logs/t.stdout.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if got := strings.TrimSpace(string(b)); got != "hello from hello.g[0]" {
		t.Fatalf("stdout = %q", got)
	}
	// Logs through the framed logs endpoint too.
	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := a.client.AllocFS().Logs(alloc, false, "t", "stdout", "start", 0, cancel, nil)
	var buf bytes.Buffer
	timeout := time.After(10 * time.Second)
	for buf.Len() == 0 {
		select {
		case f, ok := <-frames:
			if !ok {
				frames = nil
				continue
			}
			if f != nil {
				buf.Write(f.Data)
			}
		case err := <-errs:
			t.Fatalf("logs: %v", err)
		case <-timeout:
			t.Fatal("no log frames")
		}
	}
	if !strings.Contains(buf.String(), "hello from hello.g[0]") {
		t.Fatalf("logs = %q", buf.String())
	}
}

// A service job with count 2 runs and its summary says so; deregister stops
// the tasks.
func TestServiceJobSummaryAndDeregister(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	job := rawExecJob("svc", "service", 2, `echo $$ > `+dir+`/pid.$NOMAD_ALLOC_INDEX; exec sleep 600`)
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "summary running=2", func() bool {
		s, _, err := a.client.Jobs().Summary("svc", nil)
		return err == nil && s.Summary["g"].Running == 2
	})
	var pids []int
	for i := 0; i < 2; i++ {
		waitFor(t, 20*time.Second, "pid file", func() bool {
			b, err := os.ReadFile(filepath.Join(dir, "pid."+strconv.Itoa(i)))
			if err != nil {
				return false
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil {
				pids = append(pids, pid)
			}
			return err == nil
		})
	}
	for _, p := range pids {
		if !pidAlive(p) {
			t.Fatalf("task pid %d not running", p)
		}
	}
	if _, _, err := a.client.Jobs().Deregister("svc", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "tasks stopped", func() bool {
		for _, p := range pids {
			if pidAlive(p) {
				return false
			}
		}
		return true
	})
	waitFor(t, 20*time.Second, "allocs complete", func() bool {
		for _, s := range a.allocsOf("svc") {
			if s.ClientStatus == "running" || s.ClientStatus == "pending" {
				return false
			}
		}
		return true
	})
}

// Stopping a task that started `setsid sleep 600 &` leaves nothing behind.
func TestStopKillsDetachedChildren(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	script := `setsid sh -c 'echo $$ > ` + dir + `/setsid.pid; exec sleep 600' & (sh -c 'echo $$ > ` + dir + `/double.pid; exec sleep 600' &) ; exec sleep 600`
	if _, _, err := a.client.Jobs().Register(rawExecJob("escape", "service", 1, script), nil); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range []string{"setsid.pid", "double.pid"} {
		waitFor(t, 20*time.Second, f, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				return false
			}
			p, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil && pidAlive(p) {
				pids = append(pids, p)
				return true
			}
			return false
		})
	}
	if _, _, err := a.client.Jobs().Deregister("escape", true, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "detached children killed", func() bool {
		for _, p := range pids {
			if pidAlive(p) {
				return false
			}
		}
		return true
	})
}

// A blocking query returns as soon as something changes.
func TestBlockingQueryWakesOnChange(t *testing.T) {
	a := devAgent(t)
	// An empty table answers index 0, which never blocks: start from a write.
	if _, _, err := a.client.Jobs().Register(rawExecJob("first", "batch", 1, "true"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "first job finished", func() bool {
		s, _, err := a.client.Jobs().Summary("first", nil)
		j, _, jerr := a.client.Jobs().Info("first", nil)
		return err == nil && jerr == nil && s.Summary["g"].Complete == 1 && *j.Status == "dead"
	})
	_, meta, err := a.client.Jobs().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		jobs []*api.JobListStub
		took time.Duration
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		start := time.Now()
		// A write to the jobs table that is not the new job (the first
		// job's own late updates) wakes the query too: block again from
		// there, as a watching client does.
		idx := meta.LastIndex
		for {
			jobs, qm, err := a.client.Jobs().List(&api.QueryOptions{WaitIndex: idx, WaitTime: time.Minute})
			if err != nil || len(jobs) >= 2 || time.Since(start) > 20*time.Second {
				ch <- result{jobs, time.Since(start), err}
				return
			}
			idx = qm.LastIndex
		}
	}()
	time.Sleep(200 * time.Millisecond) // give the query time to block; the assertion below is on the wake-up
	if _, _, err := a.client.Jobs().Register(rawExecJob("wake", "batch", 1, "true"), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r.err != nil || len(r.jobs) != 2 {
			t.Fatalf("blocking list: %v %d jobs", r.err, len(r.jobs))
		}
		if r.took > 10*time.Second {
			t.Fatalf("query returned only after %v", r.took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("blocking query did not return after a change")
	}
}

// Bad input gets a 4xx naming the problem; nothing stored is lost.
func TestBadInputIsRefusedAndNothingLost(t *testing.T) {
	a := devAgent(t)
	if _, _, err := a.client.Jobs().Register(rawExecJob("keeper", "batch", 1, "true"), nil); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(a.url("/v1/jobs"), "application/json", strings.NewReader(`{"Job": {"ID": "x",`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || len(body) == 0 {
		t.Fatalf("malformed JSON: %d %q", resp.StatusCode, body)
	}
	bad := rawExecJob("bad", "service", 1, "true")
	bad.TaskGroups[0].Count = ptr(-1)
	_, _, err = a.client.Jobs().Register(bad, nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Count") {
		t.Fatalf("count -1: %v", err)
	}
	jobs, _, err := a.client.Jobs().List(nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "keeper" {
		t.Fatalf("jobs after bad requests: %+v %v", jobs, err)
	}
	if _, _, err := a.client.Jobs().Info("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown job: %v", err)
	}
}

// A node advertises its agent's HTTP address: the official client dials it
// first for node-local calls (GetNodeClient: alloc fs cat/stream/logs,
// exec), so a node on another port than 4646 that advertised 4646 sent
// them to whatever listened there (another agent answered "Unknown
// allocation"; nothing there fell back to the servers).
func TestNodeAdvertisesItsAgentsHTTPAddr(t *testing.T) {
	a := devAgent(t)
	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	node, _, err := a.client.Nodes().Info(nodes[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "127.0.0.1:" + strconv.Itoa(a.http); node.HTTPAddr != want {
		t.Fatalf("node HTTPAddr = %q, want the agent's %q", node.HTTPAddr, want)
	}
	nc, err := a.client.GetNodeClient(node.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	self, err := nc.Agent().Self()
	if err != nil {
		t.Fatalf("the node client (%s) does not answer: %v", node.HTTPAddr, err)
	}
	if got := self.Member.Name; !strings.HasPrefix(got, node.Name) {
		t.Fatalf("the node client reached agent %q, not this node's (%q)", got, node.Name)
	}
}
