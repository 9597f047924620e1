package integration

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hashicorp/nomad/api"
)

// One server and two client agents as processes; the CLI talks only to the
// server. For an allocation on either client: logs -f streams (and stops on
// the node when the CLI goes away), fs cat, exec (output and exit code, and
// an interactive shell through a pty), status -stats, node status -stats,
// signal (the task writes a marker) and restart (counted in its events).
func TestClientAPIsThroughServer(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	rawExec := map[string]any{
		"plugin":    map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		"telemetry": map[string]any{"publish_allocation_metrics": true, "collection_interval": "200ms"},
	}
	servers := fmt.Sprintf("127.0.0.1:%d", srv.rpc)
	clients := []*agent{
		startAgent(t, t.TempDir(), []string{"-client", "-servers", servers}, rawExec),
		startAgent(t, t.TempDir(), []string{"-client", "-servers", servers}, rawExec),
	}
	waitFor(t, 30*time.Second, "two ready client nodes", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err != nil || len(nodes) != 2 {
			return false
		}
		for _, n := range nodes {
			if n.Status != "ready" {
				return false
			}
		}
		return true
	})

	script := `trap 'echo signalled > "$NOMAD_TASK_DIR/marker"; echo got-usr1' USR1
: > "$NOMAD_TASK_DIR/trap-ready"
i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.2; done`
	job := rawExecJob("reach", "service", 2, script)
	job.TaskGroups[0].Constraints = []*api.Constraint{{Operand: "distinct_hosts", RTarget: "true"}}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var allocs []*api.AllocationListStub
	waitFor(t, 30*time.Second, "an allocation running on each client", func() bool {
		allocs = srv.allocsOf("reach")
		nodes := map[string]bool{}
		for _, a := range allocs {
			if a.ClientStatus == "running" {
				nodes[a.NodeID] = true
			}
		}
		return len(nodes) == 2
	})
	nodeAgent := map[string]*agent{}
	for _, c := range clients {
		info, err := c.client.Agent().Self()
		if err != nil {
			t.Fatal(err)
		}
		nodeAgent[info.Stats["client"]["node_id"]] = c
	}

	for _, a := range allocs {
		t.Run("alloc-on-"+a.NodeID[:8], func(t *testing.T) {
			node := nodeAgent[a.NodeID]
			if node == nil {
				t.Fatalf("no client agent runs node %s", a.NodeID)
			}
			checkLogsFollow(t, srv, node, a.ID)

			out, code := srv.cli("", "alloc", "fs", a.ID, "alloc/logs/t.stdout.0")
			if code != 0 || !strings.Contains(out, "tick 1\n") {
				t.Fatalf("alloc fs cat: %d %q", code, tail(out, 5))
			}
			// The other client agent reaches it too (through a server).
			for _, c := range clients {
				if c == node {
					continue
				}
				out, code := c.cli("", "alloc", "fs", a.ID, "alloc/logs/t.stdout.0")
				if code != 0 || !strings.Contains(out, "tick 1\n") {
					t.Fatalf("alloc fs cat through the other client: %d %q", code, tail(out, 5))
				}
			}

			out, code = srv.cli("", "alloc", "exec", "-i=false", "-t=false", a.ID, "/bin/sh", "-c", `echo "in $NOMAD_ALLOC_ID"; exit 5`)
			if code != 5 || strings.TrimSpace(out) != "in "+a.ID {
				t.Fatalf("alloc exec: exit %d, output %q", code, out)
			}
			checkInteractiveExec(t, srv, a.ID)

			out, code = srv.cli("", "alloc", "status", "-stats", a.ID)
			if code != 0 || !strings.Contains(out, "Task Resources:") || !strings.Contains(out, "MiB/32 MiB") {
				t.Fatalf("alloc status -stats: %d\n%s", code, out)
			}
			waitFor(t, 20*time.Second, "the task's published memory gauge", func() bool {
				m, _, err := node.client.Operator().MetricsSummary(nil)
				if err != nil {
					return false
				}
				for _, g := range m.Gauges {
					l := g.DisplayLabels
					if strings.HasSuffix(g.Name, ".client.allocs.memory.rss") && l["alloc_id"] == a.ID && l["task"] == "t" &&
						l["job"] == "reach" && l["task_group"] == "g" && l["namespace"] == "default" && g.Value > 0 {
						return true
					}
				}
				return false
			})
			out, code = srv.cli("", "node", "status", "-stats", a.NodeID)
			if code != 0 || !strings.Contains(out, "CPU Stats") || strings.Contains(out, "unavailable") {
				t.Fatalf("node status -stats: %d\n%s", code, out)
			}

			// USR1 kills a shell that has not read its trap line yet.
			waitFor(t, 30*time.Second, "the task's USR1 trap installed", func() bool {
				_, code := srv.cli("", "alloc", "fs", a.ID, "t/local/trap-ready")
				return code == 0
			})
			if out, code = srv.cli("", "alloc", "signal", "-s", "SIGUSR1", a.ID); code != 0 {
				t.Fatalf("alloc signal: %d %s", code, out)
			}
			waitFor(t, 30*time.Second, "the task's marker", func() bool {
				out, code := srv.cli("", "alloc", "fs", a.ID, "t/local/marker")
				return code == 0 && strings.TrimSpace(out) == "signalled"
			})

			if out, code = srv.cli("", "alloc", "restart", a.ID); code != 0 {
				t.Fatalf("alloc restart: %d %s", code, out)
			}
			waitFor(t, 20*time.Second, "a counted restart, running again", func() bool {
				full, _, err := srv.client.Allocations().Info(a.ID, nil)
				if err != nil {
					return false
				}
				st := full.TaskStates["t"]
				if st == nil || st.Restarts != 1 || st.State != "running" {
					return false
				}
				var types []string
				for _, e := range st.Events {
					types = append(types, e.Type)
				}
				seq := strings.Join(types, ",")
				return strings.Contains(seq, "Signaling,Restart Signaled,") && strings.Contains(seq, ",Restarting,Started")
			})
		})
	}
}

