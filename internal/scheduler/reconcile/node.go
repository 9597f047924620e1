package reconcile

import (
	"sort"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/structs"
)

// Descriptions written on allocations the node reconciler stops.
const (
	DescNodeNotEligible = "alloc not needed as node is not eligible for the job"
	DescNodeDraining    = "alloc is being migrated since its node is draining"
)

// NodeInput is everything the node reconciler (system and sysbatch jobs)
// looks at.
type NodeInput struct {
	// Job is the current job; nil when it was purged.
	Job *structs.Job
	// Sysbatch selects sysbatch semantics: an allocation that finished on
	// a node for the current job version is never run there again.
	Sysbatch bool
	// Allocs are all allocations of the job, of any version.
	Allocs []*structs.Allocation
	// Nodes are all known nodes by ID; a node an allocation names that is
	// missing here was garbage collected.
	Nodes map[string]*structs.Node
}

// NodePlacement asks the scheduler to place one allocation of TaskGroup on
// exactly Node.
type NodePlacement struct {
	Name      string
	TaskGroup *structs.TaskGroup
	Node      *structs.Node
}

// NodeDestructive replaces, on Node, an allocation running an older job
// spec: Old is stopped and a new one placed there in the same plan.
type NodeDestructive struct {
	Name      string
	TaskGroup *structs.TaskGroup
	Node      *structs.Node
	Old       *structs.Allocation
}

// NodeResult is what must change for a system or sysbatch job. Lists are
// ordered by node ID, then group name.
type NodeResult struct {
	Place            []NodePlacement
	Stop             []Stop
	Destructive      []NodeDestructive
	DesiredTGUpdates map[string]*structs.DesiredUpdates
}

// ComputeNodes reconciles a system or sysbatch job: the desired state is
// one allocation per task group on every ready, eligible, non-draining
// node in the job's datacenters and node pool. Feasibility (drivers,
// constraints) and fit are checked by the scheduler when it places, so a
// placement here is a candidate, not a promise.
//
// Per node and group:
//   - job stopped or purged, group removed or at count 0: stop live allocs;
//   - node gone, down or disconnected: stop live allocs as lost, no
//     replacement elsewhere;
//   - node draining (unless its drain ignores system jobs): stop;
//   - node no longer in the job's datacenters or pool: stop;
//   - node ineligible or not yet ready: keep what runs, place nothing;
//   - otherwise: ignore an up-to-date live alloc, replace an outdated one
//     destructively, place when none runs (sysbatch: unless one finished
//     there for the current job version).
func ComputeNodes(in NodeInput) *NodeResult {
	res := &NodeResult{DesiredTGUpdates: make(map[string]*structs.DesiredUpdates)}
	stopped := in.Job == nil || in.Job.Stop
	du := func(group string) *structs.DesiredUpdates {
		d, ok := res.DesiredTGUpdates[group]
		if !ok {
			d = &structs.DesiredUpdates{}
			res.DesiredTGUpdates[group] = d
		}
		return d
	}
	if !stopped {
		for _, tg := range in.Job.TaskGroups {
			du(tg.Name)
		}
	}

	// Existing allocs per node, per group.
	existing := make(map[string]map[string][]*structs.Allocation)
	for _, a := range in.Allocs {
		if a == nil {
			continue
		}
		byGroup := existing[a.NodeID]
		if byGroup == nil {
			byGroup = make(map[string][]*structs.Allocation)
			existing[a.NodeID] = byGroup
		}
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}

	nodeIDs := make([]string, 0, len(in.Nodes)+len(existing))
	seen := make(map[string]bool)
	for id := range existing {
		seen[id] = true
		nodeIDs = append(nodeIDs, id)
	}
	if !stopped {
		for id, n := range in.Nodes {
			if !seen[id] && n != nil && n.Ready() && feasible.InJobScope(n, in.Job) {
				nodeIDs = append(nodeIDs, id)
			}
		}
	}
	sort.Strings(nodeIDs)

	for _, id := range nodeIDs {
		node := in.Nodes[id]
		byGroup := existing[id]
		groups := make([]string, 0, len(byGroup))
		for g := range byGroup {
			groups = append(groups, g)
		}
		if !stopped {
			for _, tg := range in.Job.TaskGroups {
				if _, ok := byGroup[tg.Name]; !ok {
					groups = append(groups, tg.Name)
				}
			}
		}
		sort.Strings(groups)
		for _, g := range groups {
			var tg *structs.TaskGroup
			if !stopped {
				tg = in.Job.LookupTaskGroup(g)
			}
			computeNodeGroup(in, res, du(g), node, id, tg, byGroup[g])
		}
	}
	return res
}

