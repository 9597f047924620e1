package invariant

import (
	"fmt"
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkAllocs finds live allocations on unknown nodes, live allocations
// sharing a name within a job, and live jobs missing allocations that no
// open evaluation accounts for.
func (c *checker) checkAllocs() []Violation {
	var out []Violation
	type nameKey struct{ ns, job, name string }
	byName := map[nameKey][]string{}
	var names []nameKey
	for _, a := range c.live {
		if _, ok := c.nodes[a.NodeID]; !ok {
			out = append(out, Violation{Kind: KindAlloc, NodeID: a.NodeID, JobID: a.JobID, Allocs: []string{a.ID},
				Detail: fmt.Sprintf("live allocation %s on a node the state does not know", a.Name)})
		}
		k := nameKey{a.Namespace, a.JobID, a.Name}
		if _, seen := byName[k]; !seen {
			names = append(names, k)
		}
		byName[k] = append(byName[k], a.ID)
	}
	for _, k := range names {
		if ids := byName[k]; len(ids) > 1 {
			sort.Strings(ids)
			out = append(out, Violation{Kind: KindAlloc, JobID: k.job, Allocs: ids,
				Detail: fmt.Sprintf("%d live allocations named %s", len(ids), k.name)})
		}
	}
	return append(out, c.checkMissing()...)
}

// checkMissing compares each live service or batch job's group counts with
// its allocations. A shortfall is fine only while an evaluation of the job
// is still open (blocked: waiting for capacity; pending: itself reported by
// checkEvals); otherwise the allocations were lost.
func (c *checker) checkMissing() []Violation {
	open := map[structs.NamespacedID]bool{}
	for _, e := range c.evals {
		if e != nil && !e.TerminalStatus() {
			open[structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}] = true
		}
	}
	type groupKey struct {
		job   structs.NamespacedID
		group string
	}
	have := map[groupKey]int{}
	for _, a := range c.all {
		if a == nil || a.ServerTerminalStatus() {
			continue
		}
		switch a.ClientStatus {
		case structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
			continue
		case structs.AllocClientStatusComplete:
			// A finished batch allocation is done, not missing; a finished
			// service allocation must be replaced.
			if j := c.jobOf(a); j == nil || j.Type != structs.JobTypeBatch {
				continue
			}
		}
		have[groupKey{structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}, a.TaskGroup}]++
	}
	var ids []structs.NamespacedID
	for id := range c.jobs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Namespace != ids[j].Namespace {
			return ids[i].Namespace < ids[j].Namespace
		}
		return ids[i].ID < ids[j].ID
	})
	var out []Violation
	for _, id := range ids {
		j := c.jobs[id]
		if j.Stop || j.Periodic != nil || j.ParameterizedJob != nil || open[id] ||
			(j.Type != structs.JobTypeService && j.Type != structs.JobTypeBatch) {
			continue
		}
		for _, tg := range j.TaskGroups {
			if tg == nil {
				continue
			}
			if n := have[groupKey{id, tg.Name}]; n < tg.Count {
				out = append(out, Violation{Kind: KindAlloc, JobID: j.ID,
					Detail: fmt.Sprintf("group %q has %d of %d allocations and no open evaluation to place the rest", tg.Name, n, tg.Count)})
			}
		}
	}
	return out
}

// checkEvals finds evaluations still in flight, and blocked ones that do
// not say why.
func (c *checker) checkEvals() []Violation {
	var out []Violation
	for _, e := range c.evals {
		if e == nil || e.TerminalStatus() {
			continue
		}
		if e.Status == structs.EvalStatusBlocked {
			if len(e.FailedTGAllocs) > 0 || e.StatusDescription != "" {
				continue
			}
			out = append(out, Violation{Kind: KindEval, JobID: e.JobID, EvalID: e.ID,
				Detail: "blocked evaluation gives no reason (no FailedTGAllocs, no status description)"})
			continue
		}
		out = append(out, Violation{Kind: KindEval, JobID: e.JobID, EvalID: e.ID,
			Detail: fmt.Sprintf("evaluation is %q, not terminal (triggered by %s)", e.Status, e.TriggeredBy)})
	}
	return out
}
