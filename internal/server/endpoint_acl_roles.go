package server

import (
	"strings"

	"github.com/google/uuid"
	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// UpsertRoles creates (no ID) or updates roles. Every policy a role links
// must exist; names are unique.
func (a *ACL) UpsertRoles(args *structs.ACLRoleUpsertRequest, reply *structs.ACLRoleUpsertResponse) error {
	a.toAuthoritative(&args.WriteRequest)
	if done, err := a.write("UpsertRoles", &args.WriteRequest, args, reply); done {
		return err
	}
	if err := a.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Roles) == 0 {
		return structs.NewErrCoded(400, "must specify as least one role")
	}
	st := a.srv.State()
	out := make([]*structs.ACLRole, 0, len(args.Roles))
	for _, in := range args.Roles {
		if in == nil {
			return structs.NewErrCoded(400, "missing role")
		}
		r := *in
		if !validPolicyName.MatchString(r.Name) {
			return structs.NewErrCoded(400, "invalid role name %q", r.Name)
		}
		if len(r.Policies) == 0 {
			return structs.NewErrCoded(400, "at least one policy should be specified")
		}
		for _, p := range r.Policies {
			if p == nil {
				return structs.NewErrCoded(400, "missing policy link")
			}
			pol, err := st.ACLPolicyByName(nil, p.Name)
			if err != nil {
				return err
			}
			if pol == nil {
				return structs.NewErrCoded(400, "cannot find policy %s", p.Name)
			}
		}
		byName, err := st.ACLRoleByName(nil, r.Name)
		if err != nil {
			return err
		}
		if r.ID == "" {
			if byName != nil {
				return structs.NewErrCoded(400, "role with name %s already exists", r.Name)
			}
			r.ID = uuid.NewString()
		} else {
			ex, err := st.ACLRoleByID(nil, r.ID)
			if err != nil {
				return err
			}
			if ex == nil {
				return structs.NewErrCoded(400, "cannot find role %s", r.ID)
			}
			if byName != nil && byName.ID != r.ID {
				return structs.NewErrCoded(400, "role with name %s already exists", r.Name)
			}
		}
		out = append(out, &r)
	}
	entry := &structs.ACLRoleUpsertRequest{Roles: out, WriteRequest: args.WriteRequest}
	idx, err := a.applyNew(structs.ACLRoleUpsertRequestType, entry)
	if err != nil {
		return err
	}
	reply.Index = idx
	for _, r := range out {
		stored, err := a.srv.State().ACLRoleByID(nil, r.ID)
		if err != nil {
			return err
		}
		reply.Roles = append(reply.Roles, stored)
	}
	return nil
}

// DeleteRoles deletes roles by ID.
func (a *ACL) DeleteRoles(args *structs.ACLNamesRequest, reply *structs.WriteMeta) error {
	return a.deleteNamed("DeleteRoles", structs.ACLRoleDeleteRequestType, args, reply, func(n string) (bool, error) {
		r, err := a.srv.State().ACLRoleByID(nil, n)
		return r != nil, err
	}, "role")
}

// tokenHasRole reports whether tok links the role.
func tokenHasRole(tok *structs.ACLToken, id string) bool {
	if tok == nil {
		return false
	}
	for _, l := range tok.Roles {
		if l.ID == id {
			return true
		}
	}
	return false
}

// ListRoles lists roles: all for management, the token's own otherwise.
func (a *ACL) ListRoles(args *structs.ACLGetRequest, reply *structs.ACLRoleListResponse) error {
	var tok *structs.ACLToken
	var mgmt bool
	return a.read("ListRoles", args, reply, &reply.QueryMeta, func(t *structs.ACLToken, ac *acl.ACL) error {
		tok, mgmt = t, ac.IsManagement()
		return nil
	}, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		all, err := st.ACLRoles(ws)
		if err != nil {
			return err
		}
		reply.Roles = reply.Roles[:0]
		for _, r := range all {
			if (mgmt || tokenHasRole(tok, r.ID)) && strings.HasPrefix(r.ID, args.Prefix) {
				reply.Roles = append(reply.Roles, r)
			}
		}
		reply.Index = maxIndex(st, state.TableACLRoles)
		return nil
	})
}

