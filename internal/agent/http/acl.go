package httpapi

import (
	"fmt"
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// The /v1/acl/* endpoints: bootstrap, policies, tokens, one-time tokens,
// roles, auth methods, binding rules and login. The ACL RPC endpoint
// authorizes each call; the route table (authz_routes.go) does too.

func (s *server) aclRead(w http.ResponseWriter, r *http.Request, method, name string, reply any, meta func() *structs.QueryMeta) error {
	if r.Method != http.MethodGet {
		return errInvalidMethod
	}
	args := structs.ACLGetRequest{Name: name}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return err
	}
	if err := s.cfg.RPC.RPC("ACL."+method, &args, reply); err != nil {
		return err
	}
	setMeta(w, meta())
	return nil
}

// aclList answers a list route: the objects the RPC method's reply (of
// type R) holds, each as its api list stub.
func aclList[R, O, S any](s *server, w http.ResponseWriter, r *http.Request, method string,
	objects func(*R) ([]O, *structs.QueryMeta), stub func(O) S) (any, error) {
	var reply R
	if err := s.aclRead(w, r, method, "", &reply, func() *structs.QueryMeta { _, m := objects(&reply); return m }); err != nil {
		return nil, err
	}
	items, _ := objects(&reply)
	out := make([]S, 0, len(items))
	for _, o := range items {
		out = append(out, stub(o))
	}
	return out, nil
}

// aclGet answers a read of one object by name or ID: the object the RPC
// method's reply (of type R) holds, as its api form; none is a 404 with
// notFound.
func aclGet[R, O, A any](s *server, w http.ResponseWriter, r *http.Request, method, name, notFound string,
	object func(*R) (*O, *structs.QueryMeta), toAPI func(*O) A) (any, error) {
	var reply R
	if err := s.aclRead(w, r, method, name, &reply, func() *structs.QueryMeta { _, m := object(&reply); return m }); err != nil {
		return nil, err
	}
	o, _ := object(&reply)
	if o == nil {
		return nil, structs.NewErrCoded(404, "%s", notFound)
	}
	return toAPI(o), nil
}

// errNoSuchName answers a path with segments after an ACL object's name
// or ID. Nomad takes the whole rest of the path as the name, and a read
// finds no object by it (names and IDs never hold a "/"): the kind's 404
// (notFound). Drover knows that without asking and answers it for every
// method, since no such object can be written or deleted either.
func errNoSuchName(notFound string) error {
	return structs.NewErrCoded(404, "%s", notFound)
}

// decodeACLObject decodes an upsert's api object from the body. When the
// path names the object (key != ""), the body's own key (keyOf) must be
// empty or the same (otherwise a 400 saying mismatch) and is set to it.
func decodeACLObject[T any](r *http.Request, key string, keyOf func(*T) *string, mismatch string) (*T, error) {
	var in T
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	if key != "" {
		k := keyOf(&in)
		if *k != "" && *k != key {
			return nil, structs.NewErrCoded(400, "%s", mismatch)
		}
		*k = key
	}
	return &in, nil
}

// aclUpsert sends an upsert request (args, whose WriteRequest is wr) to
// the RPC method and answers with the first object its reply (of type R)
// says was written, as its api form (nothing when none is).
func aclUpsert[R, O, A any](s *server, w http.ResponseWriter, r *http.Request, method string, args any, wr *structs.WriteRequest,
	written func(*R) ([]*O, uint64), toAPI func(*O) A) (any, error) {
	s.parseWrite(r, wr)
	var reply R
	if err := s.cfg.RPC.RPC("ACL."+method, args, &reply); err != nil {
		return nil, err
	}
	objs, index := written(&reply)
	setIndex(w, index)
	if len(objs) == 0 {
		return nil, nil
	}
	return toAPI(objs[0]), nil
}

