package heapfloor

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 512 * mb, 100},         // nothing measured yet
		{64 * mb, 512 * mb, 700},   // goal 64 + 7×64 = 512
		{128 * mb, 512 * mb, 300},  // goal 512
		{200 * mb, 512 * mb, 156},  // goal ~512
		{256 * mb, 512 * mb, 100},  // twice the live heap reaches the floor
		{400 * mb, 512 * mb, 100},  // never below the default
		{1 * mb, 512 * mb, 2000},   // bounded
		{100 * mb, 0, 100},         // no floor
		{300 * mb, 1024 * mb, 241}, // goal ~1 GiB
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d MB, %d MB) = %d, want %d", c.live/mb, c.floor/mb, got, c.want)
		}
	}
}

// After a collection the tuner sets the percentage that makes the goal the
// floor, skips changes under 10%, and Stop restores the default.
func TestTunerFollowsCollections(t *testing.T) {
	var got atomic.Int64
	calls := make(chan int, 16)
	set := func(p int) int {
		got.Store(int64(p))
		calls <- p
		return 100
	}
	// A floor far above this test binary's live heap: the raise is the
	// maximum.
	tu := newTuner(1<<40, set)
	tu.arm()
	deadline := time.Now().Add(10 * time.Second)
	for got.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no percentage set after collections")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p := got.Load(); p != maxPercent {
		t.Fatalf("percentage %d, want %d", p, maxPercent)
	}
	tu.apply(maxPercent - 100) // within 10%: kept
	for len(calls) > 0 {
		if p := <-calls; p != maxPercent {
			t.Fatalf("set %d: a change under 10%% was applied", p)
		}
	}
	tu.Stop()
	if p := got.Load(); p != defaultPercent {
		t.Fatalf("after Stop: %d, want the default", p)
	}
}

func TestStartRespectsGOGC(t *testing.T) {
	t.Setenv("GOGC", "200")
	if tu := Start(512 << 20); tu != nil {
		tu.Stop()
		t.Fatal("tuning started although GOGC is set")
	}
	if tu := Start(0); tu != nil {
		t.Fatal("tuning started with no floor")
	}
}

func TestDefaultFloor(t *testing.T) {
	f := DefaultFloor()
	if f == 0 || f > 512<<20 {
		t.Fatalf("default floor %d", f)
	}
}
