package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// ACL serves the ACL system: bootstrap, policies, tokens, roles, auth
// methods, binding rules, one-time tokens and login. Every write but
// bootstrap, one-time-token exchange and login needs a management token
// (one-time tokens: any real token).
type ACL struct{ srv *Server }

// Token expiration bounds (Nomad's defaults).
const (
	minTokenTTL     = time.Minute
	maxTokenTTL     = 24 * time.Hour
	oneTimeTokenTTL = 10 * time.Minute
	// bootstrapResetFile is read from the server's data directory.
	bootstrapResetFile = "acl-bootstrap-reset"
)

var validPolicyName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

func (a *ACL) enabled() error {
	if !a.srv.config.ACLEnabled {
		return errACLDisabled
	}
	return nil
}

// write forwards to the leader and checks ACLs are on and the caller is
// management.
func (a *ACL) write(method string, wr *structs.WriteRequest, args, reply any) (bool, error) {
	if done, err := a.srv.forward("ACL."+method, wr.Region, false, args, reply); done {
		return true, err
	}
	if err := a.enabled(); err != nil {
		return true, err
	}
	return false, nil
}

// toAuthoritative sends a write of global ACL objects (policies, roles,
// auth methods, binding rules, global tokens, the bootstrap token) made in
// a region that replicates them to the authoritative region, which owns
// them; they come back here through replication (acl_replication.go). A
// request already aimed at another region goes there as it is.
func (a *ACL) toAuthoritative(wr *structs.WriteRequest) {
	if a.srv.replicatesACLs() && (wr.Region == "" || wr.Region == a.srv.config.Region) {
		wr.Region = a.srv.authoritativeRegion()
	}
}

// Bootstrap creates the first management token. A second bootstrap is
// refused unless the reset file in the server data directory holds the
// index of the last one.
func (a *ACL) Bootstrap(args *structs.ACLTokenBootstrapRequest, reply *structs.ACLTokenResponse) error {
	a.toAuthoritative(&args.WriteRequest) // the bootstrap token is global
	if done, err := a.write("Bootstrap", &args.WriteRequest, args, reply); done {
		return err
	}
	if args.BootstrapSecret != "" {
		if _, err := uuid.Parse(args.BootstrapSecret); err != nil {
			return structs.NewErrCoded(400, "invalid acl token")
		}
	}
	done, err := a.srv.State().ACLBootstrapIndex()
	if err != nil {
		return err
	}
	var reset uint64
	if done != 0 {
		reset = a.readResetIndex()
		if reset != done {
			return structs.NewErrCoded(400, "ACL bootstrap already done (reset index: %d)", done)
		}
	}
	secret := args.BootstrapSecret
	if secret == "" {
		secret = uuid.NewString()
	}
	tok := &structs.ACLToken{
		AccessorID: uuid.NewString(), SecretID: secret, Name: "Bootstrap Token",
		Type: structs.ACLManagementToken, Global: true, CreateTime: time.Now().UTC(),
	}
	entry := &structs.ACLTokenBootstrapRequest{Token: tok, ResetIndex: reset, WriteRequest: args.WriteRequest}
	_, idx, err := a.srv.raftApply(structs.ACLTokenBootstrapRequestType, entry)
	if err != nil {
		return err
	}
	out, err := a.srv.State().ACLTokenByAccessorID(nil, tok.AccessorID)
	if err != nil {
		return err
	}
	reply.Token, reply.Index = out, idx
	return nil
}

func (a *ACL) readResetIndex() uint64 {
	if a.srv.config.DataDir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(a.srv.config.DataDir, bootstrapResetFile))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// UpsertPolicies validates and stores policies.
func (a *ACL) UpsertPolicies(args *structs.ACLPolicyUpsertRequest, reply *structs.WriteMeta) error {
	a.toAuthoritative(&args.WriteRequest)
	if done, err := a.write("UpsertPolicies", &args.WriteRequest, args, reply); done {
		return err
	}
	if err := a.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Policies) == 0 {
		return structs.NewErrCoded(400, "must specify as least one policy")
	}
	for _, p := range args.Policies {
		if p == nil || !validPolicyName.MatchString(p.Name) {
			name := ""
			if p != nil {
				name = p.Name
			}
			return structs.NewErrCoded(400, "invalid policy name %q", name)
		}
		if len(p.Description) > 256 {
			return structs.NewErrCoded(400, "policy description longer than 256")
		}
		if _, err := acl.ParseForWrite(p.Rules); err != nil {
			return structs.NewErrCoded(400, "policy %s: %v", p.Name, err)
		}
	}
	_, idx, err := a.srv.raftApply(structs.ACLPolicyUpsertRequestType, args)
	reply.Index = idx
	return err
}

