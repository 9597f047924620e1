package server

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// testServer starts a dev-mode server on a free loopback port.
func testServer(t testing.TB, mut func(*Config)) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DevMode = true
	cfg.RPCListener = ln
	cfg.NumSchedulers = 2
	noHeartbeatExpiry(cfg)
	if mut != nil {
		mut(cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	waitFor(t, 5*time.Second, "leadership", func() bool { return s.IsLeader() })
	return s
}

// noHeartbeatExpiry keeps the nodes a test registers up for the whole test:
// no client heartbeats them, and with the default TTL and grace (10 s each)
// a test slowed past 20 s by the race detector on a loaded machine saw its
// nodes go down and their allocations lost in the middle of what it tested.
// A test about heartbeats sets its own TTL and grace.
func noHeartbeatExpiry(cfg *Config) {
	cfg.MinHeartbeatTTL = 10 * time.Minute
	cfg.HeartbeatGrace = 10 * time.Minute
}

// waitSlack stretches every waitFor deadline. A deadline there only bounds
// a hang: d is what the wait may take on an idle machine, and CI runs this
// package under -race on two cores shared with other test binaries, where
// Raft rounds, leader elections and replication take several times longer.
// A test whose point is how fast something happens measures it itself.
const waitSlack = 3

// waitFor polls cond until it holds, failing the test after waitSlack*d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitSlack * d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitSlack*d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testNode registers a ready node with cpu MHz and memory MB.
func testNode(t testing.TB, s *Server, cpu, mem int64) *structs.Node {
	t.Helper()
	n := &structs.Node{
		ID: uuid.NewString(), SecretID: uuid.NewString(), Name: "node-" + uuid.NewString()[:4], Datacenter: "dc1",
		Attributes: map[string]string{"kernel.name": "linux", "driver.raw_exec": "1", "unique.network.ip-address": "127.0.0.1"},
		Drivers:    map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		NodeResources: &structs.NodeResources{
			Cpu: structs.NodeCpuResources{CpuShares: cpu}, Memory: structs.NodeMemoryResources{MemoryMB: mem},
			Disk:         structs.NodeDiskResources{DiskMB: 100000},
			NodeNetworks: []*structs.NodeNetworkResource{{Mode: "host", Device: "lo", Addresses: []structs.NodeNetworkAddress{{Alias: "default", Address: "127.0.0.1", Family: "ipv4"}}}},
		},
	}
	var resp structs.NodeUpdateResponse
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n}, &resp); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: n.ID, SecretID: n.SecretID, Status: structs.NodeStatusReady}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.HeartbeatTTL <= 0 {
		t.Fatalf("no heartbeat TTL returned")
	}
	return n
}

func testJob(id string, count int) *structs.Job {
	return &structs.Job{ID: id, Type: structs.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: count, Tasks: []*structs.Task{{
			Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []any{"600"}},
			Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
		}}}}}
}

func allocsOf(t *testing.T, s *Server, jobID string) []*structs.Allocation {
	t.Helper()
	allocs, err := s.State().AllocsByJob(nil, "default", jobID, false)
	if err != nil {
		t.Fatal(err)
	}
	return allocs
}

func liveAllocs(t *testing.T, s *Server, jobID string) []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range allocsOf(t, s, jobID) {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

func register(t *testing.T, s *Server, job *structs.Job) *structs.JobRegisterResponse {
	t.Helper()
	var resp structs.JobRegisterResponse
	if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
		t.Fatal(err)
	}
	return &resp
}

func evalDone(t *testing.T, s *Server, id string) *structs.Evaluation {
	t.Helper()
	var ev *structs.Evaluation
	waitFor(t, 10*time.Second, fmt.Sprintf("eval %s terminal", id), func() bool {
		ev, _ = s.State().EvalByID(nil, id)
		return ev != nil && ev.TerminalStatus()
	})
	return ev
}
