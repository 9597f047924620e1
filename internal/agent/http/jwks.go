package httpapi

import (
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"math/big"
	"net/http"

	"github.com/drover-project/drover/internal/structs"
)

// jwk is one JSON Web Key (RFC 7517) as served at /.well-known/jwks.json.
type jwk struct {
	KeyType   string `json:"kty"`
	KeyID     string `json:"kid"`
	Use       string `json:"use"`
	Algorithm string `json:"alg"`
	N         string `json:"n,omitempty"`
	E         string `json:"e,omitempty"`
	Curve     string `json:"crv,omitempty"`
	X         string `json:"x,omitempty"`
}

type jwks struct {
	Keys []jwk `json:"keys"`
}

// /.well-known/jwks.json: the public keys workload identities are signed with.
func (s *server) jwksRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.KeyringListPublicResponse
	if err := s.cfg.RPC.RPC("Keyring.ListPublic", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	out := jwks{Keys: []jwk{}}
	for _, k := range reply.PublicKeys {
		if k == nil {
			continue
		}
		key, err := publicKeyToJWK(k)
		if err != nil {
			// One bad key must not hide the others from verifiers.
			s.log.Warn("skipping unusable public key in JWKS", "key_id", k.KeyID, "error", err)
			continue
		}
		out.Keys = append(out.Keys, key)
	}
	return &out, nil
}

// publicKeyToJWK converts a PKIX DER public key to its JWK form.
func publicKeyToJWK(k *structs.KeyringPublicKey) (jwk, error) {
	pub, err := x509.ParsePKIXPublicKey(k.PublicKey)
	if err != nil {
		return jwk{}, fmt.Errorf("parse public key: %w", err)
	}
	use := k.Use
	if use == "" {
		use = "sig"
	}
	b64 := base64.RawURLEncoding.EncodeToString
	switch pk := pub.(type) {
	case *rsa.PublicKey:
		alg := k.Algorithm
		if alg == "" {
			alg = "RS256"
		}
		return jwk{KeyType: "RSA", KeyID: k.KeyID, Use: use, Algorithm: alg,
			N: b64(pk.N.Bytes()), E: b64(big.NewInt(int64(pk.E)).Bytes())}, nil
	case ed25519.PublicKey:
		alg := k.Algorithm
		if alg == "" {
			alg = "EdDSA"
		}
		return jwk{KeyType: "OKP", KeyID: k.KeyID, Use: use, Algorithm: alg, Curve: "Ed25519", X: b64(pk)}, nil
	}
	return jwk{}, fmt.Errorf("unsupported public key type %T", pub)
}

// oidcDiscovery is the OpenID provider metadata verifiers read to find the
// JWKS (the subset workload identity verifiers use).
type oidcDiscovery struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
}

// /.well-known/openid-configuration: where the JWKS is and which
// algorithms its keys sign with. The issuer is the address the request was
// made to.
func (s *server) oidcDiscoveryRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.KeyringListPublicResponse
	if err := s.cfg.RPC.RPC("Keyring.ListPublic", &args, &reply); err != nil {
		return nil, err
	}
	algs := []string{}
	seen := map[string]bool{}
	for _, k := range reply.PublicKeys {
		if k != nil && k.Algorithm != "" && !seen[k.Algorithm] {
			seen[k.Algorithm] = true
			algs = append(algs, k.Algorithm)
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	issuer := scheme + "://" + r.Host
	return &oidcDiscovery{Issuer: issuer, JWKSURI: issuer + "/.well-known/jwks.json", SigningAlgs: algs,
		ResponseTypes: []string{"code"}, SubjectTypes: []string{"public"}}, nil
}
