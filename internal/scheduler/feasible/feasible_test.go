package feasible

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-memdb"
)

func testNode() *structs.Node {
	return &structs.Node{
		ID: "node-1", Name: "web-1", Datacenter: "dc1", NodeClass: "large", NodePool: "",
		Attributes: map[string]string{"kernel.name": "linux", "cpu.numcores": "8", "nomad.version": "1.7.3",
			"os.version": "2.0.0-beta1", "driver.docker": "1", "unique.hostname": "h1"},
		Meta: map[string]string{"rack": "r1", "tags": "a,b,c"},
	}
}

func TestConstraintOperands(t *testing.T) {
	ctx := NewContext(nil, nil, nil, 1, 2)
	n := testNode()
	cases := []struct {
		l, op, r string
		want     bool
	}{
		{"${attr.kernel.name}", "=", "linux", true},
		{"${attr.kernel.name}", "", "linux", true},
		{"${attr.kernel.name}", "==", "windows", false},
		{"${attr.kernel.name}", "is", "linux", true},
		{"${attr.kernel.name}", "!=", "windows", true},
		{"${attr.missing}", "!=", "windows", true},
		{"${attr.kernel.name}", "not", "linux", false},
		{"${attr.cpu.numcores}", ">", "4", true},
		{"${attr.cpu.numcores}", ">=", "10", false}, // numeric, not lexical
		{"${attr.cpu.numcores}", "<", "10", true},
		{"${attr.cpu.numcores}", "<=", "8", true},
		{"${attr.missing}", "<", "10", false},
		{"${attr.kernel.name}", "regexp", "^lin", true},
		{"${attr.kernel.name}", "regexp", "^win", false},
		{"${attr.nomad.version}", "version", ">= 1.6, < 2.0", true},
		{"${attr.nomad.version}", "version", "~> 1.7", true},
		{"${attr.nomad.version}", "version", "~> 1.6.0", false},
		{"${attr.nomad.version}", "version", "< 1.7.3", false},
		{"${attr.os.version}", "version", ">= 1.0", true},
		{"${attr.os.version}", "semver", ">= 1.0", false}, // pre-release needs a pre-release constraint
		{"${attr.os.version}", "semver", "< 2.0.0", false},
		{"${attr.os.version}", "semver", "< 2.0.0-rc1", true},
		{"${meta.tags}", "set_contains", "a,c", true},
		{"${meta.tags}", "set_contains", "a,d", false},
		{"${meta.tags}", "set_contains_any", "d,c", true},
		{"${meta.tags}", "set_contains_any", "d,e", false},
		{"${meta.rack}", "is_set", "", true},
		{"${meta.nope}", "is_set", "", false},
		{"${meta.nope}", "is_not_set", "", true},
		{"${node.unique.id}", "=", "node-1", true},
		{"${node.unique.name}", "=", "web-1", true},
		{"${node.datacenter}", "=", "dc1", true},
		{"${node.class}", "=", "large", true},
		{"${node.pool}", "=", "default", true},
		{"${attr.kernel.name}", "bogus-op", "linux", false},
		{"", "distinct_hosts", "true", true}, // enforced by its iterator
	}
	for _, c := range cases {
		con := &structs.Constraint{LTarget: c.l, Operand: c.op, RTarget: c.r}
		if got := ctx.meetsConstraint(con, n); got != c.want {
			t.Errorf("%s %s %s = %v, want %v", c.l, c.op, c.r, got, c.want)
		}
	}
}

func TestEscapesClass(t *testing.T) {
	if !escapesClass(&structs.Constraint{LTarget: "${node.unique.id}", RTarget: "x"}) ||
		!escapesClass(&structs.Constraint{LTarget: "${attr.unique.hostname}", RTarget: "x"}) ||
		escapesClass(&structs.Constraint{Operand: "distinct_hosts"}) || // its iterator runs after the memo
		escapesClass(&structs.Constraint{LTarget: "${attr.unique.hostname}", Operand: "distinct_property"}) ||
		escapesClass(&structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux"}) {
		t.Fatal("escape detection wrong")
	}
}

