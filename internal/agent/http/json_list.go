package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
)

// A list answer (/v1/allocations on a cluster of 100,000 allocations is
// ~100 MB of JSON) used to be encoded whole, into encoding/json's buffer and
// then a copy of it, before the first byte was sent: three buffers of the
// answer's size, which set the server's memory high-water mark. Long lists
// are now encoded element by element and sent in chunks of jsonListChunk;
// the bytes sent are exactly what encoding the list at once produces.

const (
	jsonListMin   = 64        // shorter lists take the plain path
	jsonListChunk = 256 << 10 // bytes buffered before each write
)

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// jsonList returns obj as a list to stream, or false when it must be
// encoded whole: not a slice, nil (encoded "null"), short, a []byte
// (base64), or a type with its own encoding.
func jsonList(obj any) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Slice || v.IsNil() || v.Len() < jsonListMin {
		return v, false
	}
	t := v.Type()
	if t.Elem().Kind() == reflect.Uint8 {
		return v, false
	}
	for _, m := range []reflect.Type{jsonMarshalerType, textMarshalerType} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return v, false
		}
	}
	return v, true
}

// writeJSONList writes list as encoding/json encodes it ("[e1,e2]\n",
// compact, HTML-escaped). An element that cannot be encoded within the
// first chunk answers an error as writeJSON does; later, the headers are
// out and the response is cut short (and logged).
func (s *server) writeJSONList(w http.ResponseWriter, r *http.Request, code int, list reflect.Value) {
	var elem bytes.Buffer
	enc := json.NewEncoder(&elem)
	out := bytes.NewBuffer(make([]byte, 0, jsonListChunk+jsonListChunk/4))
	started := false
	flush := func() bool {
		if !started {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			started = true
		}
		_, err := w.Write(out.Bytes())
		out.Reset()
		return err == nil
	}
	out.WriteByte('[')
	addressable := list.Type().Elem().Kind() != reflect.Pointer && list.Type().Elem().Kind() != reflect.Interface
	for i := 0; i < list.Len(); i++ {
		e := list.Index(i)
		// A slice's elements are addressable: encode through a pointer,
		// so pointer-receiver MarshalJSON methods apply as they do there.
		var v any
		if addressable {
			v = e.Addr().Interface()
		} else {
			v = e.Interface()
		}
		elem.Reset()
		if err := enc.Encode(v); err != nil {
			if !started {
				s.writeError(w, r, fmt.Errorf("failed to encode response: %w", err))
				return
			}
			s.log.Warn("response cut short: element cannot be encoded", "path", r.URL.Path, "error", err)
			return
		}
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(bytes.TrimSuffix(elem.Bytes(), []byte{'\n'}))
		if out.Len() >= jsonListChunk && !flush() {
			return
		}
	}
	out.WriteString("]\n")
	flush()
}
