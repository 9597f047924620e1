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
	var reply structs.ACLPolicyListResponse
	if err := s.aclRead(w, r, "ListPolicies", "", &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
		return nil, err
	}
	out := make([]*api.ACLPolicyListStub, 0, len(reply.Policies))
	for _, p := range reply.Policies {
		out = append(out, &api.ACLPolicyListStub{Name: p.Name, Description: p.Description, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex})
	}
	return out, nil
}

// /v1/acl/policy/<name>; /v1/acl/policy/self lists the caller's policies.
func (s *server) aclPolicyRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/policy/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "Missing policy name")
	}
	name := parts[0]
	switch {
	case r.Method == http.MethodGet && name == "self":
		return s.aclPoliciesRequest(w, r)
	case r.Method == http.MethodGet:
		var reply structs.ACLPolicyResponse
		if err := s.aclRead(w, r, "GetPolicy", name, &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
			return nil, err
		}
		if reply.Policy == nil {
			return nil, structs.NewErrCoded(404, "ACL policy not found")
		}
		p := reply.Policy
		return &api.ACLPolicy{Name: p.Name, Description: p.Description, Rules: p.Rules, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}, nil
	case isWrite(r.Method):
		var in api.ACLPolicy
		if err := decodeBody(r, &in, false); err != nil {
			return nil, err
		}
		if in.Name != "" && in.Name != name {
			return nil, structs.NewErrCoded(400, "Policy name does not match request path")
		}
		args := structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: name, Description: in.Description, Rules: in.Rules}}}
		s.parseWrite(r, &args.WriteRequest)
		var reply structs.WriteMeta
		if err := s.cfg.RPC.RPC("ACL.UpsertPolicies", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		return nil, nil
	case r.Method == http.MethodDelete:
		return s.aclDelete(w, r, "DeletePolicies", name)
	}
	return nil, errInvalidMethod
}

// /v1/acl/tokens
func (s *server) aclTokensRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	var reply structs.ACLTokenListResponse
	if err := s.aclRead(w, r, "ListTokens", "", &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
		return nil, err
	}
	out := make([]*api.ACLTokenListStub, 0, len(reply.Tokens))
	for _, t := range reply.Tokens {
		a := tokenToAPI(t)
		out = append(out, &api.ACLTokenListStub{AccessorID: a.AccessorID, Name: a.Name, Type: a.Type, Policies: a.Policies,
			Roles: a.Roles, Global: a.Global, CreateTime: a.CreateTime, ExpirationTime: a.ExpirationTime,
			CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex})
	}
	return out, nil
}

// /v1/acl/token (create)
func (s *server) aclTokenCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	return s.aclTokenUpsert(w, r, "")
}

func (s *server) aclTokenUpsert(w http.ResponseWriter, r *http.Request, accessor string) (any, error) {
	var in api.ACLToken
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	if accessor != "" && in.AccessorID != "" && in.AccessorID != accessor {
		return nil, structs.NewErrCoded(400, "Token accessor ID does not match request path")
	}
	if accessor != "" {
		in.AccessorID = accessor
	}
	args := structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tokenFromAPI(&in)}}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLTokenUpsertResponse
	if err := s.cfg.RPC.RPC("ACL.UpsertTokens", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	if len(reply.Tokens) == 0 {
		return nil, nil
	}
	return tokenToAPI(reply.Tokens[0]), nil
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
	case len(parts) == 2 && parts[0] == "onetime" && parts[1] == "exchange":
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
	case len(parts) != 1:
		return nil, errNotFound
	}
	id := parts[0]
	switch {
	case r.Method == http.MethodGet:
		var reply structs.ACLTokenResponse
		if err := s.aclRead(w, r, "GetToken", id, &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
			return nil, err
		}
		if reply.Token == nil {
			return nil, structs.NewErrCoded(404, "ACL token not found")
		}
		return tokenToAPI(reply.Token), nil
	case id == "self":
		return nil, errInvalidMethod
	case isWrite(r.Method):
		return s.aclTokenUpsert(w, r, id)
	case r.Method == http.MethodDelete:
		return s.aclDelete(w, r, "DeleteTokens", id)
	}
	return nil, errInvalidMethod
}

// /v1/acl/roles
func (s *server) aclRolesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	var reply structs.ACLRoleListResponse
	if err := s.aclRead(w, r, "ListRoles", "", &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
		return nil, err
	}
	out := make([]*api.ACLRoleListStub, 0, len(reply.Roles))
	for _, ro := range reply.Roles {
		a := roleToAPI(ro)
		out = append(out, &api.ACLRoleListStub{ID: a.ID, Name: a.Name, Description: a.Description, Policies: a.Policies, CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex})
	}
	return out, nil
}

// /v1/acl/role (create)
func (s *server) aclRoleCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	return s.aclRoleUpsert(w, r, "")
}

func (s *server) aclRoleUpsert(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var in api.ACLRole
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	if id != "" && in.ID != "" && in.ID != id {
		return nil, structs.NewErrCoded(400, "ACL role ID does not match request path")
	}
	if id != "" {
		in.ID = id
	}
	args := structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{roleFromAPI(&in)}}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLRoleUpsertResponse
	if err := s.cfg.RPC.RPC("ACL.UpsertRoles", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	if len(reply.Roles) == 0 {
		return nil, nil
	}
	return roleToAPI(reply.Roles[0]), nil
}

