package httpapi

import (
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// fakeMeta is a client with static meta {rack: r1} and whatever was applied.
type fakeMeta struct {
	mu  sync.Mutex
	id  string
	dyn map[string]*string
}

func (f *fakeMeta) NodeID() string { return f.id }

func (f *fakeMeta) NodeMeta() *api.NodeMetaResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	merged := map[string]string{"rack": "r1"}
	for k, v := range f.dyn {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = *v
		}
	}
	return &api.NodeMetaResponse{Meta: merged, Dynamic: maps.Clone(f.dyn), Static: map[string]string{"rack": "r1"}}
}

func (f *fakeMeta) ApplyNodeMeta(meta map[string]*string) (*api.NodeMetaResponse, error) {
	if _, ok := meta["bad key"]; ok {
		return nil, structs.NewErrCoded(400, `invalid Meta key "bad key"`)
	}
	f.mu.Lock()
	if f.dyn == nil {
		f.dyn = map[string]*string{}
	}
	maps.Copy(f.dyn, meta)
	f.mu.Unlock()
	return f.NodeMeta(), nil
}

func TestClientMetadata(t *testing.T) {
	fm := &fakeMeta{id: "node-1"}
	env := newEnv(t, func(c *Config) { c.NodeMeta = fm })

	for _, id := range []string{"", "node-1"} {
		m, err := env.client.Nodes().Meta().Read(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.Meta["rack"] != "r1" || m.Static["rack"] != "r1" || len(m.Dynamic) != 0 {
			t.Fatalf("read %q: %+v", id, m)
		}
	}
	m, err := env.client.Nodes().Meta().Apply(&api.NodeMetaApplyRequest{NodeID: "node-1",
		Meta: map[string]*string{"gpu": new("a100"), "rack": nil}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Dynamic["rack"]; !ok || v != nil || m.Meta["gpu"] != "a100" || m.Meta["rack"] != "" || m.Static["rack"] != "r1" {
		t.Fatalf("apply answered %+v", m)
	}
	// The null survives the JSON round trip as an unset, not as "".
	if code, _, body := env.raw(t, "GET", "/v1/client/metadata", ""); code != 200 || !strings.Contains(body, `"rack":null`) {
		t.Fatalf("GET after apply: %d %s", code, body)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/client/metadata", `{"Meta":{"k":"v"}}`); code != 200 || fm.NodeMeta().Meta["k"] != "v" {
		t.Fatalf("PUT: %d", code)
	}

	for _, tt := range []struct{ method, path, body, want string }{
		{"GET", "/v1/client/metadata?node_id=node-2", "", `node_id "node-2" is not this agent's client (node-1)`},
		{"POST", "/v1/client/metadata", `{"NodeID":"node-2","Meta":{"k":"v"}}`, `node_id "node-2" is not this agent's client (node-1)`},
		{"POST", "/v1/client/metadata?node_id=node-2", `{"Meta":{"k":"v"}}`, `node_id "node-2" is not this agent's client`},
		{"POST", "/v1/client/metadata", `{"Meta":{"bad key":"v"}}`, `invalid Meta key "bad key"`},
		{"POST", "/v1/client/metadata", `{"Meta":{"k":1}}`, "Failed to decode request body"},
		{"POST", "/v1/client/metadata", ``, "Request body is empty"},
	} {
		if code, _, body := env.raw(t, tt.method, tt.path, tt.body); code != http.StatusBadRequest || !strings.Contains(body, tt.want) {
			t.Errorf("%s %s %s: %d %q, want 400 %q", tt.method, tt.path, tt.body, code, body, tt.want)
		}
	}
	if fm.NodeMeta().Meta["k"] != "v" {
		t.Fatal("a refused request changed the meta")
	}
	if code, _, _ := env.raw(t, "DELETE", "/v1/client/metadata", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %d", code)
	}
	bare := newEnv(t, nil)
	for _, method := range []string{"GET", "POST"} {
		if code, _, body := bare.raw(t, method, "/v1/client/metadata", `{"Meta":{"k":"v"}}`); code != http.StatusBadRequest || !strings.Contains(body, "does not run a Nomad client") {
			t.Fatalf("%s without a client: %d %q", method, code, body)
		}
	}
}
