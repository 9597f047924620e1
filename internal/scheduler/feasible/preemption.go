package feasible

import (
	"math"
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

// minPreemptPriorityDelta is how much lower a job's priority must be for
// its allocations to be preempted.
const minPreemptPriorityDelta = 10

// preemptRequest describes what a placement lacks on one node.
type preemptRequest struct {
	priority int
	// need is the shortfall per dimension (cpu, memory, disk); entries
	// that are not positive need nothing.
	need structs.ComparableResources
	// ports are the static ports the placement asks for.
	ports []int
}

// choosePreemptions picks the allocations (from proposed) to evict so the
// request fits: holders of wanted static ports first (all must be
// preemptible), then, lowest job priority first, the allocation whose
// resources best match the remaining shortfall, until it is covered.
// Allocations that turn out unnecessary are dropped again, highest priority
// and largest first, so the excess stays small. It returns nil when no set
// of preemptible allocations (job priority at least 10 lower) suffices.
func choosePreemptions(req preemptRequest, proposed []*structs.Allocation) []*structs.Allocation {
	eligible := func(a *structs.Allocation) bool {
		return a.Job != nil && req.priority-a.Job.Priority >= minPreemptPriorityDelta
	}
	need := req.need
	var victims []*structs.Allocation
	taken := make(map[string]bool)

	if len(req.ports) > 0 {
		for _, a := range proposed {
			if !holdsAnyPort(a, req.ports) {
				continue
			}
			if !eligible(a) {
				return nil
			}
			victims = append(victims, a)
			taken[a.ID] = true
			subtract(&need, a.AllocatedResources.Comparable())
		}
	}
	mandatory := len(victims)

	var pool []*structs.Allocation
	for _, a := range proposed {
		if !taken[a.ID] && eligible(a) {
			pool = append(pool, a)
		}
	}
	sort.SliceStable(pool, func(i, j int) bool {
		if pool[i].Job.Priority != pool[j].Job.Priority {
			return pool[i].Job.Priority < pool[j].Job.Priority
		}
		return pool[i].ID < pool[j].ID
	})
	for positive(need) {
		if len(pool) == 0 {
			return nil
		}
		lowest := pool[0].Job.Priority
		best, bestDist := -1, math.Inf(1)
		for i, a := range pool {
			if a.Job.Priority != lowest {
				break
			}
			if d := distance(need, a.AllocatedResources.Comparable()); d < bestDist {
				best, bestDist = i, d
			}
		}
		a := pool[best]
		pool = append(pool[:best], pool[best+1:]...)
		victims = append(victims, a)
		subtract(&need, a.AllocatedResources.Comparable())
	}

	// Drop what is not needed: try the most valuable (highest priority,
	// then largest) optional victims first.
	optional := append([]*structs.Allocation(nil), victims[mandatory:]...)
	sort.SliceStable(optional, func(i, j int) bool {
		if optional[i].Job.Priority != optional[j].Job.Priority {
			return optional[i].Job.Priority > optional[j].Job.Priority
		}
		return size(optional[i]) > size(optional[j])
	})
	drop := make(map[string]bool)
	for _, a := range optional {
		// need is now the surplus (negative) per dimension; removing a
		// keeps the request covered if a's grant fits in the surplus.
		trial := need
		add(&trial, a.AllocatedResources.Comparable())
		if !positive(trial) {
			need = trial
			drop[a.ID] = true
		}
	}
	out := victims[:0:0]
	for _, a := range victims {
		if !drop[a.ID] {
			out = append(out, a)
		}
	}
	return out
}

func positive(c structs.ComparableResources) bool {
	return c.CPU > 0 || c.MemoryMB > 0 || c.DiskMB > 0
}

// subtract, add and size saturate instead of wrapping (structs'
// resources_sum.go): a shortfall computed from an absurd stored ask stays
// absurd, never turns into a surplus.
func subtract(c *structs.ComparableResources, o structs.ComparableResources) {
	c.CPU = structs.SatSub(c.CPU, o.CPU)
	c.MemoryMB = structs.SatSub(c.MemoryMB, o.MemoryMB)
	c.DiskMB = structs.SatSub(c.DiskMB, o.DiskMB)
}

func add(c *structs.ComparableResources, o structs.ComparableResources) {
	c.CPU = structs.SatAdd(c.CPU, o.CPU)
	c.MemoryMB = structs.SatAdd(c.MemoryMB, o.MemoryMB)
	c.DiskMB = structs.SatAdd(c.DiskMB, o.DiskMB)
}

func size(a *structs.Allocation) int64 {
	c := a.AllocatedResources.Comparable()
	return structs.SatAdd(structs.SatAdd(c.CPU, c.MemoryMB), c.DiskMB)
}

// distance measures how far a grant is from the shortfall over the
// dimensions that are short: 0 is an exact match; both falling short and
// overshooting move away from it.
func distance(need, have structs.ComparableResources) float64 {
	d := 0.0
	term := func(n, h int64) {
		if n > 0 {
			x := float64(n-h) / float64(n)
			d += x * x
		}
	}
	term(need.CPU, have.CPU)
	term(need.MemoryMB, have.MemoryMB)
	term(need.DiskMB, have.DiskMB)
	return math.Sqrt(d)
}

// holdsAnyPort reports whether a was granted one of ports on its node.
func holdsAnyPort(a *structs.Allocation, ports []int) bool {
	r := a.AllocatedResources
	if r == nil {
		return false
	}
	want := func(p int) bool {
		for _, w := range ports {
			if w == p {
				return true
			}
		}
		return false
	}
	for _, p := range r.Shared.Ports {
		if want(p.Value) {
			return true
		}
	}
	nets := append([]*structs.NetworkResource(nil), r.Shared.Networks...)
	for _, t := range r.Tasks {
		if t != nil {
			nets = append(nets, t.Networks...)
		}
	}
	for _, n := range nets {
		if n == nil {
			continue
		}
		for _, p := range append(append([]structs.Port(nil), n.ReservedPorts...), n.DynamicPorts...) {
			if want(p.Value) {
				return true
			}
		}
	}
	return false
}

// staticPorts lists the static ports a group asks for.
func staticPorts(tg *structs.TaskGroup) []int {
	var out []int
	for _, n := range tg.Networks {
		for _, p := range n.ReservedPorts {
			if p.Value > 0 {
				out = append(out, p.Value)
			}
		}
	}
	return out
}
