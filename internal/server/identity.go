package server

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// Workload identities: JWTs the servers sign with the active root key for
// each task of an allocation, verifiable by anyone through the JWKS. A
// workload identity is also a token: it resolves to an ACL with implicit
// read and list access to the job's variables under nomad/jobs/.

// defaultIdentityAudience is the audience of the default identity.
const defaultIdentityAudience = "nomadproject.io"

// workloadClaims are the claims of a workload identity.
type workloadClaims struct {
	jwt.Claims
	Namespace    string `json:"nomad_namespace"`
	JobID        string `json:"nomad_job_id"`
	AllocationID string `json:"nomad_allocation_id"`
	Task         string `json:"nomad_task"`
}

// SignIdentities mints the workload identities of an allocation's tasks:
// the default one and every named identity block, with their audiences
// and TTLs. Only the allocation's node (or a management token) may ask.
func (a *Alloc) SignIdentities(args *structs.AllocIdentitiesRequest, reply *structs.AllocIdentitiesResponse) error {
	if done, err := a.srv.forward("Alloc.SignIdentities", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	st := a.srv.State()
	alloc, err := st.AllocByID(nil, args.AllocID)
	if err != nil {
		return err
	}
	if a.srv.config.ACLEnabled {
		node, _ := st.NodeBySecretID(nil, args.AuthToken)
		if node == nil || alloc == nil || node.ID != alloc.NodeID {
			if err := a.srv.authorizeManagement(args.AuthToken); err != nil {
				return err
			}
		}
	}
	if alloc == nil {
		return structs.NewErrCoded(404, "allocation %s not found", args.AllocID)
	}
	if alloc.ServerTerminalStatus() || alloc.Job == nil {
		return structs.NewErrCoded(400, "allocation %s is terminal: no identities are signed for it", args.AllocID)
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return structs.NewErrCoded(400, "allocation %s: group %q not in its job", args.AllocID, alloc.TaskGroup)
	}
	key, err := activeRootKey(st, a.srv.keystore)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, task := range tg.Tasks {
		ids := []*structs.WorkloadIdentity{task.Identity}
		ids = append(ids, task.Identities...)
		for _, wi := range ids {
			name, aud, ttl := "default", []string{defaultIdentityAudience}, time.Duration(0)
			if wi != nil {
				if wi.Name != "" {
					name = wi.Name
				}
				if len(wi.Audience) > 0 {
					aud = wi.Audience
				}
				ttl = wi.TTL
			}
			if wi != nil && wi != task.Identity && name != "default" && len(wi.Audience) == 0 {
				aud = nil
			}
			c := workloadClaims{
				Claims: jwt.Claims{
					Subject:  strings.Join([]string{a.srv.config.Region, alloc.Namespace, alloc.JobID, alloc.TaskGroup, task.Name, name}, ":"),
					Audience: aud, IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
				},
				Namespace: alloc.Namespace, JobID: alloc.JobID, AllocationID: alloc.ID, Task: task.Name,
			}
			var exp int64
			if ttl > 0 {
				c.Expiry = jwt.NewNumericDate(now.Add(ttl))
				exp = now.Add(ttl).UnixNano()
			}
			tok, err := signWorkloadJWT(key, c)
			if err != nil {
				return err
			}
			reply.Identities = append(reply.Identities, &structs.SignedWorkloadIdentity{
				TaskName: task.Name, IdentityName: name, JWT: tok, Expiration: exp})
		}
	}
	reply.Index = alloc.ModifyIndex
	return nil
}

func rootSigner(key *structs.RootKey) (crypto.Signer, jose.SignatureAlgorithm, error) {
	priv, err := x509.ParsePKCS8PrivateKey(key.PrivateKey)
	if err != nil {
		return nil, "", fmt.Errorf("keyring: key %s: %w", key.KeyID, err)
	}
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, "", fmt.Errorf("keyring: key %s is not a signing key", key.KeyID)
	}
	return signer, jose.SignatureAlgorithm(key.Algorithm), nil
}

func signWorkloadJWT(key *structs.RootKey, claims any) (string, error) {
	signer, alg, err := rootSigner(key)
	if err != nil {
		return "", err
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: signer},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), key.KeyID))
	if err != nil {
		return "", err
	}
	return jwt.Signed(sig).Claims(claims).Serialize()
}

// looksLikeJWT tells a JWT from an ACL token secret (a UUID).
func looksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 && len(s) > 40 }

// resolveWorkloadIdentity verifies a workload identity against the keyring
// and returns the ACL it grants: read and list on the variables at
// nomad/jobs/<job>, nomad/jobs/<job>/<group> and
// nomad/jobs/<job>/<group>/<task> (and below it) in its namespace, as long
// as its allocation is not terminal.
func (s *Server) resolveWorkloadIdentity(raw string) (*acl.ACL, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.EdDSA, jose.RS256, jose.ES256})
	if err != nil || len(tok.Headers) != 1 {
		return nil, ErrTokenNotFound
	}
	st := s.State()
	keys, err := st.RootKeys(nil)
	if err != nil {
		return nil, err
	}
	var key *structs.RootKey
	for _, k := range keys {
		if k.KeyID == tok.Headers[0].KeyID {
			key = k
		}
	}
	if key == nil {
		return nil, ErrTokenNotFound
	}
	if key = withMaterial(s.keystore, key); key == nil {
		s.wantKeyMaterial()
		return nil, structs.NewErrCoded(500, "keyring: root key %s is not yet on this server; it is being fetched from the leader, retry", tok.Headers[0].KeyID)
	}
	signer, _, err := rootSigner(key)
	if err != nil {
		return nil, err
	}
	var c workloadClaims
	if err := tok.Claims(signer.Public(), &c); err != nil {
		return nil, ErrTokenNotFound
	}
	if err := c.Claims.ValidateWithLeeway(jwt.Expected{Time: time.Now()}, 0); err != nil {
		return nil, ErrTokenExpired
	}
	alloc, err := st.AllocByID(nil, c.AllocationID)
	if err != nil {
		return nil, err
	}
	if alloc == nil || alloc.TerminalStatus() || alloc.JobID != c.JobID || alloc.Namespace != c.Namespace {
		return nil, ErrTokenNotFound
	}
	base := "nomad/jobs/" + c.JobID
	caps := []string{acl.VariablesCapabilityRead, acl.VariablesCapabilityList}
	paths := []*acl.VariablesPathPolicy{
		{PathSpec: base, Capabilities: caps},
		{PathSpec: base + "/" + alloc.TaskGroup, Capabilities: caps},
		{PathSpec: base + "/" + alloc.TaskGroup + "/" + c.Task, Capabilities: caps},
		{PathSpec: base + "/" + alloc.TaskGroup + "/" + c.Task + "/*", Capabilities: caps},
	}
	return acl.NewACL(false, []*acl.Policy{{Namespaces: []*acl.NamespacePolicy{{
		Name: c.Namespace, Variables: &acl.VariablesPolicy{Paths: paths},
	}}}}), nil
}