func TestHasDriver(t *testing.T) {
	n := testNode()
	n.Drivers = map[string]*structs.DriverInfo{"exec": {Detected: true, Healthy: true}, "java": {Detected: true, Healthy: false}}
	for name, want := range map[string]bool{"exec": true, "java": false, "docker": true, "qemu": false} {
		if got := hasDriver(n, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

func TestReadyNodes(t *testing.T) {
	mk := func(id, dc, pool, status string) *structs.Node {
		return &structs.Node{ID: id, Datacenter: dc, NodePool: pool, Status: status, SchedulingEligibility: "eligible"}
	}
	draining := mk("drain", "dc1", "", "ready")
	draining.DrainStrategy = &structs.DrainStrategy{}
	nodes := []*structs.Node{
		mk("a", "dc1", "", "ready"), mk("b", "dc2", "default", "ready"), mk("c", "east", "default", "ready"),
		mk("d", "dc1", "gpu", "ready"), mk("e", "dc1", "", "down"), mk("f", "dc1", "", "initializing"), draining,
	}
	ids := func(ns []*structs.Node) string {
		s := ""
		for _, n := range ns {
			s += n.ID
		}
		return s
	}
	cases := []struct {
		dcs  []string
		pool string
		want string
	}{
		{[]string{"dc1"}, "", "a"},
		{[]string{"dc*"}, "", "ab"},
		{[]string{"*"}, "", "abc"},
		{nil, "", "abc"},
		{[]string{"*"}, "all", "abcd"},
		{[]string{"dc1"}, "gpu", "d"},
	}
	for _, c := range cases {
		got := ids(ReadyNodes(nodes, &structs.Job{Datacenters: c.dcs, NodePool: c.pool}))
		if got != c.want {
			t.Errorf("dcs %v pool %q = %q, want %q", c.dcs, c.pool, got, c.want)
		}
	}
}

func TestFitScore(t *testing.T) {
	avail := structs.ComparableResources{CPU: 1000, MemoryMB: 1000}
	empty := fitScore(avail, structs.ComparableResources{}, AlgorithmBinpack)
	half := fitScore(avail, structs.ComparableResources{CPU: 500, MemoryMB: 500}, AlgorithmBinpack)
	full := fitScore(avail, avail, AlgorithmBinpack)
	if !(empty == 0 && half > empty && full > half && full <= 1) {
		t.Fatalf("binpack scores: empty %v half %v full %v", empty, half, full)
	}
	sEmpty := fitScore(avail, structs.ComparableResources{}, AlgorithmSpread)
	sFull := fitScore(avail, avail, AlgorithmSpread)
	if !(sEmpty == 1 && sFull == 0) {
		t.Fatalf("spread scores: empty %v full %v", sEmpty, sFull)
	}
}

type staticRank struct {
	opts []*RankedNode
	i    int
}

func (s *staticRank) Next() *RankedNode {
	if s.i >= len(s.opts) {
		return nil
	}
	s.i++
	return s.opts[s.i-1]
}
func (s *staticRank) Reset() {}

func TestLimitAndMaxScore(t *testing.T) {
	opt := func(id string, score float64) *RankedNode {
		return &RankedNode{Node: &structs.Node{ID: id}, FinalScore: score}
	}
	// Low scorers are skipped (up to 3) in favour of later positive ones.
	src := &staticRank{opts: []*RankedNode{opt("z1", 0), opt("z2", -0.5), opt("good", 0.4), opt("better", 0.6), opt("best", 0.9)}}
	l := &LimitIterator{source: src, limit: 2, maxSkip: 3}
	best := (&MaxScoreIterator{source: l}).Next()
	if best == nil || best.Node.ID != "better" {
		t.Fatalf("best = %+v, want 'better' (limit 2 stops before 'best')", best)
	}
	// Only low scorers: they are used rather than nothing.
	src = &staticRank{opts: []*RankedNode{opt("z1", -0.2), opt("z2", 0)}}
	l = &LimitIterator{source: src, limit: 2, maxSkip: 3}
	if best := (&MaxScoreIterator{source: l}).Next(); best == nil || best.Node.ID != "z2" {
		t.Fatalf("best = %+v", best)
	}
}

// allocState serves AllocsByNodeTerminal from a map.
type allocState map[string][]*structs.Allocation

func (a allocState) AllocsByNodeTerminal(_ memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for _, al := range a[nodeID] {
		if al.TerminalStatus() == terminal {
			out = append(out, al)
		}
	}
	return out, nil
}

func (a allocState) AllocsByJob(_ memdb.WatchSet, namespace, jobID string, _ bool) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for _, list := range a {
		for _, al := range list {
			if al.Namespace == namespace && al.JobID == jobID {
				out = append(out, al)
			}
		}
	}
	return out, nil
}

func (a allocState) NodeByID(memdb.WatchSet, string) (*structs.Node, error) { return nil, nil }

func TestProposedAllocs(t *testing.T) {
	existing := &structs.Allocation{ID: "e", NodeID: "n", DesiredStatus: "run", ClientStatus: "running"}
	stopping := &structs.Allocation{ID: "s", NodeID: "n", DesiredStatus: "run", ClientStatus: "running"}
	done := &structs.Allocation{ID: "d", NodeID: "n", DesiredStatus: "run", ClientStatus: "complete"}
	plan := &structs.Plan{NodeUpdate: map[string][]*structs.Allocation{"n": {stopping}},
		NodeAllocation: map[string][]*structs.Allocation{"n": {{ID: "new", NodeID: "n"}}}}
	ctx := NewContext(allocState{"n": {existing, stopping, done}}, plan, nil, 1, 1)
	got, err := ctx.ProposedAllocs(&structs.Node{ID: "n"})
	if err != nil {
		t.Fatal(err)
	}
	ids := ""
	for _, a := range got {
		ids += a.ID + ","
	}
	if ids != "e,new," {
		t.Fatalf("proposed = %s, want e,new,", ids)
	}
}

func TestFeasibilityMemoisedPerClass(t *testing.T) {
	ctx := NewContext(allocState{}, &structs.Plan{}, nil, 1, 1)
	a, b := testNode(), testNode()
	b.ID = "node-2"
	a.ComputeClass()
	b.ComputeClass()
	if a.ComputedClass != b.ComputedClass {
		t.Fatal("setup: same class expected")
	}
	src := NewSourceIterator(ctx, []*structs.Node{a, b})
	f := NewFeasibilityIterator(ctx, src)
	f.SetJob(&structs.Job{Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "windows"}}})
	f.SetTaskGroup(&structs.TaskGroup{Name: "g"})
	if n := f.Next(); n != nil {
		t.Fatalf("infeasible node returned: %s", n.ID)
	}
	m := ctx.Metrics()
	if m.NodesEvaluated != 2 || m.NodesFiltered != 2 || m.ConstraintFiltered["${attr.kernel.name} = windows"] != 2 || m.ClassFiltered["large"] != 2 {
		t.Fatalf("metrics = %+v", m)
	}
	if cl := ctx.Eligibility().Classes(); cl[a.ComputedClass] {
		t.Fatalf("class must be ineligible: %v", cl)
	}
}

