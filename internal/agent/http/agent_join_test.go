package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

type fakeMembership struct {
	joined  []string
	left    string
	prune   bool
	servers []string
}

func (f *fakeMembership) Join(addrs []string) (int, error) {
	f.joined = addrs
	if addrs[0] == "nope" {
		return 0, errors.New("1 error occurred: lookup nope: no such host")
	}
	return len(addrs), nil
}
func (f *fakeMembership) ForceLeave(node string, prune bool) error {
	f.left, f.prune = node, prune
	return nil
}
func (f *fakeMembership) Keyring(op, key string) (*api.KeyringResponse, error) {
	return &api.KeyringResponse{Keys: map[string]int{key: 1}, NumNodes: 1}, nil
}
func (f *fakeMembership) ClientServers() ([]string, error) { return f.servers, nil }
func (f *fakeMembership) SetClientServers(a []string) error {
	f.servers = a
	return nil
}

// Join, force-leave and the client's server list: Nomad's shapes, and bad
// input answered 400 naming what is missing.
func TestAgentJoinForceLeaveServers(t *testing.T) {
	m := &fakeMembership{}
	env := newEnv(t, func(c *Config) { c.Membership = m })

	n, err := env.client.Agent().Join("10.0.0.1:4648", "10.0.0.2")
	if err != nil || n != 2 || len(m.joined) != 2 {
		t.Fatalf("join: %d %v %v", n, err, m.joined)
	}
	if _, err := env.client.Agent().Join("nope"); err == nil || !strings.Contains(err.Error(), "no such host") {
		t.Fatalf("a failed join must be an error naming the cause: %v", err)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/agent/join", ""); code != 400 || !strings.Contains(body, "address") {
		t.Fatalf("join without address: %d %s", code, body)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/agent/join?address=x", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET join: %d", code)
	}

	if err := env.client.Agent().ForceLeave("s2.global"); err != nil || m.left != "s2.global" || m.prune {
		t.Fatalf("force-leave: %v %q %v", err, m.left, m.prune)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/agent/force-leave?node=s3.global&prune=true", ""); code != 200 || m.left != "s3.global" || !m.prune {
		t.Fatalf("force-leave -prune: %d %q %v", code, m.left, m.prune)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/agent/force-leave", ""); code != 400 || !strings.Contains(body, "node") {
		t.Fatalf("force-leave without node: %d %s", code, body)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/agent/force-leave?node=x&prune=maybe", ""); code != 400 || !strings.Contains(body, "prune") {
		t.Fatalf("force-leave with a bad prune: %d %s", code, body)
	}

	if err := env.client.Agent().SetServers([]string{"10.0.0.1:4647", "10.0.0.2:4647"}); err != nil {
		t.Fatal(err)
	}
	got, err := env.client.Agent().Servers()
	if err != nil || strings.Join(got, ",") != "10.0.0.1:4647,10.0.0.2:4647" {
		t.Fatalf("servers: %v %v", got, err)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/agent/servers", ""); code != 400 || !strings.Contains(body, "address") {
		t.Fatalf("set servers without address: %d %s", code, body)
	}

	// An agent that runs no server answers join with 501.
	env2 := newEnv(t, func(c *Config) { c.Membership = &notServer{} })
	if code, _, _ := env2.raw(t, "PUT", "/v1/agent/join?address=a", ""); code != 501 {
		t.Fatalf("join on a client-only agent: %d", code)
	}
}

type notServer struct{ fakeMembership }

func (*notServer) Join([]string) (int, error) {
	return 0, structs.NewErrCoded(501, "this agent runs no server")
}
