package integration

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// One server and three client agents as separate processes. The agent
// running a group with a disconnect block is frozen (SIGSTOP) past its
// heartbeat TTL: its node becomes disconnected, the allocation unknown and
// a replacement runs on another node. Thawed (SIGCONT), the node comes back
// through initializing, and the group's reconcile strategy decides which
// copy is left running; the other is stopped. One test per strategy.
func TestDisconnectedClientAgentReconcile(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		keep     string // "original", "replacement" or "" (either, exactly one)
	}{
		{"keep_original", "original"},
		{"keep_replacement", "replacement"},
		{"longest_running", "original"},
		{"best_score", ""},
	} {
		t.Run(tc.strategy, func(t *testing.T) { testDisconnectReconcile(t, tc.strategy, tc.keep) })
	}
}

func testDisconnectReconcile(t *testing.T, strategy, keep string) {
	// A short TTL and grace: a silent node is found within 2-3 s.
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1, "min_heartbeat_ttl": "1s", "heartbeat_grace": "1s"},
	})
	srv.waitReady(false)
	clients := map[string]*agent{} // by node name
	for i := 0; i < 3; i++ {
		c := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
			"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		})
		clients[fmt.Sprintf("it-%d", c.http)] = c
	}
	nodeName := map[string]string{} // node ID -> name
	waitFor(t, 30*time.Second, "3 ready nodes", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		ready := 0
		for _, n := range nodes {
			if n.Status == "ready" {
				ready++
				nodeName[n.ID] = n.Name
			}
		}
		return err == nil && ready == 3
	})

	job := rawExecJob("web", "service", 1, "exec sleep 600")
	job.TaskGroups[0].Disconnect = &api.DisconnectStrategy{LostAfter: ptr(time.Minute), Replace: ptr(true), Reconcile: ptr(strategy)}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var orig *api.AllocationListStub
	waitFor(t, 30*time.Second, "the allocation running", func() bool {
		for _, a := range srv.allocsOf("web") {
			if a.ClientStatus == "running" {
				orig = a
			}
		}
		return orig != nil
	})
	frozen := clients[nodeName[orig.NodeID]]
	if frozen == nil {
		t.Fatalf("no agent for node %s", orig.NodeID)
	}

	// Freeze the agent (not its task: the task keeps running, as on a
	// client cut off by the network).
	if err := syscall.Kill(frozen.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			syscall.Kill(frozen.cmd.Process.Pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	nodeStatus := func() string {
		n, _, err := srv.client.Nodes().Info(orig.NodeID, nil)
		if err != nil {
			return ""
		}
		return n.Status
	}
	waitFor(t, 20*time.Second, "the node disconnected", func() bool { return nodeStatus() == "disconnected" })
	var repl *api.AllocationListStub
	waitFor(t, 20*time.Second, "the original unknown and a replacement running elsewhere", func() bool {
		unknown := false
		repl = nil
		for _, a := range srv.allocsOf("web") {
			switch {
			case a.ID == orig.ID:
				unknown = a.ClientStatus == "unknown"
			case a.DesiredStatus == "run" && a.ClientStatus == "running" && a.NodeID != orig.NodeID:
				repl = a
			}
		}
		return unknown && repl != nil
	})

	// Thaw it and watch the node's status on the way back, through the
	// node's events (every write of it, in order): a poll of its status
	// can miss the brief initializing between disconnected and ready.
	cur, _, err := srv.client.Nodes().Info(orig.NodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evCh, err := srv.client.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicNode: {orig.NodeID}}, cur.ModifyIndex+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	thaw()
	var seen []string
	deadline := time.After(30 * time.Second)
	for ready := false; !ready; {
		select {
		case f := <-evCh:
			if f == nil || f.Err != nil {
				t.Fatalf("node event stream ended: %+v (statuses so far %v)", f, seen)
			}
			for _, e := range f.Events {
				n, err := e.Node()
				if e.Index <= cur.ModifyIndex || err != nil || n == nil {
					continue
				}
				if len(seen) == 0 || seen[len(seen)-1] != n.Status {
					seen = append(seen, n.Status)
				}
				ready = ready || n.Status == "ready"
			}
		case <-deadline:
			t.Fatalf("timed out after 30s waiting for the node ready again (statuses %v)", seen)
		}
	}
	cancel()
	if !slices.Contains(seen, "initializing") {
		t.Errorf("the node went back to ready without passing through initializing (statuses %v)", seen)
	}

	want, lose := orig.ID, repl.ID
	if keep == "replacement" {
		want, lose = repl.ID, orig.ID
	}
	waitFor(t, 30*time.Second, "one copy left running, the other stopped", func() bool {
		var running []*api.AllocationListStub
		stopped := map[string]bool{}
		for _, a := range srv.allocsOf("web") {
			if a.DesiredStatus == "run" && a.ClientStatus == "running" {
				running = append(running, a)
			}
			if a.DesiredStatus == "stop" {
				stopped[a.ID] = true
			}
		}
		if len(running) != 1 {
			return false
		}
		if keep == "" {
			other := orig.ID
			if running[0].ID == orig.ID {
				other = repl.ID
			}
			return (running[0].ID == orig.ID || running[0].ID == repl.ID) && stopped[other]
		}
		return running[0].ID == want && stopped[lose]
	})
}
