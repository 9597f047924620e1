package fsm

import (
	"sort"
	"sync"
	"time"
)

// TimeTable maps Raft indexes to the wall-clock time their entries were
// appended, so the garbage collector can tell an object's age from its
// ModifyIndex alone. The time is the entry's raft.Log.AppendedAt, stamped
// by the leader that appended it and replicated with the entry, so every
// server witnesses the same pairs; entries without it (written by tests or
// by an older raft) are not witnessed.
//
// One pair is kept per Granularity at most, plus one for the newest entry.
// Beyond TimeTableMaxEntries
// pairs, the pair whose loss costs the least precision relative to its age
// is dropped: recent history stays exact to the granularity and older
// history keeps a precision proportional to its age, so any age can be
// answered from a bounded table (1,024 pairs, 16 KiB). It is persisted in
// FSM snapshots.
//
// Answers err on the young side: NearestIndex(t) is the newest index known
// to have been appended at or before t, so everything at or below it is at
// least as old as asked; an index written later than the newest witnessed
// pair before t is never reported old. GC may come late, never early.
type TimeTable struct {
	mu          sync.RWMutex
	granularity time.Duration
	entries     []TimeTableEntry // index and time ascending
}

// TimeTableEntry is one witnessed (index, time) pair.
type TimeTableEntry struct {
	Index uint64
	Time  int64 // unix nanoseconds
}

// TimeTableMaxEntries bounds the table (see TimeTable).
const TimeTableMaxEntries = 1024

// DefaultTimeTableGranularity is the spacing of witnessed pairs.
const DefaultTimeTableGranularity = time.Second

// NewTimeTable returns an empty table; granularity <= 0 takes the default.
func NewTimeTable(granularity time.Duration) *TimeTable {
	if granularity <= 0 {
		granularity = DefaultTimeTableGranularity
	}
	return &TimeTable{granularity: granularity}
}

// Witness records that index was appended at t. The newest pair always
// follows the newest entry (so the last writes before a quiet spell age
// like the others); the pairs before it are at least a granularity apart.
func (tt *TimeTable) Witness(index uint64, t time.Time) {
	if t.IsZero() {
		return
	}
	ns := t.UnixNano()
	tt.mu.Lock()
	defer tt.mu.Unlock()
	n := len(tt.entries)
	if n > 0 && (index <= tt.entries[n-1].Index || ns < tt.entries[n-1].Time) {
		return
	}
	if n >= 2 && ns-tt.entries[n-2].Time < int64(tt.granularity) {
		tt.entries[n-1] = TimeTableEntry{Index: index, Time: ns}
		return
	}
	tt.entries = append(tt.entries, TimeTableEntry{Index: index, Time: ns})
	if len(tt.entries) > TimeTableMaxEntries {
		tt.thinLocked()
	}
}

// thinLocked drops the one pair whose removal costs the least precision
// relative to age: the one whose neighbours are closest together compared
// with how old the older neighbour is. The pairs thus stay spaced about
// evenly on a logarithmic scale of age (1,024 pairs keep a year within
// about 2 % of its age); the oldest and newest stay.
func (tt *TimeTable) thinLocked() {
	e := tt.entries
	now := e[len(e)-1].Time
	best, bestCost := -1, 0.0
	for i := 1; i < len(e)-1; i++ {
		age := float64(now - e[i-1].Time)
		if age <= 0 {
			continue
		}
		cost := float64(e[i+1].Time-e[i-1].Time) / age
		if best < 0 || cost < bestCost {
			best, bestCost = i, cost
		}
	}
	if best < 0 {
		best = 1
	}
	tt.entries = append(e[:best], e[best+1:]...)
}

// NearestIndex returns the newest witnessed index appended at or before t,
// 0 if none is.
func (tt *TimeTable) NearestIndex(t time.Time) uint64 {
	ns := t.UnixNano()
	tt.mu.RLock()
	defer tt.mu.RUnlock()
	i := sort.Search(len(tt.entries), func(i int) bool { return tt.entries[i].Time > ns })
	if i == 0 {
		return 0
	}
	return tt.entries[i-1].Index
}

// Entries returns a copy of the table (snapshots, tests).
func (tt *TimeTable) Entries() []TimeTableEntry {
	tt.mu.RLock()
	defer tt.mu.RUnlock()
	return append([]TimeTableEntry(nil), tt.entries...)
}

// restore replaces the table with a snapshot's pairs, dropping any out of
// order ones.
func (tt *TimeTable) restore(entries []TimeTableEntry) {
	out := make([]TimeTableEntry, 0, len(entries))
	for _, e := range entries {
		if n := len(out); n > 0 && (e.Index <= out[n-1].Index || e.Time < out[n-1].Time) {
			continue
		}
		out = append(out, e)
	}
	tt.mu.Lock()
	tt.entries = out
	for len(tt.entries) > TimeTableMaxEntries {
		tt.thinLocked()
	}
	tt.mu.Unlock()
}
