// Package oidctest is a small OpenID Connect provider for tests: discovery,
// JWKS, an authorization endpoint that answers at once (no login page) by
// redirecting to the client's redirect_uri with a code, or with an error
// when told to refuse, and a token endpoint that trades the code for an ES256
// ID token carrying the authorization request's nonce. It checks the client
// ID and secret, the redirect URI and the PKCE verifier as a real provider
// does, so a test that passes through it exercises the whole code flow.
//
// It is test support only: nothing outside _test.go files may import it.
package oidctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a running provider. URL is its issuer and discovery base URL.
type Issuer struct {
	URL          string
	ClientID     string
	ClientSecret string

	key *ecdsa.PrivateKey
	srv *httptest.Server

	mu        sync.Mutex
	claims    map[string]any
	subject   string
	refuse    [2]string // error code and description authorize answers with
	grants    map[string]grant
	nextID    int
	exchanges int
}

// grant is what an authorization request left for the token endpoint.
type grant struct {
	redirectURI, nonce, challenge string
	claims                        map[string]any
	subject                       string
}

// New starts a provider over HTTP that knows one client, closed when the
// test ends. ID tokens carry sub "alice" and no other claims until
// SetClaims.
func New(t testing.TB, clientID, clientSecret string) *Issuer {
	t.Helper()
	return start(t, clientID, clientSecret, false)
}

// NewTLS is New over HTTPS with a certificate of its own: CertPEM is what
// a client (an auth method's DiscoveryCaPem) must trust, HTTPClient trusts
// it already.
func NewTLS(t testing.TB, clientID, clientSecret string) *Issuer {
	t.Helper()
	return start(t, clientID, clientSecret, true)
}

func start(t testing.TB, clientID, clientSecret string, useTLS bool) *Issuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &Issuer{ClientID: clientID, ClientSecret: clientSecret, key: key, subject: "alice", grants: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", is.discovery)
	mux.HandleFunc("/jwks", is.jwks)
	mux.HandleFunc("/authorize", is.authorize)
	mux.HandleFunc("/token", is.token)
	srv := httptest.NewUnstartedServer(mux)
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	is.srv, is.URL = srv, srv.URL
	return is
}

// CertPEM is the HTTPS certificate of a NewTLS issuer ("" over HTTP).
func (is *Issuer) CertPEM() string {
	if is.srv.Certificate() == nil {
		return ""
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw}))
}

// HTTPClient is a browser for the issuer: it trusts its certificate and
// follows redirects (to a login's callback too).
func (is *Issuer) HTTPClient() *http.Client {
	c := *is.srv.Client()
	c.Timeout = 30 * time.Second
	return &c
}

// SetClaims sets the subject and the extra claims of the ID tokens issued
// for the authorizations that follow.
func (is *Issuer) SetClaims(subject string, claims map[string]any) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.subject, is.claims = subject, maps.Clone(claims)
}

// Refuse makes the authorizations that follow redirect with ?error=code
// (and error_description) instead of a code, as a provider does when the
// user denies consent; an empty code grants again.
func (is *Issuer) Refuse(code, description string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.refuse = [2]string{code, description}
}

// Exchanges is how many codes the token endpoint has traded for tokens.
func (is *Issuer) Exchanges() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.exchanges
}

// Authorize performs the browser's visit to an authorization URL without
// following the redirect, and returns the callback URL the provider sends
// the browser to.
func (is *Issuer) Authorize(authURL string) (*url.URL, error) {
	c := is.HTTPClient()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(authURL)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("authorize answered %s", resp.Status)
	}
	return url.Parse(resp.Header.Get("Location"))
}

// SignJWT signs claims with the issuer's key (the one its JWKS serves), as
// a CI system signs the JWT a JWT auth method login presents.
func (is *Issuer) SignJWT(t testing.TB, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (is *Issuer) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"issuer": is.URL, "authorization_endpoint": is.URL + "/authorize",
		"token_endpoint": is.URL + "/token", "jwks_uri": is.URL + "/jwks", "response_types_supported": []string{"code"},
		"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"ES256"},
		"code_challenge_methods_supported": []string{"S256"}})
}

func (is *Issuer) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
}

// authorize answers an authorization request at once: the user is
// "logged in" as the configured subject.
func (is *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || q.Get("client_id") != is.ClientID || q.Get("response_type") != "code" {
		http.Error(w, "bad authorization request: client_id, response_type=code and redirect_uri are required", 400)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	is.mu.Lock()
	if is.refuse[0] != "" {
		back.Set("error", is.refuse[0])
		if is.refuse[1] != "" {
			back.Set("error_description", is.refuse[1])
		}
	} else {
		is.nextID++
		code := fmt.Sprintf("code-%d", is.nextID)
		is.grants[code] = grant{redirectURI: redirect.String(), nonce: q.Get("nonce"), challenge: q.Get("code_challenge"),
			claims: maps.Clone(is.claims), subject: is.subject}
		back.Set("code", code)
	}
	is.mu.Unlock()
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// token trades a code (once) for an ID token.
func (is *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
	}
	if id != is.ClientID || secret != is.ClientSecret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	is.mu.Lock()
	g, ok := is.grants[r.Form.Get("code")]
	delete(is.grants, r.Form.Get("code"))
	if ok {
		is.exchanges++
	}
	is.mu.Unlock()
	if !ok || g.redirectURI != r.Form.Get("redirect_uri") {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
		return
	}
	if g.challenge != "" {
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
			return
		}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		writeJSON(w, 500, map[string]string{"error": err.Error()})
		return
	}
	now := time.Now()
	claims := map[string]any{"nonce": g.nonce}
	maps.Copy(claims, g.claims)
	idt, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: is.URL, Subject: g.subject, Audience: jwt.Audience{is.ClientID},
		Expiry: jwt.NewNumericDate(now.Add(5 * time.Minute)), IssuedAt: jwt.NewNumericDate(now)}).Claims(claims).Serialize()
	if err != nil {
		writeJSON(w, 500, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, 200, map[string]any{"access_token": "at-" + r.Form.Get("code"), "token_type": "Bearer", "expires_in": 300, "id_token": idt})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
