// Package drainer owns node drains on the leader: it moves allocations off
// draining nodes at the pace each task group's migrate block allows
// (max_parallel replacements not yet healthy across the whole cluster),
// stops system allocations last, forces whatever is left at the drain's
// deadline, and marks a drain complete once nothing it waits for remains.
//
// It holds no state of its own: every pass recomputes from the state store,
// so a new leader resumes a drain where the old one left it. Its writes are
// two Raft entries: desired transitions (Migrate) with one evaluation per
// job, and drain completions.
package drainer

import (
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// Reader is the part of the state the planner reads.
type Reader interface {
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string, anyCreateIndex bool) ([]*structs.Allocation, error)
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
}

// Plan is what one pass decides.
type Plan struct {
	// Migrate are the allocations to move now.
	Migrate []*structs.Allocation
	// Forced are the nodes whose deadline passed in this pass with
	// allocations left on them.
	Forced []string
	// Complete are the nodes whose drain is done.
	Complete []string
	// Wake is the earliest future moment at which time alone changes the
	// answer (a deadline, a replacement turning healthy); zero for none.
	Wake time.Time
}

// defaultMigrate is Nomad's migrate block default.
var defaultMigrate = struct {
	maxParallel    int
	minHealthyTime time.Duration
}{1, 10 * time.Second}

type groupKey struct{ ns, job, group string }

// Compute decides one pass over the draining nodes at now. Reads register
// in ws, so the caller can wait for what would change the answer.
func Compute(r Reader, ws memdb.WatchSet, nodes []*structs.Node, now time.Time) (*Plan, error) {
	p := &Plan{}
	wake := func(t time.Time) {
		if t.After(now) && (p.Wake.IsZero() || t.Before(p.Wake)) {
			p.Wake = t
		}
	}
	draining := make(map[string]*structs.Node, len(nodes))
	for _, n := range nodes {
		if n.DrainStrategy != nil {
			draining[n.ID] = n
		}
	}
	ids := make([]string, 0, len(draining))
	for id := range draining {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	candidates := map[groupKey][]*structs.Allocation{}
	jobs := map[structs.NamespacedID]*structs.Job{}
	job := func(ns, id string) (*structs.Job, error) {
		k := structs.NamespacedID{Namespace: ns, ID: id}
		if j, ok := jobs[k]; ok {
			return j, nil
		}
		j, err := r.JobByID(ws, ns, id)
		if err != nil {
			return nil, err
		}
		jobs[k] = j
		return j, nil
	}
	for _, id := range ids {
		n := draining[id]
		allocs, err := r.AllocsByNode(ws, id)
		if err != nil {
			return nil, err
		}
		var live, system []*structs.Allocation
		for _, a := range allocs {
			if !waitsFor(a) {
				continue
			}
			if isSystem(a) {
				if !n.DrainStrategy.IgnoreSystemJobs {
					system = append(system, a)
				}
				continue
			}
			live = append(live, a)
		}
		if len(live)+len(system) == 0 {
			p.Complete = append(p.Complete, id)
			continue
		}
		if structs.DrainDeadlinePassed(n.DrainStrategy, now) {
			p.Forced = append(p.Forced, id)
			for _, a := range append(live, system...) {
				if !migrating(a) {
					p.Migrate = append(p.Migrate, a)
				}
			}
			continue
		}
		if !n.DrainStrategy.ForceDeadline.IsZero() {
			wake(n.DrainStrategy.ForceDeadline)
		}
		if len(live) == 0 {
			// Only system allocations are left: they go last.
			for _, a := range system {
				if !migrating(a) {
					p.Migrate = append(p.Migrate, a)
				}
			}
			continue
		}
		for _, a := range live {
			if migrating(a) {
				continue
			}
			j, err := job(a.Namespace, a.JobID)
			if err != nil {
				return nil, err
			}
			switch {
			case j == nil || j.Stop || j.LookupTaskGroup(a.TaskGroup) == nil:
				// Its job or group is going away anyway.
				p.Migrate = append(p.Migrate, a)
			case j.Type == structs.JobTypeBatch:
				// Batch work may finish where it is until the deadline.
			default:
				k := groupKey{a.Namespace, a.JobID, a.TaskGroup}
				candidates[k] = append(candidates[k], a)
			}
		}
	}

	keys := make([]groupKey, 0, len(candidates))
	for k := range candidates {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.ns != b.ns {
			return a.ns < b.ns
		}
		if a.job != b.job {
			return a.job < b.job
		}
		return a.group < b.group
	})
	for _, k := range keys {
		j := jobs[structs.NamespacedID{Namespace: k.ns, ID: k.job}]
		tg := j.LookupTaskGroup(k.group)
		maxParallel, minHealthy := migrateOf(j, tg)
		all, err := r.AllocsByJob(ws, k.ns, k.job, false)
		if err != nil {
			return nil, err
		}
		healthy := 0
		for _, a := range all {
			if a.TaskGroup != k.group || migrating(a) || a.DesiredStatus != structs.AllocDesiredStatusRun ||
				a.ClientStatus != structs.AllocClientStatusRunning {
				continue
			}
			ok, at := isHealthy(a, minHealthy, now)
			if ok {
				healthy++
			} else if !at.IsZero() {
				wake(at)
			}
		}
		n := healthy - (tg.Count - maxParallel)
		cands := candidates[k]
		sort.Slice(cands, func(i, j int) bool {
			if cands[i].NodeID != cands[j].NodeID {
				return cands[i].NodeID < cands[j].NodeID
			}
			return cands[i].Name < cands[j].Name
		})
		// Allocations not running (pending, or on their way) serve nobody:
		// they move first and do not spend the budget.
		for _, a := range cands {
			if a.ClientStatus != structs.AllocClientStatusRunning {
				p.Migrate = append(p.Migrate, a)
			}
		}
		for _, a := range cands {
			if n <= 0 {
				break
			}
			if a.ClientStatus == structs.AllocClientStatusRunning {
				p.Migrate = append(p.Migrate, a)
				n--
			}
		}
	}
	return p, nil
}

