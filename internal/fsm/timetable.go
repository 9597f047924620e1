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
// One pair is kept per Granularity at most. When the table holds
// TimeTableMaxEntries pairs, every second pair of its older half is dropped:
// recent history stays exact to the granularity and older history keeps a
// precision proportional to its age, so any age can be answered from a
// bounded table (1,024 pairs, 16 KiB). It is persisted in FSM snapshots.
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

// Witness records that index was appended at t, unless the newest pair is
// less than a granularity older or t does not move the table forward.
func (tt *TimeTable) Witness(index uint64, t time.Time) {
	if t.IsZero() {
		return
	}
	ns := t.UnixNano()
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if n := len(tt.entries); n > 0 {
		last := tt.entries[n-1]
		if index <= last.Index || ns < last.Time+int64(tt.granularity) {
			return
		}
	}
	tt.entries = append(tt.entries, TimeTableEntry{Index: index, Time: ns})
	if len(tt.entries) > TimeTableMaxEntries {
		tt.thinLocked()
	}
}

// thinLocked drops every second pair of the older half (keeping the
// oldest, which anchors the table's reach).
func (tt *TimeTable) thinLocked() {
	half := len(tt.entries) / 2
	out := make([]TimeTableEntry, 0, len(tt.entries))
	for i, e := range tt.entries {
		if i < half && i%2 == 1 {
			continue
		}
		out = append(out, e)
	}
	tt.entries = out
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
	if len(out) > TimeTableMaxEntries {
		out = out[len(out)-TimeTableMaxEntries:]
	}
	tt.mu.Lock()
	tt.entries = out
	tt.mu.Unlock()
}
