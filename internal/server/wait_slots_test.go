package server

import (
	"testing"
	"time"
)

// A slot's channel closes no earlier than the wait asked for and not much
// later; waits ending together share one channel; closed slots are dropped.
func TestWaitSlots(t *testing.T) {
	var w waitSlots
	for _, d := range []time.Duration{0, 5 * time.Millisecond, 80 * time.Millisecond, 640 * time.Millisecond} {
		start := time.Now()
		<-w.after(d)
		late := time.Since(start) - d
		if late < 0 || late > d/64+50*time.Millisecond {
			t.Fatalf("wait of %v ended %v after it was due", d, late)
		}
	}
	a, b := w.after(time.Hour), w.after(time.Hour)
	if a != b {
		t.Fatal("two waits ending in the same slot got different channels")
	}
	c := w.after(time.Minute)
	if c == a {
		t.Fatal("waits of different slots share a channel")
	}
	w.mu.Lock()
	n := len(w.slots)
	w.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d live slots, want 2 (the closed ones dropped)", n)
	}
}
