package structs

import (
	"time"

	"github.com/hashicorp/nomad/api"
)

// Raft message types of the ACL system (the numbers this work was given).
const (
	ACLPolicyUpsertRequestType       MessageType = 19
	ACLPolicyDeleteRequestType       MessageType = 20
	ACLTokenUpsertRequestType        MessageType = 21
	ACLTokenDeleteRequestType        MessageType = 22
	ACLTokenBootstrapRequestType     MessageType = 23
	ACLRoleUpsertRequestType         MessageType = 24
	ACLRoleDeleteRequestType         MessageType = 25
	ACLAuthMethodUpsertRequestType   MessageType = 43
	ACLAuthMethodDeleteRequestType   MessageType = 44
	ACLBindingRuleUpsertRequestType  MessageType = 45
	ACLBindingRuleDeleteRequestType  MessageType = 46
	OneTimeTokenUpsertRequestType    MessageType = 47
	OneTimeTokenExchangeRequestType  MessageType = 50
	ACLTokenExpiredDeleteRequestType MessageType = 51
	OneTimeTokenExpireRequestType    MessageType = 52
)

// ACL token types and the anonymous token.
const (
	ACLClientToken     = "client"
	ACLManagementToken = "management"
	// AnonymousACLPolicy is the policy requests without a token get.
	AnonymousACLPolicy = "anonymous"
)

// ACLPolicy is a named set of rules (Nomad's HCL rule language, parsed by
// internal/acl).
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLToken is a bearer credential. AccessorID is public; SecretID is the
// secret sent as X-Nomad-Token.
type ACLToken struct {
	AccessorID     string
	SecretID       string
	Name           string
	Type           string
	Policies       []string
	Roles          []*ACLTokenRoleLink
	Global         bool
	CreateTime     time.Time
	ExpirationTime *time.Time
	ExpirationTTL  time.Duration
	CreateIndex    uint64
	ModifyIndex    uint64
}

// ACLTokenRoleLink names a role a token inherits policies from.
type ACLTokenRoleLink struct {
	ID   string
	Name string
}

// IsExpired reports whether the token has expired at now.
func (t *ACLToken) IsExpired(now time.Time) bool {
	return t != nil && t.ExpirationTime != nil && !t.ExpirationTime.After(now)
}

