package structs

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// pullTableAllocs are allocations whose IDs and AllocModifyIndex cover the
// msgpack encodings' size boundaries (fixstr/str8/str16, fixint up to
// uint64), each twice as the last entry of a table.
func pullTableAllocs() []*Allocation {
	ids := []string{"", "a", strings.Repeat("x", 31), strings.Repeat("y", 32), "8a1f0c3e-5d2b-4c1a-9e7f-2b6d4c8e0a13",
		strings.Repeat("z", 255), strings.Repeat("w", 256), strings.Repeat("v", 70000)}
	indexes := []uint64{0, 1, 127, 128, 255, 256, math.MaxUint16, math.MaxUint16 + 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxUint64}
	var out []*Allocation
	for i, id := range ids {
		out = append(out, &Allocation{ID: id, AllocModifyIndex: indexes[i%len(indexes)], NodeID: "n", JobID: "web"})
	}
	for i, idx := range indexes {
		out = append(out, &Allocation{ID: "idx-" + string(rune('a'+i)), AllocModifyIndex: idx})
	}
	return out
}

func tableOf(allocs []*Allocation) map[string]uint64 {
	m := make(map[string]uint64, len(allocs))
	for _, a := range allocs {
		m[a.ID] = a.AllocModifyIndex
	}
	return m
}

// A table encoded from the allocations is, entry by entry, the bytes the
// map encodes to: one entry at a time it is byte for byte the same, under
// the servers' handle and under handles that write strings differently.
func TestAllocTableEncodesAsMap(t *testing.T) {
	handle := func(mut func(*codec.MsgpackHandle)) *codec.MsgpackHandle {
		h := &codec.MsgpackHandle{}
		h.RawToString = MsgpackHandle.RawToString
		h.MapType = MsgpackHandle.MapType
		h.Raw = MsgpackHandle.Raw
		mut(h)
		return h
	}
	newExt := handle(func(h *codec.MsgpackHandle) { h.WriteExt = true }) // str8 and the newer string types
	toRaw := handle(func(h *codec.MsgpackHandle) { h.StringToRaw = true })
	for name, h := range map[string]*codec.MsgpackHandle{"servers": MsgpackHandle, "WriteExt": newExt, "StringToRaw": toRaw} {
		for _, a := range pullTableAllocs() {
			one := []*Allocation{a}
			var got, want []byte
			if err := codec.NewEncoderBytes(&got, h).Encode(&allocTable{of: one}); err != nil {
				t.Fatal(err)
			}
			if err := codec.NewEncoderBytes(&want, h).Encode(tableOf(one)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: %q/%d: table % x, map % x", name, a.ID[:min(len(a.ID), 8)], a.AllocModifyIndex, got[:min(len(got), 16)], want[:min(len(want), 16)])
			}
		}
		for _, of := range [][]*Allocation{{}, pullTableAllocs()} {
			var got []byte
			if err := codec.NewEncoderBytes(&got, h).Encode(&allocTable{of: of}); err != nil {
				t.Fatal(err)
			}
			var back map[string]uint64
			if err := codec.NewDecoderBytes(got, h).Decode(&back); err != nil {
				t.Fatal(err)
			}
			if back == nil || !maps.Equal(back, tableOf(of)) {
				t.Fatalf("%s: %d entries decode to %d", name, len(of), len(back))
			}
		}
	}
}

// A pull's answer built from the allocations (SetAllocsOf) decodes, as a
// NodeClientAllocsResponse and as a lean reader such as nodesim's, to what
// the same answer with the map decodes to; an in-process caller gets the
// map (InmemReply); a node without allocations gets an empty table, not
// none.
func TestNodeClientAllocsResponseFromAllocs(t *testing.T) {
	job := &Job{ID: "web", Namespace: "default", Type: JobTypeService}
	changed := &Allocation{ID: "c", JobID: "web", Job: job, AllocModifyIndex: 9, Metrics: &AllocMetric{NodesEvaluated: 3}}
	type lean struct {
		Allocs  map[string]uint64
		Changed []struct{ ID string }
		Index   uint64
	}
	for name, allocs := range map[string][]*Allocation{"none": nil, "one": {changed}, "many": append(pullTableAllocs(), changed)} {
		var fromAllocs NodeClientAllocsResponse
		fromAllocs.SetAllocsOf(allocs)
		fromAllocs.Changed = []*Allocation{changed}
		fromAllocs.Index = 9
		fromMap := NodeClientAllocsResponse{Allocs: tableOf(allocs), Changed: fromAllocs.Changed}
		fromMap.Index = 9
		if fromAllocs.Allocs != nil {
			t.Fatalf("%s: SetAllocsOf left a map", name)
		}

		var got, want []byte
		if err := codec.NewEncoderBytes(&got, MsgpackHandle).Encode(&fromAllocs); err != nil {
			t.Fatal(err)
		}
		if err := codec.NewEncoderBytes(&want, MsgpackHandle).Encode(&fromMap); err != nil {
			t.Fatal(err)
		}
		if len(allocs) <= 1 && !bytes.Equal(got, want) {
			t.Fatalf("%s: answers differ:\n got % x\nwant % x", name, got, want)
		}
		var back, backMap NodeClientAllocsResponse
		if err := Decode(got, &back); err != nil {
			t.Fatal(err)
		}
		if err := Decode(want, &backMap); err != nil {
			t.Fatal(err)
		}
		if back.Allocs == nil || !reflect.DeepEqual(back, backMap) || !maps.Equal(back.Allocs, tableOf(allocs)) {
			t.Fatalf("%s: decoded %+v, from the map %+v", name, back, backMap)
		}
		var l lean
		if err := Decode(got, &l); err != nil {
			t.Fatal(err)
		}
		if l.Allocs == nil || !maps.Equal(l.Allocs, tableOf(allocs)) || len(l.Changed) != 1 || l.Changed[0].ID != "c" || l.Index != 9 {
			t.Fatalf("%s: lean decode %+v", name, l)
		}

		fromAllocs.InmemReply()
		if fromAllocs.Allocs == nil || !maps.Equal(fromAllocs.Allocs, tableOf(allocs)) {
			t.Fatalf("%s: in-process map %v", name, fromAllocs.Allocs)
		}
	}
}

