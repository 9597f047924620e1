package server

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/invariant"
	"github.com/drover-project/drover/internal/structs"
)

// invariantScale is the size of one TestInvariant_ConcurrentPlacement run.
type invariantScale struct {
	nodes, jobs, submitters int
	deadline                time.Duration
}

// TestInvariant_ConcurrentPlacement drives a real server (8 scheduler
// workers, the real plan applier) with randomized service and batch jobs
// submitted concurrently onto ≥ 1,000 nodes, some with a dynamic port range
// of a few ports, waits until no evaluation is in flight and checks that
// nothing broke: no node overcommitted, no (address, port) or device
// instance used twice, every dynamic port inside its node's range, no
// allocation lost, every evaluation terminal or blocked with a reason.
//
// The test can fail: with the plan applier's port check disabled
// (structs.AllocsFit given a throw-away index) it reports 100–260 ports
// used twice per run, from workers that chose the same node concurrently.
// Jobs ask for GPUs too; the schedulers grant none yet, and once they do
// the checker covers device instances with no change here.
//
// Runs take about 9 s (20 s with -race) on 2 cores. The workload's seed is
// logged; DROVER_INVARIANT_SEED replays it. DROVER_INVARIANT_LARGE=1 runs
// a larger variant (5,000 nodes, 1,000 jobs) unless -short is set.
func TestInvariant_ConcurrentPlacement(t *testing.T) {
	scale := invariantScale{nodes: 1000, jobs: 240, submitters: 8, deadline: 2 * time.Minute}
	if os.Getenv("DROVER_INVARIANT_LARGE") != "" {
		if testing.Short() {
			t.Skip("the large invariant variant does not run with -short")
		}
		scale = invariantScale{nodes: 5000, jobs: 1000, submitters: 16, deadline: 10 * time.Minute}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("DROVER_INVARIANT_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (DROVER_INVARIANT_SEED=%d reproduces the workload; worker interleaving still varies)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	s := testServer(t, func(c *Config) {
		c.NumSchedulers = 8
		// Nodes are registered once and never heartbeat again: a TTL far
		// beyond the test keeps them ready.
		c.MinHeartbeatTTL = time.Hour
		c.HeartbeatGrace = time.Hour
	})

	start := time.Now()
	nodes := invariantNodes(rng, scale.nodes)
	registerNodesConcurrently(t, s, nodes, 8)
	t.Logf("%d nodes registered and ready in %v", len(nodes), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	jobs := make([]*structs.Job, scale.jobs)
	for i := range jobs {
		jobs[i] = invariantJob(rng, i)
	}
	submitJobsConcurrently(t, s, jobs, scale.submitters)
	t.Logf("%d jobs submitted in %v", len(jobs), time.Since(start).Round(time.Millisecond))

	waitFor(t, scale.deadline, "every evaluation terminal or blocked", func() bool {
		it, err := s.State().Evals(nil)
		if err != nil {
			t.Fatal(err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			if raw.(*structs.Evaluation).Status == structs.EvalStatusPending {
				return false
			}
		}
		return true
	})
	t.Logf("all evaluations settled %v after the last submit", time.Since(start).Round(time.Millisecond))

	snap, err := s.State().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	st, err := invariant.FromStore(snap)
	if err != nil {
		t.Fatal(err)
	}
	if vs := invariant.Check(st); len(vs) > 0 {
		t.Fatalf("%d invariant violations:\n%s", len(vs), invariant.Summary(vs, 30))
	}

	// Independently of the checker: every placed port lies inside its
	// node's dynamic range or is one of the static ports asked for.
	byID := make(map[string]*structs.Node, len(st.Nodes))
	for _, n := range st.Nodes {
		byID[n.ID] = n
	}
	var placed, onTight, ports, devices, blocked int
	for _, a := range st.Allocs {
		if a.TerminalStatus() {
			continue
		}
		placed++
		n := byID[a.NodeID]
		lo, hi := structs.DefaultMinDynamicPort, structs.DefaultMaxDynamicPort
		if n.NodeResources.MaxDynamicPort > 0 {
			lo, hi = n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort
			onTight++
		}
		for _, tr := range a.AllocatedResources.Tasks {
			for _, d := range tr.Devices {
				devices += len(d.DeviceIDs)
			}
		}
		for _, p := range a.AllocatedResources.Shared.Ports {
			ports++
			if staticInvariantPorts[p.Value] && p.Label[0] == 's' {
				continue
			}
			if p.Value < lo || p.Value > hi {
				t.Errorf("alloc %s on node %s: port %s=%d outside the node's range %d-%d", a.ID, n.ID, p.Label, p.Value, lo, hi)
			}
		}
	}
	for _, e := range st.Evals {
		if e.Status == structs.EvalStatusBlocked {
			blocked++
		}
	}
	t.Logf("%d allocations placed (%d on tight-range nodes) holding %d ports and %d device instances; %d evaluations, %d blocked",
		placed, onTight, ports, devices, len(st.Evals), blocked)
	// The scenario must have exercised what it claims to: placements, the
	// tight nodes, and contention that left some work blocked.
	if placed == 0 || onTight == 0 {
		t.Fatalf("scenario placed %d allocations, %d on tight-range nodes: it tests nothing", placed, onTight)
	}
}

// staticInvariantPorts are the static ports the generated jobs ask for;
// their labels start with "s".
var staticInvariantPorts = map[int]bool{8080: true, 8081: true, 9090: true}

// invariantNodes builds n ready-to-register nodes with varied cpu, memory
// and disk, some reservations, two addresses on some, and on one node in
// ten a dynamic port range of 8 ports ("tight", meta.tight=true).
func invariantNodes(rng *rand.Rand, n int) []*structs.Node {
	out := make([]*structs.Node, n)
	for i := range out {
		ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255+1)
		addrs := []structs.NodeNetworkAddress{{Alias: "default", Address: ip, Family: "ipv4"}}
		if rng.IntN(4) == 0 {
			addrs = append(addrs, structs.NodeNetworkAddress{Alias: "default", Address: fmt.Sprintf("172.16.%d.%d", i>>8&255, i&255+1), Family: "ipv4"})
		}
		node := &structs.Node{
			ID: uuid.NewString(), SecretID: uuid.NewString(), Name: fmt.Sprintf("inv-%05d", i), Datacenter: "dc1",
			Attributes: map[string]string{"kernel.name": "linux", "driver.raw_exec": "1", "unique.network.ip-address": ip},
			Drivers:    map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
			Meta:       map[string]string{"tight": "false"},
			NodeResources: &structs.NodeResources{
				Cpu:          structs.NodeCpuResources{CpuShares: int64(2000 + 1000*rng.IntN(7))},
				Memory:       structs.NodeMemoryResources{MemoryMB: int64(2048 * (1 + rng.IntN(8)))},
				Disk:         structs.NodeDiskResources{DiskMB: int64(10000 + 10000*rng.IntN(5))},
				NodeNetworks: []*structs.NodeNetworkResource{{Mode: "host", Device: "eth0", Addresses: addrs}},
			},
		}
		if rng.IntN(3) == 0 {
			node.ReservedResources = &structs.NodeReservedResources{
				Cpu:      structs.NodeReservedCpuResources{CpuShares: 500},
				Memory:   structs.NodeReservedMemoryResources{MemoryMB: 512},
				Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22,9090"},
			}
		}
		if i%10 == 0 {
			lo := 30000 + rng.IntN(1000)
			node.NodeResources.MinDynamicPort, node.NodeResources.MaxDynamicPort = lo, lo+7
			node.Meta["tight"] = "true"
		}
		if i%5 == 1 {
			gpus := &structs.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "t4"}
			for g := 0; g < 1+rng.IntN(4); g++ {
				gpus.Instances = append(gpus.Instances, &api.NodeDevice{ID: fmt.Sprintf("GPU-%s-%d", node.ID[:8], g), Healthy: true})
			}
			node.NodeResources.Devices = []*structs.NodeDeviceResource{gpus}
		}
		out[i] = node
	}
	return out
}

