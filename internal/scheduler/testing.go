package scheduler

import (
	"fmt"
	"sort"

	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-memdb"
)

// MemState is a minimal in-memory State for tests and benchmarks of
// schedulers. It is not safe for concurrent use.
type MemState struct {
	jobs   map[structs.NamespacedID]*structs.Job
	nodes  map[string]*structs.Node
	allocs map[string]*structs.Allocation
	deploy map[structs.NamespacedID]*structs.Deployment
	index  uint64
}

// NewMemState returns an empty state at index 1.
func NewMemState() *MemState {
	return &MemState{
		jobs:   make(map[structs.NamespacedID]*structs.Job),
		nodes:  make(map[string]*structs.Node),
		allocs: make(map[string]*structs.Allocation),
		deploy: make(map[structs.NamespacedID]*structs.Deployment),
		index:  1,
	}
}

func (m *MemState) next() uint64 { m.index++; return m.index }

// UpsertJob stores a job, bumping its indexes. Replacing a stored job
// with another object makes it the next version, as the state store does
// on a registration.
func (m *MemState) UpsertJob(j *structs.Job) {
	idx := m.next()
	if ex := m.jobs[j.NamespacedID()]; ex != nil && ex != j {
		if j.CreateIndex == 0 {
			j.CreateIndex = ex.CreateIndex
		}
		if j.CreateIndex == ex.CreateIndex && j.Version <= ex.Version {
			j.Version = ex.Version + 1
		}
	}
	if j.CreateIndex == 0 {
		j.CreateIndex = idx
	}
	j.ModifyIndex = idx
	if j.JobModifyIndex == 0 {
		j.JobModifyIndex = idx
	}
	m.jobs[j.NamespacedID()] = j
}

// DeleteJob purges a job.
func (m *MemState) DeleteJob(namespace, id string) {
	m.next()
	delete(m.jobs, structs.NamespacedID{Namespace: namespace, ID: id})
}

// UpsertNode stores a node.
func (m *MemState) UpsertNode(n *structs.Node) {
	idx := m.next()
	if n.CreateIndex == 0 {
		n.CreateIndex = idx
	}
	n.ModifyIndex = idx
	m.nodes[n.ID] = n
}

// UpsertAllocs stores allocations.
func (m *MemState) UpsertAllocs(allocs ...*structs.Allocation) {
	idx := m.next()
	for _, a := range allocs {
		if a.CreateIndex == 0 {
			a.CreateIndex = idx
		}
		a.ModifyIndex = idx
		a.AllocModifyIndex = idx
		m.allocs[a.ID] = a
	}
}

// Alloc returns an allocation by ID.
func (m *MemState) Alloc(id string) *structs.Allocation { return m.allocs[id] }

// JobByID implements State.
func (m *MemState) JobByID(_ memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	return m.jobs[structs.NamespacedID{Namespace: namespace, ID: id}], nil
}

