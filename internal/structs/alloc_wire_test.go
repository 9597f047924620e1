package structs

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// An AllocsGetResponse encoded with cached job bytes must be exactly what
// the default encoding carries without the placement metrics: same fields,
// same values, decodable by any client, whether written to a stream or to
// a byte slice.
func TestAllocsGetResponseWireShape(t *testing.T) {
	shared := &Job{ID: "web", Namespace: "default", Type: JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*TaskGroup{{Name: "g", Count: 2, Tasks: []*Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "sleep"}}}}}}
	other := &Job{ID: "batch", Namespace: "default", Type: JobTypeBatch}
	resp := &AllocsGetResponse{Allocs: []*Allocation{
		{ID: "a1", JobID: "web", Job: shared, NodeID: "n", DesiredStatus: AllocDesiredStatusRun, AllocModifyIndex: 5,
			TaskStates: map[string]*TaskState{"t": {State: TaskStateRunning}},
			Metrics: &AllocMetric{NodesEvaluated: 3, ScoreMetaData: []*NodeScoreMeta{{NodeID: "n", NormScore: 0.5,
				Scores: map[string]float64{"binpack": 0.5}}}}},
		{ID: "a2", JobID: "web", Job: shared, ClientStatus: AllocClientStatusRunning},
		{ID: "a3", JobID: "batch", Job: other},
		{ID: "a4", JobID: "gone"}, // no job
	}, QueryMeta: QueryMeta{Index: 9, KnownLeader: true}}

	noMetrics := *resp
	noMetrics.Allocs = make([]*Allocation, len(resp.Allocs))
	for i, a := range resp.Allocs {
		c := *a
		c.Metrics = nil
		noMetrics.Allocs[i] = &c
	}
	var def bytes.Buffer
	if err := codec.NewEncoder(&def, MsgpackHandle).Encode((*allocsGetResponseDefault)(&noMetrics)); err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	for i := 0; i < 2; i++ { // the second time from the cache
		stream.Reset()
		if err := codec.NewEncoder(&stream, MsgpackHandle).Encode(resp); err != nil {
			t.Fatal(err)
		}
	}
	var slice []byte
	if err := codec.NewEncoderBytes(&slice, MsgpackHandle).Encode(resp); err != nil {
		t.Fatal(err)
	}
	generic := func(b []byte) any {
		var v any
		if err := codec.NewDecoderBytes(b, MsgpackHandle).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := generic(def.Bytes())
	for name, b := range map[string][]byte{"stream": stream.Bytes(), "bytes": slice} {
		if got := generic(b); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: wire shape differs:\n got %v\nwant %v", name, got, want)
		}
		var back AllocsGetResponse
		if err := codec.NewDecoder(bytes.NewReader(b), MsgpackHandle).Decode(&back); err != nil {
			t.Fatal(err)
		}
		if len(back.Allocs) != 4 || back.Index != 9 || back.Allocs[1].Job == nil || back.Allocs[1].Job.TaskGroups[0].Tasks[0].Name != "t" ||
			back.Allocs[2].Job.Type != JobTypeBatch || back.Allocs[3].Job != nil || back.Allocs[0].AllocModifyIndex != 5 ||
			back.Allocs[0].TaskStates["t"].State != TaskStateRunning || back.Allocs[0].Metrics != nil {
			t.Fatalf("%s: decoded %+v", name, back)
		}
	}
}

// A pull's answer carries its changed allocations exactly as the default
// encoding would, less their placement metrics; with none changed it is
// the default encoding.
func TestNodeClientAllocsResponseWireShape(t *testing.T) {
	job := &Job{ID: "web", Namespace: "default", Type: JobTypeService,
		TaskGroups: []*TaskGroup{{Name: "g", Tasks: []*Task{{Name: "t", Driver: "raw_exec"}}}}}
	withMetrics := &Allocation{ID: "a1", JobID: "web", Job: job, AllocModifyIndex: 7,
		Metrics: &AllocMetric{NodesEvaluated: 3}}
	for name, resp := range map[string]*NodeClientAllocsResponse{
		"changed": {Allocs: map[string]uint64{"a1": 7, "a2": 3}, Changed: []*Allocation{withMetrics},
			QueryMeta: QueryMeta{Index: 7}},
		"none": {Allocs: map[string]uint64{"a2": 3}, QueryMeta: QueryMeta{Index: 3}},
	} {
		want := *resp
		want.Changed = nil
		for _, a := range resp.Changed {
			c := *a
			c.Metrics = nil
			want.Changed = append(want.Changed, &c)
		}
		var def, got []byte
		if err := codec.NewEncoderBytes(&def, MsgpackHandle).Encode((*nodeClientAllocsResponseDefault)(&want)); err != nil {
			t.Fatal(err)
		}
		if err := codec.NewEncoderBytes(&got, MsgpackHandle).Encode(resp); err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := codec.NewDecoderBytes(def, MsgpackHandle).Decode(&a); err != nil {
			t.Fatal(err)
		}
		if err := codec.NewDecoderBytes(got, MsgpackHandle).Decode(&b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: wire shape differs:\n got %v\nwant %v", name, b, a)
		}
		var back NodeClientAllocsResponse
		if err := codec.NewDecoderBytes(got, MsgpackHandle).Decode(&back); err != nil {
			t.Fatal(err)
		}
		if back.Index != resp.Index || len(back.Allocs) != len(resp.Allocs) || len(back.Changed) != len(resp.Changed) ||
			(len(back.Changed) == 1 && (back.Changed[0].Job.TaskGroups[0].Tasks[0].Name != "t" || back.Changed[0].Metrics != nil)) {
			t.Fatalf("%s: decoded %+v", name, back)
		}
	}
}
