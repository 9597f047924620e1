package allocrunner

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// fakeRegistrar records what the runner asks of the servers.
type fakeRegistrar struct {
	mu      sync.Mutex
	regs    map[string]*structs.ServiceRegistration
	allocDs []string
}

func (f *fakeRegistrar) UpsertServices(regs []*structs.ServiceRegistration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range regs {
		f.regs[r.ID] = r
	}
	return nil
}

func (f *fakeRegistrar) DeleteService(ns, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.regs, id)
	return nil
}

func (f *fakeRegistrar) DeleteAllocServices(nodeID, allocID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allocDs = append(f.allocDs, allocID)
	f.regs = map[string]*structs.ServiceRegistration{}
	return nil
}

func (f *fakeRegistrar) snapshot() ([]*structs.ServiceRegistration, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*structs.ServiceRegistration
	for _, r := range f.regs {
		out = append(out, r)
	}
	return out, append([]string(nil), f.allocDs...)
}

// checkedServer answers 200 while ok is set, 500 otherwise.
func checkedServer(t *testing.T, ok *atomic.Bool) (string, int) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" || !ok.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Write([]byte("fine"))
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return host, p
}

// serviceAlloc is a running-forever task with a group nomad service on
// port label "http" (host:port) and an http check.
func serviceAlloc(host string, port int, check structs.ServiceCheck) *structs.Allocation {
	a := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	a.NodeID = "node1"
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: structs.AllocatedPorts{{Label: "http", Value: port, HostIP: host}}}}
	a.Job.TaskGroups[0].Services = []*structs.Service{{Name: "${NOMAD_GROUP_NAME}-api", Provider: "nomad", PortLabel: "http",
		Tags: []string{"dc-${node.datacenter}"}, Checks: []structs.ServiceCheck{check}}}
	return a
}

