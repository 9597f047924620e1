package drainer

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

type fakeState struct {
	jobs   map[string]*structs.Job
	allocs []*structs.Allocation
}

func (f *fakeState) AllocsByNode(_ memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for _, a := range f.allocs {
		if a.NodeID == nodeID {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeState) AllocsByJob(_ memdb.WatchSet, ns, jobID string, _ bool) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for _, a := range f.allocs {
		if a.Namespace == ns && a.JobID == jobID {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeState) JobByID(_ memdb.WatchSet, ns, id string) (*structs.Job, error) {
	return f.jobs[id], nil
}

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func job(id, typ string, count, maxParallel int) *structs.Job {
	j := &structs.Job{ID: id, Namespace: "default", Type: typ, Priority: 50,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: count}}}
	if maxParallel > 0 {
		j.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: &maxParallel}
	}
	return j
}

// alloc is a running allocation whose task started at started; healthy
// sets the health its client reported (nil: none).
func alloc(j *structs.Job, i int, node string, started time.Time, healthy *bool) *structs.Allocation {
	a := &structs.Allocation{ID: fmt.Sprintf("%s-%d", j.ID, i), Namespace: "default", JobID: j.ID, Job: j, TaskGroup: "g",
		Name: structs.AllocName(j.ID, "g", uint(i)), NodeID: node,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: started}}}
	if healthy != nil {
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: healthy}
	}
	return a
}

func drainingNode(id string, deadline time.Time, ignoreSystem bool) *structs.Node {
	return &structs.Node{ID: id, Status: structs.NodeStatusReady, DrainStrategy: &structs.DrainStrategy{
		DrainSpec: structs.DrainSpec{IgnoreSystemJobs: ignoreSystem}, ForceDeadline: deadline, StartedAt: t0}}
}

func ids(as []*structs.Allocation) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.ID)
	}
	sort.Strings(out)
	return out
}

func compute(t *testing.T, f *fakeState, now time.Time, nodes ...*structs.Node) *Plan {
	t.Helper()
	p, err := Compute(f, memdb.NewWatchSet(), nodes, now)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A group of 6 with migrate.max_parallel 2 moves two at a time, and the
// next two only once the replacements are healthy.
func TestDrainPacesByMaxParallel(t *testing.T) {
	j := job("web", structs.JobTypeService, 6, 2)
	f := &fakeState{jobs: map[string]*structs.Job{"web": j}}
	long := t0.Add(-time.Hour)
	for i := 0; i < 6; i++ {
		f.allocs = append(f.allocs, alloc(j, i, "n1", long, nil))
	}
	n := drainingNode("n1", time.Time{}, false)
	p := compute(t, f, t0, n)
	if got := ids(p.Migrate); len(got) != 2 || len(p.Complete) != 0 {
		t.Fatalf("first pass moved %v, complete %v", got, p.Complete)
	}
	// The scheduler stopped those two and placed replacements elsewhere,
	// running for 4 s (min_healthy_time defaults to 10 s).
	for _, a := range p.Migrate {
		tr := true
		a.DesiredTransition.Migrate = &tr
		a.DesiredStatus = structs.AllocDesiredStatusStop
	}
	f.allocs = append(f.allocs, alloc(j, 6, "n2", t0.Add(-4*time.Second), nil), alloc(j, 7, "n2", t0.Add(-4*time.Second), nil))
	p = compute(t, f, t0, n)
	if len(p.Migrate) != 0 {
		t.Fatalf("moved %v while replacements are not healthy", ids(p.Migrate))
	}
	if want := t0.Add(6 * time.Second); !p.Wake.Equal(want) {
		t.Fatalf("wake at %v, want %v (when the replacements turn healthy)", p.Wake, want)
	}
	p = compute(t, f, t0.Add(6*time.Second), n)
	if len(p.Migrate) != 2 {
		t.Fatalf("after replacements turned healthy moved %v, want 2", ids(p.Migrate))
	}
	// Health the client reported wins over time: unhealthy never counts.
	f.allocs[6].DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: ptr(false)}
	if p = compute(t, f, t0.Add(time.Hour), n); len(p.Migrate) != 1 {
		t.Fatalf("with one unhealthy replacement moved %v, want 1", ids(p.Migrate))
	}
}

