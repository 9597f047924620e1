package invariant

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover-project/drover/internal/structs"
)

// State is the part of a cluster state the checks read. Build it from a
// state store snapshot with FromStore, or fill it by hand in tests. Check
// does not modify anything it points to.
type State struct {
	Nodes  []*structs.Node
	Allocs []*structs.Allocation
	Evals  []*structs.Evaluation
	Jobs   []*structs.Job
}

// Kinds of violation.
const (
	KindOvercommit = "overcommit"
	KindPort       = "port"
	KindDevice     = "device"
	KindAlloc      = "alloc"
	KindEval       = "eval"
)

// Violation is one broken invariant, with the IDs needed to find it.
type Violation struct {
	Kind   string   // one of the Kind constants
	NodeID string   // the node concerned, if any
	JobID  string   // the job concerned, if any
	EvalID string   // the evaluation concerned, if any
	Allocs []string // the allocations involved, if any
	Detail string   // what is wrong, for a person
}

// String renders the violation on one line.
func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(v.Kind)
	b.WriteString(": ")
	b.WriteString(v.Detail)
	if v.NodeID != "" {
		fmt.Fprintf(&b, " [node %s]", v.NodeID)
	}
	if v.JobID != "" {
		fmt.Fprintf(&b, " [job %s]", v.JobID)
	}
	if v.EvalID != "" {
		fmt.Fprintf(&b, " [eval %s]", v.EvalID)
	}
	if len(v.Allocs) > 0 {
		fmt.Fprintf(&b, " [allocs %s]", strings.Join(v.Allocs, ", "))
	}
	return b.String()
}

// Check returns every violation found in snap, sorted by kind, then node,
// job and eval, so that the output of two runs over one state compares
// equal. An empty result means the state is sound.
func Check(snap State) []Violation {
	c := newChecker(snap)
	var out []Violation
	out = append(out, c.checkNodes()...)
	out = append(out, c.checkAllocs()...)
	out = append(out, c.checkEvals()...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.NodeID != b.NodeID {
			return a.NodeID < b.NodeID
		}
		if a.JobID != b.JobID {
			return a.JobID < b.JobID
		}
		return a.EvalID < b.EvalID
	})
	return out
}

// Summary renders violations one per line, at most limit of them (all
// when limit <= 0), with a count of the rest: short enough for t.Fatalf.
func Summary(vs []Violation, limit int) string {
	var b strings.Builder
	for i, v := range vs {
		if limit > 0 && i == limit {
			fmt.Fprintf(&b, "... and %d more\n", len(vs)-limit)
			break
		}
		b.WriteString(v.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// checker holds the snapshot indexed the ways the checks need.
type checker struct {
	nodes      map[string]*structs.Node
	nodeIDs    []string // sorted
	liveByNode map[string][]*structs.Allocation
	live       []*structs.Allocation
	all        []*structs.Allocation
	jobs       map[structs.NamespacedID]*structs.Job
	evals      []*structs.Evaluation
}

func newChecker(snap State) *checker {
	c := &checker{
		nodes:      make(map[string]*structs.Node, len(snap.Nodes)),
		liveByNode: make(map[string][]*structs.Allocation),
		jobs:       make(map[structs.NamespacedID]*structs.Job, len(snap.Jobs)),
		evals:      snap.Evals,
		all:        snap.Allocs,
	}
	for _, n := range snap.Nodes {
		if n == nil {
			continue
		}
		c.nodes[n.ID] = n
		c.nodeIDs = append(c.nodeIDs, n.ID)
	}
	sort.Strings(c.nodeIDs)
	for _, j := range snap.Jobs {
		if j != nil {
			c.jobs[j.NamespacedID()] = j
		}
	}
	for _, a := range snap.Allocs {
		if a == nil || !holdsResources(a) {
			continue
		}
		c.live = append(c.live, a)
		c.liveByNode[a.NodeID] = append(c.liveByNode[a.NodeID], a)
	}
	for _, l := range c.liveByNode {
		sort.Slice(l, func(i, j int) bool { return l[i].ID < l[j].ID })
	}
	return c
}

// holdsResources is the plan applier's rule: an allocation counts against
// its node until the server stops it or the client reports it finished.
func holdsResources(a *structs.Allocation) bool { return !a.TerminalStatus() }

// jobOf returns the allocation's job: the one it carries, else the stored one.
func (c *checker) jobOf(a *structs.Allocation) *structs.Job {
	if a.Job != nil {
		return a.Job
	}
	return c.jobs[structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}]
}