// invariantJob makes job i: service or batch, count 1–50, one group with
// varied resources, a group network with 0–3 dynamic ports and sometimes a
// static one; one job in three is pinned to the tight-range nodes and one
// in five asks for a GPU.
func invariantJob(rng *rand.Rand, i int) *structs.Job {
	typ := structs.JobTypeService
	if rng.IntN(3) == 0 {
		typ = structs.JobTypeBatch
	}
	net := &structs.NetworkResource{Mode: "host"}
	for p := 0; p < rng.IntN(4); p++ {
		net.DynamicPorts = append(net.DynamicPorts, structs.Port{Label: fmt.Sprintf("d%d", p), To: -1})
	}
	if rng.IntN(3) == 0 {
		statics := []int{8080, 8081, 9090}
		net.ReservedPorts = append(net.ReservedPorts, structs.Port{Label: "s0", Value: statics[rng.IntN(len(statics))], To: -1})
	}
	res := &structs.Resources{CPU: 50 * (1 + rng.IntN(20)), MemoryMB: 64 * (1 + rng.IntN(16))}
	if rng.IntN(5) == 0 {
		res.Devices = []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: ptr(uint64(1 + rng.IntN(2)))}}
	}
	tg := &structs.TaskGroup{
		Name: "g", Count: 1 + rng.IntN(50),
		EphemeralDisk: &structs.EphemeralDisk{SizeMB: 100 * (1 + rng.IntN(10))},
		Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec",
			Config: map[string]any{"command": "/bin/sleep", "args": []any{"600"}}, Resources: res}},
	}
	if len(net.DynamicPorts)+len(net.ReservedPorts) > 0 {
		tg.Networks = []*structs.NetworkResource{net}
	}
	job := &structs.Job{ID: fmt.Sprintf("inv-%04d", i), Type: typ, Datacenters: []string{"dc1"}, TaskGroups: []*structs.TaskGroup{tg}}
	if rng.IntN(3) == 0 {
		job.Constraints = []*structs.Constraint{{LTarget: "${meta.tight}", RTarget: "true", Operand: "="}}
	}
	return job
}