// Allocs set after SetAllocsOf is what the answer carries, encoded and
// in-process alike.
func TestNodeClientAllocsResponseMapWins(t *testing.T) {
	var r NodeClientAllocsResponse
	r.SetAllocsOf([]*Allocation{{ID: "a", AllocModifyIndex: 3}})
	r.Allocs = map[string]uint64{"b": 4}
	var got []byte
	if err := codec.NewEncoderBytes(&got, MsgpackHandle).Encode(&r); err != nil {
		t.Fatal(err)
	}
	var back NodeClientAllocsResponse
	if err := Decode(got, &back); err != nil {
		t.Fatal(err)
	}
	r.InmemReply()
	if !maps.Equal(back.Allocs, map[string]uint64{"b": 4}) || !maps.Equal(r.Allocs, back.Allocs) {
		t.Fatalf("encoded %v, in-process %v", back.Allocs, r.Allocs)
	}
}

// An answer whose changed allocations cannot take the cached-job path (a
// nil entry, never sent by the servers) is encoded by default, its table
// included.
func TestNodeClientAllocsResponseFromAllocsDefaultPath(t *testing.T) {
	var r NodeClientAllocsResponse
	r.SetAllocsOf([]*Allocation{{ID: "a", AllocModifyIndex: 3}})
	r.Changed = []*Allocation{nil}
	var got []byte
	if err := codec.NewEncoderBytes(&got, MsgpackHandle).Encode(&r); err != nil {
		t.Fatal(err)
	}
	var back NodeClientAllocsResponse
	if err := Decode(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Allocs["a"] != 3 || len(back.Allocs) != 1 {
		t.Fatalf("decoded %+v", back)
	}
	if r.Allocs != nil {
		t.Fatal("encoding changed the answer")
	}
}

// BenchmarkNodeClientAllocsResponseEncode encodes a pull's answer for a
// node of 10 allocations, one of them changed (sent in full), with its
// table as a map (the answer before SetAllocsOf) and from the
// allocations: the building of the answer and its encoding, hot in cache.
func BenchmarkNodeClientAllocsResponseEncode(b *testing.B) {
	job := &Job{ID: "web", Namespace: "default", Type: JobTypeService,
		TaskGroups: []*TaskGroup{{Name: "g", Tasks: []*Task{{Name: "t", Driver: "raw_exec"}}}}}
	var allocs []*Allocation
	for i := range 10 {
		allocs = append(allocs, &Allocation{ID: fmt.Sprintf("%08d-5d2b-4c1a-9e7f-2b6d4c8e0a13", i), JobID: "web", Job: job,
			Namespace: "default", TaskGroup: "g", DesiredStatus: AllocDesiredStatusRun, AllocModifyIndex: uint64(100 + i)})
	}
	changed := allocs[9:]
	for _, fromAllocs := range []bool{false, true} {
		name := "map"
		if fromAllocs {
			name = "allocs"
		}
		b.Run(name, func(b *testing.B) {
			var buf []byte
			enc := codec.NewEncoderBytes(&buf, MsgpackHandle)
			b.ReportAllocs()
			for b.Loop() {
				r := &NodeClientAllocsResponse{Changed: changed}
				if fromAllocs {
					r.SetAllocsOf(allocs)
				} else {
					r.Allocs = tableOf(allocs)
				}
				r.Index = 109
				buf = buf[:0]
				enc.ResetBytes(&buf)
				if err := enc.Encode(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
