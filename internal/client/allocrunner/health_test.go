package allocrunner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func running(since time.Time) *structs.TaskState {
	return &structs.TaskState{State: structs.TaskStateRunning, StartedAt: since}
}

func TestJudgeHealth(t *testing.T) {
	p := healthPolicy{mode: HealthCheckTaskStates, minHealthy: 10 * time.Second, deadline: time.Minute}
	main := func(st *structs.TaskState) healthTask { return healthTask{name: "web", phase: phaseMain, state: st} }
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	for _, tc := range []struct {
		name    string
		tasks   []healthTask
		p       healthPolicy
		start   time.Time
		now     time.Duration // after t0
		want    string        // pending | healthy | unhealthy | deadline
		recheck time.Duration // for pending, after t0
	}{
		{name: "running less than min_healthy_time", tasks: []healthTask{main(running(t0))}, now: sec(9), want: "pending", recheck: sec(10)},
		{name: "running min_healthy_time", tasks: []healthTask{main(running(t0))}, now: sec(10), want: "healthy"},
		{name: "a restart starts the wait again", tasks: []healthTask{main(running(t0.Add(sec(8))))}, now: sec(12), want: "pending", recheck: sec(18)},
		{name: "restarting now", tasks: []healthTask{main(&structs.TaskState{State: structs.TaskStatePending, Restarts: 1})}, now: sec(20), want: "pending", recheck: sec(60)},
		{name: "the latest start counts", tasks: []healthTask{main(running(t0)), {name: "b", phase: phaseMain, state: running(t0.Add(sec(5)))}}, now: sec(12), want: "pending", recheck: sec(15)},
		{name: "failed task", tasks: []healthTask{main(running(t0)), {name: "b", phase: phaseMain, state: &structs.TaskState{State: structs.TaskStateDead, Failed: true}}}, now: sec(30), want: "unhealthy"},
		{name: "main task ended", tasks: []healthTask{main(&structs.TaskState{State: structs.TaskStateDead, FinishedAt: t0})}, now: sec(1), want: "unhealthy"},
		{name: "sidecar ended", tasks: []healthTask{main(running(t0)), {name: "side", phase: phasePrestartSidecar, state: &structs.TaskState{State: structs.TaskStateDead}}}, now: sec(11), want: "unhealthy"},
		{name: "prestart completed, poststop waiting", tasks: []healthTask{
			{name: "init", phase: phasePrestart, state: &structs.TaskState{State: structs.TaskStateDead, FinishedAt: t0}},
			main(running(t0)),
			{name: "cleanup", phase: phasePoststop, state: &structs.TaskState{State: structs.TaskStatePending}},
		}, now: sec(10), want: "healthy"},
		{name: "prestart still running", tasks: []healthTask{
			{name: "init", phase: phasePrestart, state: running(t0)},
			main(&structs.TaskState{State: structs.TaskStatePending}),
		}, now: sec(30), want: "pending", recheck: sec(60)},
		{name: "poststart completed", tasks: []healthTask{main(running(t0)),
			{name: "announce", phase: phasePoststart, state: &structs.TaskState{State: structs.TaskStateDead, FinishedAt: t0}}}, now: sec(10), want: "healthy"},
		{name: "poststart sidecar ended", tasks: []healthTask{main(running(t0)),
			{name: "proxy", phase: phasePoststart, sidecar: true, state: &structs.TaskState{State: structs.TaskStateDead, FinishedAt: t0}}}, now: sec(10), want: "unhealthy"},
		{name: "prestart failed", tasks: []healthTask{{name: "init", phase: phasePrestart, state: &structs.TaskState{State: structs.TaskStateDead, Failed: true}}}, now: sec(1), want: "unhealthy"},
		{name: "never running by the deadline", tasks: []healthTask{main(&structs.TaskState{State: structs.TaskStatePending})}, now: sec(60), want: "deadline"},
		{name: "min_healthy_time ends after the deadline", tasks: []healthTask{main(running(t0.Add(sec(55))))}, now: sec(59), want: "pending", recheck: sec(60)},
		{name: "min_healthy_time ends after the deadline, deadline passed", tasks: []healthTask{main(running(t0.Add(sec(55))))}, now: sec(65), want: "deadline"},
		{name: "healthy before the deadline, judged late", tasks: []healthTask{main(running(t0))}, now: sec(70), want: "healthy"},
		// A new deployment (in-place update) waits min_healthy_time from
		// its own start even for tasks running long before.
		{name: "tasks older than the watch", tasks: []healthTask{main(running(t0.Add(-time.Hour)))}, now: sec(5), want: "pending", recheck: sec(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := p
			if tc.p != (healthPolicy{}) {
				pp = tc.p
			}
			start := t0
			if !tc.start.IsZero() {
				start = tc.start
			}
			v := judgeHealth(tc.tasks, pp, start, t0.Add(tc.now))
			got := "pending"
			switch {
			case v.decided && v.healthy:
				got = "healthy"
			case v.decided && v.deadline:
				got = "deadline"
			case v.decided:
				got = "unhealthy"
			}
			if got != tc.want {
				t.Fatalf("verdict %s (%+v), want %s", got, v, tc.want)
			}
			if got == "pending" && !v.recheck.Equal(t0.Add(tc.recheck)) {
				t.Fatalf("recheck at %s, want %s", v.recheck.Sub(t0), tc.recheck)
			}
			if got == "unhealthy" && v.reason == "" {
				t.Fatal("unhealthy without a reason")
			}
		})
	}
}

