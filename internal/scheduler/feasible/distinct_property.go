package feasible

import (
	"strconv"

	"github.com/drover-project/drover/internal/structs"
)

// DistinctPropertyIterator drops nodes whose value of a property is already
// used by as many allocations as a distinct_property constraint allows
// (RTarget, default 1). A job-level constraint counts every allocation of
// the job; a group- or task-level one counts the group's allocations.
// Nodes that lack the property are dropped.
type DistinctPropertyIterator struct {
	ctx    *Context
	source NodeIterator
	job    *structs.Job

	jobCons []*structs.Constraint
	checks  []distinctCheck
}

type distinctCheck struct {
	con     *structs.Constraint
	allowed int
	set     *propertySet
	counts  map[string]int
}

// NewDistinctPropertyIterator wraps source.
func NewDistinctPropertyIterator(ctx *Context, source NodeIterator) *DistinctPropertyIterator {
	return &DistinctPropertyIterator{ctx: ctx, source: source}
}

func distinctPropertyConstraints(cons []*structs.Constraint) []*structs.Constraint {
	var out []*structs.Constraint
	for _, c := range cons {
		if c.Operand == OpDistinctProperty {
			out = append(out, c)
		}
	}
	return out
}

// SetJob sets the job.
func (d *DistinctPropertyIterator) SetJob(job *structs.Job) {
	d.job = job
	d.jobCons = distinctPropertyConstraints(job.Constraints)
}

// SetTaskGroup sets the group and counts the current use of each property
// (call it once per selection: the plan grows between selections).
func (d *DistinctPropertyIterator) SetTaskGroup(tg *structs.TaskGroup) {
	d.checks = d.checks[:0]
	add := func(c *structs.Constraint, group string) {
		allowed := 1
		if c.RTarget != "" {
			if n, err := strconv.Atoi(c.RTarget); err == nil && n > 0 {
				allowed = n
			}
		}
		d.checks = append(d.checks, distinctCheck{con: c, allowed: allowed,
			set: newPropertySet(d.ctx, d.job, group, c.LTarget)})
	}
	for _, c := range d.jobCons {
		add(c, "")
	}
	for _, c := range distinctPropertyConstraints(tg.Constraints) {
		add(c, tg.Name)
	}
	for _, t := range tg.Tasks {
		for _, c := range distinctPropertyConstraints(t.Constraints) {
			add(c, tg.Name)
		}
	}
	for i := range d.checks {
		counts, err := d.checks[i].set.Counts()
		if err != nil {
			d.ctx.Logger.Error("failed to count distinct_property use", "property", d.checks[i].con.LTarget, "error", err)
			counts = nil
		}
		d.checks[i].counts = counts
	}
}

// Next returns the next node whose property values still have room.
func (d *DistinctPropertyIterator) Next() *structs.Node {
	for {
		n := d.source.Next()
		if n == nil || len(d.checks) == 0 {
			return n
		}
		if reason, ok := d.allowed(n); !ok {
			d.ctx.filterNode(n, reason)
			continue
		}
		return n
	}
}

func (d *DistinctPropertyIterator) allowed(n *structs.Node) (string, bool) {
	for _, c := range d.checks {
		if c.counts == nil {
			return ConstraintString(c.con), false // counting failed: never overcommit
		}
		v, ok := c.set.value(n)
		if !ok {
			return "missing property " + c.con.LTarget, false
		}
		if c.counts[v] >= c.allowed {
			return ConstraintString(c.con), false
		}
	}
	return "", true
}

// Reset resets the source.
func (d *DistinctPropertyIterator) Reset() { d.source.Reset() }
