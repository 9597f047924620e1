package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

func signJWT(t *testing.T, key *ecdsa.PrivateKey, claims jwt.Claims, extra map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(sig).Claims(claims).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestACLLoginJWT(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	must := func(method string, args, reply any) {
		t.Helper()
		if err := s.RPC(method, args, reply); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	must("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "team-a-submit", Rules: `namespace "team-a" { capabilities = ["submit-job"] }`}}, WriteRequest: wr}, &structs.WriteMeta{})
	must("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{{
		Name: "ci", Type: "JWT", TokenLocality: "local", MaxTokenTTL: time.Hour,
		Config: &api.ACLAuthMethodConfig{JWTValidationPubKeys: []string{pubPEM}, BoundAudiences: []string{"drover"},
			BoundIssuer: []string{"https://ci.example"}, ClaimMappings: map[string]string{"team": "team"}},
	}}, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{})
	must("ACL.UpsertBindingRules", &structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{{
		AuthMethod: "ci", Selector: `value.team == "a"`, BindType: "policy", BindName: "team-${value.team}-submit",
	}}, WriteRequest: wr}, &structs.ACLBindingRuleUpsertResponse{})

	now := time.Now()
	good := jwt.Claims{Issuer: "https://ci.example", Audience: jwt.Audience{"drover"}, Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now)}
	var reply structs.ACLTokenResponse
	must("ACL.Login", &structs.ACLLoginRequest{AuthMethodName: "ci", LoginToken: signJWT(t, key, good, map[string]any{"team": "a"})}, &reply)
	if reply.Token == nil || len(reply.Token.Policies) != 1 || reply.Token.Policies[0] != "team-a-submit" || reply.Token.ExpirationTime == nil {
		t.Fatalf("login token = %+v", reply.Token)
	}
	if err := s.authorizeNS(reply.Token.SecretID, "team-a", "submit-job"); err != nil {
		t.Fatalf("the login token cannot submit in team-a: %v", err)
	}
	if err := s.authorizeNS(reply.Token.SecretID, "default", "submit-job"); err == nil {
		t.Fatal("the login token may submit in default")
	}

	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	wrongAud := good
	wrongAud.Audience = jwt.Audience{"someone-else"}
	expired := good
	expired.Expiry = jwt.NewNumericDate(now.Add(-time.Hour))
	for _, tc := range []struct {
		name, token, want string
	}{
		{"other key", signJWT(t, other, good, map[string]any{"team": "a"}), "verifies the token's signature"},
		{"wrong audience", signJWT(t, key, wrongAud, map[string]any{"team": "a"}), "bound audience"},
		{"expired", signJWT(t, key, expired, map[string]any{"team": "a"}), "expired"},
		{"no binding", signJWT(t, key, good, map[string]any{"team": "b"}), "no role or policy bindings matched"},
		{"garbage", "not-a-jwt", "failed to validate login token"},
	} {
		err := s.RPC("ACL.Login", &structs.ACLLoginRequest{AuthMethodName: "ci", LoginToken: tc.token}, &structs.ACLTokenResponse{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A client introduction token is a JWT signed by the keyring's active key
// (verifiable with the JWKS key); it needs node_pool write.
func TestACLClientIntroductionToken(t *testing.T) {
	s, root := aclServer(t)
	waitFor(t, 5*time.Second, "root key", func() bool { k, _ := s.State().RootKeys(nil); return len(k) > 0 })
	var reply structs.ACLClientIntroductionTokenResponse
	if err := s.RPC("ACL.CreateClientIntroductionToken", &structs.ACLClientIntroductionTokenRequest{NodeName: "n1", NodePool: "default",
		WriteRequest: structs.WriteRequest{AuthToken: root}}, &reply); err != nil {
		t.Fatal(err)
	}
	keys, _ := s.State().RootKeys(nil)
	pub, err := publicKeyOf(withMaterial(s.keystore, keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := x509.ParsePKIXPublicKey(pub.PublicKey)
	tok, err := jwt.ParseSigned(reply.JWT, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := tok.Claims(pk, &claims); err != nil || claims["nomad_node_name"] != "n1" || claims["nomad_node_pool"] != "default" {
		t.Fatalf("claims %v, %v", claims, err)
	}
	err = s.RPC("ACL.CreateClientIntroductionToken", &structs.ACLClientIntroductionTokenRequest{}, &reply)
	if err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("anonymous: %v", err)
	}
}