func (m *MemState) sorted(keep func(*structs.Allocation) bool) []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range m.allocs {
		if keep(a) {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AllocsByJob implements State.
func (m *MemState) AllocsByJob(_ memdb.WatchSet, namespace, jobID string, _ bool) ([]*structs.Allocation, error) {
	return m.sorted(func(a *structs.Allocation) bool { return a.Namespace == namespace && a.JobID == jobID }), nil
}

// AllocsByNode implements State.
func (m *MemState) AllocsByNode(_ memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	return m.sorted(func(a *structs.Allocation) bool { return a.NodeID == nodeID }), nil
}

// AllocsByNodeTerminal implements State.
func (m *MemState) AllocsByNodeTerminal(_ memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error) {
	return m.sorted(func(a *structs.Allocation) bool { return a.NodeID == nodeID && a.TerminalStatus() == terminal }), nil
}

// NodeByID implements State.
func (m *MemState) NodeByID(_ memdb.WatchSet, id string) (*structs.Node, error) {
	return m.nodes[id], nil
}

type sliceIter struct {
	items []any
	i     int
}

func (s *sliceIter) WatchCh() <-chan struct{} { return nil }
func (s *sliceIter) Next() any {
	if s.i >= len(s.items) {
		return nil
	}
	s.i++
	return s.items[s.i-1]
}

// Nodes implements State; nodes come in ID order.
func (m *MemState) Nodes(_ memdb.WatchSet) (memdb.ResultIterator, error) {
	ids := make([]string, 0, len(m.nodes))
	for id := range m.nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	it := &sliceIter{}
	for _, id := range ids {
		it.items = append(it.items, m.nodes[id])
	}
	return it, nil
}

// LatestDeploymentByJobID implements State.
func (m *MemState) LatestDeploymentByJobID(_ memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error) {
	return m.deploy[structs.NamespacedID{Namespace: namespace, ID: jobID}], nil
}

// Index implements State.
func (m *MemState) Index(string) (uint64, error) { return m.index, nil }

// LatestIndex implements State.
func (m *MemState) LatestIndex() (uint64, error) { return m.index, nil }

// Harness is a Planner that applies plans to a MemState the way the plan
// applier does (re-checking every node with AllocsFit and a fresh port
// index) and records everything the scheduler asked for.
type Harness struct {
	State *MemState

	Plans        []*structs.Plan
	Results      []*structs.PlanResult
	Evals        []*structs.Evaluation // UpdateEval calls
	CreateEvals  []*structs.Evaluation
	ReblockEvals []*structs.Evaluation

	// RejectNodes, when set, is called per submitted plan and returns
	// nodes to reject as if a concurrent plan had filled them.
	RejectNodes func(plan *structs.Plan) []string
}

// NewHarness returns a harness over a fresh state.
func NewHarness() *Harness { return &Harness{State: NewMemState()} }

// SubmitPlan implements Planner.
func (h *Harness) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, State, error) {
	h.Plans = append(h.Plans, plan)
	reject := map[string]bool{}
	if h.RejectNodes != nil {
		for _, id := range h.RejectNodes(plan) {
			reject[id] = true
		}
	}
	result := &structs.PlanResult{
		NodeUpdate:      make(map[string][]*structs.Allocation),
		NodeAllocation:  make(map[string][]*structs.Allocation),
		NodePreemptions: make(map[string][]*structs.Allocation),
	}
	for nodeID, allocs := range plan.NodeAllocation {
		if reject[nodeID] || !h.fits(plan, nodeID) {
			result.RejectedNodes = append(result.RejectedNodes, nodeID)
			continue
		}
		result.NodeAllocation[nodeID] = allocs
		if len(plan.NodeUpdate[nodeID]) > 0 {
			result.NodeUpdate[nodeID] = plan.NodeUpdate[nodeID]
		}
		if len(plan.NodePreemptions[nodeID]) > 0 {
			result.NodePreemptions[nodeID] = plan.NodePreemptions[nodeID]
		}
	}
	for nodeID, stops := range plan.NodeUpdate {
		if _, ok := plan.NodeAllocation[nodeID]; !ok {
			result.NodeUpdate[nodeID] = stops
		}
	}
	// Apply: stops update the stored allocs, placements are inserted.
	var writes []*structs.Allocation
	for _, stops := range result.NodeUpdate {
		for _, s := range stops {
			cur := h.State.allocs[s.ID]
			if cur == nil {
				continue
			}
			c := *cur
			c.DesiredStatus = s.DesiredStatus
			c.DesiredDescription = s.DesiredDescription
			if s.ClientStatus == structs.AllocClientStatusLost {
				c.ClientStatus = s.ClientStatus
			}
			writes = append(writes, &c)
		}
	}
	for _, evicted := range result.NodePreemptions {
		for _, e := range evicted {
			if cur := h.State.allocs[e.ID]; cur != nil {
				c := *cur
				c.DesiredStatus = structs.AllocDesiredStatusEvict
				c.DesiredDescription = e.DesiredDescription
				c.PreemptedByAllocation = e.PreemptedByAllocation
				writes = append(writes, &c)
			}
		}
	}
	h.State.UpsertAllocs(writes...)
	h.applyDeployments(plan, result)
	writes = nil
	for _, allocs := range result.NodeAllocation {
		for _, a := range allocs {
			c := *a
			if c.Job == nil {
				c.Job = plan.Job
			}
			h.State.countPlacement(h.State.allocs[c.ID], &c)
			writes = append(writes, &c)
			if c.PreviousAllocation != "" {
				if prev := h.State.allocs[c.PreviousAllocation]; prev != nil {
					p := *prev
					p.NextAllocation = c.ID
					writes = append(writes, &p)
				}
			}
		}
	}
	h.State.UpsertAllocs(writes...)
	result.AllocIndex = h.State.index
	h.Results = append(h.Results, result)
	if len(result.RejectedNodes) > 0 {
		result.RefreshIndex = h.State.index
		return result, h.State, nil
	}
	return result, nil, nil
}

// fits re-verifies one node of the plan like the plan applier.
func (h *Harness) fits(plan *structs.Plan, nodeID string) bool {
	node := h.State.nodes[nodeID]
	if node == nil || node.Status != structs.NodeStatusReady {
		return false
	}
	remove := map[string]bool{}
	for _, a := range plan.NodeUpdate[nodeID] {
		remove[a.ID] = true
	}
	for _, a := range plan.NodePreemptions[nodeID] {
		remove[a.ID] = true
	}
	for _, a := range plan.NodeAllocation[nodeID] {
		remove[a.ID] = true
	}
	var proposed []*structs.Allocation
	for _, a := range h.State.allocs {
		if a.NodeID == nodeID && !a.TerminalStatus() && !remove[a.ID] {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, plan.NodeAllocation[nodeID]...)
	fit, _, _, err := structs.AllocsFit(node, proposed, nil)
	return err == nil && fit
}

// UpdateEval implements Planner.
func (h *Harness) UpdateEval(e *structs.Evaluation) error {
	h.Evals = append(h.Evals, e)
	return nil
}

// CreateEval implements Planner.
func (h *Harness) CreateEval(e *structs.Evaluation) error {
	h.CreateEvals = append(h.CreateEvals, e)
	return nil
}

// ReblockEval implements Planner.
func (h *Harness) ReblockEval(e *structs.Evaluation) error {
	h.ReblockEvals = append(h.ReblockEvals, e)
	return nil
}

// CheckInvariants reports overcommitted nodes, ports used twice and device
// instances held twice.
func (h *Harness) CheckInvariants() error {
	for id, node := range h.State.nodes {
		var live []*structs.Allocation
		for _, a := range h.State.allocs {
			if a.NodeID == id && !a.TerminalStatus() {
				live = append(live, a)
			}
		}
		if fit, dim, _, err := structs.AllocsFit(node, live, nil); err != nil || !fit {
			return fmt.Errorf("node %s overcommitted: %s %v", id, dim, err)
		}
	}
	return nil
}

// applyDeployments stores the plan's new deployment and status updates.
func (h *Harness) applyDeployments(plan *structs.Plan, result *structs.PlanResult) {
	result.Deployment, result.DeploymentUpdates = plan.Deployment, plan.DeploymentUpdates
	if d := plan.Deployment; d != nil {
		c := *d
		c.TaskGroups = make(map[string]*structs.DeploymentState, len(d.TaskGroups))
		for k, v := range d.TaskGroups {
			st := *v
			c.TaskGroups[k] = &st
		}
		h.State.UpsertDeployment(&c)
	}
	for _, u := range plan.DeploymentUpdates {
		for _, d := range h.State.deploy {
			if d.ID == u.DeploymentID {
				d.Status, d.StatusDescription = u.Status, u.StatusDescription
			}
		}
	}
}

// UpsertDeployment stores a deployment as its job's latest.
func (m *MemState) UpsertDeployment(d *structs.Deployment) {
	idx := m.next()
	if d.CreateIndex == 0 {
		d.CreateIndex = idx
	}
	d.ModifyIndex = idx
	m.deploy[structs.NamespacedID{Namespace: d.Namespace, ID: d.JobID}] = d
}

// Deployment returns the job's latest deployment.
func (m *MemState) Deployment(namespace, jobID string) *structs.Deployment {
	return m.deploy[structs.NamespacedID{Namespace: namespace, ID: jobID}]
}

// countPlacement keeps a deployment's counters as the state store does: an
// allocation new to the deployment is placed (a canary is recorded).
func (m *MemState) countPlacement(ex, a *structs.Allocation) {
	if a.DeploymentID == "" || ex != nil && ex.DeploymentID == a.DeploymentID {
		return
	}
	for _, d := range m.deploy {
		if d.ID != a.DeploymentID {
			continue
		}
		if st := d.TaskGroups[a.TaskGroup]; st != nil {
			st.PlacedAllocs++
			if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
				st.PlacedCanaries = append(st.PlacedCanaries, a.ID)
			}
		}
	}
}
