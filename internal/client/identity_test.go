package client

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"
)

func fakeJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return "eyJhbGciOiJFZERTQSJ9." + base64.RawURLEncoding.EncodeToString(b) + ".c2ln"
}

// A node asks for an identity at every heartbeat until it has one (sooner
// than its TTL, backing off), then again only when an operator asks or the
// identity is past half its life; its claims are served as signed.
func TestNodeIdentityLifecycle(t *testing.T) {
	var id signedIdentity
	now := time.Unix(1_700_000_000, 0)
	ttl := 10 * time.Second
	if !id.wanted(now) {
		t.Fatal("a node without an identity does not ask for one")
	}
	var waits []time.Duration
	for range 6 {
		waits = append(waits, id.retryWait(ttl))
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("heartbeat waits without an identity %v, want %v", waits, want)
		}
	}
	if w := id.retryWait(ttl); w != ttl {
		t.Fatalf("backoff grew past the TTL: %v", w)
	}

	id.set(fakeJWT(t, map[string]any{"nomad_node_id": "n1", "iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix()}))
	if id.retryWait(ttl) != ttl || id.wanted(now.Add(time.Hour)) {
		t.Fatal("a node with a fresh identity asks for another")
	}
	if !id.wanted(now.Add(12*time.Hour + time.Second)) {
		t.Fatal("an identity past half its life is not renewed")
	}
	c := &Client{}
	c.identity.set(fakeJWT(t, map[string]any{"nomad_node_id": "n1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}))
	if c.identity.wanted(now) {
		t.Fatal("fresh identity wanted")
	}
	c.RenewNodeIdentity()
	if !c.identity.wanted(now) {
		t.Fatal("an operator's renewal is not asked for at the next heartbeat")
	}
	claims, err := c.NodeIdentityClaims()
	if err != nil || claims["nomad_node_id"] != "n1" {
		t.Fatalf("claims %v, %v", claims, err)
	}
	c.identity.set(fakeJWT(t, map[string]any{"nomad_node_id": "n1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}))
	if c.identity.wanted(now) {
		t.Fatal("a new identity did not clear the renewal request")
	}
}
