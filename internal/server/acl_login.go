package server

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// jwtAlgs are the signature algorithms JWT auth methods accept when the
// method names none.
var jwtAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA}

// Login exchanges a JWT signed by one of a JWT auth method's keys for an
// ACL token carrying what the method's binding rules select.
func (a *ACL) Login(args *structs.ACLLoginRequest, reply *structs.ACLTokenResponse) error {
	a.loginRegion(args.AuthMethodName, &args.WriteRequest)
	if done, err := a.write("Login", &args.WriteRequest, args, reply); done {
		return err
	}
	if args.AuthMethodName == "" {
		return structs.NewErrCoded(400, "missing auth method name")
	}
	if args.LoginToken == "" {
		return structs.NewErrCoded(400, "missing login token")
	}
	st := a.srv.State()
	method, err := st.ACLAuthMethodByName(nil, args.AuthMethodName)
	if err != nil {
		return err
	}
	if method == nil {
		return structs.NewErrCoded(404, "auth-method %q not found", args.AuthMethodName)
	}
	if method.Type != api.ACLAuthMethodTypeJWT {
		return structs.NewErrCoded(400, "auth-method %q is of type %s; /v1/acl/login takes JWT methods", method.Name, method.Type)
	}
	claims, err := verifyJWT(method.Config, args.LoginToken, time.Now())
	if err != nil {
		return structs.NewErrCoded(403, "failed to validate login token: %v", err)
	}
	return a.loginWithClaims(method, claims, args.WriteRequest, reply)
}

// loginRegion sends a login to a method that makes global tokens to where
// global tokens are made: the authoritative region (an OIDC login's two
// steps both go there, so its pending state is found).
func (a *ACL) loginRegion(method string, wr *structs.WriteRequest) {
	if !a.srv.replicatesACLs() {
		return
	}
	if m, err := a.srv.State().ACLAuthMethodByName(nil, method); err == nil && m != nil && m.TokenLocality == api.ACLAuthMethodTokenLocalityGlobal {
		a.toAuthoritative(wr)
	}
}

// loginWithClaims makes the token an auth method's binding rules select
// for verified claims (JWT login, OIDC completion).
func (a *ACL) loginWithClaims(method *structs.ACLAuthMethod, claims map[string]any, wr structs.WriteRequest, reply *structs.ACLTokenResponse) error {
	st := a.srv.State()
	vars := mapClaims(method.Config, claims)
	rules, err := st.ACLBindingRules(nil)
	if err != nil {
		return err
	}
	tok := &structs.ACLToken{AccessorID: uuid.NewString(), SecretID: uuid.NewString(), Type: structs.ACLClientToken,
		Global: method.TokenLocality == api.ACLAuthMethodTokenLocalityGlobal, CreateTime: aclNow()}
	matched := false
	for _, r := range rules {
		if r.AuthMethod != method.Name {
			continue
		}
		if r.Selector != "" {
			ev, err := bexpr.CreateEvaluator(r.Selector)
			if err != nil {
				continue
			}
			ok, err := ev.Evaluate(vars)
			if err != nil || !ok {
				continue
			}
		}
		name := interpolate(r.BindName, vars)
		switch r.BindType {
		case api.ACLBindingRuleBindTypeManagement:
			tok.Type, matched = structs.ACLManagementToken, true
		case api.ACLBindingRuleBindTypePolicy:
			if p, _ := st.ACLPolicyByName(nil, name); p != nil && !slices.Contains(tok.Policies, name) {
				tok.Policies, matched = append(tok.Policies, name), true
			}
		case api.ACLBindingRuleBindTypeRole:
			if ro, _ := st.ACLRoleByName(nil, name); ro != nil {
				tok.Roles, matched = append(tok.Roles, &structs.ACLTokenRoleLink{ID: ro.ID, Name: ro.Name}), true
			}
		}
	}
	if !matched {
		return structs.NewErrCoded(403, "no role or policy bindings matched")
	}
	if tok.Type == structs.ACLManagementToken {
		tok.Policies, tok.Roles = nil, nil
	}
	tok.Name = tokenName(method)
	if method.MaxTokenTTL > 0 {
		exp := tok.CreateTime.Add(method.MaxTokenTTL)
		tok.ExpirationTime, tok.ExpirationTTL = &exp, method.MaxTokenTTL
	}
	entry := &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}, WriteRequest: wr}
	idx, err := a.applyNew(structs.ACLTokenUpsertRequestType, entry)
	if err != nil {
		return err
	}
	reply.Token, err = st.ACLTokenByAccessorID(nil, tok.AccessorID)
	reply.Index = idx
	return err
}

func tokenName(m *structs.ACLAuthMethod) string {
	f := m.TokenNameFormat
	if f == "" {
		f = "${auth_method_type}-${auth_method_name}"
	}
	return strings.NewReplacer("${auth_method_type}", m.Type, "${auth_method_name}", m.Name).Replace(f)
}

// interpolate fills ${value.<name>} in a bind name.
func interpolate(s string, vars map[string]any) string {
	vals, _ := vars["value"].(map[string]string)
	for k, v := range vals {
		s = strings.ReplaceAll(s, "${value."+k+"}", v)
	}
	return s
}

