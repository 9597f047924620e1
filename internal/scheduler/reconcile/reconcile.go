package reconcile

import (
	"sort"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Descriptions written on allocations the reconciler stops.
const (
	DescNotNeeded   = "alloc not needed due to job update"
	DescJobStopped  = "alloc not needed as job is stopped"
	DescLost        = "alloc is lost since its node is down"
	DescMigrating   = "alloc is being migrated"
	DescUpdating    = "alloc is being updated due to job update"
	DescRescheduled = "alloc was rescheduled because it failed"
)

// Input is everything the reconciler looks at.
type Input struct {
	// Job is the current job; nil when it was purged.
	Job *structs.Job
	// Batch selects batch semantics (completed allocs count and never re-run).
	Batch bool
	// Allocs are all allocations of the job, of any version.
	Allocs []*structs.Allocation
	// TaintedNodes are nodes that are down, disconnected, draining or gone
	// (nil value) and hold allocations of the job.
	TaintedNodes map[string]*structs.Node
	Now          time.Time
}

// Placement asks the scheduler to place one allocation.
type Placement struct {
	Name      string
	TaskGroup *structs.TaskGroup
	// PreviousAlloc is the allocation this one replaces (lost, migrated or
	// rescheduled), if any.
	PreviousAlloc *structs.Allocation
	// Reschedule is set when PreviousAlloc failed: the scheduler stops it in
	// the same plan, extends its reschedule tracker and avoids its node.
	Reschedule bool
	// Lost is set when PreviousAlloc was on a lost node (already stopped).
	Lost bool
}

// Stop asks the scheduler to stop one allocation.
type Stop struct {
	Alloc        *structs.Allocation
	ClientStatus string // "" keeps the client's status; "lost" for lost allocs
	Description  string
}

// Destructive replaces an allocation running an older job spec: the old
// one is stopped and a new one with the same name placed in one plan.
type Destructive struct {
	Name      string
	TaskGroup *structs.TaskGroup
	Old       *structs.Allocation
}

// Result is what must change.
type Result struct {
	// Place are replacements of existing allocations (lost, migrated,
	// rescheduled): as many as the job has allocations.
	Place []Placement
	// Fresh are new allocations per group, to be named as they are placed.
	Fresh            []Fresh
	Stop             []Stop
	Destructive      []Destructive
	DesiredTGUpdates map[string]*structs.DesiredUpdates
}

// Compute reconciles the job's desired state with its allocations.
func Compute(in Input) *Result {
	res := &Result{DesiredTGUpdates: make(map[string]*structs.DesiredUpdates)}
	byGroup := make(map[string][]*structs.Allocation)
	for _, a := range in.Allocs {
		if a == nil {
			continue
		}
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	stopped := in.Job == nil || in.Job.Stop
	if !stopped {
		for _, tg := range in.Job.TaskGroups {
			if _, ok := byGroup[tg.Name]; !ok {
				byGroup[tg.Name] = nil
			}
		}
	}
	names := make([]string, 0, len(byGroup))
	for n := range byGroup {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		du := &structs.DesiredUpdates{}
		res.DesiredTGUpdates[name] = du
		var tg *structs.TaskGroup
		if !stopped {
			tg = in.Job.LookupTaskGroup(name)
		}
		allocs := sortByIndex(byGroup[name])
		if tg == nil || tg.Count <= 0 {
			desc := DescNotNeeded
			if stopped {
				desc = DescJobStopped
			}
			stopAll(in, res, du, allocs, desc)
			continue
		}
		computeGroup(in, res, du, tg, allocs)
	}
	return res
}

func sortByIndex(allocs []*structs.Allocation) []*structs.Allocation {
	out := append([]*structs.Allocation(nil), allocs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Index() != out[j].Index() {
			return out[i].Index() < out[j].Index()
		}
		return out[i].CreateIndex < out[j].CreateIndex
	})
	return out
}

// onLostNode reports whether the alloc's node is gone, down or disconnected.
func onLostNode(in Input, a *structs.Allocation) bool {
	n, tainted := in.TaintedNodes[a.NodeID]
	if !tainted {
		return false
	}
	return n == nil || n.Status == structs.NodeStatusDown || n.Status == structs.NodeStatusDisconnected
}

func stopAll(in Input, res *Result, du *structs.DesiredUpdates, allocs []*structs.Allocation, desc string) {
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		s := Stop{Alloc: a, Description: desc}
		if onLostNode(in, a) {
			s.ClientStatus = structs.AllocClientStatusLost
		}
		res.Stop = append(res.Stop, s)
		du.Stop++
	}
}

// slot is an allocation that occupies one of the group's count.
type slot struct {
	alloc *structs.Allocation
	kind  slotKind
}

type slotKind int

const (
	slotUntainted  slotKind = iota // runs (or finished and counts) where it is
	slotLost                       // on a lost node: stop as lost and replace
	slotMigrate                    // drainer asked to move it: stop and replace
	slotReschedule                 // failed and eligible: replace now
)