// DeletePolicies deletes policies by name.
func (a *ACL) DeletePolicies(args *structs.ACLNamesRequest, reply *structs.WriteMeta) error {
	return a.deleteNamed("DeletePolicies", structs.ACLPolicyDeleteRequestType, args, reply, func(n string) (bool, error) {
		p, err := a.srv.State().ACLPolicyByName(nil, n)
		return p != nil, err
	}, "policy")
}

// deleteNamed deletes global objects (tokens: DeleteTokens decides where
// they live before it calls this).
func (a *ACL) deleteNamed(method string, t structs.MessageType, args *structs.ACLNamesRequest, reply *structs.WriteMeta, exists func(string) (bool, error), what string) error {
	if t != structs.ACLTokenDeleteRequestType {
		a.toAuthoritative(&args.WriteRequest)
	}
	if done, err := a.write(method, &args.WriteRequest, args, reply); done {
		return err
	}
	if err := a.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Names) == 0 {
		return structs.NewErrCoded(400, "must specify as least one %s", what)
	}
	for _, n := range args.Names {
		ok, err := exists(n)
		if err != nil {
			return err
		}
		if !ok {
			return structs.NewErrCoded(404, "%s %q not found", what, n)
		}
	}
	_, idx, err := a.srv.raftApply(t, args)
	reply.Index = idx
	return err
}

// read runs a blocking read of the ACL tables (ACLs on, caller allowed).
func (a *ACL) read(method string, args *structs.ACLGetRequest, reply any, meta *structs.QueryMeta, allow func(tok *structs.ACLToken, acl *acl.ACL) error, run func(ws memdb.WatchSet, st *state.StateSnapshot) error) error {
	if done, err := a.srv.forward("ACL."+method, args.Region, args.AllowStale, args, reply); done {
		return err
	}
	if err := a.enabled(); err != nil {
		return err
	}
	if allow != nil {
		tok, aclObj, err := a.srv.resolveToken(args.AuthToken)
		if err != nil {
			return err
		}
		if err := allow(tok, aclObj); err != nil {
			return err
		}
	}
	return a.srv.blockingRPC(&args.QueryOptions, meta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		if err := run(ws, st); err != nil {
			return err
		}
		if meta.Index == 0 {
			meta.Index = 1
		}
		return nil
	})
}

func management(_ *structs.ACLToken, a *acl.ACL) error {
	if !a.IsManagement() {
		return errPermission
	}
	return nil
}

// ListPolicies lists policies: every policy for management tokens, the
// token's own policies for others.
func (a *ACL) ListPolicies(args *structs.ACLGetRequest, reply *structs.ACLPolicyListResponse) error {
	var tok *structs.ACLToken
	var mgmt bool
	return a.read("ListPolicies", args, reply, &reply.QueryMeta, func(t *structs.ACLToken, ac *acl.ACL) error {
		tok, mgmt = t, ac.IsManagement()
		return nil
	}, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		all, err := st.ACLPolicies(ws)
		if err != nil {
			return err
		}
		reply.Policies = reply.Policies[:0]
		for _, p := range all {
			if (mgmt || tokenHasPolicy(st, tok, p.Name)) && strings.HasPrefix(p.Name, args.Prefix) {
				reply.Policies = append(reply.Policies, p)
			}
		}
		reply.Index = maxIndex(st, state.TableACLPolicies)
		return nil
	})
}

func tokenHasPolicy(st *state.StateSnapshot, tok *structs.ACLToken, name string) bool {
	if tok == nil {
		return false
	}
	_, ps, err := tokenPolicies(st, tok.SecretID)
	if tok == anonymousToken {
		_, ps, err = tokenPolicies(st, "")
	}
	if err != nil {
		return false
	}
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// GetPolicy returns one policy: management tokens read any, others only
// the policies they hold.
func (a *ACL) GetPolicy(args *structs.ACLGetRequest, reply *structs.ACLPolicyResponse) error {
	var tok *structs.ACLToken
	var mgmt bool
	return a.read("GetPolicy", args, reply, &reply.QueryMeta, func(t *structs.ACLToken, ac *acl.ACL) error {
		tok, mgmt = t, ac.IsManagement()
		return nil
	}, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		if !mgmt && !tokenHasPolicy(st, tok, args.Name) {
			return errPermission
		}
		p, err := st.ACLPolicyByName(ws, args.Name)
		if err != nil {
			return err
		}
		reply.Policy = p
		reply.Index = maxIndex(st, state.TableACLPolicies)
		return nil
	})
}