// aclDelete deletes one object by name or ID.
func (s *server) aclDelete(w http.ResponseWriter, r *http.Request, method, name string) (any, error) {
	args := structs.ACLNamesRequest{Names: []string{name}}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.WriteMeta
	if err := s.cfg.RPC.RPC("ACL."+method, &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

// aclUpsertFunc writes one object; key is the name or ID the path gives
// ("" on a create route).
type aclUpsertFunc func(w http.ResponseWriter, r *http.Request, key string) (any, error)

// aclCreate answers a create route: a write without a key in the path.
func aclCreate(w http.ResponseWriter, r *http.Request, upsert aclUpsertFunc) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	return upsert(w, r, "")
}

// aclObject answers a route of one object by its method: GET reads it
// (get), PUT/POST writes it (upsert), DELETE deletes it (RPC deleteMethod).
func (s *server) aclObject(w http.ResponseWriter, r *http.Request, key, deleteMethod string,
	get func() (any, error), upsert aclUpsertFunc) (any, error) {
	switch {
	case r.Method == http.MethodGet:
		return get()
	case isWrite(r.Method):
		return upsert(w, r, key)
	case r.Method == http.MethodDelete:
		return s.aclDelete(w, r, deleteMethod, key)
	}
	return nil, errInvalidMethod
}

// /v1/acl/bootstrap
func (s *server) aclBootstrapRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var body api.BootstrapRequest
	if err := decodeBody(r, &body, true); err != nil {
		return nil, err
	}
	args := structs.ACLTokenBootstrapRequest{BootstrapSecret: body.BootstrapSecret}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLTokenResponse
	if err := s.cfg.RPC.RPC("ACL.Bootstrap", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return tokenToAPI(reply.Token), nil
}

// /v1/acl/policies
func (s *server) aclPoliciesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclList(s, w, r, "ListPolicies",
		func(rep *structs.ACLPolicyListResponse) ([]*structs.ACLPolicy, *structs.QueryMeta) {
			return rep.Policies, &rep.QueryMeta
		},
		func(p *structs.ACLPolicy) *api.ACLPolicyListStub {
			return &api.ACLPolicyListStub{Name: p.Name, Description: p.Description, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
		})
}

// /v1/acl/policy/<name>; /v1/acl/policy/self lists the caller's policies.
func (s *server) aclPolicyRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/policy/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "Missing policy name")
	}
	if len(parts) != 1 {
		return nil, errNoSuchName("ACL policy not found")
	}
	name := parts[0]
	if r.Method == http.MethodGet && name == "self" {
		return s.aclPoliciesRequest(w, r)
	}
	return s.aclObject(w, r, name, "DeletePolicies", func() (any, error) {
		return aclGet(s, w, r, "GetPolicy", name, "ACL policy not found",
			func(rep *structs.ACLPolicyResponse) (*structs.ACLPolicy, *structs.QueryMeta) {
				return rep.Policy, &rep.QueryMeta
			},
			policyToWire)
	}, s.aclPolicyUpsert)
}

func (s *server) aclPolicyUpsert(w http.ResponseWriter, r *http.Request, name string) (any, error) {
	in, err := decodeACLObject(r, name, func(p *api.ACLPolicy) *string { return &p.Name }, "Policy name does not match request path")
	if err != nil {
		return nil, err
	}
	args := structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: in.Name, Description: in.Description, Rules: in.Rules}}}
	return aclUpsert(s, w, r, "UpsertPolicies", &args, &args.WriteRequest,
		func(rep *structs.WriteMeta) ([]*structs.ACLPolicy, uint64) { return nil, rep.Index }, policyToAPI)
}

// /v1/acl/tokens
func (s *server) aclTokensRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclList(s, w, r, "ListTokens",
		func(rep *structs.ACLTokenListResponse) ([]*structs.ACLToken, *structs.QueryMeta) {
			return rep.Tokens, &rep.QueryMeta
		},
		func(t *structs.ACLToken) *api.ACLTokenListStub {
			a := tokenToAPI(t)
			return &api.ACLTokenListStub{AccessorID: a.AccessorID, Name: a.Name, Type: a.Type, Policies: a.Policies,
				Roles: a.Roles, Global: a.Global, CreateTime: a.CreateTime, ExpirationTime: a.ExpirationTime,
				CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex}
		})
}

