package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// One server and two client agents as processes, a job of count 2 with one
// allocation on each: SIGTERM to the client configured with
// drain_on_shutdown and leave_on_terminate drains its node before the agent stops: by the time the
// process exits its allocation was migrated (stopped and reported
// complete, a replacement placed on the other node, which then runs), the
// node is ineligible with its drain complete, and the agent exited within
// the drain's deadline.
func TestDrainOnShutdown(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	const deadline = 30 * time.Second
	client := func(extra map[string]any) *agent {
		cfg := map[string]any{"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}}}
		for k, v := range extra {
			cfg[k] = v
		}
		return startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, cfg)
	}
	// As Nomad, the drain runs when the agent leaves on its signal.
	draining := client(map[string]any{"leave_on_terminate": true, "client": map[string]any{
		"drain_on_shutdown": map[string]any{"deadline": deadline.String(), "force": false, "ignore_system_jobs": false}}})
	client(nil)
	var nodes []*api.NodeListStub
	waitFor(t, 30*time.Second, "2 ready nodes", func() bool {
		var err error
		nodes, _, err = srv.client.Nodes().List(nil)
		ready := 0
		for _, n := range nodes {
			if n.Status == "ready" {
				ready++
			}
		}
		return err == nil && ready == 2
	})
	drainingNode := ""
	for _, n := range nodes {
		if n.Name == fmt.Sprintf("it-%d", draining.http) {
			drainingNode = n.ID
		}
	}
	if drainingNode == "" {
		t.Fatalf("no node named it-%d: %+v", draining.http, nodes)
	}

	job := rawExecJob("web", "service", 2, "exec sleep 600")
	tg := job.TaskGroups[0]
	tg.Spreads = []*api.Spread{{Attribute: "${node.unique.id}", Weight: ptr(int8(100))}}
	tg.Migrate = &api.MigrateStrategy{MaxParallel: ptr(1), HealthCheck: ptr("task_states"),
		MinHealthyTime: ptr(time.Second), HealthyDeadline: ptr(20 * time.Second)}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var mine string
	waitFor(t, 30*time.Second, "one running allocation on each node", func() bool {
		perNode := map[string]int{}
		mine = ""
		for _, a := range srv.allocsOf("web") {
			if a.ClientStatus == "running" {
				perNode[a.NodeID]++
				if a.NodeID == drainingNode {
					mine = a.ID
				}
			}
		}
		return len(perNode) == 2 && mine != ""
	})

	sent := time.Now()
	if err := draining.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-draining.exited:
	case <-time.After(deadline + 15*time.Second):
		t.Fatalf("the agent did not exit within its drain deadline of %s", deadline)
	}
	took := time.Since(sent)
	if took > deadline {
		t.Errorf("the agent took %s to exit, more than its drain deadline of %s", took, deadline)
	}

	// At exit: its allocation was migrated and reported stopped, and a
	// replacement is placed on the other node.
	old, _, err := srv.client.Allocations().Info(mine, nil)
	if err != nil {
		t.Fatal(err)
	}
	if old.DesiredStatus != "stop" || old.ClientStatus != "complete" || old.DesiredTransition.Migrate == nil || !*old.DesiredTransition.Migrate {
		t.Fatalf("the drained allocation at exit: desired %s, client %s, migrate %v; want stop, complete, migrated",
			old.DesiredStatus, old.ClientStatus, old.DesiredTransition.Migrate)
	}
	var replacement string
	for _, s := range srv.allocsOf("web") {
		if s.NodeID == drainingNode || s.DesiredStatus != "run" {
			continue
		}
		if a, _, err := srv.client.Allocations().Info(s.ID, nil); err == nil && a.PreviousAllocation == mine {
			replacement = a.ID
		}
	}
	if replacement == "" {
		t.Fatalf("no replacement of %s on the other node when the agent exited: %+v", mine, srv.allocsOf("web"))
	}
	node, _, err := srv.client.Nodes().Info(drainingNode, nil)
	if err != nil {
		t.Fatal(err)
	}
	if node.SchedulingEligibility != "ineligible" || node.DrainStrategy != nil {
		t.Fatalf("node at exit: eligibility %s, drain %+v; want ineligible with the drain complete", node.SchedulingEligibility, node.DrainStrategy)
	}
	waitFor(t, 30*time.Second, "the replacement running", func() bool {
		a, _, err := srv.client.Allocations().Info(replacement, nil)
		return err == nil && a.ClientStatus == "running"
	})
}

