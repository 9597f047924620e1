package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"
)

// The checks every bridge-group test makes, whatever the task driver: the
// bridge and its rules go when the test ends, each allocation answers on
// its host port from its own address, a restarted client agent keeps the
// allocations, and stopping the job removes what the group made.

// cleanupBridge removes, when the test ends, the bridge br and the
// iptables rules a client agent adds for it and subnet.
func cleanupBridge(t *testing.T, br, subnet string) {
	t.Helper()
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", br).Run()
		for _, r := range [][]string{
			{"filter", "FORWARD", "-i", br, "-j", "ACCEPT"},
			{"filter", "FORWARD", "-o", br, "-j", "ACCEPT"},
			{"nat", "POSTROUTING", "-s", subnet, "!", "-o", br, "-j", "MASQUERADE"},
			{"nat", "POSTROUTING", "-s", "127.0.0.0/8", "-o", br, "-j", "MASQUERADE"},
		} {
			exec.Command("iptables", append([]string{"-w", "-t", r[0], "-D", r[1]}, r[2:]...)...).Run()
		}
	})
}

// startBridgeCluster starts a server and a client agent (left running
// tasks when it stops, its processes killed when the test ends) whose
// bridge networks use br and subnet, and waits for the client's node to
// be ready with driver detected and healthy.
func startBridgeCluster(t *testing.T, br, subnet, driver string) (srv, cli *agent) {
	t.Helper()
	srv = startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	t.Cleanup(func() { killProcsUnder(clientDir) })
	cli = startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"client":             map[string]any{"bridge_network_name": br, "bridge_network_subnet": subnet},
		"leave_on_interrupt": false,
		"log_level":          "INFO",
	})
	waitFor(t, 30*time.Second, "client node ready with "+driver, func() bool {
		nodes, _, err := srv.client.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
		if err != nil || len(nodes) != 1 || nodes[0].Status != "ready" {
			return false
		}
		d := nodes[0].Drivers[driver]
		return d != nil && d.Detected && d.Healthy
	})
	return srv, cli
}

// waitAllocsRunning waits until job has exactly n allocations, all
// running; an allocation that fails ends the test with its task events.
func waitAllocsRunning(t *testing.T, srv *agent, job string, n int, timeout time.Duration) []*api.AllocationListStub {
	t.Helper()
	var allocs []*api.AllocationListStub
	waitFor(t, timeout, fmt.Sprintf("%d allocations running", n), func() bool {
		allocs = srv.allocsOf(job)
		running := 0
		for _, a := range allocs {
			if a.ClientStatus == "failed" {
				full, _, _ := srv.client.Allocations().Info(a.ID, nil)
				var msgs []string
				for name, ts := range full.TaskStates {
					for _, ev := range ts.Events {
						msgs = append(msgs, name+": "+ev.Type+" "+ev.DisplayMessage)
					}
				}
				t.Fatalf("allocation failed:\n%s", strings.Join(msgs, "\n"))
			}
			if a.ClientStatus == "running" {
				running++
			}
		}
		return running == n && len(allocs) == n
	})
	return allocs
}

// helloAnswer is what an allocation's hello server (bridge_test.go)
// answered on its host port.
type helloAnswer struct {
	addr  string          // the host address and port it answered on
	body  string          // the whole answer
	ip    string          // its NOMAD_ALLOC_IP_http
	alloc *api.Allocation // the allocation, as the server has it
}

// checkHello waits for allocation allocID's hello server to answer on its
// host port and checks the answer: the allocation's own ID, an address
// of subnet (beginning with prefix), only lo and eth0 seen, and that
// address in the allocation's network status.
func checkHello(t *testing.T, c *api.Client, allocID, prefix, subnet string) helloAnswer {
	t.Helper()
	h := helloAnswer{addr: hostPort(t, c, allocID)}
	var err error
	waitFor(t, 20*time.Second, "alloc "+allocID+" answering on "+h.addr, func() bool {
		h.body, err = get(h.addr)
		return err == nil
	})
	f := strings.Fields(h.body)
	if len(f) != 3 || f[0] != allocID {
		t.Fatalf("%s answered %q, want its own allocation %s", h.addr, h.body, allocID)
	}
	if !strings.HasPrefix(f[1], prefix) {
		t.Fatalf("NOMAD_ALLOC_IP_http = %q, want an address of %s", f[1], subnet)
	}
	if f[2] != "lo,eth0" {
		t.Fatalf("task sees interfaces %q, want lo,eth0 only", f[2])
	}
	h.ip = f[1]
	h.alloc, _, err = c.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.alloc.NetworkStatus == nil || h.alloc.NetworkStatus.Address != f[1] {
		t.Fatalf("allocation's network status %+v, want %s", h.alloc.NetworkStatus, f[1])
	}
	return h
}

