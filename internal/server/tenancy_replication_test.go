package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func nodePoolIn(s *Server, name string) *structs.NodePool {
	p, _ := s.State().NodePoolByName(nil, name)
	return p
}

func namespaceIn(s *Server, name string) *structs.Namespace {
	ns, _ := s.State().NamespaceByName(nil, name)
	return ns
}

// A namespace and a node pool created in the authoritative region appear in
// the other region; changed there, they change here; deleted there, they
// go here. Written in the replicating region, they land in the
// authoritative one (and come back). The built-in pools stay each region's
// own; an unchanged round writes nothing.
func TestACLReplicationNamespacesNodePools(t *testing.T) {
	east, west, root := replicatedRegions(t)
	wr := structs.WriteRequest{AuthToken: root}

	if err := east.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{
		{Name: "gpu", Description: "the GPU boxes", Meta: map[string]string{"team": "ml"}},
	}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := east.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{
		{Name: "team-a", Description: "team A", NodePoolConfiguration: &structs.NamespaceNodePoolConfiguration{Default: "gpu"},
			Capabilities: &structs.NamespaceCapabilities{DisabledTaskDrivers: []string{"docker"}}},
	}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "namespace team-a and pool gpu in west", func() bool {
		return namespaceIn(west, "team-a") != nil && nodePoolIn(west, "gpu") != nil
	})
	ns := namespaceIn(west, "team-a")
	if ns.Description != "team A" || ns.NodePoolConfiguration == nil || ns.NodePoolConfiguration.Default != "gpu" ||
		ns.Capabilities == nil || len(ns.Capabilities.DisabledTaskDrivers) != 1 {
		t.Fatalf("west's copy of team-a: %+v", ns)
	}
	if p := nodePoolIn(west, "gpu"); p.Description != "the GPU boxes" || p.Meta["team"] != "ml" {
		t.Fatalf("west's copy of gpu: %+v", p)
	}

	// Changed upstream: changed here.
	if err := east.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{
		{Name: "gpu", Description: "the new GPU boxes"},
	}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "gpu's new description in west", func() bool {
		return nodePoolIn(west, "gpu").Description == "the new GPU boxes"
	})

	// The built-in pools are each region's own: east's default pool
	// description is not west's, and a write of it in west stays in west.
	if err := east.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{
		{Name: structs.DefaultNodePool, Description: "east's default"},
	}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := west.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{
		{Name: structs.DefaultNodePool, Description: "west's default"},
	}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatalf("writing west's default pool in west: %v", err)
	}
	if d := nodePoolIn(east, structs.DefaultNodePool).Description; d != "east's default" {
		t.Fatalf("east's default pool says %q after a write of west's", d)
	}
	err := west.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{
		{Name: structs.DefaultNodePool}, {Name: "mixed"},
	}, WriteRequest: wr}, &structs.GenericResponse{})
	if code, _ := structs.ErrorCode(err); code != 400 {
		t.Fatalf("a built-in and a replicated pool in one write in west: %v, want a 400", err)
	}

	// Written in west: in east at once, then back in west.
	if err := west.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{
		{Name: "from-west", Description: "made in west"},
	}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatalf("namespace write in west: %v", err)
	}
	if err := west.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{
		{Name: "west-made"},
	}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatalf("node pool write in west: %v", err)
	}
	if namespaceIn(east, "from-west") == nil || nodePoolIn(east, "west-made") == nil {
		t.Fatal("a namespace or node pool written in west did not land in east")
	}
	waitFor(t, 10*time.Second, "west's writes replicated back", func() bool {
		return namespaceIn(west, "from-west") != nil && nodePoolIn(west, "west-made") != nil
	})
	// Deleted through west: deleted in east, then here.
	if err := west.RPC("Namespace.DeleteNamespaces", &structs.NamespaceDeleteRequest{Namespaces: []string{"from-west"}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatalf("namespace delete in west: %v", err)
	}
	if err := west.RPC("NodePool.DeleteNodePools", &structs.NodePoolDeleteRequest{Names: []string{"west-made"}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatalf("node pool delete in west: %v", err)
	}
	if namespaceIn(east, "from-west") != nil || nodePoolIn(east, "west-made") != nil {
		t.Fatal("a namespace or node pool deleted through west is still in east")
	}

	// Deleted upstream: gone here.
	if err := east.RPC("Namespace.DeleteNamespaces", &structs.NamespaceDeleteRequest{Namespaces: []string{"team-a"}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := east.RPC("NodePool.DeleteNodePools", &structs.NodePoolDeleteRequest{Names: []string{"gpu"}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the deleted namespaces and pools gone from west", func() bool {
		return namespaceIn(west, "team-a") == nil && nodePoolIn(west, "gpu") == nil &&
			namespaceIn(west, "from-west") == nil && nodePoolIn(west, "west-made") == nil
	})
	if d := nodePoolIn(west, structs.DefaultNodePool).Description; d != "west's default" {
		t.Fatalf("west's default pool says %q, want its own description", d)
	}
	if nodePoolIn(west, structs.AllNodePool) == nil || namespaceIn(west, structs.DefaultNamespace) == nil {
		t.Fatal("replication deleted a built-in pool or the default namespace")
	}
	// The pool may have been kept for a moment (the default pool of a
	// namespace not yet deleted here): the status settles clean.
	waitFor(t, 3*replicationKeptRetry, "namespace and node pool replication clean", func() bool {
		n := 0
		for _, st := range west.ACLReplication() {
			if (st.Kind == "namespaces" || st.Kind == "node-pools") && st.LastError == "" && !st.LastSuccess.IsZero() && len(st.Kept) == 0 {
				n++
			}
		}
		return n == 2
	})

	// A round that finds every copy equal writes nothing.
	q := structs.QueryOptions{Region: "east", AuthToken: root}
	last := west.raft.LastIndex()
	nss, _, err := west.namespaceKind().fetch(q)
	if err == nil {
		_, err = applyReplicated(west, west.namespaceKind(), nss)
	}
	if err != nil {
		t.Fatal(err)
	}
	pools, _, err := west.nodePoolKind().fetch(q)
	if err == nil {
		_, err = applyReplicated(west, west.nodePoolKind(), pools)
	}
	if err != nil {
		t.Fatal(err)
	}
	if now := west.raft.LastIndex(); now != last {
		t.Fatalf("an unchanged round of namespaces and node pools wrote to Raft (%d -> %d)", last, now)
	}
}

// A namespace and a node pool deleted upstream while this region still has
// a job in them are kept here (the job stays), reported in the replication
// status, and the rest keeps replicating; once the job is purged they go.
// The authoritative region refuses to delete a namespace in which another
// region runs a job that is not dead.
func TestACLReplicationNamespaceInUseKept(t *testing.T) {
	east, west, root := replicatedRegions(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := east.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{{Name: "batchy"}}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := east.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "busy"}}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "busy and batchy in west", func() bool {
		return namespaceIn(west, "busy") != nil && nodePoolIn(west, "batchy") != nil
	})
	bootstrapIn(t, west, root)
	job := testJob("worker", 1)
	job.Namespace, job.NodePool = "busy", "batchy"
	if err := west.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: "busy", AuthToken: root}}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatalf("register in west: %v", err)
	}

	// East refuses to delete a namespace while west runs a job in it.
	err := east.RPC("Namespace.DeleteNamespaces", &structs.NamespaceDeleteRequest{Namespaces: []string{"busy"}, WriteRequest: wr}, &structs.GenericResponse{})
	if code, _ := structs.ErrorCode(err); code != 400 || !strings.Contains(err.Error(), "non-terminal jobs in regions: [west]") {
		t.Fatalf("deleting in east a namespace west runs a job in: %v, want a 400 naming west", err)
	}
	// Stopped (dead, not purged) in west: east deletes the namespace (its
	// own has no job) and the pool (pools are not checked across regions).
	if err := west.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "worker", WriteRequest: structs.WriteRequest{Namespace: "busy", AuthToken: root}}, &structs.JobDeregisterResponse{}); err != nil {
		t.Fatalf("stop in west: %v", err)
	}
	waitFor(t, 10*time.Second, "west's job dead", func() bool {
		j, _ := west.State().JobByID(nil, "busy", "worker")
		return j != nil && j.Status == structs.JobStatusDead
	})
	if err := east.RPC("Namespace.DeleteNamespaces", &structs.NamespaceDeleteRequest{Namespaces: []string{"busy"}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := east.RPC("NodePool.DeleteNodePools", &structs.NodePoolDeleteRequest{Names: []string{"batchy"}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	kept := func(kind, name string) string {
		for _, st := range west.ACLReplication() {
			if st.Kind != kind {
				continue
			}
			for _, k := range st.Kept {
				if strings.HasPrefix(k, name+": ") {
					return k
				}
			}
		}
		return ""
	}
	waitFor(t, 10*time.Second, "busy and batchy reported kept in west", func() bool {
		return kept("namespaces", "busy") != "" && kept("node-pools", "batchy") != ""
	})
	if k := kept("namespaces", "busy"); !strings.Contains(k, "job") {
		t.Errorf("the kept namespace's reason: %q, want it to name the job(s)", k)
	}
	if namespaceIn(west, "busy") == nil || nodePoolIn(west, "batchy") == nil {
		t.Fatal("west deleted a namespace or pool its job still uses")
	}
	if j, _ := west.State().JobByID(nil, "busy", "worker"); j == nil {
		t.Fatal("west's job is gone")
	}
	for _, st := range west.ACLReplication() {
		if (st.Kind == "namespaces" || st.Kind == "node-pools") && st.LastError != "" {
			t.Errorf("replication of %s failed on a kept object: %s", st.Kind, st.LastError)
		}
	}

	// The rest keeps replicating.
	if err := east.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "later"}}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	if err := east.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{{Name: "later-pool"}}, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "later and later-pool in west", func() bool {
		return namespaceIn(west, "later") != nil && nodePoolIn(west, "later-pool") != nil
	})

	// Purged here: both go, though nothing changed upstream.
	if err := west.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "worker", Purge: true, WriteRequest: structs.WriteRequest{Namespace: "busy", AuthToken: root}}, &structs.JobDeregisterResponse{}); err != nil {
		t.Fatalf("purge in west: %v", err)
	}
	waitFor(t, 3*replicationKeptRetry, "busy and batchy gone from west after the purge", func() bool {
		return namespaceIn(west, "busy") == nil && nodePoolIn(west, "batchy") == nil
	})
	waitFor(t, 5*time.Second, "nothing reported kept", func() bool {
		return kept("namespaces", "busy") == "" && kept("node-pools", "batchy") == ""
	})
}