// checkLogsFollow: `alloc logs -f` through the server shows new lines as
// the task writes them, and when the CLI goes away the stream ends on the
// node too.
func checkLogsFollow(t *testing.T, srv, node *agent, allocID string) {
	t.Helper()
	cmd := exec.Command(droverBin, "alloc", "logs", "-f", allocID)
	cmd.Env = append(cmd.Environ(), "NOMAD_ADDR="+srv.url(""))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Lines keep arriving while the command runs: more than what was
	// written when it started (a tick every 0.2 s).
	first, last := -1, -1
	deadline := time.After(20 * time.Second)
	for last < 0 || last-first < 10 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("alloc logs -f ended early (first %d, last %d)", first, last)
			}
			var n int
			if _, err := fmt.Sscanf(l, "tick %d", &n); err == nil {
				if first < 0 {
					first = n
				}
				last = n
			}
		case <-deadline:
			t.Fatalf("alloc logs -f: no new lines (first %d, last %d)", first, last)
		}
	}
	path := "/v1/client/fs/logs/" + allocID
	before := strings.Count(node.out.String(), "request complete: method=GET path="+path)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	waitFor(t, 30*time.Second, "the node's log stream to end with the caller", func() bool {
		return strings.Count(node.out.String(), "request complete: method=GET path="+path) > before
	})
}

// checkInteractiveExec drives `alloc exec -i -t <alloc> /bin/sh` through a
// pseudo-terminal, as a user at a terminal would.
func checkInteractiveExec(t *testing.T, srv *agent, allocID string) {
	t.Helper()
	cmd := exec.Command(droverBin, "alloc", "exec", "-i", "-t", allocID, "/bin/sh")
	cmd.Env = append(cmd.Environ(), "NOMAD_ADDR="+srv.url(""), "TERM=dumb")
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var mu sync.Mutex
	var seen strings.Builder
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	output := func() string { mu.Lock(); defer mu.Unlock(); return seen.String() }
	_, _ = io.WriteString(ptmx, "echo product=$((6*7)); test -t 0 && echo remote-is-a-tty\n")
	waitFor(t, 15*time.Second, "the interactive shell's answer", func() bool {
		o := output()
		return strings.Contains(o, "product=42") && strings.Contains(o, "remote-is-a-tty\r\n")
	})
	_, _ = io.WriteString(ptmx, "exit 4\n")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 4 {
			t.Fatalf("interactive exec ended with %v; want exit 4\n%s", err, output())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("interactive exec did not end\n%s", output())
	}
}