// mapClaims turns the verified claims into the selector's variables:
// value.<name> for ClaimMappings and list.<name> for ListClaimMappings.
func mapClaims(cfg *api.ACLAuthMethodConfig, claims map[string]any) map[string]any {
	values, lists := map[string]string{}, map[string][]string{}
	for claim, name := range cfg.ClaimMappings {
		if v, ok := claims[claim]; ok {
			values[name] = fmt.Sprint(v)
		}
	}
	for claim, name := range cfg.ListClaimMappings {
		switch v := claims[claim].(type) {
		case []any:
			for _, e := range v {
				lists[name] = append(lists[name], fmt.Sprint(e))
			}
		case string:
			lists[name] = []string{v}
		}
	}
	return map[string]any{"value": values, "list": lists}
}

// verifyJWT checks the signature against the method's static keys or
// JWKS, then expiry, not-before, issuer and audience.
func verifyJWT(cfg *api.ACLAuthMethodConfig, raw string, now time.Time) (map[string]any, error) {
	algs := jwtAlgs
	if len(cfg.SigningAlgs) > 0 {
		algs = nil
		for _, a := range cfg.SigningAlgs {
			algs = append(algs, jose.SignatureAlgorithm(a))
		}
	}
	tok, err := jwt.ParseSigned(raw, algs)
	if err != nil {
		return nil, err
	}
	keys, err := methodKeys(cfg)
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	var std jwt.Claims
	verified := false
	for _, k := range keys {
		if err := tok.Claims(k, &std, &claims); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, fmt.Errorf("no key of the auth method verifies the token's signature")
	}
	leeway := cfg.ClockSkewLeeway
	if leeway == 0 {
		leeway = jwt.DefaultLeeway
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Time: now}, leeway); err != nil {
		return nil, err
	}
	if len(cfg.BoundIssuer) > 0 && !slices.Contains(cfg.BoundIssuer, std.Issuer) {
		return nil, fmt.Errorf("issuer %q is not one of the bound issuers", std.Issuer)
	}
	if len(cfg.BoundAudiences) > 0 && !slices.ContainsFunc(cfg.BoundAudiences, std.Audience.Contains) {
		return nil, fmt.Errorf("audience %v does not contain a bound audience", []string(std.Audience))
	}
	return claims, nil
}

// methodKeys are the static PEM public keys, else the keys of the JWKS URL
// (trusting JWKSCACert), else those of the JWKS the OIDC discovery document
// names (trusting DiscoveryCaPem).
func methodKeys(cfg *api.ACLAuthMethodConfig) ([]any, error) {
	var keys []any
	for _, p := range cfg.JWTValidationPubKeys {
		block, _ := pem.Decode([]byte(p))
		if block == nil {
			return nil, fmt.Errorf("JWTValidationPubKeys holds a key that is not PEM")
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing a JWTValidationPubKeys key: %v", err)
		}
		keys = append(keys, k.(crypto.PublicKey))
	}
	if len(keys) > 0 {
		return keys, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch {
	case cfg.JWKSURL != "":
		client, err := caClient("JWKSCACert", []string{cfg.JWKSCACert})
		if err != nil {
			return nil, err
		}
		return fetchJWKS(ctx, client, cfg.JWKSURL)
	case cfg.OIDCDiscoveryURL != "":
		client, err := caClient("DiscoveryCaPem", cfg.DiscoveryCaPem)
		if err != nil {
			return nil, err
		}
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), cfg.OIDCDiscoveryURL)
		if err != nil {
			return nil, fmt.Errorf("OIDC discovery at %s: %v", cfg.OIDCDiscoveryURL, err)
		}
		var doc struct {
			JWKSURI string `json:"jwks_uri"`
		}
		if err := p.Claims(&doc); err != nil || doc.JWKSURI == "" {
			return nil, fmt.Errorf("the OIDC discovery document of %s names no jwks_uri", cfg.OIDCDiscoveryURL)
		}
		return fetchJWKS(ctx, client, doc.JWKSURI)
	}
	return nil, nil
}

// methodPEMs checks the PEM a method's config holds (keys and CA
// certificates), so a method that could never verify a login is refused
// when written, naming the field.
func methodPEMs(cfg *api.ACLAuthMethodConfig) error {
	for _, p := range cfg.JWTValidationPubKeys {
		block, _ := pem.Decode([]byte(p))
		if block == nil {
			return fmt.Errorf("JWTValidationPubKeys holds a key that is not PEM")
		}
		if _, err := x509.ParsePKIXPublicKey(block.Bytes); err != nil {
			return fmt.Errorf("parsing a JWTValidationPubKeys key: %v", err)
		}
	}
	if _, err := caClient("JWKSCACert", []string{cfg.JWKSCACert}); err != nil {
		return err
	}
	_, err := caClient("DiscoveryCaPem", cfg.DiscoveryCaPem)
	return err
}

// caClient is an HTTP client trusting the PEM certificates of field (the
// system's roots when there are none).
func caClient(field string, pems []string) (*http.Client, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	var pool *x509.CertPool
	for _, p := range pems {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(p)) {
			return nil, fmt.Errorf("%s holds no PEM certificate", field)
		}
	}
	if pool != nil {
		c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	return c, nil
}

// fetchJWKS reads the keys of a JWKS URL (at most 1 MiB of it).
func fetchJWKS(ctx context.Context, client *http.Client, url string) ([]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching JWKS: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching JWKS from %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("decoding JWKS from %s: %v", url, err)
	}
	var keys []any
	for _, k := range set.Keys {
		keys = append(keys, k.Key)
	}
	return keys, nil
}
