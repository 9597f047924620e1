package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// ACL errors as Nomad words them (403s).
var (
	ErrTokenNotFound = structs.NewErrCoded(403, "ACL token not found")
	ErrTokenExpired  = structs.NewErrCoded(403, "ACL token expired")
	errACLDisabled   = structs.NewErrCoded(400, "ACL support disabled")
	errPermission    = structs.NewErrCoded(403, "Permission denied")
)

// anonymousToken is what a request without a token acts as: its one
// policy, "anonymous", grants what an operator gives it (nothing until a
// policy of that name exists).
var anonymousToken = &structs.ACLToken{
	AccessorID: "anonymous", Name: "Anonymous Token", Type: structs.ACLClientToken,
	Policies: []string{structs.AnonymousACLPolicy}, Global: true,
}

// aclCache caches what token secrets resolve to. An entry is valid only
// at the ACL index (the highest index of the ACL tables) it was computed
// at: any write to any ACL table invalidates every entry. Compiled ACLs
// are also shared by policy content, so tokens with the same policies
// compile once.
type aclCache struct {
	mu       sync.Mutex
	byToken  map[string]tokenEntry
	compiled map[string]*acl.ACL
}

type tokenEntry struct {
	index uint64
	token *structs.ACLToken
	acl   *acl.ACL
}

const aclCacheMax = 4096

// resolveToken returns the token and the compiled ACL a secret grants. With
// ACLs off every request is management. The now argument decides expiry.
func (s *Server) resolveToken(secret string) (*structs.ACLToken, *acl.ACL, error) {
	if !s.config.ACLEnabled {
		return nil, acl.ManagementACL, nil
	}
	if looksLikeJWT(secret) {
		a, err := s.resolveWorkloadIdentity(secret)
		return nil, a, err
	}
	st, err := s.fsm.State().Snapshot()
	if err != nil {
		return nil, nil, err
	}
	return s.acls.resolve(st, secret, time.Now())
}

// ResolveACL is resolveToken for the agent's HTTP layer.
func (s *Server) ResolveACL(secret string) (*structs.ACLToken, *acl.ACL, error) {
	return s.resolveToken(secret)
}

// resolve is the cached resolution against one snapshot.
func (c *aclCache) resolve(st *state.StateSnapshot, secret string, now time.Time) (*structs.ACLToken, *acl.ACL, error) {
	idx, err := st.ACLIndex()
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	e, ok := c.byToken[secret]
	c.mu.Unlock()
	if ok && e.index == idx {
		if e.token.IsExpired(now) {
			return nil, nil, ErrTokenExpired
		}
		return e.token, e.acl, nil
	}
	tok, policies, err := tokenPolicies(st, secret)
	if err != nil {
		return nil, nil, err
	}
	var a *acl.ACL
	if tok.Type == structs.ACLManagementToken {
		a = acl.ManagementACL
	} else if a, err = c.compile(policies); err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if c.byToken == nil || len(c.byToken) >= aclCacheMax {
		c.byToken = map[string]tokenEntry{}
	}
	c.byToken[secret] = tokenEntry{index: idx, token: tok, acl: a}
	c.mu.Unlock()
	if tok.IsExpired(now) {
		return nil, nil, ErrTokenExpired
	}
	return tok, a, nil
}

// compile compiles policies, sharing the result by content.
func (c *aclCache) compile(policies []*structs.ACLPolicy) (*acl.ACL, error) {
	h := sha256.New()
	for _, p := range policies {
		h.Write([]byte(p.Name))
		h.Write([]byte{0})
		h.Write([]byte(p.Rules))
		h.Write([]byte{0})
	}
	key := hex.EncodeToString(h.Sum(nil))
	c.mu.Lock()
	a, ok := c.compiled[key]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := compilePolicies(policies)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.compiled == nil || len(c.compiled) >= aclCacheMax {
		c.compiled = map[string]*acl.ACL{}
	}
	c.compiled[key] = a
	c.mu.Unlock()
	return a, nil
}

// compilePolicies parses and compiles policies without any cache.
func compilePolicies(policies []*structs.ACLPolicy) (*acl.ACL, error) {
	parsed := make([]*acl.Policy, 0, len(policies))
	for _, p := range policies {
		pp, err := acl.Parse(p.Rules)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, pp)
	}
	return acl.NewACL(false, parsed), nil
}