// NotReadyReason agrees with ReadyNodes on which nodes are left out.
func TestNotReadyReasonMatchesReadyNodes(t *testing.T) {
	mk := func(f func(n *structs.Node)) *structs.Node {
		n := testNode()
		n.Status, n.SchedulingEligibility = structs.NodeStatusReady, structs.NodeSchedulingEligible
		f(n)
		return n
	}
	job := &structs.Job{Datacenters: []string{"dc*"}, NodePool: "default"}
	cases := map[string]*structs.Node{
		"":               mk(func(*structs.Node) {}),
		"node not ready": mk(func(n *structs.Node) { n.Status = structs.NodeStatusDown }),
		"node draining":  mk(func(n *structs.Node) { n.DrainStrategy = &structs.DrainStrategy{} }),
		"node ineligible": mk(func(n *structs.Node) {
			n.SchedulingEligibility = structs.NodeSchedulingIneligible
		}),
		"node pool":  mk(func(n *structs.Node) { n.NodePool = "gpu" }),
		"datacenter": mk(func(n *structs.Node) { n.Datacenter = "eu1" }),
	}
	for want, n := range cases {
		if got := NotReadyReason(n, job); got != want {
			t.Errorf("NotReadyReason = %q, want %q", got, want)
		}
		if kept := len(ReadyNodes([]*structs.Node{n}, job)) == 1; kept != (want == "") {
			t.Errorf("%q: ReadyNodes kept=%v", want, kept)
		}
	}
}

// The outcome kept for the previous node's class answers only nodes of
// that class, and a new job or group starts over.
func TestFeasibilityLastClassFollowsRunsAndChanges(t *testing.T) {
	node := func(id, kernel string) *structs.Node {
		n := testNode()
		n.ID, n.Attributes = id, map[string]string{"kernel.name": kernel}
		n.ComputeClass()
		return n
	}
	nodes := []*structs.Node{node("a1", "linux"), node("a2", "linux"), node("b1", "windows"),
		node("a3", "linux"), node("b2", "windows"), node("b3", "windows")}
	run := func(f *FeasibilityIterator) string {
		out := ""
		for n := f.Next(); n != nil; n = f.Next() {
			out += n.ID + " "
		}
		return out
	}
	ctx := NewContext(allocState{}, &structs.Plan{}, nil, 1, 1)
	f := NewFeasibilityIterator(ctx, NewSourceIterator(ctx, nodes))
	f.SetJob(&structs.Job{Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}})
	tg := &structs.TaskGroup{Name: "g"}
	f.SetTaskGroup(tg)
	got := run(f)
	if got != "a1 a2 a3 " {
		t.Fatalf("linux job: %q", got)
	}
	if m := ctx.Metrics(); m.NodesFiltered != 3 || m.ConstraintFiltered["${attr.kernel.name} = linux"] != 3 {
		t.Fatalf("metrics = %+v", m)
	}

	// Another group of the job: its own outcomes. (A context serves one
	// job: its class memo is the job's.)
	kernel := func(name, k string) *structs.TaskGroup {
		return &structs.TaskGroup{Name: name, Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: k}}}
	}
	ctx2 := NewContext(allocState{}, &structs.Plan{}, nil, 1, 1)
	f2 := NewFeasibilityIterator(ctx2, NewSourceIterator(ctx2, nodes))
	f2.SetJob(&structs.Job{})
	f2.SetTaskGroup(kernel("l", "linux"))
	if n := f2.Next(); n == nil || n.ID != "a1" {
		t.Fatalf("linux group: %v", n)
	}
	f2.SetTaskGroup(kernel("w", "windows"))
	f2.Reset()
	if got := run(f2); got != "b1 b2 b3 " {
		t.Fatalf("windows group after a linux one: %q", got)
	}
}
