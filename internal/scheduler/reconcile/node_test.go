package reconcile

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

func sysJob(typ string, modify uint64) *structs.Job {
	return &structs.Job{ID: "sys", Namespace: "default", Type: typ, JobModifyIndex: modify, Version: modify,
		Datacenters: []string{"dc*"},
		TaskGroups:  []*structs.TaskGroup{{Name: "g", Count: 1}}}
}

func sysNode(id string, mut ...func(*structs.Node)) *structs.Node {
	n := &structs.Node{ID: id, Datacenter: "dc1", NodePool: "default", Status: structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible}
	for _, m := range mut {
		m(n)
	}
	return n
}

func sysAlloc(job *structs.Job, node, client string) *structs.Allocation {
	return &structs.Allocation{ID: "a-" + node, Name: structs.AllocName(job.ID, "g", 0), JobID: job.ID,
		Job: job, TaskGroup: "g", NodeID: node, DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: client}
}

// nodeSummary renders a result as "place=n1,n2 stop=n3:lost destructive=n4".
func nodeSummary(r *NodeResult) string {
	var place, stop, destr []string
	for _, p := range r.Place {
		place = append(place, p.Node.ID)
		if p.Name != "sys.g[0]" && p.Name != "sys.h[0]" {
			place = append(place, "BADNAME:"+p.Name)
		}
	}
	for _, s := range r.Stop {
		e := s.Alloc.NodeID
		if s.ClientStatus != "" {
			e += ":" + s.ClientStatus
		}
		stop = append(stop, e)
	}
	for _, d := range r.Destructive {
		destr = append(destr, d.Node.ID)
	}
	for _, l := range [][]string{place, stop, destr} {
		sort.Strings(l)
	}
	return fmt.Sprintf("place=%s stop=%s destructive=%s",
		strings.Join(place, ","), strings.Join(stop, ","), strings.Join(destr, ","))
}

func nodeMap(nodes ...*structs.Node) map[string]*structs.Node {
	m := make(map[string]*structs.Node)
	for _, n := range nodes {
		m[n.ID] = n
	}
	return m
}

