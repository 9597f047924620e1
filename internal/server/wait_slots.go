package server

import (
	"sync"
	"time"
)

// waitSlots hands out channels closed at, or shortly after, a deadline.
// Every client parks a blocking pull on the servers, each with a wait of
// minutes: a timer per pull kept thousands in the runtime's timer heaps
// and creating them was 4 % of the server's CPU in the steady fill. Waits
// ending in the same slot share one channel and one timer instead; a slot
// is 1/64 of the wait (rounded down to a power of two milliseconds), so a
// wait ends at most ~1.6 % late.
type waitSlots struct {
	mu    sync.Mutex
	slots map[waitSlot]chan struct{}
}

type waitSlot struct {
	width time.Duration
	end   int64 // in units of width since the Unix epoch
}

// after returns a channel closed no earlier than d from now.
func (w *waitSlots) after(d time.Duration) <-chan struct{} {
	width := time.Millisecond
	for width*2 <= d/64 {
		width *= 2
	}
	now := time.Now()
	deadline := now.Add(d).UnixNano()
	key := waitSlot{width: width, end: (deadline + int64(width) - 1) / int64(width)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.slots[key]; ok {
		return ch
	}
	if w.slots == nil {
		w.slots = map[waitSlot]chan struct{}{}
	}
	ch := make(chan struct{})
	w.slots[key] = ch
	time.AfterFunc(time.Unix(0, key.end*int64(width)).Sub(now), func() {
		w.mu.Lock()
		delete(w.slots, key)
		w.mu.Unlock()
		close(ch)
	})
	return ch
}
