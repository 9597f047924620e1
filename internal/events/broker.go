package events

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// DefaultBufferSize is the number of entries' batches the ring keeps
// (Nomad's server.event_buffer_size).
const DefaultBufferSize = 100

// ErrClosed ends every subscription when the broker is closed (the server
// shuts down).
var ErrClosed = errors.New("event stream closed: the server is shutting down")

// FellBehindError ends a subscription whose reader fell so far behind that
// the ring overwrote the next batch it had to read.
type FellBehindError struct {
	Next uint64 // the index to resubscribe from (the batch after the last one read)
	Size int
}

func (e *FellBehindError) Error() string {
	return fmt.Sprintf("event stream subscriber fell behind: the server keeps the last %d entries (server.event_buffer_size) and this reader's next one (index %d) was dropped; resubscribe with index=%d",
		e.Size, e.Next, e.Next)
}

// batch is what one Raft entry changed. Its events and its frame are
// built on first read, once for every reader.
type batch struct {
	index   uint64
	typ     string
	changes []memdb.Change

	once   sync.Once
	events []*Event
	// full is the frame of all the events; each event's JSON is a slice
	// of it, so the batch holds one encoding of each event.
	full []byte
}

// build returns the batch's events, encoded.
func (b *batch) build() []*Event {
	b.once.Do(func() {
		out := make([]*Event, 0, len(b.changes))
		for i := range b.changes {
			if e := fromChange(b.typ, b.index, &b.changes[i]); e != nil {
				out = append(out, e)
			}
		}
		b.changes = nil // the events hold what is needed
		encs := make([][]byte, len(out))
		for i, e := range out {
			encs[i] = e.encode()
		}
		b.full = frame(b.index, encs)
		// Point each event at its bytes in the frame: after the prefix,
		// the encodings follow one another, separated by commas.
		off := len(framePrefix(b.index))
		for i, e := range out {
			e.json = b.full[off : off+len(encs[i]) : off+len(encs[i])]
			off += len(encs[i]) + 1
		}
		b.events = out
	})
	return b.events
}

func (b *batch) fullFrame() []byte {
	b.build()
	return b.full
}

// Broker keeps the last batches of events in a ring and serves
// subscriptions over it. Publish never blocks on a subscriber.
type Broker struct {
	mu     sync.Mutex
	ring   []*batch
	next   uint64        // sequence number of the next batch; ring[seq%len]
	notify chan struct{} // closed and replaced at every Publish
	closed bool
	// evicted is the index of the newest batch the ring has overwritten.
	evicted uint64
}

// NewBroker returns a broker keeping size batches (at least 1).
func NewBroker(size int) *Broker {
	if size < 1 {
		size = 1
	}
	return &Broker{ring: make([]*batch, size), notify: make(chan struct{})}
}

// Publish records the changes one Raft entry committed at index (one list
// per transaction, in commit order). Only the changes to tables with
// events are kept (copied: the caller may reuse its lists); an entry of a
// type without events, or that changed none of those tables, publishes
// nothing. Safe to call from the FSM: one short lock, no waiting.
func (b *Broker) Publish(index uint64, msgType structs.MessageType, changes []memdb.Changes) {
	typ, ok := msgTypeEvents[msgType]
	if !ok {
		return
	}
	n := 0
	for _, cs := range changes {
		for i := range cs {
			if _, ok := tableTopics[cs[i].Table]; ok {
				n++
			}
		}
	}
	if n == 0 {
		return
	}
	kept := make([]memdb.Change, 0, n)
	for _, cs := range changes {
		for i := range cs {
			if _, ok := tableTopics[cs[i].Table]; ok {
				kept = append(kept, cs[i])
			}
		}
	}
	bt := &batch{index: index, typ: typ, changes: kept}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	slot := b.next % uint64(len(b.ring))
	if old := b.ring[slot]; old != nil {
		b.evicted = old.index
	}
	b.ring[slot] = bt
	b.next++
	ch := b.notify
	b.notify = make(chan struct{})
	b.mu.Unlock()
	close(ch)
}

