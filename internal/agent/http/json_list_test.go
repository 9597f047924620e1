package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/structs"
)

// ptrMarshal encodes itself only through a pointer, as encoding/json does
// for addressable values (slice elements).
type ptrMarshal struct{ N int }

func (p *ptrMarshal) MarshalJSON() ([]byte, error) {
	return []byte(`"p` + strings.Repeat("x", p.N) + `"`), nil
}

// A streamed list answer has exactly the bytes, status and content type of
// encoding the list at once; lists too short, nil, or of bytes are not
// streamed; an element that cannot be encoded answers 500 as before.
func TestWriteJSONListMatchesWholeEncoding(t *testing.T) {
	s := &server{log: hclog.NewNullLogger()}
	stubs := make([]*structs.AllocListStub, 3000)
	for i := range stubs {
		stubs[i] = &structs.AllocListStub{ID: strings.Repeat("a", i%40), Name: "web.app[<&>]", ClientStatus: "running",
			TaskStates: map[string]*structs.TaskState{"web": {State: "running", StartedAt: time.Unix(int64(i), 0).UTC()}}}
	}
	stubs[7] = nil
	vals := make([]ptrMarshal, 100)
	for i := range vals {
		vals[i].N = i % 5
	}
	anys := make([]any, 100)
	for i := range anys {
		if i%3 != 0 {
			anys[i] = map[string]any{"i": i, "html": "<b>"}
		}
	}
	cases := map[string]any{
		"alloc stubs":           stubs,
		"pointer-receiver JSON": vals,
		"interfaces":            anys,
		"short":                 []string{"a", "b"},
		"nil":                   []*structs.AllocListStub(nil),
		"empty":                 []*structs.AllocListStub{},
		"bytes":                 bytes.Repeat([]byte{1, 2, 3}, 100),
	}
	for name, obj := range cases {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(obj); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		s.writeJSON(rec, httptest.NewRequest(http.MethodGet, "/v1/allocations", nil), http.StatusOK, obj)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: status %d, content type %q", name, rec.Code, rec.Header().Get("Content-Type"))
		}
		if !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
			t.Errorf("%s: streamed body differs from encoding/json's (%d vs %d bytes)", name, rec.Body.Len(), want.Len())
		}
	}
	if _, ok := jsonList(stubs); !ok {
		t.Fatal("a long list is not streamed: the test proves nothing")
	}

	bad := make([]float64, 100)
	bad[50] = math.NaN()
	rec := httptest.NewRecorder()
	s.writeJSON(rec, httptest.NewRequest(http.MethodGet, "/v1/x", nil), http.StatusOK, bad)
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "failed to encode response") {
		t.Errorf("unencodable list: %d %q", rec.Code, rec.Body.String())
	}
}
