package cli

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// readAuthMethodConfig reads an auth method's -config as Nomad's CLI does:
// JSON inline, "@path" from a file, "-" from stdin; the keys are
// api.ACLAuthMethodConfig's (OIDCDiscoveryURL, OIDCClientID, ...). A key
// that is not one of them is refused by name: JSON decoding alone would
// drop it and the method would quietly lack the setting.
func readAuthMethodConfig(arg string) (*api.ACLAuthMethodConfig, error) {
	raw := []byte(arg)
	var err error
	switch {
	case arg == "-":
		raw, err = io.ReadAll(os.Stdin)
	case strings.HasPrefix(arg, "@"):
		raw, err = os.ReadFile(arg[1:])
	}
	if err != nil {
		return nil, fmt.Errorf("Error reading -config: %v", err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("Error decoding -config JSON: %v", err)
	}
	known := map[string]bool{}
	var names []string
	ct := reflect.TypeOf(api.ACLAuthMethodConfig{})
	for i := 0; i < ct.NumField(); i++ {
		known[strings.ToLower(ct.Field(i).Name)] = true
		names = append(names, ct.Field(i).Name)
	}
	var unknown []string
	for k := range keys {
		if !known[strings.ToLower(k)] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("Error decoding -config JSON: unknown key(s) %s; the keys are %s", strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	var cfg api.ACLAuthMethodConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("Error decoding -config JSON: %v", err)
	}
	return &cfg, nil
}

// formatMethod is `acl auth-method info`'s text: the method, then its
// config's settings for its type. The server never sends the OIDC client
// secret back (it reads "redacted").
func formatMethod(m *api.ACLAuthMethod) string {
	nameFormat := m.TokenNameFormat
	if nameFormat == "" { // what the server names tokens with
		nameFormat = "${auth_method_type}-${auth_method_name}"
	}
	out := formatKV([]string{"Name|" + m.Name, "Type|" + m.Type, "Locality|" + m.TokenLocality,
		"Max Token TTL|" + m.MaxTokenTTL.String(), "Token Name Format|" + nameFormat, fmt.Sprintf("Default|%v", m.Default),
		fmt.Sprintf("Create Index|%d", m.CreateIndex), fmt.Sprintf("Modify Index|%d", m.ModifyIndex)})
	c := m.Config
	if c == nil {
		return out
	}
	var rows []string
	if m.Type == api.ACLAuthMethodTypeOIDC {
		rows = append(rows, "OIDC Discovery URL|"+orNone(c.OIDCDiscoveryURL), "OIDC Client ID|"+orNone(c.OIDCClientID),
			"OIDC Client Secret|"+orNone(c.OIDCClientSecret), "OIDC Scopes|"+joinOrNone(c.OIDCScopes),
			fmt.Sprintf("OIDC Enable PKCE|%v", c.OIDCEnablePKCE), fmt.Sprintf("OIDC Disable UserInfo|%v", c.OIDCDisableUserInfo),
			"Bound audiences|"+joinOrNone(c.BoundAudiences), "Bound issuer|"+joinOrNone(c.BoundIssuer),
			"Allowed redirects URIs|"+joinOrNone(c.AllowedRedirectURIs), "Discovery CA pem|"+pemSubjects(c.DiscoveryCaPem))
	} else {
		rows = append(rows, "JWT Validation Pub Keys|"+pemSubjects(c.JWTValidationPubKeys), "JWKS URL|"+orNone(c.JWKSURL),
			"JWKS CA Cert|"+pemSubjects(nonEmpty(c.JWKSCACert)), "OIDC Discovery URL|"+orNone(c.OIDCDiscoveryURL),
			"Bound audiences|"+joinOrNone(c.BoundAudiences), "Bound issuer|"+joinOrNone(c.BoundIssuer),
			"Discovery CA pem|"+pemSubjects(c.DiscoveryCaPem))
	}
	rows = append(rows, "Signing algorithms|"+joinOrNone(c.SigningAlgs), "Expiration Leeway|"+durationOrNone(c.ExpirationLeeway),
		"NotBefore Leeway|"+durationOrNone(c.NotBeforeLeeway), "ClockSkew Leeway|"+durationOrNone(c.ClockSkewLeeway),
		"Claim mappings|"+formatMappings(c.ClaimMappings), "List claim mappings|"+formatMappings(c.ListClaimMappings))
	return out + "\n\nAuth Method Config\n\n" + formatKV(rows)
}

func joinOrNone(l []string) string { return orNone(strings.Join(l, ", ")) }

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func durationOrNone(d time.Duration) string {
	if d == 0 {
		return "<none>"
	}
	return d.String()
}

// formatMappings is "{claim: name}; ..." sorted by claim.
func formatMappings(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, "{"+k+": "+m[k]+"}")
	}
	return orNone(strings.Join(parts, "; "))
}

// pemSubjects names PEM blocks on one line: a certificate by its subject,
// another block by its type.
func pemSubjects(pems []string) string {
	var out []string
	for _, p := range pems {
		rest := []byte(p)
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			name := b.Type
			if cert, err := x509.ParseCertificate(b.Bytes); err == nil && b.Type == "CERTIFICATE" {
				name = "certificate " + cert.Subject.String()
			}
			out = append(out, name)
		}
	}
	if len(out) == 0 && len(pems) > 0 {
		return fmt.Sprintf("%d value(s) that are not PEM", len(pems))
	}
	return joinOrNone(out)
}