// nodeLost reports whether allocs on the node are lost.
func nodeLost(n *structs.Node) bool {
	return n == nil || n.Status == structs.NodeStatusDown || n.Status == structs.NodeStatusDisconnected
}

// drainsSystemJobs reports whether the node's drain moves system allocs.
func drainsSystemJobs(n *structs.Node) bool {
	return n.DrainStrategy != nil && !n.DrainStrategy.IgnoreSystemJobs
}

func computeNodeGroup(in NodeInput, res *NodeResult, du *structs.DesiredUpdates,
	node *structs.Node, nodeID string, tg *structs.TaskGroup, allocs []*structs.Allocation) {
	allocs = sortByCreate(allocs)
	var live []*structs.Allocation
	for _, a := range allocs {
		if !a.TerminalStatus() {
			live = append(live, a)
		}
	}
	stopLive := func(desc, clientStatus string) {
		for _, a := range live {
			res.Stop = append(res.Stop, Stop{Alloc: a, Description: desc, ClientStatus: clientStatus})
			du.Stop++
		}
	}
	switch {
	case in.Job == nil || in.Job.Stop:
		if nodeLost(node) {
			stopLive(DescJobStopped, structs.AllocClientStatusLost)
		} else {
			stopLive(DescJobStopped, "")
		}
		return
	case tg == nil || tg.Count <= 0:
		// Group removed, or scaled to zero (system groups run 0 or 1).
		if nodeLost(node) {
			stopLive(DescNotNeeded, structs.AllocClientStatusLost)
		} else {
			stopLive(DescNotNeeded, "")
		}
		return
	case nodeLost(node):
		stopLive(DescLost, structs.AllocClientStatusLost)
		return
	case drainsSystemJobs(node):
		// The drainer marks system allocations last (once the node's other
		// work has left): those are stopped, not replaced elsewhere; the
		// rest keep running until then.
		for _, a := range live {
			if a.DesiredTransition.Migrate != nil && *a.DesiredTransition.Migrate {
				res.Stop = append(res.Stop, Stop{Alloc: a, Description: DescNodeDraining})
				du.Migrate++
			} else {
				du.Ignore++
			}
		}
		return
	case !feasible.InJobScope(node, in.Job):
		stopLive(DescNodeNotEligible, "")
		return
	}

	// The node is in scope and healthy. More than one live alloc of the
	// group is a leftover: keep the newest.
	if len(live) > 1 {
		for _, a := range live[:len(live)-1] {
			res.Stop = append(res.Stop, Stop{Alloc: a, Description: DescNotNeeded})
			du.Stop++
		}
		live = live[len(live)-1:]
	}
	placeable := node.Ready()
	name := structs.AllocName(in.Job.ID, tg.Name, 0)
	if len(live) == 1 {
		a := live[0]
		if placeable && !sameVersion(a, in.Job) {
			res.Destructive = append(res.Destructive, NodeDestructive{Name: name, TaskGroup: tg, Node: node, Old: a})
			du.DestructiveUpdate++
		} else {
			// Up to date, or on an ineligible / not yet ready node, which
			// keeps what runs but takes no new work.
			du.Ignore++
		}
		return
	}
	if !placeable {
		return
	}
	if in.Sysbatch {
		for _, a := range allocs {
			if a.ClientTerminalStatus() && sameVersion(a, in.Job) {
				// Finished (or failed without a reschedule policy) for
				// this version: a sysbatch job runs once per node.
				du.Ignore++
				return
			}
		}
	}
	res.Place = append(res.Place, NodePlacement{Name: name, TaskGroup: tg, Node: node})
	du.Place++
}

func sameVersion(a *structs.Allocation, job *structs.Job) bool { return OnVersion(a, job) }

func sortByCreate(allocs []*structs.Allocation) []*structs.Allocation {
	out := append([]*structs.Allocation(nil), allocs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreateIndex < out[j].CreateIndex })
	return out
}
