package integration

import (
	"fmt"
	"io"
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

// catAllocFile reads a file of an allocation through the fs API ("" when
// it cannot be read).
func (a *agent) catAllocFile(allocID, path string) string {
	a.t.Helper()
	resp, err := http.Get(a.url("/v1/client/fs/cat/" + allocID + "?path=" + path))
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return ""
	}
	return string(b)
}

// A destructive update of a group with a sticky ephemeral disk replaces the
// allocation on the same node, and the new task finds what the old one
// wrote in alloc/data and in its local/ directory.
func TestStickyEphemeralDiskKeepsDataAcrossUpdate(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("sticky", "service", 1,
		`echo "$NOMAD_ALLOC_ID" >> "$NOMAD_ALLOC_DIR/data/history"; echo "$NOMAD_ALLOC_ID" >> "$NOMAD_TASK_DIR/mine"; exec sleep 600`)
	job.TaskGroups[0].EphemeralDisk = &api.EphemeralDisk{Sticky: ptr(true), SizeMB: ptr(50)}
	job.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "1"}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var first string
	waitFor(t, 30*time.Second, "the first allocation wrote its data", func() bool {
		for _, s := range a.allocsOf("sticky") {
			if s.ClientStatus == "running" && strings.TrimSpace(a.catAllocFile(s.ID, "alloc/data/history")) == s.ID {
				first = s.ID
				return true
			}
		}
		return false
	})

	job.TaskGroups[0].Tasks[0].Env["V"] = "2" // destructive
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var second string
	waitFor(t, 30*time.Second, "the replacement runs and wrote its line", func() bool {
		for _, s := range a.allocsOf("sticky") {
			if s.ID != first && s.ClientStatus == "running" && strings.Contains(a.catAllocFile(s.ID, "alloc/data/history"), s.ID) {
				second = s.ID
				return true
			}
		}
		return false
	})
	alloc, _, err := a.client.Allocations().Info(second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if alloc.PreviousAllocation != first {
		t.Fatalf("PreviousAllocation %q, want %q", alloc.PreviousAllocation, first)
	}
	for _, path := range []string{"alloc/data/history", "t/local/mine"} {
		if got, want := a.catAllocFile(second, path), first+"\n"+second+"\n"; got != want {
			t.Fatalf("%s in the replacement = %q, want the previous allocation's line then its own: %q", path, got, want)
		}
	}
}

