package clock

import (
	"testing"
	"time"
)

func TestFakeFiresInOrderAndStop(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	var got []int
	c.AfterFunc(2*time.Second, func() { got = append(got, 2) })
	c.AfterFunc(time.Second, func() { got = append(got, 1) })
	stopped := c.AfterFunc(time.Second, func() { got = append(got, 99) })
	if !stopped.Stop() {
		t.Fatal("Stop of an armed timer must report true")
	}
	c.Advance(1500 * time.Millisecond)
	if len(got) != 1 || got[0] != 1 {
		t.Fatalf("after 1.5s got %v, want [1]", got)
	}
	c.Advance(time.Second)
	if len(got) != 2 || got[1] != 2 {
		t.Fatalf("after 2.5s got %v, want [1 2]", got)
	}
	if c.Pending() != 0 {
		t.Fatalf("pending = %d", c.Pending())
	}
}

func TestFakeChainedTimersUseFiringTime(t *testing.T) {
	start := time.Unix(0, 0)
	c := NewFake(start)
	var firedAt []time.Duration
	c.AfterFunc(time.Second, func() {
		firedAt = append(firedAt, c.Now().Sub(start))
		c.AfterFunc(time.Second, func() { firedAt = append(firedAt, c.Now().Sub(start)) })
	})
	c.Advance(time.Hour)
	if len(firedAt) != 2 || firedAt[0] != time.Second || firedAt[1] != 2*time.Second {
		t.Fatalf("fired at %v, want [1s 2s]", firedAt)
	}
	if c.Now().Sub(start) != time.Hour {
		t.Fatalf("now = %v", c.Now().Sub(start))
	}
}

func TestFakeAfterFuncAtIsAbsolute(t *testing.T) {
	start := time.Unix(0, 0)
	c := NewFake(start)
	var fired time.Duration = -1
	c.AfterFuncAt(start.Add(10*time.Second), func() { fired = c.Now().Sub(start) })
	c.Advance(9 * time.Second)
	if fired != -1 {
		t.Fatalf("fired early at %v", fired)
	}
	c.Advance(time.Second)
	if fired != 10*time.Second {
		t.Fatalf("fired at %v, want 10s", fired)
	}
	// A moment already past fires on the next Advance, even Advance(0).
	past := false
	c.AfterFuncAt(start, func() { past = true })
	c.Advance(0)
	if !past {
		t.Fatal("a past moment did not fire on Advance(0)")
	}
}