// GetRole reads a role by ID; GetRoleByName by name.
func (a *ACL) GetRole(args *structs.ACLGetRequest, reply *structs.ACLRoleResponse) error {
	return a.getRole("GetRole", args, reply, (*state.StateSnapshot).ACLRoleByID)
}

// GetRoleByName reads a role by name.
func (a *ACL) GetRoleByName(args *structs.ACLGetRequest, reply *structs.ACLRoleResponse) error {
	return a.getRole("GetRoleByName", args, reply, (*state.StateSnapshot).ACLRoleByName)
}

func (a *ACL) getRole(method string, args *structs.ACLGetRequest, reply *structs.ACLRoleResponse, get func(*state.StateSnapshot, memdb.WatchSet, string) (*structs.ACLRole, error)) error {
	var tok *structs.ACLToken
	var mgmt bool
	return a.read(method, args, reply, &reply.QueryMeta, func(t *structs.ACLToken, ac *acl.ACL) error {
		tok, mgmt = t, ac.IsManagement()
		return nil
	}, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		r, err := get(st, ws, args.Name)
		if err != nil {
			return err
		}
		if !mgmt && (r == nil || !tokenHasRole(tok, r.ID)) {
			return errPermission
		}
		reply.Role = r
		reply.Index = maxIndex(st, state.TableACLRoles)
		return nil
	})
}

// UpsertAuthMethods validates and stores auth methods.
func (a *ACL) UpsertAuthMethods(args *structs.ACLAuthMethodUpsertRequest, reply *structs.ACLAuthMethodUpsertResponse) error {
	a.toAuthoritative(&args.WriteRequest)
	if done, err := a.write("UpsertAuthMethods", &args.WriteRequest, args, reply); done {
		return err
	}
	if err := a.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.AuthMethods) == 0 {
		return structs.NewErrCoded(400, "must specify as least one auth method")
	}
	st := a.srv.State()
	now := aclNow()
	out := make([]*structs.ACLAuthMethod, 0, len(args.AuthMethods))
	for _, in := range args.AuthMethods {
		if in == nil {
			return structs.NewErrCoded(400, "missing auth method")
		}
		m := *in
		if !validPolicyName.MatchString(m.Name) {
			return structs.NewErrCoded(400, "invalid auth method name %q", m.Name)
		}
		if m.Type != "OIDC" && m.Type != "JWT" {
			return structs.NewErrCoded(400, "invalid auth method type %q: must be OIDC or JWT", m.Type)
		}
		if m.TokenLocality != "local" && m.TokenLocality != "global" {
			return structs.NewErrCoded(400, "invalid token locality %q: must be local or global", m.TokenLocality)
		}
		if m.MaxTokenTTL <= 0 || m.MaxTokenTTL > 24*365*maxTokenTTL {
			return structs.NewErrCoded(400, "invalid MaxTokenTTL %s: must be positive", m.MaxTokenTTL)
		}
		if m.Config == nil {
			return structs.NewErrCoded(400, "auth method %s: missing Config", m.Name)
		}
		if m.Type == "OIDC" && (m.Config.OIDCDiscoveryURL == "" || m.Config.OIDCClientID == "") {
			return structs.NewErrCoded(400, "OIDC auth method %s needs OIDCDiscoveryURL and OIDCClientID", m.Name)
		}
		if m.Type == "JWT" && len(m.Config.JWTValidationPubKeys) == 0 && m.Config.JWKSURL == "" && m.Config.OIDCDiscoveryURL == "" {
			return structs.NewErrCoded(400, "JWT auth method %s needs JWTValidationPubKeys, JWKSURL or OIDCDiscoveryURL", m.Name)
		}
		if err := methodPEMs(m.Config); err != nil {
			return structs.NewErrCoded(400, "auth method %s: %v", m.Name, err)
		}
		ex, err := st.ACLAuthMethodByName(nil, m.Name)
		if err != nil {
			return err
		}
		if m.Config.OIDCClientSecret == redactedSecret && ex != nil && ex.Config != nil {
			// A method read back (its secret redacted) and written again
			// keeps its secret, as `acl auth-method update` does.
			c := *m.Config
			c.OIDCClientSecret = ex.Config.OIDCClientSecret
			m.Config = &c
		}
		m.CreateTime, m.ModifyTime = now, now
		if ex != nil {
			m.CreateTime = ex.CreateTime
		}
		if m.Default {
			all, err := st.ACLAuthMethods(nil)
			if err != nil {
				return err
			}
			for _, o := range all {
				if o.Default && o.Name != m.Name && o.Type == m.Type {
					return structs.NewErrCoded(400, "default method for type %s already exists: %s", m.Type, o.Name)
				}
			}
		}
		out = append(out, &m)
	}
	entry := &structs.ACLAuthMethodUpsertRequest{AuthMethods: out, WriteRequest: args.WriteRequest}
	idx, err := a.applyNew(structs.ACLAuthMethodUpsertRequestType, entry)
	if err != nil {
		return err
	}
	reply.Index = idx
	for _, m := range out {
		stored, err := a.srv.State().ACLAuthMethodByName(nil, m.Name)
		if err != nil {
			return err
		}
		reply.AuthMethods = append(reply.AuthMethods, redactAuthMethod(stored))
	}
	return nil
}

