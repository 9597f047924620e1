package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
	"golang.org/x/oauth2"

	"github.com/drover-project/drover/internal/structs"
)

// oidcPendingTTL is how long a started OIDC login may take to complete.
const oidcPendingTTL = 10 * time.Minute

// Bounds on what anyone (no token is needed) can make a server hold for
// logins started and not completed: at most oidcMaxPending at once, each
// with a client nonce of at most oidcMaxNonce bytes (Nomad's CLI sends 20
// characters, its UI a UUID).
const (
	oidcMaxPending = 10000
	oidcMaxNonce   = 512
)

// oidcPending are the logins started on this server (the leader: both
// calls are forwarded to it), by state. They are not replicated: a login
// in flight when leadership moves is started again.
type oidcPending struct {
	mu sync.Mutex
	m  map[string]oidcLogin
}

type oidcLogin struct {
	method, clientNonce, redirectURI, nonce, verifier string
	expires                                           time.Time
}

// put holds a started login, refusing one more than oidcMaxPending.
func (p *oidcPending) put(state string, l oidcLogin) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]oidcLogin{}
	}
	now := time.Now()
	for k, v := range p.m {
		if now.After(v.expires) {
			delete(p.m, k)
		}
	}
	if len(p.m) >= oidcMaxPending {
		return structs.NewErrCoded(http.StatusTooManyRequests, "too many OIDC logins in progress (%d started in the last %s and not completed); try again later", len(p.m), oidcPendingTTL)
	}
	p.m[state] = l
	return nil
}

// validOIDCRequest checks the fields both steps of an OIDC login need,
// naming the first one missing or too long.
func validOIDCRequest(method, clientNonce, redirectURI string) error {
	switch {
	case method == "":
		return structs.NewErrCoded(400, "missing auth method name")
	case clientNonce == "":
		return structs.NewErrCoded(400, "missing client nonce")
	case len(clientNonce) > oidcMaxNonce:
		return structs.NewErrCoded(400, "client nonce is too long: %d bytes, at most %d", len(clientNonce), oidcMaxNonce)
	case redirectURI == "":
		return structs.NewErrCoded(400, "missing redirect URI")
	}
	return nil
}

func (p *oidcPending) take(state string) (oidcLogin, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.m[state]
	delete(p.m, state)
	if ok && time.Now().After(l.expires) {
		return oidcLogin{}, false
	}
	return l, ok
}

// oidcMethod loads an OIDC auth method and its provider (discovery).
func (a *ACL) oidcMethod(ctx context.Context, name string) (*structs.ACLAuthMethod, *oidc.Provider, context.Context, error) {
	if name == "" {
		return nil, nil, nil, structs.NewErrCoded(400, "missing auth method name")
	}
	m, err := a.srv.State().ACLAuthMethodByName(nil, name)
	if err != nil {
		return nil, nil, nil, err
	}
	if m == nil {
		return nil, nil, nil, structs.NewErrCoded(404, "auth-method %q not found", name)
	}
	if m.Type != api.ACLAuthMethodTypeOIDC {
		return nil, nil, nil, structs.NewErrCoded(400, "auth-method %q is of type %s, not OIDC", name, m.Type)
	}
	if len(m.Config.DiscoveryCaPem) > 0 {
		pool := x509.NewCertPool()
		for _, p := range m.Config.DiscoveryCaPem {
			pool.AppendCertsFromPEM([]byte(p))
		}
		ctx = oidc.ClientContext(ctx, &http.Client{Timeout: 10 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}})
	}
	p, err := oidc.NewProvider(ctx, m.Config.OIDCDiscoveryURL)
	if err != nil {
		return nil, nil, nil, structs.NewErrCoded(500, "OIDC discovery at %s failed: %v", m.Config.OIDCDiscoveryURL, err)
	}
	return m, p, ctx, nil
}

func oauthConfig(m *structs.ACLAuthMethod, p *oidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: m.Config.OIDCClientID, ClientSecret: m.Config.OIDCClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: append([]string{oidc.ScopeOpenID}, m.Config.OIDCScopes...)}
}

