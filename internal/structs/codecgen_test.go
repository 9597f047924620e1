package structs

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

var selferType = reflect.TypeOf((*codec.Selfer)(nil)).Elem()

// generatedTypes lists the struct types of this package reachable from the
// fixtures whose codec methods are generated (the hand-written ones of
// alloc_wire.go are tested in alloc_wire_test.go and TestCodecGolden).
func generatedTypes() []reflect.Type {
	pkg := reflect.TypeOf(Allocation{}).PkgPath()
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			if t.Kind() == reflect.Map {
				walk(t.Key())
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	for _, v := range codecFixtures(1) {
		walk(reflect.TypeOf(v))
	}
	walk(reflect.TypeOf(allocWire{}))
	var out []reflect.Type
	for t := range seen {
		if t.PkgPath() == pkg && reflect.PointerTo(t).Implements(selferType) &&
			t != reflect.TypeOf(AllocsGetResponse{}) && t != reflect.TypeOf(NodeClientAllocsResponse{}) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b reflect.Type) int { return cmpString(a.Name(), b.Name()) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// reflectionCopy returns a pointer to a copy of *v whose type has the same
// fields but no methods, so the codec encodes its fields by reflection (the
// fields' own types still use their generated methods: each type is checked
// on its own).
func reflectionCopy(v reflect.Value) any {
	t := v.Elem().Type()
	if t == reflect.TypeOf(allocWire{}) {
		// StructOf cannot embed *Allocation, and a defined type would
		// inherit Allocation's methods through the embedded pointer.
		w := v.Interface().(*allocWire)
		return &allocWireReflect{AllocationReflect: (*AllocationReflect)(w.Allocation), Job: w.Job, Metrics: w.Metrics}
	}
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		fields[i] = t.Field(i)
	}
	c := reflect.New(reflect.StructOf(fields))
	c.Elem().Set(v.Elem().Convert(c.Elem().Type()))
	return c.Interface()
}

// AllocationReflect is exported: the codec flattens only exported embedded
// structs.
type AllocationReflect Allocation

type allocWireReflect struct {
	_struct struct{} `codec:",omitempty"`
	*AllocationReflect
	Job     codec.Raw
	Metrics codec.Raw
}

func encodeWith(t *testing.T, h codec.Handle, v any) []byte {
	t.Helper()
	var b []byte
	if err := codec.NewEncoderBytes(&b, h).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGeneratedEncodeMatchesReflection checks, type by type, that the
// generated encoder writes what the reflection encoder writes for the same
// fully filled value: the same fields (omitempty honoured, the codec tag
// read), the same values in the same msgpack types. Field order differs
// (see TestCodecGolden), so the encodings are compared as decoded trees.
func TestGeneratedEncodeMatchesReflection(t *testing.T) {
	types := generatedTypes()
	if len(types) < 40 {
		t.Fatalf("only %d generated types reachable from the fixtures", len(types))
	}
	for _, typ := range types {
		for _, mapLen := range []int{0, 1, 3} {
			v := reflect.New(typ)
			if mapLen > 0 { // 0: the zero value, everything omitempty left out
				fill(v.Interface(), mapLen)
			}
			gen := encodeWith(t, MsgpackHandle, v.Interface())
			refl := encodeWith(t, MsgpackHandle, reflectionCopy(v))
			if len(gen) != len(refl) || !reflect.DeepEqual(msgpackTree(t, gen), msgpackTree(t, refl)) {
				t.Errorf("%s (maps of %d): generated encoding differs from reflection's", typ.Name(), mapLen)
			}
			if typ == reflect.TypeOf(allocWire{}) {
				continue // encode only: what it sends decodes as an Allocation
			}
			back := reflect.New(typ)
			if err := Decode(gen, back.Interface()); err != nil {
				t.Fatalf("%s: %v", typ.Name(), err)
			}
			if !reflect.DeepEqual(back.Interface(), v.Interface()) {
				t.Errorf("%s (maps of %d): decode(encode(x)) != x", typ.Name(), mapLen)
			}
		}
	}
}

// TestGeneratedRoundTrip decodes the fixtures' generated encodings as Raft
// entries (entryHandle) and as RPC bodies (MsgpackHandle).
func TestGeneratedRoundTrip(t *testing.T) {
	for name, want := range codecFixtures(3) {
		enc, err := Encode(0, want)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []*codec.MsgpackHandle{entryHandle, MsgpackHandle} {
			got := reflect.New(reflect.TypeOf(want).Elem()).Interface()
			if err := codec.NewDecoderBytes(enc[1:], h).Decode(got); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: decode(encode(x)) != x (intern %v)", name, h.InternString)
			}
		}
	}
}

// encodeSelf encodes itself with its function (the encoder writes out its
// buffer when Encode returns).
type encodeSelf func(*codec.Encoder)

func (f encodeSelf) CodecEncodeSelf(e *codec.Encoder) { f(e) }
func (f encodeSelf) CodecDecodeSelf(*codec.Decoder)   { panic("encode only") }

var canonicalHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.Canonical = true
	h.TypeInfos = MsgpackHandle.TypeInfos
	return h
}()

// TestGeneratedCanonicalMaps checks the generated map encoders write keys in
// the reflection encoder's order under a Canonical handle (tools/structsgen
// adds that): the state store compares job specs by their canonical bytes.
func TestGeneratedCanonicalMaps(t *testing.T) {
	keys := []string{"b", "a", "job-anti-affinity", "binpack", "node-affinity", "", "Z", "aa", "a0"}
	strs, floats, ints := map[string]string{}, map[string]float64{}, map[string]int{}
	states := map[string]*TaskState{}
	for i, k := range keys {
		strs[k], floats[k], ints[k] = k+"!", float64(i)+0.5, i
		states[k] = &TaskState{State: k, Restarts: uint64(i)}
	}
	offers := offerSet{}
	for i := range 20 {
		offers[(i*7919)%1000-500] = struct{}{}
	}
	var h codecSelfer1978
	for name, c := range map[string]struct {
		m   any
		gen func(*codec.Encoder)
	}{
		"map[string]string":     {strs, func(e *codec.Encoder) { h.encMapstringstring(strs, e) }},
		"map[string]float64":    {floats, func(e *codec.Encoder) { h.encMapstringfloat64(floats, e) }},
		"map[string]int":        {ints, func(e *codec.Encoder) { h.encMapstringint(ints, e) }},
		"map[string]*TaskState": {states, func(e *codec.Encoder) { h.encMapstringPtrtoTaskState(states, e) }},
		"offerSet":              {map[int]struct{}(offers), func(e *codec.Encoder) { h.encofferSet(offers, e) }},
	} {
		want := encodeWith(t, canonicalHandle, c.m) // a plain map: reflection, sorted
		for range 5 {
			got := encodeWith(t, canonicalHandle, encodeSelf(c.gen))
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: canonical generated encoding is not in key order", name)
			}
		}
	}

	// A whole job: equal specs encode equally whatever their maps' history.
	job := func(order []string) *Job {
		j := &Job{ID: "web", Meta: map[string]string{}, TaskGroups: []*TaskGroup{{Name: "g", Tasks: []*Task{{Name: "t", Env: map[string]string{}, Config: map[string]any{}}}}}}
		for _, k := range order {
			j.Meta[k] = k
			j.TaskGroups[0].Tasks[0].Env[k] = k
			j.TaskGroups[0].Tasks[0].Config[k] = map[string]any{k: k, "x": 1}
		}
		return j
	}
	first := encodeWith(t, canonicalHandle, job(keys))
	for range 10 {
		rev := slices.Clone(keys)
		slices.Reverse(rev)
		if !bytes.Equal(encodeWith(t, canonicalHandle, job(rev)), first) {
			t.Fatal("equal jobs encode differently under a Canonical handle")
		}
	}
}

