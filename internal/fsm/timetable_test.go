package fsm

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/structs"
)

// The table answers the newest index appended at or before a time, never a
// younger one, one pair per granularity.
func TestTimeTable_NearestIndexErrsYoung(t *testing.T) {
	tt := NewTimeTable(10 * time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := uint64(1); i <= 100; i++ {
		tt.Witness(i, t0.Add(time.Duration(i)*time.Second))
	}
	// About one pair per 10 s, and one for the newest entry.
	if n := len(tt.Entries()); n < 10 || n > 12 {
		t.Fatalf("%d pairs for 100 s at 10 s granularity", n)
	}
	// Index i was appended at t0+i s: the answer for t0+x s is at most x
	// (never younger than asked) and at most a granularity older.
	for x := 0; x <= 120; x++ {
		got := tt.NearestIndex(t0.Add(time.Duration(x) * time.Second))
		exact := uint64(min(x, 100))
		if got > exact || (exact >= 1 && got+10 < exact) {
			t.Fatalf("NearestIndex(+%ds) = %d, want within (%d-10, %d]", x, got, exact, exact)
		}
	}
	if got := tt.NearestIndex(t0.Add(time.Hour)); got != 100 {
		t.Fatalf("the newest entry is not the answer after it: %d", got)
	}
	// Out of order or unstamped entries change nothing.
	tt.Witness(50, t0.Add(500*time.Second))
	tt.Witness(200, time.Time{})
	if got := tt.NearestIndex(t0.Add(time.Hour)); got != 100 {
		t.Fatalf("after stale witnesses: %d", got)
	}
}

// A table kept for a long time stays bounded and still answers every age,
// never younger than asked: a day at one pair a second.
func TestTimeTable_BoundedAndConservative(t *testing.T) {
	tt := NewTimeTable(time.Second)
	t0 := time.Unix(2_000_000, 0)
	const day = 86400
	for i := uint64(1); i <= day; i++ {
		tt.Witness(i, t0.Add(time.Duration(i)*time.Second)) // index i appended at t0+i s
	}
	if n := len(tt.Entries()); n > TimeTableMaxEntries {
		t.Fatalf("%d pairs kept, bound is %d", n, TimeTableMaxEntries)
	}
	for _, age := range []time.Duration{time.Second, time.Minute, time.Hour, 4 * time.Hour, 23 * time.Hour} {
		now := t0.Add(day * time.Second)
		got := tt.NearestIndex(now.Add(-age))
		exact := uint64(day) - uint64(age/time.Second)
		if got > exact {
			t.Fatalf("age %s: index %d is younger than asked (%d)", age, got, exact)
		}
		// Precision degrades with age, within 2 % of it.
		if late := time.Duration(exact-got) * time.Second; late > age/50+2*time.Second {
			t.Errorf("age %s: answer %s older than asked", age, late)
		}
	}
}

// The FSM witnesses each entry's AppendedAt and keeps the table across a
// snapshot and restore.
func TestFSM_TimeTableWitnessedAndSnapshotted(t *testing.T) {
	f := newFSM(t, nil)
	t0 := time.Unix(3_000_000, 0)
	for i := uint64(1); i <= 5; i++ {
		l := entry(t, i, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{
			Namespaces: []*structs.Namespace{{Name: "ns"}}})
		l.AppendedAt = t0.Add(time.Duration(i) * time.Hour)
		apply(t, f, l)
	}
	f.Apply(&raft.Log{Index: 6, Type: raft.LogNoop, AppendedAt: t0.Add(6 * time.Hour)})
	if got := f.TimeTable().NearestIndex(t0.Add(3*time.Hour + time.Minute)); got != 3 {
		t.Fatalf("NearestIndex = %d, want 3", got)
	}
	r := snapshotRestored(t, f)
	if got, want := r.TimeTable().Entries(), f.TimeTable().Entries(); len(got) != 6 || len(got) != len(want) || got[5] != want[5] {
		t.Fatalf("restored table %v, want %v", got, want)
	}
}