func computeGroup(in Input, res *Result, du *structs.DesiredUpdates, tg *structs.TaskGroup, allocs []*structs.Allocation) {
	job := in.Job
	var slots []slot
	for _, a := range allocs {
		if a.ServerTerminalStatus() {
			continue
		}
		if in.Batch && a.ClientTerminalStatus() && a.Job != nil && a.Job.JobModifyIndex < job.JobModifyIndex {
			// A finished batch alloc of an older spec: the new spec runs anew.
			continue
		}
		switch a.ClientStatus {
		case structs.AllocClientStatusComplete:
			if in.Batch {
				slots = append(slots, slot{a, slotUntainted})
			}
			// A completed service alloc no longer counts: it is replaced.
			continue
		case structs.AllocClientStatusLost:
			continue
		case structs.AllocClientStatusFailed:
			if a.NextAllocation == "" && rescheduleEligible(job, tg, a, in.Now) {
				slots = append(slots, slot{a, slotReschedule})
			} else {
				// Out of attempts (or already replaced): it keeps its slot so
				// the group is not refilled behind the policy's back.
				if a.NextAllocation == "" {
					slots = append(slots, slot{a, slotUntainted})
				}
			}
			continue
		}
		switch {
		case onLostNode(in, a):
			slots = append(slots, slot{a, slotLost})
		case a.DesiredTransition.Migrate != nil && *a.DesiredTransition.Migrate:
			slots = append(slots, slot{a, slotMigrate})
		default:
			slots = append(slots, slot{a, slotUntainted})
		}
	}

	// Too many: shed replacements first, then the highest indexes.
	if excess := len(slots) - tg.Count; excess > 0 {
		sort.SliceStable(slots, func(i, j int) bool {
			if (slots[i].kind == slotUntainted) != (slots[j].kind == slotUntainted) {
				return slots[i].kind == slotUntainted
			}
			return slots[i].alloc.Index() < slots[j].alloc.Index()
		})
		for _, s := range slots[len(slots)-excess:] {
			a := s.alloc
			switch {
			case s.kind == slotLost:
				res.Stop = append(res.Stop, Stop{Alloc: a, ClientStatus: structs.AllocClientStatusLost, Description: DescLost})
				du.Stop++
			case !a.ClientTerminalStatus():
				res.Stop = append(res.Stop, Stop{Alloc: a, Description: DescNotNeeded})
				du.Stop++
			}
		}
		slots = slots[:len(slots)-excess]
	}

	used := make(map[uint]bool)
	for _, s := range slots {
		used[s.alloc.Index()] = true
	}
	for _, s := range slots {
		a := s.alloc
		switch s.kind {
		case slotLost:
			res.Stop = append(res.Stop, Stop{Alloc: a, ClientStatus: structs.AllocClientStatusLost, Description: DescLost})
			du.Stop++
			res.Place = append(res.Place, Placement{Name: a.Name, TaskGroup: tg, PreviousAlloc: a, Lost: true})
			du.Place++
		case slotMigrate:
			res.Stop = append(res.Stop, Stop{Alloc: a, Description: DescMigrating})
			res.Place = append(res.Place, Placement{Name: a.Name, TaskGroup: tg, PreviousAlloc: a})
			du.Migrate++
		case slotReschedule:
			res.Place = append(res.Place, Placement{Name: a.Name, TaskGroup: tg, PreviousAlloc: a, Reschedule: true})
			du.RescheduleNow++
		case slotUntainted:
			if !a.ClientTerminalStatus() && (a.Job == nil || a.Job.JobModifyIndex != job.JobModifyIndex) {
				res.Destructive = append(res.Destructive, Destructive{Name: a.Name, TaskGroup: tg, Old: a})
				du.DestructiveUpdate++
			} else {
				du.Ignore++
			}
		}
	}

	// Too few: fresh names with the lowest free indexes, named lazily
	// (fresh.go).
	if missing := tg.Count - len(slots); missing > 0 {
		res.Fresh = append(res.Fresh, Fresh{TaskGroup: tg, Count: missing, jobID: job.ID, used: used})
		du.Place += uint64(missing)
	}
}

// rescheduleEligible reports whether a failed alloc may be replaced now
// under the group's (or job's) reschedule policy. Without a policy failed
// allocs are always replaced. Delays are not applied yet: eligible allocs
// are replaced immediately.
func rescheduleEligible(job *structs.Job, tg *structs.TaskGroup, a *structs.Allocation, now time.Time) bool {
	policy := tg.ReschedulePolicy
	if policy == nil {
		policy = job.Reschedule
	}
	if policy == nil || policy.Unlimited {
		return true
	}
	if policy.Attempts <= 0 {
		return false
	}
	attempts := 0
	if a.RescheduleTracker != nil {
		for _, ev := range a.RescheduleTracker.Events {
			if ev == nil {
				continue
			}
			if policy.Interval <= 0 || now.Sub(time.Unix(0, ev.RescheduleTime)) < policy.Interval {
				attempts++
			}
		}
	}
	return attempts < policy.Attempts
}