// /v1/acl/token (create)
func (s *server) aclTokenCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclCreate(w, r, s.aclTokenUpsert)
}

func (s *server) aclTokenUpsert(w http.ResponseWriter, r *http.Request, accessor string) (any, error) {
	in, err := decodeACLObject(r, accessor, func(t *api.ACLToken) *string { return &t.AccessorID }, "Token accessor ID does not match request path")
	if err != nil {
		return nil, err
	}
	args := structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tokenFromAPI(in)}}
	return aclUpsert(s, w, r, "UpsertTokens", &args, &args.WriteRequest,
		func(rep *structs.ACLTokenUpsertResponse) ([]*structs.ACLToken, uint64) { return rep.Tokens, rep.Index }, tokenToAPI)
}

// /v1/acl/token/<accessor>, self, onetime, onetime/exchange
func (s *server) aclTokenRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/token/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "Missing token accessor")
	}
	switch {
	case len(parts) == 1 && parts[0] == "onetime":
		return s.aclOneTimeTokenRequest(w, r)
	case len(parts) == 2 && parts[0] == "onetime" && parts[1] == "exchange":
		return s.aclOneTimeExchangeRequest(w, r)
	case len(parts) != 1:
		return nil, errNoSuchName("ACL token not found")
	}
	id := parts[0]
	if r.Method != http.MethodGet && id == "self" {
		return nil, errInvalidMethod
	}
	return s.aclObject(w, r, id, "DeleteTokens", func() (any, error) {
		return aclGet(s, w, r, "GetToken", id, "ACL token not found",
			func(rep *structs.ACLTokenResponse) (*structs.ACLToken, *structs.QueryMeta) {
				return rep.Token, &rep.QueryMeta
			},
			tokenToAPI)
	}, s.aclTokenUpsert)
}

// /v1/acl/token/onetime
func (s *server) aclOneTimeTokenRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	args := structs.OneTimeTokenUpsertRequest{}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.OneTimeTokenUpsertResponse
	if err := s.cfg.RPC.RPC("ACL.UpsertOneTimeToken", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	o := reply.OneTimeToken
	if o == nil {
		return nil, fmt.Errorf("the server returned no one-time token")
	}
	return &api.OneTimeTokenUpsertResponse{OneTimeToken: &api.OneTimeToken{OneTimeSecretID: o.OneTimeSecretID, AccessorID: o.AccessorID,
		ExpiresAt: o.ExpiresAt, CreateIndex: o.CreateIndex, ModifyIndex: o.ModifyIndex}}, nil
}

// /v1/acl/token/onetime/exchange
func (s *server) aclOneTimeExchangeRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var in api.OneTimeTokenExchangeRequest
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	args := structs.OneTimeTokenExchangeRequest{OneTimeSecretID: in.OneTimeSecretID}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLTokenResponse
	if err := s.cfg.RPC.RPC("ACL.ExchangeOneTimeToken", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &api.OneTimeTokenExchangeResponse{Token: tokenToAPI(reply.Token)}, nil
}

// /v1/acl/roles
func (s *server) aclRolesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclList(s, w, r, "ListRoles",
		func(rep *structs.ACLRoleListResponse) ([]*structs.ACLRole, *structs.QueryMeta) {
			return rep.Roles, &rep.QueryMeta
		},
		func(ro *structs.ACLRole) *api.ACLRoleListStub {
			a := roleToAPI(ro)
			return &api.ACLRoleListStub{ID: a.ID, Name: a.Name, Description: a.Description, Policies: a.Policies, CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex}
		})
}

// /v1/acl/role (create)
func (s *server) aclRoleCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclCreate(w, r, s.aclRoleUpsert)
}

