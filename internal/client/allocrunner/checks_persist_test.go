package allocrunner

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// A client restart keeps the checks' results: the restarted runner shows
// the stored result before its check runs again, the check continues from
// its stored result (with success_before_passing = 3 it does not start over
// as pending), a stopped allocation's results are cleared, and a collected
// one's deleted.
func TestChecks_ResultsSurviveRestart(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("fine"))
	}))
	t.Cleanup(srv.Close)
	host, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	a := serviceAlloc(host, port, structs.ServiceCheck{Name: "alive", Type: "http", Path: "/health",
		Interval: 300 * time.Millisecond, Timeout: time.Second, SuccessBeforePassing: 3})

	db, err := state.Open(filepath.Join(t.TempDir(), state.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	allocRoot := t.TempDir()
	d := mock.New() // one driver across both runners: the task keeps running
	newRunner := func() *AllocRunner {
		ar, err := New(Config{Alloc: a, AllocRoot: allocRoot, Node: &structs.Node{ID: "node1", Name: "n1", Datacenter: "dc1"},
			Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: (&recorder{}).update, MaxKillTimeout: 2 * time.Second,
			Services: &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}, StateDB: db})
		if err != nil {
			t.Fatal(err)
		}
		return ar
	}
	load := func() *state.AllocRecord {
		recs, err := db.Allocs()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Alloc != nil && r.Alloc.ID == a.ID {
				return r
			}
		}
		return nil
	}
	mustOK(t, db.PutAlloc(a))

	ar1 := newRunner()
	ar1.Start()
	waitCheck(t, ar1, CheckSuccess)
	before := ar1.CheckStatuses()
	ar1.Detach() // the client shuts down; the task keeps running

	rec := load()
	if rec == nil || len(rec.Checks) != 1 {
		t.Fatalf("stored check results: %+v", rec)
	}
	ar2 := newRunner()
	ar2.Restore(rec)
	// Not started yet: what the last client saw.
	if got := ar2.CheckStatuses(); len(got) != 1 || fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("restored results %+v, want %+v", got, before)
	}
	n := hits.Load()
	ar2.Start()
	t.Cleanup(ar2.Shutdown)
	// Two new probes: the check never leaves success (starting over, it
	// would be pending until the third).
	deadline := time.Now().Add(10 * time.Second)
	for hits.Load() < n+2 {
		for _, c := range ar2.CheckStatuses() {
			if c.Status != CheckSuccess {
				t.Fatalf("status %s after the restart, want success", c.Status)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the check did not run again")
		}
		time.Sleep(5 * time.Millisecond)
	}

	ar2.Kill("stop")
	<-ar2.WaitCh()
	testutil.WaitFor(t, 10*time.Second, func() error {
		if r := load(); r == nil || len(r.Checks) != 0 {
			return fmt.Errorf("a stopped allocation's check results are still stored: %+v", r)
		}
		return nil
	})
	mustOK(t, db.DeleteAlloc(a.ID)) // what the client's GC does
	if r := load(); r != nil {
		t.Fatalf("a collected allocation's state is still stored: %+v", r)
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A check removed from the job while the client was down (the update
// that removed the group's only service reaches the restarted client) no
// longer answers with its stored result: before, a restored result stood
// until its check ran again, which a removed check never does, so
// `alloc checks` showed it for the allocation's whole life.
func TestChecks_RemovedCheckForgetsRestoredResult(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("fine")) }))
	t.Cleanup(srv.Close)
	host, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	a := serviceAlloc(host, port, structs.ServiceCheck{Name: "alive", Type: "http", Path: "/health",
		Interval: 200 * time.Millisecond, Timeout: time.Second})
	db, err := state.Open(filepath.Join(t.TempDir(), state.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	allocRoot := t.TempDir()
	d := mock.New()
	newRunner := func() *AllocRunner {
		ar, err := New(Config{Alloc: a, AllocRoot: allocRoot, Node: &structs.Node{ID: "node1", Name: "n1", Datacenter: "dc1"},
			Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: (&recorder{}).update, MaxKillTimeout: 2 * time.Second,
			Services: &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}, StateDB: db})
		if err != nil {
			t.Fatal(err)
		}
		return ar
	}
	mustOK(t, db.PutAlloc(a))
	ar1 := newRunner()
	ar1.Start()
	waitCheck(t, ar1, CheckSuccess)
	ar1.Detach()

	recs, err := db.Allocs()
	if err != nil || len(recs) != 1 || len(recs[0].Checks) != 1 {
		t.Fatalf("stored: %+v %v", recs, err)
	}
	ar2 := newRunner()
	ar2.Restore(recs[0])
	ar2.Start()
	t.Cleanup(ar2.Shutdown)
	// The job update: the group's service and its check are gone.
	up := *a
	job := *a.Job
	tg := *job.TaskGroups[0]
	tg.Services = nil
	job.TaskGroups = []*structs.TaskGroup{&tg}
	up.Job = &job
	up.AllocModifyIndex++
	ar2.Update(&up)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if got := ar2.CheckStatuses(); len(got) != 0 {
			return fmt.Errorf("a removed check still answers: %+v", got)
		}
		return nil
	})
}

