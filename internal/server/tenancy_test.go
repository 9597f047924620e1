package server

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/structs"
)

func upsertNamespace(t *testing.T, s *Server, ns *structs.Namespace) {
	t.Helper()
	var resp structs.GenericResponse
	if err := s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{ns}}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Index == 0 {
		t.Fatal("namespace upsert returned no index")
	}
}

func upsertPool(t *testing.T, s *Server, p *structs.NodePool) {
	t.Helper()
	var resp structs.GenericResponse
	if err := s.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{p}}, &resp); err != nil {
		t.Fatal(err)
	}
}

// wantCode asserts err is a coded error with code whose text contains msg.
func wantCode(t *testing.T, err error, code int, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %d %q, got success", code, msg)
	}
	c, text := structs.ErrorCode(err)
	if c != code || !strings.Contains(text, msg) {
		t.Fatalf("want %d containing %q, got %d %q", code, msg, c, text)
	}
}

func registerIn(s *Server, ns string, job *structs.Job) error {
	job.Namespace = ns
	var resp structs.JobRegisterResponse
	return s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: ns}}, &resp)
}

// poolNode registers a ready node of the given pool.
func poolNode(t *testing.T, s *Server, pool string) *structs.Node {
	t.Helper()
	n := &structs.Node{
		ID: uuid.NewString(), SecretID: uuid.NewString(), Name: "node-" + uuid.NewString()[:4], Datacenter: "dc1", NodePool: pool,
		Attributes: map[string]string{"kernel.name": "linux", "driver.raw_exec": "1", "unique.network.ip-address": "127.0.0.1"},
		Drivers:    map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		NodeResources: &structs.NodeResources{
			Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 4096},
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
	return n
}

func TestNamespaceCapabilitiesRefuseJobs(t *testing.T) {
	s := testServer(t, nil)
	upsertNamespace(t, s, &structs.Namespace{Name: "no-raw", Capabilities: &structs.NamespaceCapabilities{DisabledTaskDrivers: []string{"raw_exec"}}})
	upsertNamespace(t, s, &structs.Namespace{Name: "docker-only", Capabilities: &structs.NamespaceCapabilities{EnabledTaskDrivers: []string{"docker"}}})
	upsertNamespace(t, s, &structs.Namespace{Name: "no-host-net", Capabilities: &structs.NamespaceCapabilities{DisabledNetworkModes: []string{"host"}}})
	upsertNamespace(t, s, &structs.Namespace{Name: "open"})

	wantCode(t, registerIn(s, "no-raw", testJob("a", 1)), 400, `used task driver "raw_exec" is not allowed in namespace "no-raw"`)
	wantCode(t, registerIn(s, "docker-only", testJob("a", 1)), 400, `used task driver "raw_exec" is not allowed in namespace "docker-only"`)
	hostNet := testJob("a", 1)
	hostNet.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "host"}}
	wantCode(t, registerIn(s, "no-host-net", hostNet), 400, `used network mode "host" is not allowed in namespace "no-host-net"`)
	// A group without a network block uses none: allowed.
	if err := registerIn(s, "no-host-net", testJob("b", 1)); err != nil {
		t.Fatalf("job without networks in no-host-net: %v", err)
	}
	if err := registerIn(s, "open", testJob("a", 1)); err != nil {
		t.Fatalf("job in open namespace: %v", err)
	}
	// The refused jobs were not stored.
	if j, _ := s.State().JobByID(nil, "no-raw", "a"); j != nil {
		t.Fatal("a refused job was stored")
	}
	wantCode(t, registerIn(s, "nowhere", testJob("a", 1)), 400, `nonexistent namespace "nowhere"`)
}