// TestDecodeInternsMapKeys checks Raft entries still share their map keys:
// entryHandle has InternString, which the reflection decoder applies to
// string map keys and tools/structsgen makes the generated decoders apply.
func TestDecodeInternsMapKeys(t *testing.T) {
	enc, err := Encode(ApplyPlanResultsRequestType, benchPlanRequest(3))
	if err != nil {
		t.Fatal(err)
	}
	key := func(m map[string]float64, k string) *byte {
		for _, mk := range slices.Collect(maps.Keys(m)) {
			if mk == k {
				return unsafe.StringData(mk)
			}
		}
		t.Fatalf("no key %q", k)
		return nil
	}
	scores := func(r *ApplyPlanResultsRequest, i int) map[string]float64 {
		return r.Alloc[i].Metrics.ScoreMetaData[0].Scores
	}

	var interned ApplyPlanResultsRequest
	if err := Decode(enc[1:], &interned); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 3; i++ {
		if key(scores(&interned, 0), "binpack") != key(scores(&interned, i), "binpack") {
			t.Fatalf("alloc %d's score keys are not interned", i)
		}
		if a, b := interned.Alloc[0].AllocatedResources.Tasks, interned.Alloc[i].AllocatedResources.Tasks; unsafe.StringData(slices.Collect(maps.Keys(a))[0]) != unsafe.StringData(slices.Collect(maps.Keys(b))[0]) {
			t.Fatalf("alloc %d's task resource keys are not interned", i)
		}
	}
	// Interned keys are copies: they must not alias the entry's buffer.
	for i := range enc {
		enc[i] = 0
	}
	if _, ok := scores(&interned, 0)["binpack"]; !ok {
		t.Fatal("interned key changed with the entry's buffer")
	}

	var plain ApplyPlanResultsRequest // RPC bodies: no interning asked
	if err := codec.NewDecoderBytes(mustEncode(t, benchPlanRequest(3)), MsgpackHandle).Decode(&plain); err != nil {
		t.Fatal(err)
	}
	if key(scores(&plain, 0), "binpack") == key(scores(&plain, 1), "binpack") {
		t.Fatal("keys interned without InternString")
	}
}

func mustEncode(t *testing.T, v any) []byte {
	t.Helper()
	return encodeWith(t, MsgpackHandle, v)
}