func TestHealthPolicyFor(t *testing.T) {
	dur := func(d time.Duration) *time.Duration { return &d }
	str := func(s string) *string { return &s }
	mk := func(dep string, job, group *structs.UpdateStrategy) *structs.Allocation {
		a := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", nil))
		a.DeploymentID = dep
		a.Job.Update = job
		a.Job.TaskGroups[0].Update = group
		return a
	}
	if _, ok := healthPolicyFor(mk("", &structs.UpdateStrategy{}, nil)); ok {
		t.Fatal("judged an allocation outside any deployment")
	}
	if _, ok := healthPolicyFor(mk("d1", nil, nil)); ok {
		t.Fatal("judged an allocation of a group without an update block")
	}
	if _, ok := healthPolicyFor(mk("d1", nil, &structs.UpdateStrategy{HealthCheck: str(HealthCheckManual)})); ok {
		t.Fatal("judged a manual-health allocation")
	}
	p, ok := healthPolicyFor(mk("d1", &structs.UpdateStrategy{}, nil))
	if !ok || p != (healthPolicy{mode: HealthCheckChecks, minHealthy: 10 * time.Second, deadline: 5 * time.Minute}) {
		t.Fatalf("defaults: %+v %v", p, ok)
	}
	p, ok = healthPolicyFor(mk("d1",
		&structs.UpdateStrategy{HealthCheck: str(HealthCheckManual), MinHealthyTime: dur(time.Second), HealthyDeadline: dur(time.Minute)},
		&structs.UpdateStrategy{HealthCheck: str(HealthCheckTaskStates), MinHealthyTime: dur(3 * time.Second)}))
	if !ok || p != (healthPolicy{mode: HealthCheckTaskStates, minHealthy: 3 * time.Second, deadline: time.Minute}) {
		t.Fatalf("group over job: %+v %v", p, ok)
	}
}

// deployedAlloc is a service allocation in deployment "d1" whose group
// judges task states with the given times.
func deployedAlloc(minHealthy, deadline time.Duration, tasks ...*structs.Task) *structs.Allocation {
	a := testutil.Alloc(structs.JobTypeService, tasks...)
	a.DeploymentID = "d1"
	mode := HealthCheckTaskStates
	a.Job.TaskGroups[0].Update = &structs.UpdateStrategy{HealthCheck: &mode, MinHealthyTime: &minHealthy, HealthyDeadline: &deadline}
	return a
}

func waitHealth(t *testing.T, rec *recorder) *structs.Allocation {
	t.Helper()
	var got *structs.Allocation
	testutil.WaitFor(t, 10*time.Second, func() error {
		got = rec.last()
		if got == nil || got.DeploymentStatus == nil || got.DeploymentStatus.Healthy == nil {
			return fmt.Errorf("no health in the last update %+v", got)
		}
		return nil
	})
	return got
}

func (r *recorder) anyHealth() *structs.Allocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.updates {
		if u.DeploymentStatus != nil {
			return u
		}
	}
	return nil
}