// registerBridgeJob registers service job id: one group of two
// allocations in bridge mode, port "http" mapped to 8080, and one task "t"
// of driver with config.
func registerBridgeJob(t *testing.T, srv *agent, id, driver string, config map[string]any) {
	t.Helper()
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", 2)
	tg.Networks = []*api.NetworkResource{{Mode: "bridge", DynamicPorts: []api.Port{{Label: "http", To: 8080}}}}
	task := api.NewTask("t", driver)
	task.Config = config
	task.Resources = &api.Resources{CPU: ptr(50), MemoryMB: ptr(64)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
}

// taskContainer is the one task container of allocation allocID on the
// engine cli answers for (docker, or podman's compatible API), checked to
// run in the allocation's network namespace. It returns the container and
// the path of its process's namespace.
func taskContainer(t *testing.T, cli *client.Client, allocID string) (container.InspectResponse, string) {
	t.Helper()
	tasks := dockerContainers(t, cli, allocID)
	if len(tasks) != 1 {
		t.Fatalf("allocation %s has %d task containers, want 1", allocID, len(tasks))
	}
	info, err := cli.ContainerInspect(context.Background(), tasks[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	taskNS := fmt.Sprintf("/proc/%d/ns/net", info.State.Pid)
	if nsInode(t, taskNS) != netnsInode(t, allocID) {
		t.Fatalf("task container of %s is not in the allocation's namespace", allocID)
	}
	return info, taskNS
}

// restartClientAgent SIGKILLs the client agent, runs whileDown (when not
// nil) with the agent down, starts it again and waits until it answers
// and reports every one of allocs running; each allocation must still
// have the network namespace it had (same inode), not a new one.
func restartClientAgent(t *testing.T, cli *agent, allocs []*api.AllocationListStub, whileDown func()) {
	t.Helper()
	inodes := map[string]uint64{}
	for _, a := range allocs {
		inodes[a.ID] = netnsInode(t, a.ID)
	}
	cli.kill()
	if whileDown != nil {
		whileDown()
	}
	cli.start()
	waitFor(t, 30*time.Second, "client agent back", func() bool {
		_, err := cli.client.Agent().Self()
		return err == nil
	})
	// Give the restored runners time to set up (re-attach) and report.
	waitFor(t, 30*time.Second, "allocations running after the restart", func() bool {
		for _, a := range allocs {
			full, _, err := cli.client.Allocations().Info(a.ID, nil)
			if err != nil || full.ClientStatus != "running" {
				return false
			}
		}
		return true
	})
	for _, a := range allocs {
		if got := netnsInode(t, a.ID); got != inodes[a.ID] {
			t.Fatalf("namespace of %s was recreated (inode %d, was %d)", a.ID, got, inodes[a.ID])
		}
	}
}

// waitBridgeGone waits, after the job stopped, until no allocation of
// allocs has a network namespace left, gone(allocID) holds for each (the
// driver's own leftovers: containers, port mappings; nil for none) and no
// veth is attached to br.
func waitBridgeGone(t *testing.T, br, what string, timeout time.Duration, allocs []*api.AllocationListStub, gone func(allocID string) bool) {
	t.Helper()
	waitFor(t, timeout, what, func() bool {
		for _, a := range allocs {
			if _, err := os.Stat("/var/run/netns/" + a.ID); err == nil {
				return false
			}
			if gone != nil && !gone(a.ID) {
				return false
			}
		}
		return !strings.Contains(cmdOut(t, "ip", "-o", "link", "show", "master", br), "dv")
	})
}

// runVMJob writes hcl (a job of one group with a task "vm") to a new
// directory, runs it with the CLI of agent a and waits for its allocation
// to run; a failed allocation ends the test with the VM's task state. It
// returns the directory and the allocation's ID.
func runVMJob(t *testing.T, a *agent, job, hcl string) (dir, allocID string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vm.nomad.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := a.cli(dir, "job", "run", "-detach", "vm.nomad.hcl"); code != 0 {
		t.Fatalf("job run: exit %d\n%s", code, out)
	}
	waitFor(t, 60*time.Second, "the VM's allocation running", func() bool {
		for _, s := range a.allocsOf(job) {
			if s.ClientStatus == "failed" {
				al, _, _ := a.client.Allocations().Info(s.ID, nil)
				t.Fatalf("allocation failed: %+v", al.TaskStates["vm"])
			}
			if s.ClientStatus == "running" {
				allocID = s.ID
			}
		}
		return allocID != ""
	})
	return dir, allocID
}
