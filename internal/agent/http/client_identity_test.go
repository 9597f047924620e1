package httpapi

import (
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

type fakeIdentity struct {
	mu      sync.Mutex
	claims  map[string]any
	renewed int
}

func (f *fakeIdentity) NodeID() string { return "n1" }
func (f *fakeIdentity) NodeIdentityClaims() (map[string]any, error) {
	if f.claims == nil {
		return nil, structs.NewErrCoded(404, "node n1 has no identity yet")
	}
	return f.claims, nil
}
func (f *fakeIdentity) RenewNodeIdentity() {
	f.mu.Lock()
	f.renewed++
	f.mu.Unlock()
}

// `nomad node identity get|renew` through the official client: the claims
// of the local node's identity; a renewal is handed to the client; another
// node's ID is not answered for here; an agent without a client says so.
func TestClientIdentity(t *testing.T) {
	id := &fakeIdentity{claims: map[string]any{"nomad_node_id": "n1", "sub": "node:global:default:n1:default"}}
	env := newEnv(t, func(c *Config) { c.Identity = id })
	ids := env.client.Nodes().Identity()
	got, err := ids.Get(&api.NodeIdentityGetRequest{NodeID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Claims["nomad_node_id"] != "n1" || got.Claims["sub"] != "node:global:default:n1:default" {
		t.Fatalf("claims %v", got.Claims)
	}
	if _, err := ids.Renew(&api.NodeIdentityRenewRequest{NodeID: "n1"}, nil); err != nil {
		t.Fatal(err)
	}
	if id.renewed != 1 {
		t.Fatalf("renewal reached the client %d times, want 1", id.renewed)
	}
	_, err = ids.Get(&api.NodeIdentityGetRequest{NodeID: "n2"}, nil)
	wantStatus(t, err, 400, `node_id "n2" is not this agent's client`)
	if code, _, _ := env.raw(t, "DELETE", "/v1/client/identity", ""); code != 405 {
		t.Fatalf("DELETE answered %d, want 405", code)
	}

	id.claims = nil
	_, err = ids.Get(&api.NodeIdentityGetRequest{}, nil)
	wantStatus(t, err, 404, "no identity yet")

	none := newEnv(t, nil)
	_, err = none.client.Nodes().Identity().Get(&api.NodeIdentityGetRequest{}, nil)
	if err == nil || !strings.Contains(err.Error(), "does not run a Nomad client") {
		t.Fatalf("agent without a client: %v", err)
	}
}