func TestHealth_HealthyAfterMinHealthyTime(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(300*time.Millisecond, 10*time.Second, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	alloc.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true, ModifyIndex: 7}
	_, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusRunning)
	got := waitHealth(t, rec)
	ds := got.DeploymentStatus
	if !*ds.Healthy || !ds.Canary || ds.ModifyIndex != 7 {
		t.Fatalf("deployment status %+v, want healthy canary at the server's index", ds)
	}
	if ran := ds.Timestamp.Sub(got.TaskStates["t"].StartedAt); ran < 300*time.Millisecond {
		t.Fatalf("healthy after running %s, less than min_healthy_time", ran)
	}
	// Every update before that one carried no health at all.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, u := range rec.updates {
		if u.DeploymentStatus != nil && u.DeploymentStatus.Timestamp.Before(ds.Timestamp) {
			t.Fatalf("earlier update carried health %+v", u.DeploymentStatus)
		}
	}
}

func TestHealth_FailedTaskIsUnhealthy(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(10*time.Second, time.Minute, testutil.MockTask("t", map[string]any{"run_for": "20ms", "exit_code": 1}))
	_, rec := newRunner(t, alloc, d)
	got := waitHealth(t, rec)
	if *got.DeploymentStatus.Healthy || got.ClientStatus != structs.AllocClientStatusFailed {
		t.Fatalf("health %v with status %s, want unhealthy and failed", *got.DeploymentStatus.Healthy, got.ClientStatus)
	}
}

// A task that keeps restarting never runs for min_healthy_time: every
// restart starts the wait again, so the deadline makes it unhealthy, and
// the task records why.
func TestHealth_RestartsResetUntilDeadline(t *testing.T) {
	d := mock.New()
	task := testutil.MockTask("t", map[string]any{"run_for": "40ms"})
	alloc := deployedAlloc(400*time.Millisecond, 1500*time.Millisecond, task)
	alloc.Job.TaskGroups[0].RestartPolicy.Attempts = 1000
	_, rec := newRunner(t, alloc, d)
	got := waitHealth(t, rec)
	if *got.DeploymentStatus.Healthy {
		t.Fatalf("restarting task judged healthy: %+v", got.TaskStates["t"])
	}
	if d.StartCount("t") < 3 {
		t.Fatalf("task started %d times: the test did not restart it", d.StartCount("t"))
	}
	if got.TaskStates["t"].Failed {
		t.Fatal("the task failed: unhealthy for the wrong reason")
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		for _, e := range rec.last().TaskStates["t"].Events {
			if e.Type == structs.TaskAllocUnhealthy && strings.Contains(e.Message, "healthy_deadline of 1.5s") {
				return nil
			}
		}
		return fmt.Errorf("no Alloc Unhealthy event: %v", eventTypes(rec.last().TaskStates["t"]))
	})
}

func TestHealth_DeadlineIsUnhealthy(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(time.Minute, 300*time.Millisecond, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	_, rec := newRunner(t, alloc, d)
	got := waitHealth(t, rec)
	if *got.DeploymentStatus.Healthy || got.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("health %v status %s: want unhealthy while still running", *got.DeploymentStatus.Healthy, got.ClientStatus)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		ev := rec.last().TaskStates["t"].Events
		last := ev[len(ev)-1]
		if last.Type != structs.TaskAllocUnhealthy || last.Message != "Task not running for min_healthy_time of 1m0s by healthy_deadline of 300ms" {
			return fmt.Errorf("last event %+v", last)
		}
		return nil
	})
}

// With health_check "manual" the client sets nothing, not even when a task
// fails (which any other mode reports as unhealthy).
func TestHealth_ManualSetsNothing(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(10*time.Millisecond, time.Minute, testutil.MockTask("t", map[string]any{"run_for": "200ms", "exit_code": 1}))
	manual := HealthCheckManual
	alloc.Job.TaskGroups[0].Update.HealthCheck = &manual
	_, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusFailed)
	if u := rec.anyHealth(); u != nil {
		t.Fatalf("manual health but the client sent %+v", u.DeploymentStatus)
	}
}

// A stopped allocation gets no health: its tasks end because the server
// asked, not because they are unhealthy.
func TestHealth_StopBeforeHealthySetsNothing(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(10*time.Second, time.Minute, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	ar, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusRunning)
	stop := *alloc
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(&stop)
	waitStatus(t, rec, structs.AllocClientStatusComplete)
	<-ar.WaitCh()
	if u := rec.anyHealth(); u != nil {
		t.Fatalf("stopped allocation reported health %+v", u.DeploymentStatus)
	}
}

