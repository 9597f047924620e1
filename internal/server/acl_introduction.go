package server

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// Client introduction token lifetimes: Nomad's default and a ceiling.
const (
	defaultIntroductionTTL = 5 * time.Minute
	maxIntroductionTTL     = 24 * time.Hour
)

// CreateClientIntroductionToken signs, with the cluster's active root key,
// a JWT that introduces a new client node (name and pool as claims). It
// needs node_pool write on the pool.
func (a *ACL) CreateClientIntroductionToken(args *structs.ACLClientIntroductionTokenRequest, reply *structs.ACLClientIntroductionTokenResponse) error {
	if done, err := a.srv.forward("ACL.CreateClientIntroductionToken", args.Region, false, args, reply); done {
		return err
	}
	pool := args.NodePool
	if pool == "" {
		pool = "default"
	}
	if err := a.srv.authorize(args.AuthToken, func(ac *acl.ACL) bool { return ac.AllowNodePoolOperation(pool, "write") }); err != nil {
		return err
	}
	ttl := args.TTL
	switch {
	case ttl < 0:
		return structs.NewErrCoded(400, "TTL must not be negative")
	case ttl == 0:
		ttl = defaultIntroductionTTL
	case ttl > maxIntroductionTTL:
		return structs.NewErrCoded(400, "TTL %s is longer than the maximum %s", ttl, maxIntroductionTTL)
	}
	// The newest active key, as workload identities are signed: during a
	// rotation two keys are briefly active.
	key, err := activeRootKey(a.srv.State(), a.srv.keystore)
	if err != nil {
		return err
	}
	priv, err := x509.ParsePKCS8PrivateKey(key.PrivateKey)
	if err != nil {
		return fmt.Errorf("keyring: key %s: %w", key.KeyID, err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm), Key: priv.(crypto.Signer)},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", key.KeyID))
	if err != nil {
		return err
	}
	now := time.Now()
	claims := jwt.Claims{
		ID: newID(), Issuer: a.srv.config.Region, Audience: jwt.Audience{"nomadproject.io"},
		Subject:  fmt.Sprintf("node-introduction:%s:%s:%s:default", a.srv.config.Region, pool, args.NodeName),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(ttl)),
	}
	raw, err := jwt.Signed(signer).Claims(claims).Claims(map[string]any{"nomad_node_pool": pool, "nomad_node_name": args.NodeName}).Serialize()
	if err != nil {
		return err
	}
	reply.JWT = raw
	return nil
}