// redactedSecret stands for an auth method's OIDC client secret in every
// answer, as Nomad's (since 1.9.7, CVE-2025-1296): the secret is only ever
// written, never read back.
const redactedSecret = "redacted"

// redactAuthMethod is m with its client secret redacted (a copy: m may be
// the state store's own object).
func redactAuthMethod(m *structs.ACLAuthMethod) *structs.ACLAuthMethod {
	if m == nil || m.Config == nil || m.Config.OIDCClientSecret == "" {
		return m
	}
	out, c := *m, *m.Config
	c.OIDCClientSecret = redactedSecret
	out.Config = &c
	return &out
}

// DeleteAuthMethods deletes auth methods by name.
func (a *ACL) DeleteAuthMethods(args *structs.ACLNamesRequest, reply *structs.WriteMeta) error {
	return a.deleteNamed("DeleteAuthMethods", structs.ACLAuthMethodDeleteRequestType, args, reply, func(n string) (bool, error) {
		m, err := a.srv.State().ACLAuthMethodByName(nil, n)
		return m != nil, err
	}, "auth method")
}

// ListAuthMethods lists auth methods; anyone may (the UI's login page).
func (a *ACL) ListAuthMethods(args *structs.ACLGetRequest, reply *structs.ACLAuthMethodListResponse) error {
	return a.read("ListAuthMethods", args, reply, &reply.QueryMeta, nil, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		all, err := st.ACLAuthMethods(ws)
		if err != nil {
			return err
		}
		reply.AuthMethods = make([]*structs.ACLAuthMethod, 0, len(all))
		for _, m := range all {
			reply.AuthMethods = append(reply.AuthMethods, redactAuthMethod(m))
		}
		reply.Index = maxIndex(st, state.TableACLAuthMethods)
		return nil
	})
}

// GetAuthMethod reads one auth method (management only: it holds secrets).
func (a *ACL) GetAuthMethod(args *structs.ACLGetRequest, reply *structs.ACLAuthMethodResponse) error {
	return a.read("GetAuthMethod", args, reply, &reply.QueryMeta, management, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		m, err := st.ACLAuthMethodByName(ws, args.Name)
		if err != nil {
			return err
		}
		reply.AuthMethod = redactAuthMethod(m)
		reply.Index = maxIndex(st, state.TableACLAuthMethods)
		return nil
	})
}