func newServiceRunner(t *testing.T, a *structs.Allocation, reg ServiceRegistrar) (*AllocRunner, *recorder) {
	t.Helper()
	rec := &recorder{}
	d := mock.New()
	ar, err := New(Config{
		Alloc: a, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1", Datacenter: "dc9"},
		Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: rec.update,
		MaxKillTimeout: 2 * time.Second, Services: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	t.Cleanup(ar.Shutdown)
	return ar, rec
}

func waitCheck(t *testing.T, ar *AllocRunner, status string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, c := range ar.CheckStatuses() {
			if c.Status == status {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("check never became %s: %+v", status, ar.CheckStatuses())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The running allocation's service is registered at its port's address;
// its check turns passing only after success_before_passing successes and
// failing after failures_before_critical failures; a kill deregisters.
func TestServices_RegisterCheckAndDeregister(t *testing.T) {
	var ok atomic.Bool
	host, port := checkedServer(t, &ok)
	a := serviceAlloc(host, port, structs.ServiceCheck{Name: "alive", Type: "http", Path: "/health",
		Interval: 20 * time.Millisecond, Timeout: time.Second, SuccessBeforePassing: 3, FailuresBeforeCritical: 3})
	reg := &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}
	ar, rec := newServiceRunner(t, a, reg)
	waitStatus(t, rec, structs.AllocClientStatusRunning)

	testutil.WaitFor(t, 10*time.Second, func() error {
		if regs, _ := reg.snapshot(); len(regs) != 1 {
			return fmt.Errorf("registrations %+v", regs)
		}
		return nil
	})
	regs, _ := reg.snapshot()
	r := regs[0]
	wantID := "_nomad-task-" + a.ID + "-web-web-api-http"
	if r.ID != wantID || r.ServiceName != "web-api" || r.Address != host || r.Port != port || r.Datacenter != "dc9" || r.NodeID != "node1" ||
		r.JobID != a.JobID || r.Namespace != "default" || len(r.Tags) != 1 || r.Tags[0] != "dc-dc9" {
		t.Fatalf("registration %+v, want %s at %s:%d", r, wantID, host, port)
	}

	// Failing from the start: pending until three failures.
	waitCheck(t, ar, CheckFailure)
	ok.Store(true)
	waitCheck(t, ar, CheckSuccess)
	for _, c := range ar.CheckStatuses() {
		if c.Check != "alive" || c.Service != "web-api" || c.Group != "web" || c.Mode != "healthiness" || c.StatusCode != 200 || c.Output != "fine" {
			t.Fatalf("check status %+v", c)
		}
	}

	ar.Kill("test")
	testutil.WaitFor(t, 10*time.Second, func() error {
		if _, ds := reg.snapshot(); len(ds) != 1 || ds[0] != a.ID {
			return fmt.Errorf("alloc deletes %v", ds)
		}
		return nil
	})
}

// One failure short of failures_before_critical keeps a passing check
// passing.
func TestChecks_Thresholds(t *testing.T) {
	cr := &checkRunner{ar: &AllocRunner{cfg: Config{Clock: time.Now}, health: &healthWatcher{poke: make(chan struct{}, 1)}},
		checks: map[string]*checkState{}}
	st := &checkState{def: serviceDef{svc: &structs.Service{}}, check: structs.ServiceCheck{SuccessBeforePassing: 2, FailuresBeforeCritical: 2}}
	st.status.Status, st.status.Mode = CheckPending, checkModeHealthiness
	cr.checks["c"] = st
	steps := []struct {
		ok   bool
		want string
	}{{true, CheckPending}, {true, CheckSuccess}, {false, CheckSuccess}, {true, CheckSuccess}, {false, CheckSuccess}, {false, CheckFailure}, {true, CheckFailure}, {true, CheckSuccess}}
	for i, s := range steps {
		cr.record(st, s.ok, 0, "")
		if st.status.Status != s.want {
			t.Fatalf("step %d: status %s, want %s", i, st.status.Status, s.want)
		}
	}
	if has, since := cr.gate(); !has || since.IsZero() {
		t.Fatalf("gate = %v %v, want passing", has, since)
	}
}

// health_check = "checks": the allocation is not healthy while its check
// fails, however long its task runs; it is once the check passes.
func TestHealth_ChecksGateHealth(t *testing.T) {
	var ok atomic.Bool
	host, port := checkedServer(t, &ok)
	a := serviceAlloc(host, port, structs.ServiceCheck{Name: "alive", Type: "http", Path: "/health",
		Interval: 20 * time.Millisecond, Timeout: time.Second})
	a.DeploymentID = "d1"
	mode, minHealthy, deadline := HealthCheckChecks, 100*time.Millisecond, time.Minute
	a.Job.TaskGroups[0].Update = &structs.UpdateStrategy{HealthCheck: &mode, MinHealthyTime: &minHealthy, HealthyDeadline: &deadline}
	reg := &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}
	ar, rec := newServiceRunner(t, a, reg)
	run := waitStatus(t, rec, structs.AllocClientStatusRunning)
	waitCheck(t, ar, CheckFailure)
	// Well past min_healthy_time of running, still undecided.
	for time.Since(run.TaskStates["t"].StartedAt) < 4*minHealthy {
		time.Sleep(10 * time.Millisecond)
	}
	if got := rec.anyHealth(); got != nil {
		t.Fatalf("health decided while the check fails: %+v", got.DeploymentStatus)
	}
	ok.Store(true)
	got := waitHealth(t, rec)
	if !*got.DeploymentStatus.Healthy {
		t.Fatalf("unhealthy after the check passed")
	}
}

func TestGateChecks(t *testing.T) {
	p := healthPolicy{mode: HealthCheckChecks, minHealthy: 10 * time.Second, deadline: time.Minute}
	healthy := healthVerdict{decided: true, healthy: true}
	cases := []struct {
		name  string
		since time.Time
		now   time.Time
		want  healthVerdict
	}{
		{"not passing", time.Time{}, t0.Add(20 * time.Second), healthVerdict{recheck: t0.Add(time.Minute)}},
		{"passing too briefly", t0.Add(15 * time.Second), t0.Add(20 * time.Second), healthVerdict{recheck: t0.Add(25 * time.Second)}},
		{"passing long enough", t0.Add(5 * time.Second), t0.Add(20 * time.Second), healthy},
	}
	for _, c := range cases {
		if got := gateChecks(healthy, c.since, p, t0, c.now); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := gateChecks(healthy, time.Time{}, p, t0, t0.Add(2*time.Minute)); !got.decided || got.healthy || !got.deadline {
		t.Errorf("past the deadline: %+v", got)
	}
	unhealthy := healthVerdict{decided: true, reason: "x"}
	if got := gateChecks(unhealthy, time.Time{}, p, t0, t0); got != unhealthy {
		t.Errorf("an unhealthy verdict changed: %+v", got)
	}
}
