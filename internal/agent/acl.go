package agent

import (
	"sync"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// serverACLs resolves tokens with the in-process server (its cache).
type serverACLs struct{ a *Agent }

func (s serverACLs) ResolveACL(secret string) (*acl.ACL, error) {
	_, a, err := s.a.server.ResolveACL(secret)
	return a, err
}

// remoteACLs resolves tokens on a client-only agent: the servers return
// the token's policies (ACL.ResolveToken) and the agent compiles them,
// sharing compiled ACLs by policy content.
type remoteACLs struct {
	a  *Agent
	mu sync.Mutex
	// compiled is keyed by the policies' names and modify indexes; it is
	// dropped whole when it grows past 1024 entries.
	compiled map[string]*acl.ACL
}

func (r *remoteACLs) ResolveACL(secret string) (*acl.ACL, error) {
	var reply structs.ACLResolveResponse
	args := structs.ACLGetRequest{Name: secret, QueryOptions: structs.QueryOptions{Region: r.a.config.Region, AllowStale: true}}
	if err := r.a.RPC("ACL.ResolveToken", &args, &reply); err != nil {
		return nil, err
	}
	if reply.Token != nil && reply.Token.Type == structs.ACLManagementToken {
		return acl.ManagementACL, nil
	}
	key := ""
	for _, p := range reply.Policies {
		key += p.Name + "\x00" + p.Rules + "\x00"
	}
	r.mu.Lock()
	c, ok := r.compiled[key]
	r.mu.Unlock()
	if ok {
		return c, nil
	}
	parsed := make([]*acl.Policy, 0, len(reply.Policies))
	for _, p := range reply.Policies {
		pp, err := acl.Parse(p.Rules)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, pp)
	}
	c = acl.NewACL(false, parsed)
	r.mu.Lock()
	if r.compiled == nil || len(r.compiled) > 1024 {
		r.compiled = map[string]*acl.ACL{}
	}
	r.compiled[key] = c
	r.mu.Unlock()
	return c, nil
}