// drain_on_shutdown drains only an agent that leaves on its signal, as
// Nomad's (its maintainers: restart with the signal that does not leave to
// keep the node and its tasks): SIGTERM without leave_on_terminate stops
// the agent at once, the node keeps its eligibility with no drain, and the
// allocation keeps running for the next agent. Before, every graceful
// stop drained: a plain restart migrated the node's whole workload away
// and left the node ineligible.
func TestDrainOnShutdown_NotWithoutLeave(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	dataDir := t.TempDir()
	clientCfg := func(leave bool) map[string]any {
		return map[string]any{"leave_on_interrupt": leave, "leave_on_terminate": false,
			"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
			"client": map[string]any{"drain_on_shutdown": map[string]any{"deadline": "1m"}}}
	}
	clientArgs := []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}
	c := startAgent(t, dataDir, clientArgs, clientCfg(false))
	var nodeID string
	waitFor(t, 30*time.Second, "a ready node", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err != nil || len(nodes) != 1 || nodes[0].Status != "ready" {
			return false
		}
		nodeID = nodes[0].ID
		return true
	})
	job := rawExecJob("web", "service", 1, `echo $$ > "$NOMAD_ALLOC_DIR/pid"; exec sleep 600`)
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 30*time.Second, "the allocation running", func() bool {
		for _, a := range srv.allocsOf("web") {
			if a.ClientStatus == "running" {
				allocID = a.ID
				return true
			}
		}
		return false
	})
	var pid int
	waitFor(t, 30*time.Second, "the task's pid file", func() bool {
		b, err := os.ReadFile(filepath.Join(dataDir, "client", "alloc", allocID, "alloc", "pid"))
		if err != nil {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0
	})

	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not exit promptly on SIGTERM (it drained?)")
	}
	node, _, err := srv.client.Nodes().Info(nodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if node.SchedulingEligibility != "eligible" || node.DrainStrategy != nil || node.LastDrain != nil {
		t.Fatalf("node after SIGTERM without leave_on_terminate: eligibility %s, drain %+v, last drain %+v; want eligible and never drained",
			node.SchedulingEligibility, node.DrainStrategy, node.LastDrain)
	}
	a, _, err := srv.client.Allocations().Info(allocID, nil)
	if err != nil || a.DesiredStatus != "run" || !pidAlive(pid) {
		t.Fatalf("allocation after SIGTERM: %+v (err %v), task alive %v; want it left running", a, err, pidAlive(pid))
	}
	// The next agent on the data dir takes the task over; stopped with
	// SIGINT and leave_on_interrupt it drains, and leaves nothing behind.
	next := startAgent(t, dataDir, clientArgs, clientCfg(true))
	waitFor(t, 30*time.Second, "the next agent running the allocation", func() bool {
		_, err := next.client.Allocations().Stats(&api.Allocation{ID: allocID, NodeID: nodeID}, nil)
		return err == nil && strings.Contains(next.out.String(), "node registered")
	})
	// Not stop: its 10 s before it kills the agent's process group can be
	// shorter than a drain on a loaded machine (and the task, in a group
	// of its own, would be left behind). The drain's deadline is 1m.
	next.interrupt(90 * time.Second)
	if pidAlive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the task outlived the leaving agent:\n%s", tail(next.out.String(), 80))
	}
	if n, _, err := srv.client.Nodes().Info(nodeID, nil); err != nil || n.LastDrain == nil {
		t.Fatalf("node after SIGINT with leave_on_interrupt: last drain %+v (err %v); want drained:\n%s", n.LastDrain, err, tail(next.out.String(), 60))
	}
}