// /v1/acl/role/<id>, /v1/acl/role/name/<name>
func (s *server) aclRoleRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/role/")
	if err != nil {
		return nil, err
	}
	get := func(method, name string) (any, error) {
		var reply structs.ACLRoleResponse
		if err := s.aclRead(w, r, method, name, &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
			return nil, err
		}
		if reply.Role == nil {
			return nil, structs.NewErrCoded(404, "ACL role not found")
		}
		return roleToAPI(reply.Role), nil
	}
	switch {
	case len(parts) == 2 && parts[0] == "name" && parts[1] != "":
		return get("GetRoleByName", parts[1])
	case len(parts) != 1 || parts[0] == "":
		return nil, errNotFound
	case r.Method == http.MethodGet:
		return get("GetRole", parts[0])
	case isWrite(r.Method):
		return s.aclRoleUpsert(w, r, parts[0])
	case r.Method == http.MethodDelete:
		return s.aclDelete(w, r, "DeleteRoles", parts[0])
	}
	return nil, errInvalidMethod
}

// /v1/acl/auth-methods
func (s *server) aclAuthMethodsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	var reply structs.ACLAuthMethodListResponse
	if err := s.aclRead(w, r, "ListAuthMethods", "", &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
		return nil, err
	}
	out := make([]*api.ACLAuthMethodListStub, 0, len(reply.AuthMethods))
	for _, m := range reply.AuthMethods {
		out = append(out, &api.ACLAuthMethodListStub{Name: m.Name, Type: m.Type, Default: m.Default, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex})
	}
	return out, nil
}

// /v1/acl/auth-method (create)
func (s *server) aclAuthMethodCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	return s.aclAuthMethodUpsert(w, r, "")
}

func (s *server) aclAuthMethodUpsert(w http.ResponseWriter, r *http.Request, name string) (any, error) {
	var in api.ACLAuthMethod
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	if name != "" && in.Name != "" && in.Name != name {
		return nil, structs.NewErrCoded(400, "ACL auth-method name does not match request path")
	}
	if name != "" {
		in.Name = name
	}
	args := structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{authMethodFromAPI(&in)}}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLAuthMethodUpsertResponse
	if err := s.cfg.RPC.RPC("ACL.UpsertAuthMethods", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	if len(reply.AuthMethods) == 0 {
		return nil, nil
	}
	return authMethodToAPI(reply.AuthMethods[0]), nil
}

// /v1/acl/auth-method/<name>
func (s *server) aclAuthMethodRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/auth-method/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 || parts[0] == "" {
		return nil, errNotFound
	}
	switch {
	case r.Method == http.MethodGet:
		var reply structs.ACLAuthMethodResponse
		if err := s.aclRead(w, r, "GetAuthMethod", parts[0], &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
			return nil, err
		}
		if reply.AuthMethod == nil {
			return nil, structs.NewErrCoded(404, "ACL auth-method not found")
		}
		return authMethodToAPI(reply.AuthMethod), nil
	case isWrite(r.Method):
		return s.aclAuthMethodUpsert(w, r, parts[0])
	case r.Method == http.MethodDelete:
		return s.aclDelete(w, r, "DeleteAuthMethods", parts[0])
	}
	return nil, errInvalidMethod
}

// /v1/acl/binding-rules
func (s *server) aclBindingRulesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	var reply structs.ACLBindingRuleListResponse
	if err := s.aclRead(w, r, "ListBindingRules", "", &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
		return nil, err
	}
	out := make([]*api.ACLBindingRuleListStub, 0, len(reply.Rules))
	for _, b := range reply.Rules {
		out = append(out, &api.ACLBindingRuleListStub{ID: b.ID, Description: b.Description, AuthMethod: b.AuthMethod, CreateIndex: b.CreateIndex, ModifyIndex: b.ModifyIndex})
	}
	return out, nil
}

// /v1/acl/binding-rule (create)
func (s *server) aclBindingRuleCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	return s.aclBindingRuleUpsert(w, r, "")
}

func (s *server) aclBindingRuleUpsert(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var in api.ACLBindingRule
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	if id != "" && in.ID != "" && in.ID != id {
		return nil, structs.NewErrCoded(400, "ACL binding rule ID does not match request path")
	}
	if id != "" {
		in.ID = id
	}
	args := structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{{ID: in.ID, Description: in.Description,
		AuthMethod: in.AuthMethod, Selector: in.Selector, BindType: in.BindType, BindName: in.BindName}}}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.ACLBindingRuleUpsertResponse
	if err := s.cfg.RPC.RPC("ACL.UpsertBindingRules", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	if len(reply.Rules) == 0 {
		return nil, nil
	}
	return bindingRuleToAPI(reply.Rules[0]), nil
}

// /v1/acl/binding-rule/<id>
func (s *server) aclBindingRuleRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/acl/binding-rule/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 || parts[0] == "" {
		return nil, errNotFound
	}
	switch {
	case r.Method == http.MethodGet:
		var reply structs.ACLBindingRuleResponse
		if err := s.aclRead(w, r, "GetBindingRule", parts[0], &reply, func() *structs.QueryMeta { return &reply.QueryMeta }); err != nil {
			return nil, err
		}
		if reply.Rule == nil {
			return nil, structs.NewErrCoded(404, "ACL binding rule not found")
		}
		return bindingRuleToAPI(reply.Rule), nil
	case isWrite(r.Method):
		return s.aclBindingRuleUpsert(w, r, parts[0])
	case r.Method == http.MethodDelete:
		return s.aclDelete(w, r, "DeleteBindingRules", parts[0])
	}
	return nil, errInvalidMethod
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
