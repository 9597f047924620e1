package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// metaAgent is an agent whose client node is nodeID: it answers the node
// prefix list and /v1/client/metadata, and records the apply bodies.
type metaAgent struct {
	mu      sync.Mutex
	applied []api.NodeMetaApplyRequest
	reads   []string // node_id of each read
	lookups int      // node prefix lookups
}

func (m *metaAgent) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		switch {
		case r.URL.Path == "/v1/nodes":
			m.lookups++
			var stubs []*api.NodeListStub
			if strings.HasPrefix(nodeID, r.URL.Query().Get("prefix")) {
				stubs = append(stubs, &api.NodeListStub{ID: nodeID, Name: "node1"})
			}
			json.NewEncoder(w).Encode(stubs)
		case r.URL.Path == "/v1/client/metadata" && r.Method == "GET":
			m.reads = append(m.reads, r.URL.Query().Get("node_id"))
			json.NewEncoder(w).Encode(&api.NodeMetaResponse{
				Meta:    map[string]string{"connect.log_level": "info", "gpu": "a100"},
				Dynamic: map[string]*string{"gpu": ptr("a100"), "rack": nil},
				Static:  map[string]string{"connect.log_level": "info", "rack": "r1"},
			})
		case r.URL.Path == "/v1/client/metadata":
			var req api.NodeMetaApplyRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			if _, ok := req.Meta["bad key"]; ok {
				http.Error(w, `invalid Meta key "bad key"`, 400)
				return
			}
			m.applied = append(m.applied, req)
			json.NewEncoder(w).Encode(&api.NodeMetaResponse{})
		default:
			http.Error(w, "no route", 404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestNodeMetaRead(t *testing.T) {
	m := &metaAgent{}
	srv := m.server(t)
	out, errb, code := run(t, srv, "node", "meta", "read")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	want := `All Meta
connect.log_level = info
gpu               = a100

Dynamic Meta
gpu  = a100
rack = <unset>

Static Meta
connect.log_level = info
rack              = r1
`
	if out != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
	// -node-id takes a prefix and sends the full ID; -json prints the API object.
	out, errb, code = run(t, srv, "node", "meta", "read", "-json", "-node-id", nodeID[:6])
	if code != 0 || !strings.Contains(out, `"rack": null`) || !strings.Contains(out, `"Static": {`) {
		t.Fatalf("-json (%d %s):\n%s", code, errb, out)
	}
	if len(m.reads) != 2 || m.reads[0] != "" || m.reads[1] != nodeID {
		t.Fatalf("reads asked for %q", m.reads)
	}
	// A full ID needs no lookup (the agent may not reach its servers).
	if _, errb, code := run(t, srv, "node", "meta", "read", "-node-id", nodeID); code != 0 || m.lookups != 1 || m.reads[2] != nodeID {
		t.Fatalf("full ID: code %d %q, %d lookups, reads %q", code, errb, m.lookups, m.reads)
	}
	if _, errb, code := run(t, srv, "node", "meta", "read", "-node-id", "ffff"); code != 1 || !strings.Contains(errb, `No node(s) with prefix "ffff" found`) {
		t.Fatalf("unknown node: %d %q", code, errb)
	}
}

func TestNodeMetaApply(t *testing.T) {
	m := &metaAgent{}
	srv := m.server(t)
	out, errb, code := run(t, srv, "node", "meta", "apply", "-node-id", nodeID[:8], "-unset", "rack, old", "gpu=a100", "note=a=b", "empty=")
	if code != 0 || out != "" {
		t.Fatalf("code %d out %q err %q", code, out, errb)
	}
	if len(m.applied) != 1 {
		t.Fatalf("applied %d times", len(m.applied))
	}
	req := m.applied[0]
	got := map[string]string{}
	for k, v := range req.Meta {
		if v == nil {
			got[k] = "<nil>"
		} else {
			got[k] = *v
		}
	}
	want := map[string]string{"gpu": "a100", "note": "a=b", "empty": "", "rack": "<nil>", "old": "<nil>"}
	if req.NodeID != nodeID || len(got) != len(want) {
		t.Fatalf("sent %s %v, want %v", req.NodeID, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("sent %v, want %v", got, want)
		}
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "Must specify at least one key=value pair or -unset"},
		{[]string{"novalue"}, `Error parsing "novalue": metadata must be given as key=value`},
		{[]string{"-unset", "k", "k=v"}, `Key "k" is both set and unset`},
		{[]string{"bad key=v"}, `Error applying dynamic node metadata: Unexpected response code: 400 (invalid Meta key "bad key")`},
	} {
		_, errb, code := run(t, srv, append([]string{"node", "meta", "apply"}, tt.args...)...)
		if code != 1 || !strings.Contains(errb, tt.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", tt.args, code, errb, tt.want)
		}
	}
	if len(m.applied) != 1 {
		t.Fatalf("a refused command applied: %+v", m.applied[1:])
	}
}