func TestComputeNodes(t *testing.T) {
	job := sysJob(structs.JobTypeSystem, 10)
	old := sysJob(structs.JobTypeSystem, 5)
	stopped := sysJob(structs.JobTypeSystem, 10)
	stopped.Stop = true
	sb := sysJob(structs.JobTypeSysBatch, 10)
	sbOld := sysJob(structs.JobTypeSysBatch, 5)
	pooled := sysJob(structs.JobTypeSystem, 10)
	pooled.NodePool = "gpu"
	scaledToZero := sysJob(structs.JobTypeSystem, 10)
	scaledToZero.TaskGroups[0].Count = 0
	twoGroups := sysJob(structs.JobTypeSystem, 10)
	twoGroups.TaskGroups = append(twoGroups.TaskGroups, &structs.TaskGroup{Name: "h", Count: 1})

	down := func(n *structs.Node) { n.Status = structs.NodeStatusDown }
	ineligible := func(n *structs.Node) { n.SchedulingEligibility = structs.NodeSchedulingIneligible }
	draining := func(n *structs.Node) { n.DrainStrategy = &structs.DrainStrategy{} }
	drainIgnoringSystem := func(n *structs.Node) {
		n.DrainStrategy = &structs.DrainStrategy{DrainSpec: api.DrainSpec{IgnoreSystemJobs: true}}
	}
	otherDC := func(n *structs.Node) { n.Datacenter = "west" }
	initializing := func(n *structs.Node) { n.Status = structs.NodeStatusInit }

	cases := []struct {
		name     string
		job      *structs.Job
		sysbatch bool
		nodes    map[string]*structs.Node
		allocs   []*structs.Allocation
		want     string
	}{
		{"one per ready node", job, false, nodeMap(sysNode("n1"), sysNode("n2"), sysNode("n3")), nil,
			"place=n1,n2,n3 stop= destructive="},
		{"new node gets one, others ignored", job, false, nodeMap(sysNode("n1"), sysNode("n2")),
			[]*structs.Allocation{sysAlloc(job, "n1", "running")}, "place=n2 stop= destructive="},
		{"two groups per node", twoGroups, false, nodeMap(sysNode("n1")), nil,
			"place=n1,n1 stop= destructive="},
		{"job changed: destructive", job, false, nodeMap(sysNode("n1")),
			[]*structs.Allocation{sysAlloc(old, "n1", "running")}, "place= stop= destructive=n1"},
		{"ineligible keeps alloc, no update", job, false, nodeMap(sysNode("n1", ineligible), sysNode("n2", ineligible)),
			[]*structs.Allocation{sysAlloc(old, "n1", "running")}, "place= stop= destructive="},
		{"initializing node gets nothing", job, false, nodeMap(sysNode("n1", initializing)), nil,
			"place= stop= destructive="},
		{"down node: lost, not replaced", job, false, nodeMap(sysNode("n1", down), sysNode("n2")),
			[]*structs.Allocation{sysAlloc(job, "n1", "running"), sysAlloc(job, "n2", "running")},
			"place= stop=n1:lost destructive="},
		{"gc'd node: lost", job, false, nodeMap(sysNode("n2")),
			[]*structs.Allocation{sysAlloc(job, "n1", "running")}, "place=n2 stop=n1:lost destructive="},
		{"draining node: kept until the drainer marks it", job, false, nodeMap(sysNode("n1", draining)),
			[]*structs.Allocation{sysAlloc(job, "n1", "running")}, "place= stop= destructive="},
		{"draining node: marked, stopped", job, false, nodeMap(sysNode("n1", draining)),
			[]*structs.Allocation{migrating(sysAlloc(job, "n1", "running"))}, "place= stop=n1 destructive="},
		{"drain ignoring system jobs keeps alloc", job, false, nodeMap(sysNode("n1", drainIgnoringSystem)),
			[]*structs.Allocation{sysAlloc(job, "n1", "running")}, "place= stop= destructive="},
		{"node left the job's datacenters", job, false, nodeMap(sysNode("n1", otherDC)),
			[]*structs.Allocation{sysAlloc(job, "n1", "running")}, "place= stop=n1 destructive="},
		{"node pool", pooled, false, nodeMap(sysNode("n1"), sysNode("n2", func(n *structs.Node) { n.NodePool = "gpu" })),
			nil, "place=n2 stop= destructive="},
		{"job stopped", stopped, false, nodeMap(sysNode("n1"), sysNode("n2", down)),
			[]*structs.Allocation{sysAlloc(job, "n1", "running"), sysAlloc(job, "n2", "running")},
			"place= stop=n1,n2:lost destructive="},
		{"job purged", nil, false, nodeMap(sysNode("n1")),
			[]*structs.Allocation{sysAlloc(job, "n1", "running")}, "place= stop=n1 destructive="},
		{"group removed", job, false, nodeMap(sysNode("n1")),
			[]*structs.Allocation{func() *structs.Allocation { a := sysAlloc(job, "n1", "running"); a.TaskGroup = "gone"; return a }()},
			"place=n1 stop=n1 destructive="},
		{"group scaled to zero", scaledToZero, false, nodeMap(sysNode("n1"), sysNode("n2")),
			[]*structs.Allocation{sysAlloc(job, "n1", "running")}, "place= stop=n1 destructive="},
		{"system: failed alloc replaced on its node", job, false, nodeMap(sysNode("n1")),
			[]*structs.Allocation{sysAlloc(job, "n1", "failed")}, "place=n1 stop= destructive="},
		{"sysbatch: complete not re-run", sb, true, nodeMap(sysNode("n1"), sysNode("n2")),
			[]*structs.Allocation{sysAlloc(sb, "n1", "complete")}, "place=n2 stop= destructive="},
		{"sysbatch: failed not re-run", sb, true, nodeMap(sysNode("n1")),
			[]*structs.Allocation{sysAlloc(sb, "n1", "failed")}, "place= stop= destructive="},
		{"sysbatch: new version runs again", sb, true, nodeMap(sysNode("n1")),
			[]*structs.Allocation{sysAlloc(sbOld, "n1", "complete")}, "place=n1 stop= destructive="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ComputeNodes(NodeInput{Job: tc.job, Sysbatch: tc.sysbatch, Allocs: tc.allocs, Nodes: tc.nodes})
			if got := nodeSummary(r); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestComputeNodesDesiredUpdates(t *testing.T) {
	job := sysJob(structs.JobTypeSystem, 10)
	old := sysJob(structs.JobTypeSystem, 5)
	draining := sysNode("n4", func(n *structs.Node) { n.DrainStrategy = &structs.DrainStrategy{} })
	r := ComputeNodes(NodeInput{Job: job, Nodes: nodeMap(sysNode("n1"), sysNode("n2"), sysNode("n3"), draining),
		Allocs: []*structs.Allocation{sysAlloc(job, "n1", "running"), sysAlloc(old, "n2", "running"), migrating(sysAlloc(job, "n4", "running"))}})
	got := *r.DesiredTGUpdates["g"]
	want := structs.DesiredUpdates{Place: 1, Ignore: 1, DestructiveUpdate: 1, Migrate: 1}
	if got != want {
		t.Fatalf("desired updates = %+v, want %+v", got, want)
	}
}

// migrating marks a as the drainer does.
func migrating(a *structs.Allocation) *structs.Allocation {
	t := true
	a.DesiredTransition.Migrate = &t
	return a
}