func ptr[T any](v T) *T { return &v }

// registerNodesConcurrently registers and readies nodes through the Node
// RPCs from workers goroutines.
func registerNodesConcurrently(t *testing.T, s *Server, nodes []*structs.Node, workers int) {
	t.Helper()
	ch := make(chan *structs.Node)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range ch {
				var resp structs.NodeUpdateResponse
				if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n}, &resp); err != nil {
					errs <- fmt.Errorf("register %s: %w", n.Name, err)
					return
				}
				if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: n.ID, SecretID: n.SecretID, Status: structs.NodeStatusReady}, &resp); err != nil {
					errs <- fmt.Errorf("ready %s: %w", n.Name, err)
					return
				}
			}
		}()
	}
	feed(ch, nodes, errs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// submitJobsConcurrently registers jobs through Job.Register from workers
// goroutines.
func submitJobsConcurrently(t *testing.T, s *Server, jobs []*structs.Job, workers int) {
	t.Helper()
	ch := make(chan *structs.Job)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				var resp structs.JobRegisterResponse
				if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j}, &resp); err != nil {
					errs <- fmt.Errorf("register job %s: %w", j.ID, err)
					return
				}
			}
		}()
	}
	feed(ch, jobs, errs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// feed sends items until done or a worker reported an error.
func feed[T any](ch chan<- T, items []T, errs chan error) {
	defer close(ch)
	for _, it := range items {
		select {
		case ch <- it:
		case err := <-errs:
			errs <- err
			return
		}
	}
}