// tokenPolicies finds the token of a secret ("" is anonymous) and the
// policies it reaches directly and through its roles, sorted by name.
// Policies and roles that do not exist are skipped.
func tokenPolicies(st *state.StateSnapshot, secret string) (*structs.ACLToken, []*structs.ACLPolicy, error) {
	tok := anonymousToken
	if secret != "" && secret != "anonymous" {
		t, err := st.ACLTokenBySecretID(nil, secret)
		if err != nil {
			return nil, nil, err
		}
		if t == nil {
			return nil, nil, ErrTokenNotFound
		}
		tok = t
	}
	names := map[string]bool{}
	for _, p := range tok.Policies {
		names[p] = true
	}
	for _, link := range tok.Roles {
		role, err := st.ACLRoleByID(nil, link.ID)
		if err != nil {
			return nil, nil, err
		}
		if role == nil && link.Name != "" {
			if role, err = st.ACLRoleByName(nil, link.Name); err != nil {
				return nil, nil, err
			}
		}
		if role == nil {
			continue
		}
		for _, p := range role.Policies {
			names[p.Name] = true
		}
	}
	var out []*structs.ACLPolicy
	for n := range names {
		p, err := st.ACLPolicyByName(nil, n)
		if err != nil {
			return nil, nil, err
		}
		if p != nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return tok, out, nil
}

// authorize resolves secret and checks allow against its ACL: a 403
// "Permission denied" when it fails. With ACLs off it allows everything.
func (s *Server) authorize(secret string, allow func(*acl.ACL) bool) error {
	if !s.config.ACLEnabled {
		return nil
	}
	_, a, err := s.resolveToken(secret)
	if err != nil {
		return err
	}
	if !allow(a) {
		return errPermission
	}
	return nil
}

// authorizeHostVolumes checks, as Nomad does at job register, that the
// token may mount every host volume the job's groups ask for: a read-only
// request needs mount-readonly or mount-readwrite on the volume's source,
// a read-write one mount-readwrite (a deny rule refuses both).
func (s *Server) authorizeHostVolumes(secret string, job *structs.Job) error {
	if job == nil {
		return nil
	}
	var vols []*structs.VolumeRequest
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for _, v := range tg.Volumes {
			if v != nil && v.Type == structs.VolumeTypeHost {
				vols = append(vols, v)
			}
		}
	}
	if len(vols) == 0 {
		return nil
	}
	return s.authorize(secret, func(a *acl.ACL) bool {
		for _, v := range vols {
			rw := a.AllowHostVolumeOperation(v.Source, acl.HostVolumeCapabilityMountReadWrite)
			if !rw && (!v.ReadOnly || !a.AllowHostVolumeOperation(v.Source, acl.HostVolumeCapabilityMountReadOnly)) {
				return false
			}
		}
		return true
	})
}

// authorizeNS checks a namespace capability.
func (s *Server) authorizeNS(secret, ns, capability string) error {
	return s.authorize(secret, func(a *acl.ACL) bool { return a.AllowNamespaceOperation(namespaceOf(ns), capability) })
}

// authorizeManagement requires a management token.
func (s *Server) authorizeManagement(secret string) error {
	return s.authorize(secret, (*acl.ACL).IsManagement)
}

// isPermissionError reports an ACL refusal.
func isPermissionError(err error) bool {
	return errors.Is(err, errPermission) || errors.Is(err, ErrTokenNotFound) || errors.Is(err, ErrTokenExpired)
}

// jobNamespace is the namespace a job write acts in: the job's own, else
// the request's.
func jobNamespace(job *structs.Job, reqNS string) string {
	if job != nil && job.Namespace != "" {
		return job.Namespace
	}
	return namespaceOf(reqNS)
}

// authorizeDeployment requires submit-job in the deployment's namespace
// (an unknown deployment is checked in the default namespace; the endpoint
// then answers 404).
func (s *Server) authorizeDeployment(secret, id string) error {
	if !s.config.ACLEnabled {
		return nil
	}
	ns := structs.DefaultNamespace
	if d, err := s.State().DeploymentByID(nil, id); err == nil && d != nil {
		ns = d.Namespace
	}
	return s.authorizeNS(secret, ns, acl.NamespaceCapabilitySubmitJob)
}

// authorizeAlloc requires capability in the allocation's namespace.
func (s *Server) authorizeAlloc(secret, id, capability string) error {
	if !s.config.ACLEnabled {
		return nil
	}
	ns := structs.DefaultNamespace
	if a, err := s.State().AllocByID(nil, id); err == nil && a != nil {
		ns = a.Namespace
	}
	return s.authorizeNS(secret, ns, capability)
}

// authorizeNodeOrManagement admits a client node (its SecretID) or a
// management token: the RPCs only client agents make.
func (s *Server) authorizeNodeOrManagement(secret string) error {
	if !s.config.ACLEnabled {
		return nil
	}
	if secret != "" {
		if n, err := s.State().NodeBySecretID(nil, secret); err == nil && n != nil {
			return nil
		}
	}
	return s.authorizeManagement(secret)
}

// gcExpiredACL deletes, through Raft, the tokens and one-time tokens that
// expired before now (the leader's collection ticker calls it; resolution
// refuses them before this runs). The expiry times were chosen before the
// entries that stored them, so every server deletes the same rows.
func (s *Server) gcExpiredACL(now time.Time) error {
	if !s.config.ACLEnabled || !s.IsLeader() {
		return nil
	}
	st := s.State()
	toks, err := st.ACLTokens(nil)
	if err != nil {
		return err
	}
	var expired []string
	for _, t := range toks {
		// A global token copied from the authoritative region is
		// collected there; replication then deletes the copy.
		if t.IsExpired(now) && !(t.Global && s.replicatesACLs()) {
			expired = append(expired, t.AccessorID)
		}
	}
	if len(expired) > 0 {
		if _, _, err := s.raftApply(structs.ACLTokenExpiredDeleteRequestType, &structs.ACLNamesRequest{Names: expired}); err != nil {
			return err
		}
	}
	otts, err := st.OneTimeTokens(nil)
	if err != nil {
		return err
	}
	var gone []string
	for _, o := range otts {
		if !o.ExpiresAt.After(now) {
			gone = append(gone, o.OneTimeSecretID)
		}
	}
	if len(gone) > 0 {
		if _, _, err := s.raftApply(structs.OneTimeTokenExpireRequestType, &structs.ACLNamesRequest{Names: gone}); err != nil {
			return err
		}
	}
	return nil
}