// gatedDB holds each write of check results until the test releases it.
type gatedDB struct {
	*state.DB
	open    atomic.Bool
	writing chan map[string]*state.CheckResult
	release chan struct{}
}

func (g *gatedDB) PutCheckResults(allocID string, results map[string]*state.CheckResult) error {
	if !g.open.Load() {
		g.writing <- results
		<-g.release
	}
	return g.DB.PutCheckResults(allocID, results)
}

// A check's result is stored before it is shown. Before, it was shown
// first: a client shut down in between (it saw the result, then detached)
// skipped the write, and the restarted client showed the older result
// (pending) until the check ran again, which CI's race step caught in
// TestChecks_ResultsSurviveRestart and TestClient_CheckResultsSurviveRestart.
func TestChecks_ResultStoredBeforeShown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("fine")) }))
	t.Cleanup(srv.Close)
	host, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	a := serviceAlloc(host, port, structs.ServiceCheck{Name: "alive", Type: "http", Path: "/health",
		Interval: time.Hour, Timeout: time.Second})
	sdb, err := state.Open(filepath.Join(t.TempDir(), state.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.Close() })
	db := &gatedDB{DB: sdb, writing: make(chan map[string]*state.CheckResult), release: make(chan struct{})}
	mustOK(t, db.PutAlloc(a))
	d := mock.New()
	ar, err := New(Config{Alloc: a, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1", Datacenter: "dc1"},
		Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: (&recorder{}).update, MaxKillTimeout: 2 * time.Second,
		Services: &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}, StateDB: db})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	t.Cleanup(ar.Shutdown)
	t.Cleanup(func() { db.open.Store(true) })
	for stored := false; !stored; {
		select {
		case results := <-db.writing:
			for _, r := range results {
				stored = stored || r.Status.Status == CheckSuccess
			}
			if stored {
				for _, c := range ar.CheckStatuses() {
					if c.Status == CheckSuccess {
						db.release <- struct{}{}
						t.Fatal("the check's success is shown while it is still being stored")
					}
				}
			}
			db.release <- struct{}{}
		case <-time.After(10 * time.Second):
			t.Fatalf("no success stored; checks %+v", ar.CheckStatuses())
		}
	}
	db.open.Store(true)
	waitCheck(t, ar, CheckSuccess)
	ar.Detach() // the client shuts down once the result is shown
	recs, err := sdb.Allocs()
	if err != nil || len(recs) != 1 || len(recs[0].Checks) != 1 {
		t.Fatalf("stored: %+v %v", recs, err)
	}
	for _, r := range recs[0].Checks {
		if r.Status.Status != CheckSuccess {
			t.Fatalf("stored %+v, want the success the client showed", r.Status)
		}
	}
}