func (s *server) aclRoleUpsert(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	in, err := decodeACLObject(r, id, func(ro *api.ACLRole) *string { return &ro.ID }, "ACL role ID does not match request path")
	if err != nil {
		return nil, err
	}
	args := structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{roleFromAPI(in)}}
	return aclUpsert(s, w, r, "UpsertRoles", &args, &args.WriteRequest,
		func(rep *structs.ACLRoleUpsertResponse) ([]*structs.ACLRole, uint64) { return rep.Roles, rep.Index }, roleToAPI)
}

// /v1/acl/role/<id>, /v1/acl/role/name/<name>
func (s *server) aclRoleRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/role/")
	if err != nil {
		return nil, err
	}
	get := func(method, name string) (any, error) {
		return aclGet(s, w, r, method, name, "ACL role not found",
			func(rep *structs.ACLRoleResponse) (*structs.ACLRole, *structs.QueryMeta) {
				return rep.Role, &rep.QueryMeta
			},
			roleToAPI)
	}
	switch {
	case len(parts) == 2 && parts[0] == "name" && parts[1] != "":
		return get("GetRoleByName", parts[1])
	case len(parts) > 2 || (len(parts) == 2 && parts[0] != "name"):
		// Nomad splits a role path: only name/<name> has two segments.
		return nil, structs.NewErrCoded(400, "invalid URI")
	case len(parts) == 2:
		return nil, structs.NewErrCoded(400, "missing ACL role name")
	case len(parts) == 0 || parts[0] == "":
		return nil, structs.NewErrCoded(400, "missing ACL role ID")
	}
	return s.aclObject(w, r, parts[0], "DeleteRoles", func() (any, error) { return get("GetRole", parts[0]) }, s.aclRoleUpsert)
}

// /v1/acl/auth-methods
func (s *server) aclAuthMethodsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclList(s, w, r, "ListAuthMethods",
		func(rep *structs.ACLAuthMethodListResponse) ([]*structs.ACLAuthMethod, *structs.QueryMeta) {
			return rep.AuthMethods, &rep.QueryMeta
		},
		func(m *structs.ACLAuthMethod) *api.ACLAuthMethodListStub {
			return &api.ACLAuthMethodListStub{Name: m.Name, Type: m.Type, Default: m.Default, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex}
		})
}

// /v1/acl/auth-method (create)
func (s *server) aclAuthMethodCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclCreate(w, r, s.aclAuthMethodUpsert)
}

func (s *server) aclAuthMethodUpsert(w http.ResponseWriter, r *http.Request, name string) (any, error) {
	in, err := decodeACLObject(r, name, func(m *api.ACLAuthMethod) *string { return &m.Name }, "ACL auth-method name does not match request path")
	if err != nil {
		return nil, err
	}
	args := structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{authMethodFromAPI(in)}}
	return aclUpsert(s, w, r, "UpsertAuthMethods", &args, &args.WriteRequest,
		func(rep *structs.ACLAuthMethodUpsertResponse) ([]*structs.ACLAuthMethod, uint64) {
			return rep.AuthMethods, rep.Index
		},
		authMethodToAPI)
}

// /v1/acl/auth-method/<name>
func (s *server) aclAuthMethodRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/auth-method/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "missing ACL auth-method name")
	}
	if len(parts) != 1 {
		return nil, errNoSuchName("ACL auth-method not found")
	}
	return s.aclObject(w, r, parts[0], "DeleteAuthMethods", func() (any, error) {
		return aclGet(s, w, r, "GetAuthMethod", parts[0], "ACL auth-method not found",
			func(rep *structs.ACLAuthMethodResponse) (*structs.ACLAuthMethod, *structs.QueryMeta) {
				return rep.AuthMethod, &rep.QueryMeta
			},
			authMethodToAPI)
	}, s.aclAuthMethodUpsert)
}