// The budget is per group across the cluster: two draining nodes share it.
func TestDrainBudgetSharedAcrossNodes(t *testing.T) {
	j := job("web", structs.JobTypeService, 4, 1)
	f := &fakeState{jobs: map[string]*structs.Job{"web": j}}
	for i := 0; i < 4; i++ {
		f.allocs = append(f.allocs, alloc(j, i, fmt.Sprintf("n%d", i%2), t0.Add(-time.Hour), ptr(true)))
	}
	p := compute(t, f, t0, drainingNode("n0", time.Time{}, false), drainingNode("n1", time.Time{}, false))
	if len(p.Migrate) != 1 {
		t.Fatalf("two draining nodes moved %v, want 1 (max_parallel 1)", ids(p.Migrate))
	}
}

// System allocations go last; with -ignore-system they stay and the drain
// completes without them.
func TestDrainSystemLast(t *testing.T) {
	svc := job("web", structs.JobTypeService, 1, 1)
	sys := job("agent", structs.JobTypeSystem, 1, 0)
	f := &fakeState{jobs: map[string]*structs.Job{"web": svc, "agent": sys}}
	f.allocs = []*structs.Allocation{alloc(svc, 0, "n1", t0.Add(-time.Hour), nil), alloc(sys, 0, "n1", t0.Add(-time.Hour), nil)}
	n := drainingNode("n1", time.Time{}, false)
	if p := compute(t, f, t0, n); fmt.Sprint(ids(p.Migrate)) != "[web-0]" {
		t.Fatalf("first moved %v, want the service allocation only", ids(p.Migrate))
	}
	f.allocs[0].ClientStatus = structs.AllocClientStatusComplete
	if p := compute(t, f, t0, n); fmt.Sprint(ids(p.Migrate)) != "[agent-0]" || len(p.Complete) != 0 {
		t.Fatalf("then moved %v complete %v, want the system allocation", ids(p.Migrate), p.Complete)
	}
	if p := compute(t, f, t0, drainingNode("n1", time.Time{}, true)); len(p.Migrate) != 0 || fmt.Sprint(p.Complete) != "[n1]" {
		t.Fatalf("ignoring system jobs: moved %v complete %v", ids(p.Migrate), p.Complete)
	}
}

// Batch work may finish until the deadline; at the deadline everything
// left moves at once.
func TestDrainDeadlineForcesTheRest(t *testing.T) {
	b := job("etl", structs.JobTypeBatch, 1, 0)
	svc := job("web", structs.JobTypeService, 3, 1)
	f := &fakeState{jobs: map[string]*structs.Job{"etl": b, "web": svc}}
	f.allocs = []*structs.Allocation{alloc(b, 0, "n1", t0, nil)}
	for i := 0; i < 3; i++ {
		f.allocs = append(f.allocs, alloc(svc, i, "n1", t0.Add(-time.Hour), nil))
	}
	deadline := t0.Add(time.Minute)
	n := drainingNode("n1", deadline, false)
	p := compute(t, f, t0, n)
	if fmt.Sprint(ids(p.Migrate)) != "[web-0]" || !p.Wake.Equal(deadline) {
		t.Fatalf("before the deadline moved %v (wake %v)", ids(p.Migrate), p.Wake)
	}
	p = compute(t, f, deadline, n)
	if len(p.Migrate) != 4 || fmt.Sprint(p.Forced) != "[n1]" {
		t.Fatalf("at the deadline moved %v forced %v, want all 4", ids(p.Migrate), p.Forced)
	}
}

// A node with nothing left is complete; allocations of a stopped job move
// at once.
func TestDrainCompletesAndStoppedJobsMove(t *testing.T) {
	j := job("old", structs.JobTypeService, 2, 1)
	j.Stop = true
	f := &fakeState{jobs: map[string]*structs.Job{"old": j}}
	f.allocs = []*structs.Allocation{alloc(j, 0, "n1", t0, nil), alloc(j, 1, "n1", t0, nil)}
	p := compute(t, f, t0, drainingNode("n1", time.Time{}, false), drainingNode("empty", time.Time{}, false))
	if len(p.Migrate) != 2 || fmt.Sprint(p.Complete) != "[empty]" {
		t.Fatalf("moved %v complete %v", ids(p.Migrate), p.Complete)
	}
}

func ptr[T any](v T) *T { return &v }