// UpsertBindingRules validates and stores binding rules.
func (a *ACL) UpsertBindingRules(args *structs.ACLBindingRuleUpsertRequest, reply *structs.ACLBindingRuleUpsertResponse) error {
	a.toAuthoritative(&args.WriteRequest)
	if done, err := a.write("UpsertBindingRules", &args.WriteRequest, args, reply); done {
		return err
	}
	if err := a.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Rules) == 0 {
		return structs.NewErrCoded(400, "must specify as least one binding rule")
	}
	st := a.srv.State()
	now := aclNow()
	out := make([]*structs.ACLBindingRule, 0, len(args.Rules))
	for _, in := range args.Rules {
		if in == nil {
			return structs.NewErrCoded(400, "missing binding rule")
		}
		r := *in
		m, err := st.ACLAuthMethodByName(nil, r.AuthMethod)
		if err != nil {
			return err
		}
		if m == nil {
			return structs.NewErrCoded(400, "auth method %q not found", r.AuthMethod)
		}
		switch r.BindType {
		case "role", "policy":
			if r.BindName == "" {
				return structs.NewErrCoded(400, "bind name is missing")
			}
		case "management":
			r.BindName = ""
		default:
			return structs.NewErrCoded(400, "unsupported bind type %q", r.BindType)
		}
		if r.Selector != "" {
			if _, err := bexpr.CreateEvaluator(r.Selector); err != nil {
				return structs.NewErrCoded(400, "selector is invalid: %v", err)
			}
		}
		r.CreateTime, r.ModifyTime = now, now
		if r.ID == "" {
			r.ID = uuid.NewString()
		} else {
			ex, err := st.ACLBindingRuleByID(nil, r.ID)
			if err != nil {
				return err
			}
			if ex == nil {
				return structs.NewErrCoded(400, "cannot find binding rule %s", r.ID)
			}
			r.CreateTime = ex.CreateTime
		}
		out = append(out, &r)
	}
	entry := &structs.ACLBindingRuleUpsertRequest{Rules: out, WriteRequest: args.WriteRequest}
	idx, err := a.applyNew(structs.ACLBindingRuleUpsertRequestType, entry)
	if err != nil {
		return err
	}
	reply.Index = idx
	for _, r := range out {
		stored, err := a.srv.State().ACLBindingRuleByID(nil, r.ID)
		if err != nil {
			return err
		}
		reply.Rules = append(reply.Rules, stored)
	}
	return nil
}

// DeleteBindingRules deletes binding rules by ID.
func (a *ACL) DeleteBindingRules(args *structs.ACLNamesRequest, reply *structs.WriteMeta) error {
	return a.deleteNamed("DeleteBindingRules", structs.ACLBindingRuleDeleteRequestType, args, reply, func(n string) (bool, error) {
		r, err := a.srv.State().ACLBindingRuleByID(nil, n)
		return r != nil, err
	}, "binding rule")
}

// ListBindingRules lists binding rules (management only).
func (a *ACL) ListBindingRules(args *structs.ACLGetRequest, reply *structs.ACLBindingRuleListResponse) error {
	return a.read("ListBindingRules", args, reply, &reply.QueryMeta, management, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		all, err := st.ACLBindingRules(ws)
		if err != nil {
			return err
		}
		reply.Rules = all
		reply.Index = maxIndex(st, state.TableACLBindingRule)
		return nil
	})
}

// GetBindingRule reads one binding rule (management only).
func (a *ACL) GetBindingRule(args *structs.ACLGetRequest, reply *structs.ACLBindingRuleResponse) error {
	return a.read("GetBindingRule", args, reply, &reply.QueryMeta, management, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		r, err := st.ACLBindingRuleByID(ws, args.Name)
		if err != nil {
			return err
		}
		reply.Rule = r
		reply.Index = maxIndex(st, state.TableACLBindingRule)
		return nil
	})
}