// A batch allocation that outlives its group's max_run_duration is
// stopped: the job ends dead with the allocation complete, described as
// having exceeded it, and is not rescheduled.
func TestMaxRunDurationStopsBatchAllocation(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("timeout", "batch", 1, `exec sleep 600`)
	job.TaskGroups[0].MaxRunDuration = ptr(2 * time.Second)
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var id string
	waitFor(t, 30*time.Second, "the allocation completes", func() bool {
		for _, s := range a.allocsOf("timeout") {
			if s.ClientStatus == "complete" {
				id = s.ID
				return true
			}
		}
		return false
	})
	alloc, _, err := a.client.Allocations().Info(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if alloc.ClientDescription != "allocation exceeded max_run_duration" {
		t.Fatalf("client description %q", alloc.ClientDescription)
	}
	st := alloc.TaskStates["t"]
	// The time counts from when the client began running the allocation
	// (as Nomad's), so from after its creation.
	if st == nil || st.Failed || st.FinishedAt.Sub(time.Unix(0, alloc.CreateTime)) < 2*time.Second {
		t.Fatalf("task state %+v (allocation created %v): want not failed, stopped at least 2s after creation", st, time.Unix(0, alloc.CreateTime))
	}
	waitFor(t, 30*time.Second, "the job is dead", func() bool {
		j, _, err := a.client.Jobs().Info("timeout", nil)
		return err == nil && *j.Status == "dead"
	})
	if n := len(a.allocsOf("timeout")); n != 1 {
		t.Fatalf("%d allocations: the timed-out allocation was rescheduled", n)
	}

	// A service job may not set it.
	svc := rawExecJob("svc-timeout", "service", 1, `exec sleep 600`)
	svc.TaskGroups[0].MaxRunDuration = ptr(time.Minute)
	_, _, err = a.client.Jobs().Register(svc, nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "max_run_duration") {
		t.Fatalf("registering a service job with max_run_duration: %v, want a 400 naming max_run_duration", err)
	}
}

// With ephemeral_disk migrate, a replacement placed on another node (the
// old node is excluded by a constraint) fetches the previous allocation's
// alloc/data and local/ from the node that ran it, once that allocation has
// stopped: one server, two client agents.
func TestMigratingEphemeralDiskFollowsToAnotherNode(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	rawExec := map[string]any{"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}}}
	var clients []*agent
	for i := 0; i < 2; i++ {
		clients = append(clients, startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, rawExec))
	}
	var nodes []*api.NodeListStub
	waitFor(t, 30*time.Second, "two client nodes ready", func() bool {
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

	job := rawExecJob("mig", "service", 1,
		`echo "$NOMAD_ALLOC_ID" >> "$NOMAD_ALLOC_DIR/data/history"; echo "$NOMAD_ALLOC_ID" >> "$NOMAD_TASK_DIR/mine"; exec sleep 600`)
	job.TaskGroups[0].EphemeralDisk = &api.EphemeralDisk{Migrate: ptr(true), SizeMB: ptr(50)}
	job.TaskGroups[0].Constraints = []*api.Constraint{{LTarget: "${node.unique.id}", RTarget: nodes[0].ID, Operand: "="}}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var first string
	waitFor(t, 30*time.Second, "the first allocation wrote its data", func() bool {
		for _, s := range srv.allocsOf("mig") {
			if s.ClientStatus == "running" && strings.TrimSpace(srv.catAllocFile(s.ID, "alloc/data/history")) == s.ID {
				first = s.ID
				return true
			}
		}
		return false
	})

	job.TaskGroups[0].Constraints[0].RTarget = nodes[1].ID
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var second string
	waitFor(t, 30*time.Second, "the replacement runs on the other node and wrote its line", func() bool {
		for _, s := range srv.allocsOf("mig") {
			if s.ID != first && s.NodeID == nodes[1].ID && s.ClientStatus == "running" && strings.Contains(srv.catAllocFile(s.ID, "alloc/data/history"), s.ID) {
				second = s.ID
				return true
			}
		}
		return false
	})
	for _, path := range []string{"alloc/data/history", "t/local/mine"} {
		if got, want := srv.catAllocFile(second, path), first+"\n"+second+"\n"; got != want {
			t.Fatalf("%s on the new node = %q, want the previous allocation's line then its own: %q", path, got, want)
		}
	}
	alloc, _, err := srv.client.Allocations().Info(second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range alloc.TaskStates["t"].Events {
		msgs = append(msgs, e.DisplayMessage)
	}
	if !strings.Contains(strings.Join(msgs, "|"), "Migrated data from previous allocation "+first[:8]) {
		t.Fatalf("events %q do not tell of the migration", msgs)
	}
	_ = clients
}

// When the node of the previous allocation is down, the replacement of its
// lost allocation cannot fetch the data: it starts with empty directories
// at once, with a Task Setup event naming the reason.
func TestMigratingEphemeralDiskFromDownNodeStartsEmpty(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1, "min_heartbeat_ttl": "1s", "heartbeat_grace": "1s"},
	})
	srv.waitReady(false)
	rawExec := map[string]any{"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}}}
	var clients []*agent
	for i := 0; i < 2; i++ {
		clients = append(clients, startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, rawExec))
	}
	waitFor(t, 30*time.Second, "two client nodes ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		ready := 0
		for _, n := range nodes {
			if n.Status == "ready" {
				ready++
			}
		}
		return err == nil && ready == 2
	})
	job := rawExecJob("mig-down", "service", 1, `echo $$ > "$NOMAD_TASK_DIR/pid"; echo "$NOMAD_ALLOC_ID" >> "$NOMAD_ALLOC_DIR/data/history"; exec sleep 600`)
	job.TaskGroups[0].EphemeralDisk = &api.EphemeralDisk{Migrate: ptr(true), SizeMB: ptr(50)}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var first *api.AllocationListStub
	waitFor(t, 30*time.Second, "the first allocation wrote its data", func() bool {
		for _, s := range srv.allocsOf("mig-down") {
			if s.ClientStatus == "running" && strings.TrimSpace(srv.catAllocFile(s.ID, "alloc/data/history")) == s.ID {
				first = s
				return true
			}
		}
		return false
	})
	// Kill the agent that runs it (no clean shutdown: the task is left
	// behind, and killed by the test).
	node, _, err := srv.client.Nodes().Info(first.NodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var victim *agent
	for _, a := range clients {
		if fmt.Sprintf("127.0.0.1:%d", a.http) == node.HTTPAddr {
			victim = a
		}
	}
	if victim == nil {
		t.Fatalf("no agent serves node %s (%s)", first.NodeID, node.HTTPAddr)
	}
	victim.kill()
	t.Cleanup(func() {
		b, _ := os.ReadFile(filepath.Join(victim.dataDir, "client", "alloc", first.ID, "t", "local", "pid"))
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	var second *api.Allocation
	waitFor(t, 60*time.Second, "the lost allocation's replacement runs on the other node", func() bool {
		for _, s := range srv.allocsOf("mig-down") {
			if s.ID != first.ID && s.ClientStatus == "running" {
				second, _, err = srv.client.Allocations().Info(s.ID, nil)
				return err == nil
			}
		}
		return false
	})
	if second.PreviousAllocation != first.ID {
		t.Fatalf("PreviousAllocation %q, want %q", second.PreviousAllocation, first.ID)
	}
	if got := srv.catAllocFile(second.ID, "alloc/data/history"); got != second.ID+"\n" {
		t.Fatalf("history on the new node = %q, want only its own line", got)
	}
	var msgs []string
	for _, e := range second.TaskStates["t"].Events {
		msgs = append(msgs, e.DisplayMessage)
	}
	all := strings.Join(msgs, "|")
	if !strings.Contains(all, "Failed to migrate data from previous allocation "+first.ID[:8]) || !strings.Contains(all, "is down") {
		t.Fatalf("events %q do not say the previous node is down", msgs)
	}
}