func TestNamespaceValidationAndDelete(t *testing.T) {
	s := testServer(t, nil)
	var resp structs.GenericResponse
	for _, bad := range []string{"*", "", "has space", strings.Repeat("x", 129)} {
		err := s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: bad}}}, &resp)
		wantCode(t, err, 400, "invalid name")
	}
	err := s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "x", Description: strings.Repeat("d", 257)}}}, &resp)
	wantCode(t, err, 400, "description longer than 256")
	err = s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "x",
		NodePoolConfiguration: &structs.NamespaceNodePoolConfiguration{Default: "missing"}}}}, &resp)
	wantCode(t, err, 400, `default node pool "missing" does not exist`)

	del := func(name string) error {
		return s.RPC("Namespace.DeleteNamespaces", &structs.NamespaceDeleteRequest{Namespaces: []string{name}}, &resp)
	}
	wantCode(t, del("default"), 400, "default namespace can not be deleted")
	wantCode(t, del("ghost"), 404, `namespace "ghost" not found`)

	upsertNamespace(t, s, &structs.Namespace{Name: "team-a", Description: "first"})
	upsertNamespace(t, s, &structs.Namespace{Name: "team-a", Description: "second"})
	ns, _ := s.State().NamespaceByName(nil, "team-a")
	if ns == nil || ns.Description != "second" || ns.CreateIndex == ns.ModifyIndex {
		t.Fatalf("updated namespace: %+v", ns)
	}
	if err := registerIn(s, "team-a", testJob("web", 0)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, del("team-a"), 400, `namespace "team-a" has 1 job(s) in it`)
	var dresp structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "web", Purge: true, WriteRequest: structs.WriteRequest{Namespace: "team-a"}}, &dresp); err != nil {
		t.Fatal(err)
	}
	if err := del("team-a"); err != nil {
		t.Fatalf("delete of an empty namespace: %v", err)
	}
	if ns, _ := s.State().NamespaceByName(nil, "team-a"); ns != nil {
		t.Fatal("namespace still there after delete")
	}
}

func TestJobNodePoolFromNamespace(t *testing.T) {
	s := testServer(t, nil)
	upsertPool(t, s, &structs.NodePool{Name: "gpu"})
	upsertPool(t, s, &structs.NodePool{Name: "cpu"})
	upsertNamespace(t, s, &structs.Namespace{Name: "ml", NodePoolConfiguration: &structs.NamespaceNodePoolConfiguration{Default: "gpu", Allowed: []string{"gpu"}}})
	var dresp structs.GenericResponse
	err := s.RPC("NodePool.DeleteNodePools", &structs.NodePoolDeleteRequest{Names: []string{"gpu"}}, &dresp)
	wantCode(t, err, 400, `node pool "gpu" is the default node pool of namespace "ml"`)

	if err := registerIn(s, "ml", testJob("train", 0)); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.State().JobByID(nil, "ml", "train"); j == nil || j.NodePool != "gpu" {
		t.Fatalf("job in ml: pool %v, want gpu", j)
	}
	if err := registerIn(s, "default", testJob("web", 0)); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.State().JobByID(nil, "default", "web"); j == nil || j.NodePool != "default" {
		t.Fatalf("job in default: %+v, want pool default", j)
	}
	other := testJob("other", 0)
	other.NodePool = "cpu"
	wantCode(t, registerIn(s, "ml", other), 400, `namespace "ml" does not allow jobs to use node pool "cpu"`)
	missing := testJob("m", 0)
	missing.NodePool = "nope"
	wantCode(t, registerIn(s, "default", missing), 400, `job "m" is in nonexistent node pool "nope"`)
}

func TestNodePoolBuiltinsAndDelete(t *testing.T) {
	s := testServer(t, nil)
	var resp structs.GenericResponse
	up := func(p *structs.NodePool) error {
		return s.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{p}}, &resp)
	}
	del := func(name string) error {
		return s.RPC("NodePool.DeleteNodePools", &structs.NodePoolDeleteRequest{Names: []string{name}}, &resp)
	}
	wantCode(t, up(&structs.NodePool{Name: "all", Description: "x"}), 400, `modifying node pool "all" is not allowed`)
	wantCode(t, up(&structs.NodePool{Name: "default", SchedulerConfiguration: &structs.NodePoolSchedulerConfiguration{SchedulerAlgorithm: "spread"}}), 400,
		`only the description and meta of node pool "default" can be changed`)
	if err := up(&structs.NodePool{Name: "default", Description: "ours", Meta: map[string]string{"a": "b"}}); err != nil {
		t.Fatalf("default's description: %v", err)
	}
	wantCode(t, up(&structs.NodePool{Name: "bad/name"}), 400, "invalid name")
	wantCode(t, up(&structs.NodePool{Name: "x", SchedulerConfiguration: &structs.NodePoolSchedulerConfiguration{SchedulerAlgorithm: "random"}}), 400, "invalid scheduler algorithm")
	wantCode(t, del("default"), 400, `built-in node pool "default" cannot be deleted`)
	wantCode(t, del("all"), 400, `built-in node pool "all" cannot be deleted`)
	wantCode(t, del("ghost"), 404, `node pool "ghost" not found`)

	// A node may not register into "all" nor into a pool with a bad name.
	for _, pool := range []string{"all", "bad pool"} {
		n := &structs.Node{ID: uuid.NewString(), SecretID: uuid.NewString(), Name: "x", Datacenter: "dc1", NodePool: pool,
			Attributes: map[string]string{"kernel.name": "linux"}}
		err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n}, &structs.NodeUpdateResponse{})
		wantCode(t, err, 400, "node pool")
	}
	if p, _ := s.State().NodePoolByName(nil, "bad pool"); p != nil {
		t.Fatal("a refused registration created its pool")
	}

	// A node registering into a pool nobody created creates it.
	poolNode(t, s, "edge")
	if p, _ := s.State().NodePoolByName(nil, "edge"); p == nil {
		t.Fatal("registering a node in pool edge did not create the pool")
	}
	wantCode(t, del("edge"), 400, `node pool "edge" has 1 node(s) in it`)

	upsertPool(t, s, &structs.NodePool{Name: "batch"})
	job := testJob("j", 0)
	job.NodePool = "batch"
	if err := registerIn(s, "default", job); err != nil {
		t.Fatal(err)
	}
	wantCode(t, del("batch"), 400, `node pool "batch" has 1 job(s) in it`)
	upsertPool(t, s, &structs.NodePool{Name: "empty"})
	if err := del("empty"); err != nil {
		t.Fatalf("delete of an empty pool: %v", err)
	}
}