// ResolveToken returns a secret's token and the policies it reaches (for
// agents that enforce ACLs on their HTTP API). The caller must hold the
// secret, which is its own proof.
func (a *ACL) ResolveToken(args *structs.ACLGetRequest, reply *structs.ACLResolveResponse) error {
	return a.read("ResolveToken", args, reply, &reply.QueryMeta, nil, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		tok, ps, err := tokenPolicies(st, args.Name)
		if err != nil {
			return err
		}
		if tok.IsExpired(time.Now()) {
			return ErrTokenExpired
		}
		reply.Token, reply.Policies = tok, ps
		reply.Index, _ = st.ACLIndex()
		return nil
	})
}

// checkTokenTTL turns ExpirationTTL into ExpirationTime within the bounds.
func checkTokenTTL(t *structs.ACLToken, now time.Time) error {
	if t.ExpirationTTL != 0 {
		if t.ExpirationTime != nil {
			return structs.NewErrCoded(400, "Token cannot have both ExpirationTTL and ExpirationTime")
		}
		if t.ExpirationTTL < 0 {
			return structs.NewErrCoded(400, "Token ExpirationTTL must not be negative")
		}
		exp := now.Add(t.ExpirationTTL)
		t.ExpirationTime = &exp
	}
	if t.ExpirationTime != nil {
		ttl := t.ExpirationTime.Sub(now)
		if ttl < minTokenTTL || ttl > maxTokenTTL {
			return structs.NewErrCoded(400, "expiration time cannot be less than %s or more than %s in the future", minTokenTTL, maxTokenTTL)
		}
	}
	return nil
}