// waitsFor reports whether a drain waits for the allocation to leave.
func waitsFor(a *structs.Allocation) bool {
	return a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus()
}

func migrating(a *structs.Allocation) bool {
	return a.DesiredTransition.Migrate != nil && *a.DesiredTransition.Migrate
}

func isSystem(a *structs.Allocation) bool {
	if a.Job == nil {
		return false
	}
	return a.Job.Type == structs.JobTypeSystem || a.Job.Type == structs.JobTypeSysBatch
}

// migrateOf is the group's migrate block (then the job's, then Nomad's
// defaults): replacements allowed in flight and how long one must run to
// count as healthy.
func migrateOf(j *structs.Job, tg *structs.TaskGroup) (int, time.Duration) {
	maxParallel, minHealthy := defaultMigrate.maxParallel, defaultMigrate.minHealthyTime
	for _, m := range []*structs.MigrateStrategy{j.Migrate, tg.Migrate} {
		if m == nil {
			continue
		}
		if m.MaxParallel != nil {
			maxParallel = *m.MaxParallel
		}
		if m.MinHealthyTime != nil {
			minHealthy = *m.MinHealthyTime
		}
	}
	return max(maxParallel, 1), minHealthy
}

// isHealthy reports whether a running allocation counts as healthy: the
// health its client reported, else its tasks running for minHealthy. When
// not yet healthy, at is when it will be (zero if unknown).
func isHealthy(a *structs.Allocation, minHealthy time.Duration, now time.Time) (ok bool, at time.Time) {
	if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
		return *a.DeploymentStatus.Healthy, time.Time{}
	}
	var started time.Time
	for _, ts := range a.TaskStates {
		if ts == nil || ts.State != structs.TaskStateRunning {
			return false, time.Time{}
		}
		if ts.StartedAt.After(started) {
			started = ts.StartedAt
		}
	}
	if started.IsZero() {
		return false, time.Time{}
	}
	due := started.Add(minHealthy)
	return !now.Before(due), due
}