// A job of pool gpu stays blocked while no node of the pool exists and is
// placed on the first one that registers, never on a default-pool node.
func TestNodePoolJobWaitsForItsNodes(t *testing.T) {
	s := testServer(t, nil)
	poolNode(t, s, "")
	upsertPool(t, s, &structs.NodePool{Name: "gpu"})
	job := testJob("train", 1)
	job.NodePool = "gpu"
	if err := registerIn(s, "default", job); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a blocked eval", func() bool {
		evals, _ := s.State().EvalsByJob(nil, "default", "train")
		for _, e := range evals {
			if e.Status == structs.EvalStatusBlocked {
				return true
			}
		}
		return false
	})
	if a := liveAllocs(t, s, "train"); len(a) != 0 {
		t.Fatalf("placed %d allocs with no gpu node", len(a))
	}
	gpu := poolNode(t, s, "gpu")
	waitFor(t, 10*time.Second, "placement on the gpu node", func() bool { return len(liveAllocs(t, s, "train")) == 1 })
	if a := liveAllocs(t, s, "train")[0]; a.NodeID != gpu.ID {
		t.Fatalf("placed on %s, want the gpu node %s", a.NodeID, gpu.ID)
	}
}

// A pool's scheduler configuration overrides the cluster's for its jobs:
// memory_max is granted only to jobs of the pool that enables
// oversubscription.
func TestNodePoolSchedulerConfiguration(t *testing.T) {
	s := testServer(t, nil)
	on := true
	upsertPool(t, s, &structs.NodePool{Name: "over", SchedulerConfiguration: &structs.NodePoolSchedulerConfiguration{
		SchedulerAlgorithm: structs.SchedulerAlgorithmSpread, MemoryOversubscriptionEnabled: &on}})
	poolNode(t, s, "over")
	poolNode(t, s, "")
	for _, pool := range []string{"over", "default"} {
		job := testJob("j-"+pool, 1)
		job.NodePool = pool
		job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 256
		if err := registerIn(s, "default", job); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "both placed", func() bool {
		return len(liveAllocs(t, s, "j-over")) == 1 && len(liveAllocs(t, s, "j-default")) == 1
	})
	if got := liveAllocs(t, s, "j-over")[0].AllocatedResources.Tasks["t"].Memory.MemoryMaxMB; got != 256 {
		t.Fatalf("pool with oversubscription: memory_max %d, want 256", got)
	}
	if got := liveAllocs(t, s, "j-default")[0].AllocatedResources.Tasks["t"].Memory.MemoryMaxMB; got != 0 {
		t.Fatalf("cluster without oversubscription: memory_max %d, want 0", got)
	}
	snap, _ := s.State().Snapshot()
	if cfg := s.schedulerOptions(scheduler.Config{}, snap, "default", "j-over"); cfg.Algorithm != structs.SchedulerAlgorithmSpread {
		t.Fatalf("pool algorithm not applied: %q", cfg.Algorithm)
	}
	if cfg := s.schedulerOptions(scheduler.Config{}, snap, "default", "j-default"); cfg.Algorithm != structs.SchedulerAlgorithmBinpack {
		t.Fatalf("cluster algorithm: %q", cfg.Algorithm)
	}
}

