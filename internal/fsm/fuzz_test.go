package fsm

import (
	"bytes"
	"reflect"
	"runtime/metrics"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/fuzzseed"
	"github.com/drover-project/drover/internal/structs"
)

// The FSM's fuzz targets: a committed entry or a snapshot with arbitrary
// bytes. An error is the right answer to garbage; what must hold is no
// panic and no corruption: a failed entry or restore leaves the state as it
// was, and whatever state results still snapshots and restores to itself.

// fuzzIndex is the index fuzzed entries are applied at, after the scenario.
const fuzzIndex = 100

// stateAfter applies the scenario (every message type) to a fresh FSM.
func stateAfter(t *testing.T, log []*raft.Log) *FSM {
	f := newFSM(t, &recordingSink{})
	for _, l := range log {
		apply(t, f, l)
	}
	return f
}

// persist writes f's snapshot.
func persist(t *testing.T, f *FSM) []byte {
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("snapshot does not persist: %v", err)
	}
	return sink.Bytes()
}

// roundTrips fails unless f's state survives a snapshot and restore.
func roundTrips(t *testing.T, f *FSM) {
	t.Helper()
	dst := newFSM(t, nil)
	if err := dst.Restore(nopCloser{bytes.NewReader(persist(t, f))}); err != nil {
		t.Fatalf("the state's own snapshot does not restore: %v", err)
	}
	if want, got := dump(t, f.State()), dump(t, dst.State()); !reflect.DeepEqual(want, got) {
		t.Fatal("the state differs after a snapshot and restore")
	}
}

// FuzzApply applies an arbitrary entry on top of a state holding one of
// everything.
func FuzzApply(f *testing.F) {
	seedT := &testing.T{}
	for i, l := range scenario(seedT) {
		fuzzseed.Add(f, "scenario-"+string(rune('a'+i)), l.Data)
	}
	fuzzseed.Add(f, "ignorable-unknown", []byte{0x80 | 99, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := stateAfter(t, scenario(t))
		before := dump(t, fs.State())
		resp := fs.Apply(&raft.Log{Index: fuzzIndex, Type: raft.LogCommand, Data: data})
		if err, failed := resp.(error); failed && err != nil {
			if !reflect.DeepEqual(before, dump(t, fs.State())) {
				t.Fatalf("a failed entry changed the state: %v", err)
			}
		}
		roundTrips(t, fs)
		// The FSM still applies what comes next.
		apply(t, fs, entry(t, fuzzIndex+1, structs.NamespaceUpsertRequestType,
			&structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "after-fuzz"}}}))
	})
}

// FuzzRestore restores an arbitrary snapshot into an FSM holding state.
func FuzzRestore(f *testing.F) {
	seedT := &testing.T{}
	full := persist(seedT, stateAfter(seedT, scenario(seedT)))
	empty := persist(seedT, newFSM(seedT, nil))
	fuzzseed.Add(f, "scenario", full)
	fuzzseed.Add(f, "empty", empty)
	var hdr bytes.Buffer
	_ = codec.NewEncoder(&hdr, structs.MsgpackHandle).Encode(&SnapshotHeader{Format: snapshotFormat})
	// A record whose string claims 4 GiB.
	fuzzseed.Add(f, "huge-length", append(append(hdr.Bytes(), byte(NamespaceSnapshot), 0x81, 0xa4, 'N', 'a', 'm', 'e'), 0xdb, 0xff, 0xff, 0xff, 0xff))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := stateAfter(t, scenario(t)[:4])
		old := fs.State()
		var err error
		n := allocatedBytes(func() { err = fs.Restore(nopCloser{bytes.NewReader(data)}) })
		if n > 16<<20+64*uint64(len(data)) {
			t.Fatalf("restoring %d bytes allocated %d bytes", len(data), n)
		}
		if err != nil {
			if fs.State() != old {
				t.Fatalf("a failed restore replaced the state: %v", err)
			}
			return
		}
		roundTrips(t, fs)
		apply(t, fs, entry(t, 1<<40, structs.NamespaceUpsertRequestType,
			&structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "after-fuzz"}}}))
	})
}

// allocatedBytes runs fn and returns the heap bytes it allocated.
func allocatedBytes(fn func()) uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	fn()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}
