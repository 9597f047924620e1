package structs

import (
	"fmt"
	"reflect"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// fill sets every exported field of the value v points to, recursively, to
// a deterministic non-zero value: strings, numbers and times from a running
// counter, slices of one element (two would grow the nested spec types exponentially), maps of mapLen entries (1 makes the
// encoding deterministic, as Go ranges over maps in random order),
// interfaces holding a string. Types already being filled further up are
// left zero, so recursive types terminate.
func fill(v any, mapLen int) { fillSkipping(v, mapLen, nil) }

// fillSkipping is fill leaving the fields named in skip ("Type.Field")
// zero: they take no number from the counter, so the other fields get the
// values they had before those fields existed.
func fillSkipping(v any, mapLen int, skip map[string]bool) {
	f := &filler{mapLen: mapLen, open: map[reflect.Type]bool{}, skip: skip}
	f.value(reflect.ValueOf(v).Elem())
}

type filler struct {
	n      int
	mapLen int
	open   map[reflect.Type]bool
	skip   map[string]bool
}

func (f *filler) next() int { f.n++; return f.n }

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(codec.Raw(nil))
)

func (f *filler) value(v reflect.Value) {
	t := v.Type()
	switch {
	case t == timeType:
		v.Set(reflect.ValueOf(time.Unix(int64(1_700_000_000+f.next()), int64(f.n)).UTC()))
		return
	case f.open[t]:
		return
	case t == rawType:
		// Pre-encoded msgpack must be valid: a positive fixint.
		v.SetBytes([]byte{byte(f.next() % 0x80)})
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.next()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.next()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()) + 0.5)
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", t.Name(), f.next()))
	case reflect.Interface:
		if t.NumMethod() == 0 {
			v.Set(reflect.ValueOf(fmt.Sprintf("any-%d", f.next())))
		}
	case reflect.Pointer:
		f.open[t] = true
		p := reflect.New(t.Elem())
		f.value(p.Elem())
		v.Set(p)
		delete(f.open, t)
	case reflect.Slice:
		f.open[t] = true
		s := reflect.MakeSlice(t, 1, 1)
		for i := range 1 {
			f.value(s.Index(i))
		}
		v.Set(s)
		delete(f.open, t)
	case reflect.Array:
		for i := range v.Len() {
			f.value(v.Index(i))
		}
	case reflect.Map:
		f.open[t] = true
		m := reflect.MakeMapWithSize(t, f.mapLen)
		for range f.mapLen {
			k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			f.value(k)
			f.value(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
		delete(f.open, t)
	case reflect.Struct:
		f.open[t] = true
		for i := range t.NumField() {
			if t.Field(i).IsExported() && !f.skip[t.Name()+"."+t.Field(i).Name] {
				f.value(v.Field(i))
			}
		}
		delete(f.open, t)
	}
}

// codecFixtures are the values that travel on the hot paths, filled: Raft
// entries (plans, alloc updates, job registrations) and what they carry,
// and the client's alloc pull. NodeClientAllocsResponse's changed
// allocations are sent without their placement metrics (alloc_wire.go), so
// its fixture has none.
func codecFixtures(mapLen int) map[string]any { return codecFixturesSkipping(mapLen, nil) }

// addedSinceGolden are fields added to fixture types after
// testdata/codec was written: the golden test leaves them zero, so the
// bodies written by the old encoder still check every other field.
var addedSinceGolden = map[string]bool{
	"RescheduleEvent.Delay":     true,
	"Allocation.RestartRequest": true,
}

func codecFixturesSkipping(mapLen int, skip map[string]bool) map[string]any {
	out := map[string]any{
		"Allocation":                   &Allocation{},
		"Job":                          &Job{},
		"Node":                         &Node{},
		"Evaluation":                   &Evaluation{},
		"Deployment":                   &Deployment{},
		"ApplyPlanResultsRequest":      &ApplyPlanResultsRequest{},
		"ApplyPlanResultsBatchRequest": &ApplyPlanResultsBatchRequest{},
		"AllocUpdateRequest":           &AllocUpdateRequest{},
		"NodeClientAllocsResponse":     &NodeClientAllocsResponse{},
		"JobRegisterRequest":           &JobRegisterRequest{},
		"JobRegisterBatchRequest":      &JobRegisterBatchRequest{},
		"NodeRegisterRequest":          &NodeRegisterRequest{},
		"EvalUpdateRequest":            &EvalUpdateRequest{},
	}
	for _, v := range out {
		fillSkipping(v, mapLen, skip)
	}
	for _, a := range out["NodeClientAllocsResponse"].(*NodeClientAllocsResponse).Changed {
		a.Metrics = nil
	}
	return out
}