// ?namespace=* lists every namespace's objects, one namespace only its own,
// and the namespace seam (namespaceACL, set by the ACL system) removes the
// namespaces a token may not read from every list across namespaces.
func TestListsAcrossNamespaces(t *testing.T) {
	s := testServer(t, nil)
	poolNode(t, s, "")
	upsertNamespace(t, s, &structs.Namespace{Name: "team-a"})
	upsertNamespace(t, s, &structs.Namespace{Name: "team-b"})
	for _, ns := range []string{"team-a", "team-b"} {
		if err := registerIn(s, ns, scalingJob("web", 5)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "allocs in both namespaces", func() bool {
		a, _ := s.State().AllocsByJob(nil, "team-a", "web", false)
		b, _ := s.State().AllocsByJob(nil, "team-b", "web", false)
		return len(a) == 2 && len(b) == 2
	})
	count := func(ns, token string) map[string]int {
		q := structs.QueryOptions{Namespace: ns, AuthToken: token}
		got := map[string]int{}
		var jobs structs.JobListResponse
		if err := s.RPC("Job.List", &structs.JobListRequest{QueryOptions: q}, &jobs); err != nil {
			t.Fatal(err)
		}
		got["jobs"] = len(jobs.Jobs)
		var allocs structs.AllocListResponse
		if err := s.RPC("Alloc.List", &structs.AllocListRequest{QueryOptions: q}, &allocs); err != nil {
			t.Fatal(err)
		}
		got["allocs"] = len(allocs.Allocations)
		var evals structs.EvalListResponse
		if err := s.RPC("Eval.List", &structs.EvalListRequest{QueryOptions: q}, &evals); err != nil {
			t.Fatal(err)
		}
		got["evals"] = len(evals.Evaluations)
		var pols structs.ScalingPolicyListResponse
		if err := s.RPC("Scaling.ListPolicies", &structs.ScalingPolicyListRequest{QueryOptions: q}, &pols); err != nil {
			t.Fatal(err)
		}
		got["policies"] = len(pols.Policies)
		var nss structs.NamespaceListResponse
		if err := s.RPC("Namespace.ListNamespaces", &structs.GenericRequest{QueryOptions: q}, &nss); err != nil {
			t.Fatal(err)
		}
		got["namespaces"] = len(nss.Namespaces)
		var pj structs.NodePoolJobsResponse
		if err := s.RPC("NodePool.ListJobs", &structs.NodePoolSpecificRequest{Name: "default", QueryOptions: q}, &pj); err != nil {
			t.Fatal(err)
		}
		got["pool jobs"] = len(pj.Jobs)
		return got
	}
	want := func(got map[string]int, jobs, allocs, evals, policies, namespaces int) {
		t.Helper()
		w := map[string]int{"jobs": jobs, "allocs": allocs, "evals": evals, "policies": policies, "namespaces": namespaces, "pool jobs": jobs}
		for k, v := range w {
			if got[k] != v {
				t.Fatalf("%s: got %d, want %d (all: %v)", k, got[k], v, got)
			}
		}
	}
	want(count("*", ""), 2, 4, 2, 4, 3)
	want(count("team-a", ""), 1, 2, 1, 2, 3)
	want(count("default", ""), 0, 0, 0, 0, 3)

	s.namespaceACL = func(token string) (func(string) bool, error) {
		if token != "a-reader" {
			return nil, structs.ErrPermissionDenied
		}
		return func(ns string) bool { return ns == "team-a" }, nil
	}
	want(count("*", "a-reader"), 1, 2, 1, 2, 1)

	s.nodePoolACL = func(string) (func(string) bool, error) { return func(p string) bool { return p == "default" }, nil }
	var pools structs.NodePoolListResponse
	if err := s.RPC("NodePool.List", &structs.GenericRequest{}, &pools); err != nil || len(pools.NodePools) != 1 || pools.NodePools[0].Name != "default" {
		t.Fatalf("pool list through the pool seam: %v %+v", err, pools.NodePools)
	}
	var jobs structs.JobListResponse
	err := s.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: "*", AuthToken: "nobody"}}, &jobs)
	if err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("unknown token across namespaces: %v", err)
	}
}