// ACLRole is a named set of policies tokens can link to.
type ACLRole struct {
	ID          string
	Name        string
	Description string
	Policies    []*ACLRolePolicyLink
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLRolePolicyLink names a policy of a role.
type ACLRolePolicyLink struct {
	Name string
}

// ACLAuthMethod is an SSO method (JWT or OIDC) that exchanges an external
// identity for a Nomad token.
type ACLAuthMethod struct {
	Name            string
	Type            string
	TokenLocality   string
	TokenNameFormat string
	MaxTokenTTL     time.Duration
	Default         bool
	Config          *api.ACLAuthMethodConfig
	CreateTime      time.Time
	ModifyTime      time.Time
	CreateIndex     uint64
	ModifyIndex     uint64
}

// ACLBindingRule maps an auth method's identities (selected by a bexpr
// selector over the mapped claims) to a role, a policy or management.
type ACLBindingRule struct {
	ID          string
	Description string
	AuthMethod  string
	Selector    string
	BindType    string
	BindName    string
	CreateTime  time.Time
	ModifyTime  time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// OneTimeToken is a short-lived secret exchangeable once for its token.
type OneTimeToken struct {
	OneTimeSecretID string
	AccessorID      string
	ExpiresAt       time.Time
	CreateIndex     uint64
	ModifyIndex     uint64
}

// ACLPolicyUpsertRequest writes policies.
type ACLPolicyUpsertRequest struct {
	Policies []*ACLPolicy
	WriteRequest
}

// ACLNamesRequest deletes by name or ID (policies, tokens, roles, auth
// methods, binding rules).
type ACLNamesRequest struct {
	Names []string
	WriteRequest
}

// ACLTokenUpsertRequest writes tokens (fully formed: IDs and times set).
type ACLTokenUpsertRequest struct {
	Tokens []*ACLToken
	WriteRequest
}

// ACLTokenUpsertResponse returns the written tokens.
type ACLTokenUpsertResponse struct {
	Tokens []*ACLToken
	WriteMeta
}

// ACLTokenBootstrapRequest creates the first management token. ResetIndex
// is the index found in the reset file (0: none).
type ACLTokenBootstrapRequest struct {
	Token           *ACLToken
	ResetIndex      uint64
	BootstrapSecret string
	WriteRequest
}

// ACLRoleUpsertRequest writes roles.
type ACLRoleUpsertRequest struct {
	Roles []*ACLRole
	WriteRequest
}

// ACLRoleUpsertResponse returns the written roles.
type ACLRoleUpsertResponse struct {
	Roles []*ACLRole
	WriteMeta
}

// ACLAuthMethodUpsertRequest writes auth methods.
type ACLAuthMethodUpsertRequest struct {
	AuthMethods []*ACLAuthMethod
	WriteRequest
}

// ACLAuthMethodUpsertResponse returns the written methods.
type ACLAuthMethodUpsertResponse struct {
	AuthMethods []*ACLAuthMethod
	WriteMeta
}

// ACLBindingRuleUpsertRequest writes binding rules.
type ACLBindingRuleUpsertRequest struct {
	Rules []*ACLBindingRule
	WriteRequest
}

// ACLBindingRuleUpsertResponse returns the written rules.
type ACLBindingRuleUpsertResponse struct {
	Rules []*ACLBindingRule
	WriteMeta
}

// OneTimeTokenUpsertRequest stores a one-time token.
type OneTimeTokenUpsertRequest struct {
	OneTimeToken *OneTimeToken
	WriteRequest
}

// OneTimeTokenUpsertResponse returns it.
type OneTimeTokenUpsertResponse struct {
	OneTimeToken *OneTimeToken
	WriteMeta
}

// OneTimeTokenExchangeRequest exchanges a one-time secret (and, as a Raft
// entry, deletes it).
type OneTimeTokenExchangeRequest struct {
	OneTimeSecretID string
	WriteRequest
}

// ACLTokenResponse is one token (nil: not found).
type ACLTokenResponse struct {
	Token *ACLToken
	QueryMeta
}

// ACLGetRequest reads one ACL object by name or ID.
type ACLGetRequest struct {
	Name string
	QueryOptions
}

// ACLPolicyResponse is one policy (nil: not found).
type ACLPolicyResponse struct {
	Policy *ACLPolicy
	QueryMeta
}

// ACLPolicyListResponse lists policies.
type ACLPolicyListResponse struct {
	Policies []*ACLPolicy
	QueryMeta
}

// ACLTokenListResponse lists tokens.
type ACLTokenListResponse struct {
	Tokens []*ACLToken
	QueryMeta
}

// ACLRoleResponse is one role (nil: not found).
type ACLRoleResponse struct {
	Role *ACLRole
	QueryMeta
}

// ACLRoleListResponse lists roles.
type ACLRoleListResponse struct {
	Roles []*ACLRole
	QueryMeta
}

// ACLAuthMethodResponse is one auth method (nil: not found).
type ACLAuthMethodResponse struct {
	AuthMethod *ACLAuthMethod
	QueryMeta
}

// ACLAuthMethodListResponse lists auth methods.
type ACLAuthMethodListResponse struct {
	AuthMethods []*ACLAuthMethod
	QueryMeta
}

// ACLBindingRuleResponse is one binding rule (nil: not found).
type ACLBindingRuleResponse struct {
	Rule *ACLBindingRule
	QueryMeta
}

// ACLBindingRuleListResponse lists binding rules.
type ACLBindingRuleListResponse struct {
	Rules []*ACLBindingRule
	QueryMeta
}

// ACLResolveResponse is what a token grants: the token and the rules of
// every policy it reaches directly or through roles.
type ACLResolveResponse struct {
	Token    *ACLToken
	Policies []*ACLPolicy
	QueryMeta
}

// ACLLoginRequest exchanges an auth method's login token (a JWT) for an
// ACL token.
type ACLLoginRequest struct {
	AuthMethodName string
	LoginToken     string
	WriteRequest
}

// ACLClientIntroductionTokenRequest asks for a signed JWT that a new
// client node presents when it first registers.
type ACLClientIntroductionTokenRequest struct {
	TTL      time.Duration
	NodeName string
	NodePool string
	WriteRequest
}

// ACLClientIntroductionTokenResponse holds the signed JWT.
type ACLClientIntroductionTokenResponse struct {
	JWT string
	WriteMeta
}

// ACLOIDCAuthURLRequest starts an OIDC login: the provider URL to send the
// user to.
type ACLOIDCAuthURLRequest struct {
	AuthMethodName string
	RedirectURI    string
	ClientNonce    string
	WriteRequest
}

// ACLOIDCAuthURLResponse is the provider's authorization URL.
type ACLOIDCAuthURLResponse struct {
	AuthURL string
	WriteMeta
}

// ACLOIDCCompleteAuthRequest finishes an OIDC login with the code and
// state the provider redirected back with.
type ACLOIDCCompleteAuthRequest struct {
	AuthMethodName string
	ClientNonce    string
	State          string
	Code           string
	RedirectURI    string
	WriteRequest
}
