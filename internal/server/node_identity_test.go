package server

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// verifyNodeIdentity checks tok against the public keys the servers publish
// (what /.well-known/jwks.json serves) and returns its claims.
func verifyNodeIdentity(t *testing.T, s *Server, tok string) map[string]any {
	t.Helper()
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.EdDSA, jose.RS256})
	if err != nil {
		t.Fatalf("node identity is not a signed JWT: %v", err)
	}
	var keys structs.KeyringListPublicResponse
	if err := s.RPC("Keyring.ListPublic", &structs.GenericRequest{}, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys.PublicKeys {
		if k.KeyID != parsed.Headers[0].KeyID {
			continue
		}
		pub, err := x509.ParsePKIXPublicKey(k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		var claims map[string]any
		if err := parsed.Claims(pub, &claims); err != nil {
			t.Fatalf("node identity does not verify with the published key: %v", err)
		}
		return claims
	}
	t.Fatalf("node identity signed with unpublished key %q", parsed.Headers[0].KeyID)
	return nil
}

// A node gets a node identity when it registers, with Nomad's claims
// (nomad_node_class only when the node has a class), signed by a published
// key and living its pool's node_identity_ttl (24 h unset); a heartbeat
// that asks for a new one gets one, a plain heartbeat none.
func TestNodeIdentitySignedAndRenewed(t *testing.T) {
	s := testServer(t, nil)
	waitFor(t, 5*time.Second, "first signing key", func() bool {
		var resp structs.KeyringListPublicResponse
		return s.RPC("Keyring.ListPublic", &structs.GenericRequest{}, &resp) == nil && len(resp.PublicKeys) == 1
	})
	n := &structs.Node{ID: uuid.NewString(), SecretID: uuid.NewString(), Name: "n1", Datacenter: "dc1",
		Attributes: map[string]string{"kernel.name": "linux"}}
	var reg structs.NodeUpdateResponse
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n}, &reg); err != nil {
		t.Fatal(err)
	}
	if reg.SignedIdentity == "" {
		t.Fatal("registration answered no node identity")
	}
	claims := verifyNodeIdentity(t, s, reg.SignedIdentity)
	var names []string
	for k := range claims {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"aud", "exp", "iat", "jti", "nbf", "nomad_node_datacenter", "nomad_node_id", "nomad_node_pool", "sub"}
	if !slices.Equal(names, want) {
		t.Fatalf("claims %v, want %v", names, want)
	}
	if claims["sub"] != "node:global:default:"+n.ID+":default" || claims["nomad_node_id"] != n.ID ||
		claims["nomad_node_pool"] != "default" || claims["nomad_node_datacenter"] != "dc1" {
		t.Fatalf("claims %v", claims)
	}
	if life := claims["exp"].(float64) - claims["iat"].(float64); life != (24 * time.Hour).Seconds() {
		t.Fatalf("identity lives %vs, want 24h", life)
	}

	hb := &structs.NodeUpdateStatusRequest{NodeID: n.ID, SecretID: n.SecretID, Status: structs.NodeStatusReady}
	var plain structs.NodeUpdateResponse
	if err := s.RPC("Node.UpdateStatus", hb, &plain); err != nil {
		t.Fatal(err)
	}
	if plain.SignedIdentity != "" {
		t.Fatal("a heartbeat that did not ask got a new identity")
	}
	hb.ForceIdentityRenewal = true
	var renewed structs.NodeUpdateResponse
	if err := s.RPC("Node.UpdateStatus", hb, &renewed); err != nil {
		t.Fatal(err)
	}
	if renewed.SignedIdentity == "" {
		t.Fatal("a heartbeat asking for a new identity got none")
	}
	if c := verifyNodeIdentity(t, s, renewed.SignedIdentity); c["jti"] == claims["jti"] || c["nomad_node_id"] != n.ID {
		t.Fatalf("renewed identity %v is not a new identity of the node", c)
	}
}
