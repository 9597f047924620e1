package deploywatch

import (
	"reflect"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

var t0 = time.Unix(1_700_000_000, 0)

func bptr(b bool) *bool { return &b }

func group(mut func(*structs.DeploymentState)) *structs.DeploymentState {
	st := &structs.DeploymentState{DesiredTotal: 3, ProgressDeadline: 10 * time.Minute, RequireProgressBy: t0.Add(time.Minute)}
	if mut != nil {
		mut(st)
	}
	return st
}

func dep(status string, groups map[string]*structs.DeploymentState) *structs.Deployment {
	return &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: 2, Status: status, TaskGroups: groups}
}

// alloc of group "g"; healthy nil means no health yet.
func alloc(id string, healthy *bool, idx uint64) *structs.Allocation {
	a := &structs.Allocation{ID: id, JobID: "web", TaskGroup: "g", DeploymentID: "d1"}
	if healthy != nil {
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: healthy, ModifyIndex: idx}
	}
	return a
}

func jobWithPolicy(p *structs.ReschedulePolicy) *structs.Job {
	return &structs.Job{ID: "web", TaskGroups: []*structs.TaskGroup{{Name: "g", ReschedulePolicy: p}}}
}

func TestDecide(t *testing.T) {
	unlimited := jobWithPolicy(&structs.ReschedulePolicy{Unlimited: true})
	twice := jobWithPolicy(&structs.ReschedulePolicy{Attempts: 2, Interval: time.Hour})
	tracked := func(a *structs.Allocation, n int) *structs.Allocation {
		a.RescheduleTracker = &structs.RescheduleTracker{}
		for i := 0; i < n; i++ {
			a.RescheduleTracker.Events = append(a.RescheduleTracker.Events, &structs.RescheduleEvent{RescheduleTime: t0.Add(-time.Minute).UnixNano()})
		}
		return a
	}
	rescheduled := alloc("a1", bptr(false), 5)
	rescheduled.DesiredTransition.Reschedule = bptr(true)
	canaries := func(auto bool, healthy int, placed ...string) *structs.DeploymentState {
		return group(func(st *structs.DeploymentState) {
			st.DesiredCanaries, st.AutoPromote, st.PlacedCanaries, st.HealthyAllocs = 2, auto, placed, healthy
		})
	}
	cases := []struct {
		name string
		v    view
		want decision
	}{
		{"healthy alloc newer than the latest eval asks for an eval",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(nil)}), job: unlimited,
				allocs: []*structs.Allocation{alloc("a1", bptr(true), 20)}, latestEval: 10, now: t0},
			decision{createEval: true, deadline: t0.Add(time.Minute)}},
		{"healthy alloc with every alloc placed but not all healthy asks for nothing (the eval would do nothing)",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(func(st *structs.DeploymentState) { st.PlacedAllocs, st.HealthyAllocs = 3, 1 })}), job: unlimited,
				allocs: []*structs.Allocation{alloc("a1", bptr(true), 20), alloc("a2", nil, 0), alloc("a3", nil, 0)}, latestEval: 10, now: t0},
			decision{deadline: t0.Add(time.Minute)}},
		{"last healthy alloc of a fully placed deployment asks for the eval that completes it",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(func(st *structs.DeploymentState) { st.PlacedAllocs, st.HealthyAllocs = 3, 3 })}), job: unlimited,
				allocs: []*structs.Allocation{alloc("a1", bptr(true), 20), alloc("a2", bptr(true), 21), alloc("a3", bptr(true), 22)}, latestEval: 10, now: t0},
			decision{createEval: true}},
		{"healthy alloc while another group still has placements to make asks for an eval",
			view{d: dep("running", map[string]*structs.DeploymentState{
				"g":    group(func(st *structs.DeploymentState) { st.PlacedAllocs, st.HealthyAllocs = 3, 1 }),
				"next": group(func(st *structs.DeploymentState) { st.PlacedAllocs = 1 })}), job: unlimited,
				allocs: []*structs.Allocation{alloc("a1", bptr(true), 20)}, latestEval: 10, now: t0},
			decision{createEval: true, deadline: t0.Add(time.Minute)}},
		{"healthy alloc the latest eval already saw asks for nothing",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(nil)}), job: unlimited,
				allocs: []*structs.Allocation{alloc("a1", bptr(true), 20)}, latestEval: 20, now: t0},
			decision{deadline: t0.Add(time.Minute)}},
		{"allocation without health yet asks for nothing",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(nil)}), job: unlimited,
				allocs: []*structs.Allocation{alloc("a1", nil, 0)}, now: t0},
			decision{deadline: t0.Add(time.Minute)}},
		{"unhealthy alloc with a progress deadline is replaced",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(nil)}), job: unlimited,
				allocs: []*structs.Allocation{alloc("a2", bptr(false), 20), alloc("a1", bptr(false), 21)}, now: t0},
			decision{allowReplacements: []string{"a1", "a2"}, deadline: t0.Add(time.Minute)}},
		{"unhealthy alloc already marked for replacement is left alone",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(nil)}), job: unlimited,
				allocs: []*structs.Allocation{rescheduled}, now: t0},
			decision{deadline: t0.Add(time.Minute)}},
		{"unhealthy alloc without a progress deadline fails at once",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(func(st *structs.DeploymentState) { st.ProgressDeadline = 0 })}),
				job: unlimited, allocs: []*structs.Allocation{alloc("a1", bptr(false), 20), alloc("a2", bptr(true), 20)}, now: t0},
			decision{fail: true, failDesc: DescFailedAllocs}},
		{"failing group with auto_revert asks for a rollback",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(func(st *structs.DeploymentState) { st.ProgressDeadline, st.AutoRevert = 0, true })}),
				job: unlimited, allocs: []*structs.Allocation{alloc("a1", bptr(false), 20)}, now: t0},
			decision{fail: true, failDesc: DescFailedAllocs, rollback: true}},
		{"unhealthy alloc with reschedule attempts left is replaced",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(nil)}), job: twice,
				allocs: []*structs.Allocation{tracked(alloc("a1", bptr(false), 20), 1)}, now: t0},
			decision{allowReplacements: []string{"a1"}, deadline: t0.Add(time.Minute)}},
		{"unhealthy alloc with reschedule attempts used up fails the deployment",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(nil)}), job: twice,
				allocs: []*structs.Allocation{tracked(alloc("a1", bptr(false), 20), 2)}, now: t0},
			decision{fail: true, failDesc: DescFailedAllocs}},
		{"reschedules older than the interval do not count",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(func(st *structs.DeploymentState) { st.RequireProgressBy = t0.Add(3 * time.Hour) })}),
				job: twice, allocs: []*structs.Allocation{tracked(alloc("a1", bptr(false), 20), 2)}, now: t0.Add(2 * time.Hour)},
			decision{allowReplacements: []string{"a1"}, deadline: t0.Add(3 * time.Hour)}},
		{"progress deadline passed with a group unfinished fails",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(func(st *structs.DeploymentState) { st.HealthyAllocs = 2 })}),
				job: unlimited, now: t0.Add(time.Minute)},
			decision{fail: true, failDesc: DescProgressDeadline}},
		{"progress deadline failure rolls back a group with auto_revert",
			view{d: dep("running", map[string]*structs.DeploymentState{
				"g":    group(func(st *structs.DeploymentState) { st.AutoRevert = true }),
				"done": group(func(st *structs.DeploymentState) { st.HealthyAllocs = 3 })}),
				job: unlimited, now: t0.Add(2 * time.Minute)},
			decision{fail: true, failDesc: DescProgressDeadline, rollback: true}},
		{"a finished group's auto_revert does not roll back",
			view{d: dep("running", map[string]*structs.DeploymentState{
				"g":    group(nil),
				"done": group(func(st *structs.DeploymentState) { st.HealthyAllocs, st.AutoRevert = 3, true })}),
				job: unlimited, now: t0.Add(2 * time.Minute)},
			decision{fail: true, failDesc: DescProgressDeadline}},
		{"progress deadline not yet passed only arms the timer",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(nil)}), job: unlimited, now: t0.Add(59 * time.Second)},
			decision{deadline: t0.Add(time.Minute)}},
		{"earliest deadline of the unfinished groups counts",
			view{d: dep("running", map[string]*structs.DeploymentState{
				"g":    group(func(st *structs.DeploymentState) { st.RequireProgressBy = t0.Add(3 * time.Minute) }),
				"h":    group(func(st *structs.DeploymentState) { st.RequireProgressBy = t0.Add(2 * time.Minute) }),
				"done": group(func(st *structs.DeploymentState) { st.HealthyAllocs = 3 })}),
				job: unlimited, now: t0},
			decision{deadline: t0.Add(2 * time.Minute)}},
		{"paused deployment never fails by its deadline",
			view{d: dep("paused", map[string]*structs.DeploymentState{"g": group(nil)}), job: unlimited, now: t0.Add(time.Hour)},
			decision{deadline: t0.Add(time.Minute)}},
		{"all groups healthy: no deadline, nothing to do",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(func(st *structs.DeploymentState) { st.HealthyAllocs = 3 })}),
				job: unlimited, now: t0.Add(time.Hour)},
			decision{}},
		{"unpromoted canary group is done with its canaries healthy",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": canaries(false, 2, "c1", "c2")}),
				job: unlimited, now: t0.Add(time.Hour)},
			decision{}},
		{"unpromoted canary group without enough healthy canaries fails at the deadline",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": canaries(false, 1, "c1", "c2")}),
				job: unlimited, now: t0.Add(time.Hour)},
			decision{fail: true, failDesc: DescProgressDeadline}},
		{"auto_promote with every canary placed and healthy promotes",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": canaries(true, 2, "c1", "c2"), "plain": group(func(st *structs.DeploymentState) { st.HealthyAllocs = 3 })}),
				job: unlimited, allocs: []*structs.Allocation{alloc("c1", bptr(true), 5), alloc("c2", bptr(true), 6)}, latestEval: 10, now: t0},
			decision{promote: true}},
		{"no promotion while a canary is not healthy",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": canaries(true, 1, "c1", "c2")}),
				job: unlimited, allocs: []*structs.Allocation{alloc("c1", bptr(true), 5), alloc("c2", nil, 0)}, latestEval: 10, now: t0},
			decision{deadline: t0.Add(time.Minute)}},
		{"no promotion while canaries are missing",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": canaries(true, 1, "c1")}),
				job: unlimited, allocs: []*structs.Allocation{alloc("c1", bptr(true), 5)}, latestEval: 10, now: t0},
			decision{deadline: t0.Add(time.Minute)}},
		{"no promotion when another canary group does not auto-promote",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": canaries(true, 2, "c1", "c2"), "h": canaries(false, 2, "c3", "c4")}),
				job: unlimited, allocs: []*structs.Allocation{alloc("c1", bptr(true), 5), alloc("c2", bptr(true), 5), alloc("c3", bptr(true), 5), alloc("c4", bptr(true), 5)}, latestEval: 10, now: t0},
			decision{}},
		{"no promotion of a paused deployment",
			view{d: dep("paused", map[string]*structs.DeploymentState{"g": canaries(true, 2, "c1", "c2")}),
				job: unlimited, allocs: []*structs.Allocation{alloc("c1", bptr(true), 5), alloc("c2", bptr(true), 5)}, latestEval: 10, now: t0},
			decision{}},
		{"no promotion while a healthy canary has stopped",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": canaries(true, 2, "c1", "c2")}),
				job: unlimited, allocs: []*structs.Allocation{alloc("c1", bptr(true), 5), func() *structs.Allocation {
					a := alloc("c2", bptr(true), 5)
					a.DesiredStatus = structs.AllocDesiredStatusStop
					return a
				}()}, latestEval: 10, now: t0},
			decision{}},
		{"no promotion twice",
			view{d: dep("running", map[string]*structs.DeploymentState{"g": group(func(st *structs.DeploymentState) {
				st.DesiredCanaries, st.AutoPromote, st.Promoted, st.PlacedCanaries, st.HealthyAllocs = 2, true, true, []string{"c1", "c2"}, 3
			})}), job: unlimited, allocs: []*structs.Allocation{alloc("c1", bptr(true), 5), alloc("c2", bptr(true), 5)}, latestEval: 10, now: t0},
			decision{}},
		{"inactive deployment: nothing",
			view{d: dep("failed", map[string]*structs.DeploymentState{"g": group(nil)}), job: unlimited,
				allocs: []*structs.Allocation{alloc("a1", bptr(false), 20)}, now: t0.Add(time.Hour)},
			decision{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decide(c.v)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("decide:\n got  %+v\n want %+v", got, c.want)
			}
		})
	}
}

