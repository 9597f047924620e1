package structs

import (
	"bytes"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// A client fetches its allocations with Alloc.GetAllocs, and every
// allocation carries its job: on a busy cluster the same job is encoded
// once per allocation, thousands of times. The allocations of one job placed
// by one plan share one *Job in the state store (stored objects are never
// modified), so AllocsGetResponse encodes each distinct job once and reuses
// the bytes. The wire shape is the default one (a map of the Allocation's
// fields, Job included) less the placement Metrics: the scheduler's record
// of how it chose the node (nodes evaluated, the best nodes' scores) is for
// operators, who read it through the HTTP API from the state store; a client
// never reads it, and it was about half of every allocation's bytes.
// Decoding is the codec's default.

// CodecEncodeSelf encodes the response with each job's cached encoding.
func (r *AllocsGetResponse) CodecEncodeSelf(e *codec.Encoder) {
	allocs, ok := allocsWire(r.Allocs)
	if !ok {
		e.MustEncode((*allocsGetResponseDefault)(r)) // reports the error, if any
		return
	}
	e.MustEncode(&allocsGetWire{Allocs: allocs, QueryMeta: r.QueryMeta})
}

// CodecDecodeSelf decodes the default encoding.
func (r *AllocsGetResponse) CodecDecodeSelf(d *codec.Decoder) {
	d.MustDecode((*allocsGetResponseDefault)(r))
}

// CodecEncodeSelf encodes a pull's answer with its changed allocations sent
// as Alloc.GetAllocs sends them.
func (r *NodeClientAllocsResponse) CodecEncodeSelf(e *codec.Encoder) {
	changed, ok := allocsWire(r.Changed)
	if !ok {
		d := *r
		d.InmemReply() // the default encoding knows only the map
		e.MustEncode((*nodeClientAllocsResponseDefault)(&d))
		return
	}
	e.MustEncode(&nodeClientAllocsWire{Allocs: allocTable{m: r.Allocs, of: r.allocsOf}, MigrateTokens: r.MigrateTokens, Changed: changed, QueryMeta: r.QueryMeta})
}

// CodecDecodeSelf decodes the default encoding.
func (r *NodeClientAllocsResponse) CodecDecodeSelf(d *codec.Decoder) {
	d.MustDecode((*nodeClientAllocsResponseDefault)(r))
}

// allocsWire returns allocs ready to encode; false if one cannot be sent
// so (a nil entry, never sent by the servers, or a job that fails to
// encode): the caller then encodes by default, which reports the error.
func allocsWire(allocs []*Allocation) ([]allocWire, bool) {
	if allocs == nil {
		return nil, true // encoded as nil, as by default
	}
	out := make([]allocWire, 0, len(allocs))
	for _, a := range allocs {
		if a == nil {
			return nil, false
		}
		job, ok := jobWireBytes(a.Job)
		if !ok {
			return nil, false
		}
		out = append(out, allocWire{Allocation: a, Job: job})
	}
	return out, true
}

// allocsGetResponseDefault has AllocsGetResponse's fields without its
// codec methods: the codec's default encoding.
type allocsGetResponseDefault AllocsGetResponse

type allocsGetWire struct {
	Allocs []allocWire
	QueryMeta
}

// nodeClientAllocsResponseDefault is NodeClientAllocsResponse without its
// codec methods.
type nodeClientAllocsResponseDefault NodeClientAllocsResponse

type nodeClientAllocsWire struct {
	Allocs        allocTable
	MigrateTokens map[string]string
	Changed       []allocWire
	QueryMeta
}

// allocWire is an Allocation whose Job is already encoded and whose Metrics
// are left out: the outer fields shadow the embedded ones, as in Go, and an
// empty Raw is omitted like a nil pointer.
type allocWire struct {
	_struct struct{} `codec:",omitempty"` // as Allocation's: zero fields are left out
	*Allocation
	Job     codec.Raw
	Metrics codec.Raw
}

// jobWire caches the encoding of recently sent jobs, keyed by pointer. A
// key keeps its job alive, so an address is never reused while cached; the
// cache is dropped whole when it holds jobWireMax jobs or jobWireMaxBytes of
// encodings (which bounds the jobs it keeps alive too).
var jobWire = struct {
	sync.Mutex
	m     map[*Job][]byte
	bytes int
}{m: map[*Job][]byte{}}

const (
	jobWireMax      = 1024
	jobWireMaxBytes = 16 << 20
)

// jobWireBytes returns the msgpack encoding of job (empty for no job, which
// omitempty leaves out as it does a nil *Job); false if it cannot be
// encoded.
func jobWireBytes(job *Job) (codec.Raw, bool) {
	if job == nil {
		return nil, true
	}
	jobWire.Lock()
	b, ok := jobWire.m[job]
	jobWire.Unlock()
	if ok {
		return b, true
	}
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, MsgpackHandle).Encode(job); err != nil {
		return nil, false
	}
	b = buf.Bytes()
	jobWire.Lock()
	if len(jobWire.m) >= jobWireMax || jobWire.bytes+len(b) > jobWireMaxBytes {
		jobWire.m, jobWire.bytes = map[*Job][]byte{}, 0
	}
	jobWire.m[job] = b
	jobWire.bytes += len(b)
	jobWire.Unlock()
	return b, true
}