// OIDCAuthURL starts an OIDC login: the provider's authorization URL with
// a fresh state and nonce.
func (a *ACL) OIDCAuthURL(args *structs.ACLOIDCAuthURLRequest, reply *structs.ACLOIDCAuthURLResponse) error {
	a.loginRegion(args.AuthMethodName, &args.WriteRequest)
	if err := validOIDCRequest(args.AuthMethodName, args.ClientNonce, args.RedirectURI); err != nil {
		return err
	}
	if done, err := a.write("OIDCAuthURL", &args.WriteRequest, args, reply); done {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	m, p, _, err := a.oidcMethod(ctx, args.AuthMethodName)
	if err != nil {
		return err
	}
	if !slices.Contains(m.Config.AllowedRedirectURIs, args.RedirectURI) {
		return structs.NewErrCoded(400, "redirect URI %q is not one of the method's AllowedRedirectURIs", args.RedirectURI)
	}
	l := oidcLogin{method: m.Name, clientNonce: args.ClientNonce, redirectURI: args.RedirectURI, nonce: uuid.NewString(),
		expires: time.Now().Add(oidcPendingTTL)}
	opts := []oauth2.AuthCodeOption{oidc.Nonce(l.nonce)}
	if m.Config.OIDCEnablePKCE {
		l.verifier = oauth2.GenerateVerifier()
		opts = append(opts, oauth2.S256ChallengeOption(l.verifier))
	}
	state := uuid.NewString()
	if err := a.srv.oidc.put(state, l); err != nil {
		return err
	}
	reply.AuthURL = oauthConfig(m, p, args.RedirectURI).AuthCodeURL(state, opts...)
	return nil
}

// OIDCCompleteAuth exchanges the code for an ID token, verifies it
// (signature, issuer, client ID audience, nonce, bound audiences) and
// makes the token the binding rules select for its claims.
func (a *ACL) OIDCCompleteAuth(args *structs.ACLOIDCCompleteAuthRequest, reply *structs.ACLTokenResponse) error {
	a.loginRegion(args.AuthMethodName, &args.WriteRequest)
	// A request missing a field is refused before its state is looked
	// up, so it does not use up a login in progress.
	if err := validOIDCRequest(args.AuthMethodName, args.ClientNonce, args.RedirectURI); err != nil {
		return err
	}
	if args.State == "" {
		return structs.NewErrCoded(400, "missing state")
	}
	if args.Code == "" {
		return structs.NewErrCoded(400, "missing code")
	}
	if done, err := a.write("OIDCCompleteAuth", &args.WriteRequest, args, reply); done {
		return err
	}
	l, ok := a.srv.oidc.take(args.State)
	if !ok || l.method != args.AuthMethodName || l.clientNonce != args.ClientNonce || l.redirectURI != args.RedirectURI {
		return structs.NewErrCoded(400, "unknown or expired OIDC login state; start again from the auth URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	m, p, ctx, err := a.oidcMethod(ctx, args.AuthMethodName)
	if err != nil {
		return err
	}
	var opts []oauth2.AuthCodeOption
	if l.verifier != "" {
		opts = append(opts, oauth2.VerifierOption(l.verifier))
	}
	tok, err := oauthConfig(m, p, args.RedirectURI).Exchange(ctx, args.Code, opts...)
	if err != nil {
		return structs.NewErrCoded(403, "OIDC code exchange failed: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return structs.NewErrCoded(403, "the OIDC provider returned no ID token")
	}
	cfg := &oidc.Config{ClientID: m.Config.OIDCClientID}
	if len(m.Config.SigningAlgs) > 0 {
		cfg.SupportedSigningAlgs = m.Config.SigningAlgs
	}
	idt, err := p.Verifier(cfg).Verify(ctx, raw)
	if err != nil {
		return structs.NewErrCoded(403, "failed to verify the ID token: %v", err)
	}
	if idt.Nonce != l.nonce {
		return structs.NewErrCoded(403, "the ID token's nonce does not match the login's")
	}
	if len(m.Config.BoundAudiences) > 0 && !slices.ContainsFunc(idt.Audience, func(s string) bool { return slices.Contains(m.Config.BoundAudiences, s) }) {
		return structs.NewErrCoded(403, "the ID token's audience %v has no bound audience", idt.Audience)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return structs.NewErrCoded(403, "reading the ID token's claims: %v", err)
	}
	if !m.Config.OIDCDisableUserInfo && p.UserInfoEndpoint() != "" {
		if ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil {
			var extra map[string]any
			if ui.Claims(&extra) == nil {
				for k, v := range extra {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		}
	}
	return a.loginWithClaims(m, claims, args.WriteRequest, reply)
}