// /v1/acl/binding-rules
func (s *server) aclBindingRulesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclList(s, w, r, "ListBindingRules",
		func(rep *structs.ACLBindingRuleListResponse) ([]*structs.ACLBindingRule, *structs.QueryMeta) {
			return rep.Rules, &rep.QueryMeta
		},
		func(b *structs.ACLBindingRule) *api.ACLBindingRuleListStub {
			return &api.ACLBindingRuleListStub{ID: b.ID, Description: b.Description, AuthMethod: b.AuthMethod, CreateIndex: b.CreateIndex, ModifyIndex: b.ModifyIndex}
		})
}

// /v1/acl/binding-rule (create)
func (s *server) aclBindingRuleCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return aclCreate(w, r, s.aclBindingRuleUpsert)
}

func (s *server) aclBindingRuleUpsert(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	in, err := decodeACLObject(r, id, func(b *api.ACLBindingRule) *string { return &b.ID }, "ACL binding rule ID does not match request path")
	if err != nil {
		return nil, err
	}
	args := structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{bindingRuleFromAPI(in)}}
	return aclUpsert(s, w, r, "UpsertBindingRules", &args, &args.WriteRequest,
		func(rep *structs.ACLBindingRuleUpsertResponse) ([]*structs.ACLBindingRule, uint64) {
			return rep.Rules, rep.Index
		},
		bindingRuleToAPI)
}

// /v1/acl/binding-rule/<id>
func (s *server) aclBindingRuleRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/binding-rule/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "missing ACL binding rule ID")
	}
	if len(parts) != 1 {
		return nil, errNoSuchName("ACL binding rule not found")
	}
	return s.aclObject(w, r, parts[0], "DeleteBindingRules", func() (any, error) {
		return aclGet(s, w, r, "GetBindingRule", parts[0], "ACL binding rule not found",
			func(rep *structs.ACLBindingRuleResponse) (*structs.ACLBindingRule, *structs.QueryMeta) {
				return rep.Rule, &rep.QueryMeta
			},
			bindingRuleToAPI)
	}, s.aclBindingRuleUpsert)
}

// /v1/acl/login
func (s *server) aclLoginRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var in api.ACLLoginRequest
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	args := structs.ACLLoginRequest{AuthMethodName: in.AuthMethodName, LoginToken: in.LoginToken}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLTokenResponse
	if err := s.cfg.RPC.RPC("ACL.Login", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return tokenToAPI(reply.Token), nil
}

// /v1/acl/identity/client-introduction-token
func (s *server) aclClientIntroductionRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var in api.ACLIdentityClientIntroductionTokenRequest
	if err := decodeBody(r, &in, true); err != nil {
		return nil, err
	}
	args := structs.ACLClientIntroductionTokenRequest{TTL: in.TTL, NodeName: in.NodeName, NodePool: in.NodePool}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLClientIntroductionTokenResponse
	if err := s.cfg.RPC.RPC("ACL.CreateClientIntroductionToken", &args, &reply); err != nil {
		return nil, err
	}
	return &api.ACLIdentityClientIntroductionTokenResponse{JWT: reply.JWT}, nil
}

// /v1/acl/oidc/auth-url
func (s *server) aclOIDCAuthURLRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var in api.ACLOIDCAuthURLRequest
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	args := structs.ACLOIDCAuthURLRequest{AuthMethodName: in.AuthMethodName, RedirectURI: in.RedirectURI, ClientNonce: in.ClientNonce}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLOIDCAuthURLResponse
	if err := s.cfg.RPC.RPC("ACL.OIDCAuthURL", &args, &reply); err != nil {
		return nil, err
	}
	return &api.ACLOIDCAuthURLResponse{AuthURL: reply.AuthURL}, nil
}

// /v1/acl/oidc/complete-auth
func (s *server) aclOIDCCompleteAuthRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	var in api.ACLOIDCCompleteAuthRequest
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	args := structs.ACLOIDCCompleteAuthRequest{AuthMethodName: in.AuthMethodName, ClientNonce: in.ClientNonce,
		State: in.State, Code: in.Code, RedirectURI: in.RedirectURI}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLTokenResponse
	if err := s.cfg.RPC.RPC("ACL.OIDCCompleteAuth", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return tokenToAPI(reply.Token), nil
}
