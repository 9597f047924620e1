package structs

import (
	"crypto/sha256"
	"reflect"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// specHandle encodes maps in key order, so equal specs encode equally
// (Go's map order is random).
var specHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	h.Canonical = true
	return h
}()

// SpecChanged reports whether other differs from j in anything the user
// controls (server-managed fields are ignored).
//
// It streams both jobs' canonical encodings through a hash instead of
// copying and encoding them into buffers: for a 4 MB job that was about
// 100 MB of garbage per registration, most of what the server's memory
// grew by per stored version.
func (j *Job) SpecChanged(other *Job) bool {
	if other == nil {
		return true
	}
	return specDigest(j) != specDigest(other)
}

func specDigest(j *Job) [sha256.Size]byte {
	c := *j // shallow: only top-level fields are cleared
	c.Status, c.StatusDescription, c.Stable, c.Version = "", "", false, 0
	c.SubmitTime, c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0, 0
	c.VersionTag = nil
	h := sha256.New()
	if err := codec.NewEncoder(h, specHandle).Encode(&c); err != nil {
		// Only an unencodable value fails, and it cannot be stored: call
		// it changed by hashing the error.
		h.Write([]byte(err.Error()))
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