// UpsertTokens creates (no AccessorID, or an AccessorID not yet stored
// together with a SecretID: an upload) or updates tokens.
func (a *ACL) UpsertTokens(args *structs.ACLTokenUpsertRequest, reply *structs.ACLTokenUpsertResponse) error {
	for _, t := range args.Tokens {
		if t != nil && t.Global {
			// Global tokens are made (and changed) in the authoritative
			// region only.
			a.toAuthoritative(&args.WriteRequest)
			break
		}
	}
	if done, err := a.write("UpsertTokens", &args.WriteRequest, args, reply); done {
		return err
	}
	if err := a.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Tokens) == 0 {
		return structs.NewErrCoded(400, "must specify as least one token")
	}
	st := a.srv.State()
	now := time.Now().UTC()
	out := make([]*structs.ACLToken, 0, len(args.Tokens))
	for _, in := range args.Tokens {
		if in == nil {
			return structs.NewErrCoded(400, "missing token")
		}
		t := *in
		switch t.Type {
		case structs.ACLClientToken:
			if len(t.Policies) == 0 && len(t.Roles) == 0 {
				return structs.NewErrCoded(400, "client token missing policies or roles")
			}
		case structs.ACLManagementToken:
			if len(t.Policies) > 0 || len(t.Roles) > 0 {
				return structs.NewErrCoded(400, "management token cannot be associated with policies or roles")
			}
		default:
			return structs.NewErrCoded(400, "token type must be client or management")
		}
		if len(t.Name) > 256 {
			return structs.NewErrCoded(400, "token name too long")
		}
		var existing *structs.ACLToken
		if t.AccessorID != "" {
			var err error
			if existing, err = st.ACLTokenByAccessorID(nil, t.AccessorID); err != nil {
				return err
			}
		}
		switch {
		case existing != nil:
			// An update sends back what it read (the CLI's token update
			// does): an unchanged TTL or expiry is not a change.
			if t.ExpirationTTL != 0 && t.ExpirationTTL != existing.ExpirationTTL {
				return structs.NewErrCoded(400, "Cannot update expiration TTL of an existing token")
			}
			if t.ExpirationTime != nil && (existing.ExpirationTime == nil || !t.ExpirationTime.Equal(*existing.ExpirationTime)) {
				return structs.NewErrCoded(400, "Cannot update expiration time of an existing token")
			}
			if t.Global != existing.Global {
				return structs.NewErrCoded(400, "Cannot toggle global mode")
			}
			t.SecretID = existing.SecretID
			t.CreateTime = existing.CreateTime
			t.ExpirationTime = existing.ExpirationTime
			t.ExpirationTTL = existing.ExpirationTTL
		case t.AccessorID != "":
			// An upload: the caller chose both IDs.
			if t.SecretID == "" {
				return structs.NewErrCoded(400, "cannot find token %s (a token created with a chosen accessor ID needs its secret ID too)", t.AccessorID)
			}
			if t.Type == structs.ACLManagementToken {
				return structs.NewErrCoded(400, "cannot upload management tokens")
			}
			if _, err := uuid.Parse(t.AccessorID); err != nil {
				return structs.NewErrCoded(400, "invalid accessor ID %q", t.AccessorID)
			}
			if other, err := st.ACLTokenBySecretID(nil, t.SecretID); err != nil {
				return err
			} else if other != nil {
				return structs.NewErrCoded(400, "secret ID is already in use")
			}
			t.CreateTime = now
			if err := checkTokenTTL(&t, now); err != nil {
				return err
			}
		default:
			t.AccessorID, t.SecretID, t.CreateTime = uuid.NewString(), uuid.NewString(), now
			if err := checkTokenTTL(&t, now); err != nil {
				return err
			}
		}
		links, err := a.resolveRoleLinks(t.Roles)
		if err != nil {
			return err
		}
		t.Roles = links
		out = append(out, &t)
	}
	entry := &structs.ACLTokenUpsertRequest{Tokens: out, WriteRequest: args.WriteRequest}
	_, idx, err := a.srv.raftApply(structs.ACLTokenUpsertRequestType, entry)
	if err != nil {
		return err
	}
	reply.Index = idx
	for _, t := range out {
		stored, err := a.srv.State().ACLTokenByAccessorID(nil, t.AccessorID)
		if err != nil {
			return err
		}
		reply.Tokens = append(reply.Tokens, stored)
	}
	return nil
}

// resolveRoleLinks fills both ID and name of each role link; a role that
// does not exist is a 400.
func (a *ACL) resolveRoleLinks(links []*structs.ACLTokenRoleLink) ([]*structs.ACLTokenRoleLink, error) {
	st := a.srv.State()
	var out []*structs.ACLTokenRoleLink
	seen := map[string]bool{}
	for _, l := range links {
		if l == nil {
			continue
		}
		var role *structs.ACLRole
		var err error
		if l.ID != "" {
			role, err = st.ACLRoleByID(nil, l.ID)
		} else {
			role, err = st.ACLRoleByName(nil, l.Name)
		}
		if err != nil {
			return nil, err
		}
		if role == nil {
			return nil, structs.NewErrCoded(400, "cannot find role %s%s", l.ID, l.Name)
		}
		if !seen[role.ID] {
			seen[role.ID] = true
			out = append(out, &structs.ACLTokenRoleLink{ID: role.ID, Name: role.Name})
		}
	}
	return out, nil
}

// DeleteTokens deletes tokens by accessor ID.
func (a *ACL) DeleteTokens(args *structs.ACLNamesRequest, reply *structs.WriteMeta) error {
	if a.srv.replicatesACLs() && (args.Region == "" || args.Region == a.srv.config.Region) {
		// Global tokens are deleted in the authoritative region (and
		// then here by replication); local ones here. One request
		// cannot do both.
		var global, local int
		for _, n := range args.Names {
			t, err := a.srv.State().ACLTokenByAccessorID(nil, n)
			if err != nil {
				return err
			}
			switch {
			case t != nil && t.Global:
				global++
			case t != nil:
				local++
			}
		}
		if global > 0 && local > 0 {
			return structs.NewErrCoded(400, "cannot delete global and local tokens in one request")
		}
		if global > 0 {
			a.toAuthoritative(&args.WriteRequest)
		}
	}
	return a.deleteNamed("DeleteTokens", structs.ACLTokenDeleteRequestType, args, reply, func(n string) (bool, error) {
		t, err := a.srv.State().ACLTokenByAccessorID(nil, n)
		return t != nil, err
	}, "token")
}