// An in-place update keeps the allocation's tasks running, and one that
// moves it into a new deployment has its health judged again for it.
func TestHealth_InPlaceUpdateIntoNewDeploymentJudgesAgain(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(100*time.Millisecond, 10*time.Second, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	alloc.AllocModifyIndex = 10
	ar, rec := newRunner(t, alloc, d)
	first := waitHealth(t, rec)
	if !*first.DeploymentStatus.Healthy {
		t.Fatal("first deployment: unhealthy")
	}
	eventsBefore := eventTypes(first.TaskStates["t"])

	up := *alloc
	up.Job = alloc.Job.Copy()
	up.Job.Version++
	up.Job.TaskGroups[0].Meta = map[string]string{"count": "changed"}
	up.AllocModifyIndex = 20
	up.DeploymentID = "d2"
	up.DeploymentStatus = nil // the servers clear health for the new deployment
	ar.Update(&up)
	if ds := ar.Alloc().DeploymentStatus; ds != nil {
		t.Fatalf("the new deployment starts with the old health %+v", ds)
	}
	var second *structs.Allocation
	testutil.WaitFor(t, 10*time.Second, func() error {
		second = rec.last()
		if ds := second.DeploymentStatus; ds == nil || ds.Healthy == nil || !ds.Timestamp.After(first.DeploymentStatus.Timestamp) {
			return fmt.Errorf("no new health yet: %+v", ds)
		}
		return nil
	})
	if !*second.DeploymentStatus.Healthy {
		t.Fatal("second deployment: unhealthy")
	}
	if n := d.StartCount("t"); n != 1 {
		t.Fatalf("task started %d times: the in-place update restarted it", n)
	}
	if !second.TaskStates["t"].StartedAt.Equal(first.TaskStates["t"].StartedAt) {
		t.Fatal("task StartedAt changed across the in-place update")
	}
	if fmt.Sprint(eventTypes(second.TaskStates["t"])) != fmt.Sprint(eventsBefore) {
		t.Fatalf("events %v, before the update %v", eventTypes(second.TaskStates["t"]), eventsBefore)
	}
	if got := ar.Alloc(); got.Job.Version != up.Job.Version || got.AllocModifyIndex != 20 {
		t.Fatalf("runner still on job version %d index %d", got.Job.Version, got.AllocModifyIndex)
	}
}

// When the servers' copy brings health for the deployment being judged (an
// operator set it), the client stops judging and never overrides it, even
// when a task fails afterwards.
func TestHealth_ServerHealthEndsJudgement(t *testing.T) {
	d := mock.New()
	// The task fails when the test says so, after the servers' health
	// arrived (a fixed run_for raced the update on a loaded machine).
	alloc := deployedAlloc(time.Minute, 2*time.Minute, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	ar, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusRunning)
	healthy := true
	set := *alloc
	set.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Now()}
	ar.Update(&set)
	// The task dies on its own (not a stop the client asked for): a
	// failure, since the restart policy allows no attempt.
	if err := d.SignalTask(alloc.ID+"/t", "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, rec, structs.AllocClientStatusFailed)
	if u := rec.anyHealth(); u != nil {
		t.Fatalf("client sent %+v over the servers' health", u.DeploymentStatus)
	}
}

// A runner that starts with health already decided for its deployment (a
// restored allocation, whose health may never have reached the servers)
// keeps sending that health and judges nothing: a task failing later does
// not turn it unhealthy.
func TestHealth_RestoredHealthIsSentNotJudged(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(time.Minute, 2*time.Minute, testutil.MockTask("t", map[string]any{"run_for": "100ms", "exit_code": 1}))
	healthy, at := true, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	alloc.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at, Canary: true}
	_, rec := newRunner(t, alloc, d)
	got := waitStatus(t, rec, structs.AllocClientStatusFailed)
	if ds := got.DeploymentStatus; ds == nil || !*ds.Healthy || !ds.Timestamp.Equal(at) || !ds.Canary {
		t.Fatalf("sent %+v, want the restored healthy status", ds)
	}
}

// Health this client decided, then overridden by an operator on the
// servers: the client stops sending its own.
func TestHealth_OperatorOverrideStopsEcho(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(50*time.Millisecond, time.Minute, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	ar, _ := newRunner(t, alloc, d)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if ds := ar.Alloc().DeploymentStatus; ds == nil || ds.Healthy == nil {
			return fmt.Errorf("not judged yet")
		}
		return nil
	})
	unhealthy := false
	set := *alloc
	set.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &unhealthy, Timestamp: time.Now()}
	ar.Update(&set)
	if ds := ar.health.status(&set); ds != nil {
		t.Fatalf("client still sends %+v after the operator's override", ds)
	}
}
