package tlsutil

import (
	"crypto/x509"
	"fmt"
	"strings"
)

// DefaultDomain is the domain of Nomad's certificate names.
const DefaultDomain = "nomad"

// ServerName is the name a server's certificate carries in region.
func ServerName(region string) string { return "server." + region + "." + DefaultDomain }

// ClientName is the name a client agent's certificate carries in region.
func ClientName(region string) string { return "client." + region + "." + DefaultDomain }

// Role is what a peer's certificate says it is.
type Role int

const (
	RoleServer Role = iota // server.<region>.nomad
	RoleClient             // client.<region>.nomad
)

// CheckPeer reports whether cert names a server (or, with allowClient, a
// client agent) of region; the error lists the names it carries and the
// ones this region accepts.
func CheckPeer(cert *x509.Certificate, region string, allowClient bool) error {
	want := []string{ServerName(region)}
	if allowClient {
		want = append(want, ClientName(region))
	}
	for _, w := range want {
		if cert.VerifyHostname(w) == nil {
			return nil
		}
	}
	return fmt.Errorf("TLS certificate with names [%s] is not valid for region %q: it must name %s",
		strings.Join(certNames(cert), ", "), region, strings.Join(want, " or "))
}

// ServerRegion reports the region whose server cert names
// (server.<region>.nomad, or a wildcard covering it), whichever region
// that is; ok is false when it names no server.
func ServerRegion(cert *x509.Certificate) (region string, ok bool) {
	for _, n := range certNames(cert) {
		rest, found := strings.CutSuffix(n, "."+DefaultDomain)
		if !found {
			continue
		}
		if r, found := strings.CutPrefix(rest, "server."); found {
			region = r
		} else if r, found := strings.CutPrefix(rest, "*."); found {
			region = r
		} else {
			continue
		}
		if region != "" && !strings.Contains(region, "*") && cert.VerifyHostname(ServerName(region)) == nil {
			return region, true
		}
	}
	return "", false
}

func certNames(cert *x509.Certificate) []string {
	names := append([]string(nil), cert.DNSNames...)
	if len(names) == 0 && cert.Subject.CommonName != "" {
		names = append(names, cert.Subject.CommonName)
	}
	return names
}
