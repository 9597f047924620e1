package structs

import (
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// A client's pull (Node.GetClientAllocs) answers with a table of its
// node's allocations: alloc ID -> AllocModifyIndex, sent as a msgpack map.
// The server has the node's allocations at hand as a slice shared
// read-only with the state store, and in the steady state nearly every
// pull follows a change to them, so building a Go map for each answer
// (hashing every ID) only to encode and drop it was most of a pull's cost.
// The server hands the slice to the answer instead (SetAllocsOf) and the
// encoder writes the map's entries from it, the bytes the map would have
// been encoded to (up to the order of the entries, which a map's encoding
// does not fix unless the handle is Canonical, and the servers' is not).
// Decoding is unchanged: the receiver gets Allocs as a map.
//
// An in-process caller (a dev-mode agent's client, tests) gets the reply
// without encoding it; the RPC layer calls InmemReply first, which fills
// Allocs from the slice, so it reads what a remote caller decodes.

// SetAllocsOf makes the answer's table that of allocs (their IDs and
// AllocModifyIndex), which are read, never modified, and must have
// distinct IDs; it replaces Allocs, which stays nil until InmemReply.
func (r *NodeClientAllocsResponse) SetAllocsOf(allocs []*Allocation) {
	if allocs == nil {
		allocs = []*Allocation{} // an empty table, not none: {} on the wire
	}
	r.Allocs, r.allocsOf = nil, allocs
}

// InmemReply fills Allocs from the allocations SetAllocsOf gave, for a
// caller that gets the reply in-process, without encoding.
func (r *NodeClientAllocsResponse) InmemReply() {
	if r.Allocs != nil || r.allocsOf == nil {
		return
	}
	m := make(map[string]uint64, len(r.allocsOf))
	for _, a := range r.allocsOf {
		m[a.ID] = a.AllocModifyIndex
	}
	r.Allocs, r.allocsOf = m, nil
}

// allocTable is the answer's Allocs on the wire: the map if there is one
// (as for InmemReply, Allocs set after SetAllocsOf wins), else the table
// of the allocations SetAllocsOf gave, written as the map would be; nil if
// neither. Encode only: the answer decodes by default.
type allocTable struct {
	m  map[string]uint64
	of []*Allocation
}

// CodecEncodeSelf writes the table as a map of ID to AllocModifyIndex,
// with the primitives the generated encoder of a map[string]uint64 uses
// (encMapstringuint64 in structs.generated.go).
func (t *allocTable) CodecEncodeSelf(e *codec.Encoder) {
	if t.m != nil || t.of == nil {
		e.MustEncode(t.m) // a nil map encodes as nil
		return
	}
	z, r := codec.GenHelperEncoder(e)
	raw := z.EncBasicHandle().StringToRaw
	r.WriteMapStart(len(t.of))
	for _, a := range t.of {
		r.WriteMapElemKey()
		if raw {
			r.EncodeStringBytesRaw(z.BytesView(a.ID))
		} else {
			r.EncodeStringEnc(allocTableUTF8, a.ID)
		}
		r.WriteMapElemValue()
		r.EncodeUint(a.AllocModifyIndex)
	}
	r.WriteMapEnd()
}

// allocTableUTF8 is the codec's UTF-8 string encoding (its cUTF8, which
// the generated code names codecSelferCcUTF8<id>; this file must compile
// without the generated one, when codecgen runs).
const allocTableUTF8 = 1

// CodecDecodeSelf is never called: allocTable is only encoded.
func (t *allocTable) CodecDecodeSelf(d *codec.Decoder) {
	panic("structs: allocTable is encode-only")
}
