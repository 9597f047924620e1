package client

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// signedIdentity is the node identity JWT the servers signed for this node
// (server/node_identity.go) and whether the node should ask for a new one
// at its next heartbeat.
type signedIdentity struct {
	mu sync.Mutex
	// jwt is the current identity ("" until the servers sign one) and
	// issued/expires its validity.
	jwt             string
	issued, expires time.Time
	// renew is set by PUT /v1/client/identity/renew.
	renew bool
	// backoff paces the heartbeats that ask again while the node has no
	// identity (the servers had no root key yet: right after the first
	// election a node may register before the leader created it).
	backoff time.Duration
}

// set keeps a newly signed identity (an unreadable one is ignored: the node
// keeps asking for another).
func (n *signedIdentity) set(tok string) {
	claims, err := jwtClaims(tok)
	if err != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.jwt, n.renew = tok, false
	n.issued, n.expires = claimTime(claims["iat"]), claimTime(claims["exp"])
}

// wanted reports whether the next heartbeat asks for a new identity: none
// yet, an operator asked, or the current one is past half its life.
func (n *signedIdentity) wanted(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.jwt == "" || n.renew {
		return true
	}
	return !n.expires.IsZero() && now.After(n.issued.Add(n.expires.Sub(n.issued)/2))
}

// retryWait is the wait before the next heartbeat: ttl, or sooner (from
// 250 ms, doubling) while the node still has no identity.
func (n *signedIdentity) retryWait(ttl time.Duration) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.jwt != "" {
		n.backoff = 0
		return ttl
	}
	n.backoff = max(registerBackoffMin, min(2*n.backoff, ttl))
	return min(ttl, n.backoff)
}

// NodeIdentityClaims are the claims of the node's current identity (as
// GET /v1/client/identity answers them); 404 before the servers signed one.
func (c *Client) NodeIdentityClaims() (map[string]any, error) {
	c.identity.mu.Lock()
	tok := c.identity.jwt
	c.identity.mu.Unlock()
	if tok == "" {
		return nil, structs.NewErrCoded(404, "node %s has no identity yet: the servers sign one at its next heartbeat", c.NodeID())
	}
	return jwtClaims(tok)
}

// RenewNodeIdentity makes the node ask the servers for a new identity at
// its next heartbeat.
func (c *Client) RenewNodeIdentity() {
	c.identity.mu.Lock()
	c.identity.renew = true
	c.identity.mu.Unlock()
}

// jwtClaims decodes a JWT's payload. The servers signed it and sent it over
// the node's authenticated connection; anyone else verifies it against the
// JWKS.
func jwtClaims(tok string) (map[string]any, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, structs.NewErrCoded(500, "node identity is not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, structs.NewErrCoded(500, "node identity payload: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		return nil, structs.NewErrCoded(500, "node identity payload: %v", err)
	}
	return claims, nil
}

func claimTime(v any) time.Time {
	if f, ok := v.(float64); ok && f > 0 {
		return time.Unix(int64(f), 0)
	}
	return time.Time{}
}