func TestRollbackTarget(t *testing.T) {
	v := func(n uint64, stable bool) *structs.Job {
		return &structs.Job{ID: "web", Version: n, Stable: stable, CreateIndex: 7}
	}
	cur := v(5, false)
	d := &structs.Deployment{JobVersion: 4}
	if got := rollbackTarget([]*structs.Job{v(5, true), v(4, true), v(3, false), v(2, true), v(1, true)}, d, cur); got == nil || got.Version != 2 {
		t.Fatalf("target = %+v, want version 2 (latest stable older than the deployment's)", got)
	}
	if got := rollbackTarget([]*structs.Job{v(4, true), v(3, false)}, d, cur); got != nil {
		t.Fatalf("target = %+v, want none", got)
	}
	// A stable version of an earlier incarnation of the job (purged and
	// registered again) is no target.
	old := v(2, true)
	old.CreateIndex = 3
	if got := rollbackTarget([]*structs.Job{v(3, false), old}, d, cur); got != nil {
		t.Fatalf("target = %+v from another incarnation, want none", got)
	}
}

func TestLatestEvalIndex(t *testing.T) {
	evals := []*structs.Evaluation{{CreateIndex: 5, SnapshotIndex: 7}, {CreateIndex: 9}, {CreateIndex: 3, SnapshotIndex: 30}}
	if got := latestEvalIndex(evals, t0); got != 9 {
		t.Fatalf("pending newest eval: got %d, want its CreateIndex 9", got)
	}
	evals[1].SnapshotIndex = 12
	if got := latestEvalIndex(evals, t0); got != 12 {
		t.Fatalf("processed newest eval: got %d, want its SnapshotIndex 12", got)
	}
	if got := latestEvalIndex(nil, t0); got != 0 {
		t.Fatalf("no evals: got %d", got)
	}
	// A newer blocked eval, or one delayed past now, does not hide a
	// health change from the watcher.
	delayed := append(evals, &structs.Evaluation{CreateIndex: 50, Status: structs.EvalStatusBlocked},
		&structs.Evaluation{CreateIndex: 60, Status: structs.EvalStatusPending, WaitUntil: t0.Add(time.Minute)})
	if got := latestEvalIndex(delayed, t0); got != 12 {
		t.Fatalf("with blocked and delayed evals: got %d, want 12", got)
	}
	if got := latestEvalIndex(delayed, t0.Add(2*time.Minute)); got != 60 {
		t.Fatalf("once the delayed eval is due: got %d, want 60", got)
	}
}