// ListTokens lists tokens (management only); secrets are left out.
func (a *ACL) ListTokens(args *structs.ACLGetRequest, reply *structs.ACLTokenListResponse) error {
	return a.read("ListTokens", args, reply, &reply.QueryMeta, management, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		all, err := st.ACLTokens(ws)
		if err != nil {
			return err
		}
		reply.Tokens = reply.Tokens[:0]
		for _, t := range all {
			if strings.HasPrefix(t.AccessorID, args.Prefix) {
				c := *t
				c.SecretID = ""
				reply.Tokens = append(reply.Tokens, &c)
			}
		}
		reply.Index = maxIndex(st, state.TableACLTokens)
		return nil
	})
}

// GetToken returns a token by accessor ID: management tokens read any;
// others only their own. Name "self" (or an empty name) is the caller's.
func (a *ACL) GetToken(args *structs.ACLGetRequest, reply *structs.ACLTokenResponse) error {
	var tok *structs.ACLToken
	var mgmt bool
	return a.read("GetToken", args, reply, &reply.QueryMeta, func(t *structs.ACLToken, ac *acl.ACL) error {
		tok, mgmt = t, ac.IsManagement()
		return nil
	}, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		reply.Index = maxIndex(st, state.TableACLTokens)
		if args.Name == "self" || args.Name == "" {
			if tok == nil || tok == anonymousToken {
				return ErrTokenNotFound
			}
			reply.Token = tok
			return nil
		}
		t, err := st.ACLTokenByAccessorID(ws, args.Name)
		if err != nil {
			return err
		}
		if !mgmt && (t == nil || tok == nil || t.AccessorID != tok.AccessorID) {
			return errPermission
		}
		reply.Token = t
		return nil
	})
}

// UpsertOneTimeToken makes a one-time token for the caller's token.
func (a *ACL) UpsertOneTimeToken(args *structs.OneTimeTokenUpsertRequest, reply *structs.OneTimeTokenUpsertResponse) error {
	if done, err := a.write("UpsertOneTimeToken", &args.WriteRequest, args, reply); done {
		return err
	}
	tok, _, err := a.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if tok == nil || tok == anonymousToken {
		return errPermission
	}
	ott := &structs.OneTimeToken{OneTimeSecretID: uuid.NewString(), AccessorID: tok.AccessorID, ExpiresAt: time.Now().UTC().Add(oneTimeTokenTTL)}
	entry := &structs.OneTimeTokenUpsertRequest{OneTimeToken: ott, WriteRequest: args.WriteRequest}
	_, idx, err := a.srv.raftApply(structs.OneTimeTokenUpsertRequestType, entry)
	if err != nil {
		return err
	}
	reply.OneTimeToken, err = a.srv.State().OneTimeTokenBySecret(nil, ott.OneTimeSecretID)
	reply.Index = idx
	return err
}

// ExchangeOneTimeToken trades a one-time secret for its token, once.
func (a *ACL) ExchangeOneTimeToken(args *structs.OneTimeTokenExchangeRequest, reply *structs.ACLTokenResponse) error {
	if done, err := a.write("ExchangeOneTimeToken", &args.WriteRequest, args, reply); done {
		return err
	}
	if args.OneTimeSecretID == "" {
		return structs.NewErrCoded(400, "missing one-time token")
	}
	st := a.srv.State()
	ott, err := st.OneTimeTokenBySecret(nil, args.OneTimeSecretID)
	if err != nil {
		return err
	}
	if ott == nil || !ott.ExpiresAt.After(time.Now()) {
		return errPermission
	}
	tok, err := st.ACLTokenByAccessorID(nil, ott.AccessorID)
	if err != nil {
		return err
	}
	if tok == nil || tok.IsExpired(time.Now()) {
		return errPermission
	}
	_, idx, err := a.srv.raftApply(structs.OneTimeTokenExchangeRequestType, args)
	if err != nil {
		return err
	}
	reply.Token, reply.Index = tok, idx
	return nil
}

// applyNew writes an entry and reports its index.
func (a *ACL) applyNew(t structs.MessageType, entry any) (uint64, error) {
	_, idx, err := a.srv.raftApply(t, entry)
	return idx, err
}

// aclNow is the wall clock for create/modify times (chosen before the
// entry is written).
func aclNow() time.Time { return time.Now().UTC() }