// Close ends every subscription with ErrClosed.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.notify)
}

// Len is the number of batches the ring holds now.
func (b *Broker) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next < uint64(len(b.ring)) {
		return int(b.next)
	}
	return len(b.ring)
}

// oldestLocked is the sequence number of the oldest batch still held.
func (b *Broker) oldestLocked() uint64 {
	if size := uint64(len(b.ring)); b.next > size {
		return b.next - size
	}
	return 0
}

// Subscribe starts a subscription at the oldest buffered batch whose index
// is at least req.Index (index 0: the oldest buffered batch). Batches
// already dropped from the ring are skipped silently, as Nomad does; a
// later index than any buffered starts with the next entry.
func (b *Broker) Subscribe(req *Request) *Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	seq := b.oldestLocked()
	for ; seq < b.next; seq++ {
		if b.ring[seq%uint64(len(b.ring))].index >= req.Index {
			break
		}
	}
	return &Subscription{b: b, req: req, seq: seq}
}

// Resume subscribes from req.Index as a continuation of a stream that has
// read every batch before it (a poll of a forwarded stream): when a batch
// at or after req.Index has already left the ring, it returns a
// *FellBehindError instead of skipping it.
func (b *Broker) Resume(req *Request) (*Subscription, error) {
	b.mu.Lock()
	evicted := b.evicted
	b.mu.Unlock()
	if req.Index > 0 && evicted >= req.Index {
		return nil, &FellBehindError{Next: req.Index, Size: len(b.ring)}
	}
	s := b.Subscribe(req)
	// Between the check and Subscribe the ring may have moved on: the
	// subscription's own check reports it at the first Next.
	return s, nil
}

// Subscription reads the ring from its own cursor.
type Subscription struct {
	b    *Broker
	req  *Request
	seq  uint64 // the next batch to read
	last uint64 // index of the last batch read
}

// Next returns the next batch's events that match the subscription, with
// the batch's index; it waits for one until ctx is done. It returns a
// *FellBehindError when the ring dropped the next batch before it was
// read, ErrClosed when the broker closed, or ctx's error.
func (s *Subscription) Next(ctx context.Context) (uint64, []*Event, error) {
	bt, evs, err := s.next(ctx)
	if err != nil {
		return 0, nil, err
	}
	return bt.index, evs, nil
}

// NextFrame is Next as the frame line the HTTP stream writes. A reader
// that takes a whole batch shares the batch's one frame (read-only).
func (s *Subscription) NextFrame(ctx context.Context) ([]byte, error) {
	bt, evs, err := s.next(ctx)
	if err != nil {
		return nil, err
	}
	if len(evs) == len(bt.events) {
		return bt.fullFrame(), nil
	}
	return Frame(bt.index, evs), nil
}

func (s *Subscription) next(ctx context.Context) (*batch, []*Event, error) {
	for {
		b := s.b
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if s.seq < b.oldestLocked() {
			b.mu.Unlock()
			next := s.req.Index
			if s.last > 0 {
				next = s.last + 1
			}
			return nil, nil, &FellBehindError{Next: next, Size: len(b.ring)}
		}
		if s.seq == b.next {
			ch := b.notify
			b.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		bt := b.ring[s.seq%uint64(len(b.ring))]
		b.mu.Unlock()
		s.seq++
		s.last = bt.index
		all := bt.build()
		var out []*Event
		for i, e := range all {
			if !s.req.Matches(e) {
				continue
			}
			if out == nil {
				if i == 0 && s.req.matchesAll(all) {
					return bt, all, nil
				}
				out = make([]*Event, 0, len(all)-i)
			}
			out = append(out, e)
		}
		if len(out) > 0 {
			return bt, out, nil
		}
	}
}
