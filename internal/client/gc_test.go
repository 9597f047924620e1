package client

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
)

func allocDirExists(tc *testClient, id string) bool {
	_, err := os.Stat(filepath.Join(tc.cfg.AllocDir, id))
	return err == nil
}

func coded(err error) int {
	if err == nil {
		return 0
	}
	code, _ := structs.ErrorCode(err)
	return code
}

// /v1/client/allocation/<id>/gc: a running allocation is refused (400), an
// unknown one is a 404, a finished one loses its runner and alloc dir at
// once, and the next pulls do not run it again.
func TestClientGC_CollectAlloc(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.GC.Interval = time.Hour })
	tc.waitReady(t)
	a := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	if err := tc.CollectAlloc(a.ID); coded(err) != 400 {
		t.Fatalf("collecting a running allocation: %v", err)
	}
	if err := tc.CollectAlloc("nope"); coded(err) != 404 {
		t.Fatalf("collecting an unknown allocation: %v", err)
	}
	tc.srv.stopAlloc(a.ID)
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	testutil.WaitFor(t, 10*time.Second, func() error {
		ar, err := tc.getAllocRunner(a.ID)
		if err != nil {
			return err
		}
		if _, ok := runnerFinished(ar); !ok {
			return testutil.Errorf("runner not finished")
		}
		return nil
	})
	if !allocDirExists(tc, a.ID) {
		t.Fatal("alloc dir missing before GC")
	}
	if err := tc.CollectAlloc(a.ID); err != nil {
		t.Fatal(err)
	}
	if allocDirExists(tc, a.ID) {
		t.Fatal("alloc dir still on disk after GC")
	}
	if _, err := tc.getAllocRunner(a.ID); err == nil {
		t.Fatal("runner still present after GC")
	}
	// A later server-side change to it starts nothing.
	tc.place(structs.JobTypeBatch, testutil.MockTask("t2", map[string]any{"run_for": "1ms"}))
	tc.srv.upsertAlloc(tc.srv.alloc(a.ID))
	testutil.WaitFor(t, 10*time.Second, func() error {
		if tc.drv.StartCount("t2") != 1 {
			return testutil.Errorf("second alloc not started")
		}
		return nil
	})
	if n := tc.drv.StartCount("t"); n != 1 {
		t.Fatalf("collected allocation started %d times", n)
	}
}

// gc_max_allocs: past it, finished allocations go oldest first; running
// ones stay whatever the count.
func TestClientGC_MaxAllocs(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.GC = GCConfig{Interval: 20 * time.Millisecond, MaxAllocs: 2} })
	tc.waitReady(t)
	first := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1ms"}))
	tc.waitServerStatus(t, first.ID, structs.AllocClientStatusComplete)
	second := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1ms"}))
	tc.waitServerStatus(t, second.ID, structs.AllocClientStatusComplete)
	running := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, running.ID, structs.AllocClientStatusRunning)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if allocDirExists(tc, first.ID) {
			return testutil.Errorf("oldest finished alloc not collected")
		}
		return nil
	})
	if !allocDirExists(tc, second.ID) || !allocDirExists(tc, running.ID) {
		t.Fatal("collected more than needed to get back to gc_max_allocs")
	}
	if tc.CollectAll() != 1 || allocDirExists(tc, second.ID) || !allocDirExists(tc, running.ID) {
		t.Fatal("/v1/client/gc must collect every finished allocation and nothing running")
	}
}

// The servers' GC of an allocation wakes the client's pull: its runner is
// destroyed and its alloc dir removed.
func TestClientGC_ServerCollectedRemovesAllocDir(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.GC.Interval = time.Hour })
	tc.waitReady(t)
	a := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1ms"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	if !allocDirExists(tc, a.ID) {
		t.Fatal("alloc dir missing")
	}
	tc.srv.gcAlloc(a.ID)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if allocDirExists(tc, a.ID) {
			return testutil.Errorf("alloc dir still on disk")
		}
		return nil
	})
}

// Past gc_disk_usage_threshold (or the inode one), finished allocations
// go oldest first until usage is back under it; running ones never.
func TestClientGC_DiskThreshold(t *testing.T) {
	var mu sync.Mutex
	over := false
	var tc *testClient
	var done []*structs.Allocation
	destroyed, calls := 0, 0
	// Over the threshold, each finished allocation collected frees 10 points.
	fsUsage = func(string) (float64, float64, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if !over {
			return 50, 10, nil
		}
		n := 0
		for _, a := range done {
			if !allocDirExists(tc, a.ID) {
				n++
			}
		}
		destroyed = n
		return 95 - 10*float64(n), 10, nil
	}
	t.Cleanup(func() { fsUsage = statfsUsage })
	tc = newTestClient(t, func(c *Config) { c.GC = GCConfig{Interval: 20 * time.Millisecond, DiskUsageThreshold: 80} })
	tc.waitReady(t)
	for i := 0; i < 3; i++ {
		a := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1ms"}))
		tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
		mu.Lock()
		done = append(done, a)
		mu.Unlock()
	}
	running := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, running.ID, structs.AllocClientStatusRunning)
	if !allocDirExists(tc, done[0].ID) {
		t.Fatal("collected under the threshold")
	}
	mu.Lock()
	over = true
	mu.Unlock()
	// Done once the GC has read the usage back under the threshold (with
	// two collected), not when the second alloc dir is gone: the GC reads
	// the usage again after each collection, and the test then caught it
	// in between (1 destroyed as far as the usage it had read).
	var seen int
	testutil.WaitFor(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if destroyed < 2 {
			return testutil.Errorf("the GC has not yet seen the two oldest finished allocs collected (%d)", destroyed)
		}
		seen = calls
		return nil
	})
	// A later pass (gc_interval is 20 ms) collects nothing more either.
	testutil.WaitFor(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if calls <= seen+1 {
			return testutil.Errorf("no later GC pass yet")
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if allocDirExists(tc, done[0].ID) || allocDirExists(tc, done[1].ID) || !allocDirExists(tc, done[2].ID) ||
		!allocDirExists(tc, running.ID) || destroyed != 2 {
		t.Fatalf("collected other than the two oldest finished allocs (%d destroyed)", destroyed)
	}
}

// gc_max_allocs is enforced within about a second of new allocations
// arriving, not only at gc_interval.
func TestClientGC_MaxAllocsBetweenIntervals(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.GC = GCConfig{Interval: time.Hour, MaxAllocs: 1} })
	tc.waitReady(t)
	first := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1ms"}))
	tc.waitServerStatus(t, first.ID, structs.AllocClientStatusComplete)
	second := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, second.ID, structs.AllocClientStatusRunning)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if allocDirExists(tc, first.ID) {
			return testutil.Errorf("finished alloc kept past gc_max_allocs")
		}
		return nil
	})
}
