package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Config is what the agent's `tls` block says about the material and the
// checks (the http/rpc switches stay with the agent).
type Config struct {
	CAFile, CertFile, KeyFile string
	// VerifyServerHostname: an agent dialing a server checks that its
	// certificate names server.<Region>.nomad, and a server checks that
	// an incoming RPC peer's names server.<Region>.nomad or
	// client.<Region>.nomad (so a certificate of another region is refused).
	VerifyServerHostname bool
	// VerifyHTTPSClient: the HTTPS API requires a client certificate signed
	// by the CA.
	VerifyHTTPSClient bool
	// MinVersion is "tls10", "tls11", "tls12" or "tls13" ("" is tls12).
	MinVersion string
	// CipherSuites is a comma-separated list of Go/IANA suite names ("":
	// Go's defaults). TLS 1.3 suites are not configurable.
	CipherSuites string
	Region       string
}

// material is one loaded set of files and settings.
type material struct {
	cfg        Config
	ca         *x509.CertPool
	cert       tls.Certificate
	minVersion uint16
	suites     []uint16
}

// Store holds the current material. Every tls.Config it hands out reads
// the material when a handshake starts, so Reload affects new
// connections and leaves established ones alone.
type Store struct {
	mu  sync.RWMutex
	cur *material
}

// New loads cfg's files.
func New(cfg Config) (*Store, error) {
	m, err := load(cfg)
	if err != nil {
		return nil, err
	}
	return &Store{cur: m}, nil
}

// Reload loads cfg's files again; on error the old material stays in use.
func (s *Store) Reload(cfg Config) error {
	m, err := load(cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cur = m
	s.mu.Unlock()
	return nil
}

// Check reports what would make New fail for cfg, without keeping it.
func Check(cfg Config) error {
	_, err := load(cfg)
	return err
}

func (s *Store) material() *material {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// Leaf is the certificate in use (tests, logs).
func (s *Store) Leaf() *x509.Certificate {
	m := s.material()
	if m.cert.Leaf != nil {
		return m.cert.Leaf
	}
	c, _ := x509.ParseCertificate(m.cert.Certificate[0])
	return c
}

func load(cfg Config) (*material, error) {
	var missing []string
	for _, f := range []struct{ key, v string }{{"tls.ca_file", cfg.CAFile}, {"tls.cert_file", cfg.CertFile}, {"tls.key_file", cfg.KeyFile}} {
		if f.v == "" {
			missing = append(missing, f.key)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s must be set when tls.http or tls.rpc is on", strings.Join(missing, ", "))
	}
	m := &material{cfg: cfg}
	pem, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("tls.ca_file: %w", err)
	}
	m.ca = x509.NewCertPool()
	if !m.ca.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls.ca_file %s holds no PEM certificate", cfg.CAFile)
	}
	m.cert, err = tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file/tls.key_file: %w", err)
	}
	if m.minVersion, err = ParseMinVersion(cfg.MinVersion); err != nil {
		return nil, err
	}
	if m.suites, err = ParseCipherSuites(cfg.CipherSuites); err != nil {
		return nil, err
	}
	return m, nil
}

var versions = map[string]uint16{"tls10": tls.VersionTLS10, "tls11": tls.VersionTLS11, "tls12": tls.VersionTLS12, "tls13": tls.VersionTLS13}

// ParseMinVersion reads tls_min_version ("" is tls12, Nomad's default).
func ParseMinVersion(v string) (uint16, error) {
	if v == "" {
		return tls.VersionTLS12, nil
	}
	if n, ok := versions[v]; ok {
		return n, nil
	}
	return 0, fmt.Errorf("tls.tls_min_version %q is not one of tls10, tls11, tls12, tls13", v)
}

// ParseCipherSuites reads tls_cipher_suites: comma-separated suite names.
func ParseCipherSuites(v string) ([]uint16, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	byName := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[s.Name] = s.ID
	}
	var out []uint16
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		id, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("tls.tls_cipher_suites: unknown cipher suite %q", name)
		}
		out = append(out, id)
	}
	return out, nil
}

func (m *material) base() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{m.cert},
		MinVersion:   m.minVersion,
		CipherSuites: m.suites,
	}
}

// serving wraps a server-side config built afresh for every handshake.
func (s *Store) serving(build func(*material) *tls.Config) *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return build(s.material()), nil
	}}
}

// IncomingRPC is the server side of the RPC port: every peer presents a
// certificate signed by the CA (names are checked per protocol by
// VerifyIncoming).
func (s *Store) IncomingRPC() *tls.Config {
	return s.serving(func(m *material) *tls.Config {
		c := m.base()
		c.ClientCAs = m.ca
		c.ClientAuth = tls.RequireAndVerifyClientCert
		return c
	})
}

// HTTPS is the HTTPS API's config: a client certificate signed by the CA is
// required with verify_https_client.
func (s *Store) HTTPS() *tls.Config {
	return s.serving(func(m *material) *tls.Config {
		c := m.base()
		c.NextProtos = []string{"h2", "http/1.1"}
		if m.cfg.VerifyHTTPSClient {
			c.ClientCAs = m.ca
			c.ClientAuth = tls.RequireAndVerifyClientCert
		}
		return c
	})
}

// OutgoingRPC is the dialing side of the RPC port, with the material
// current now: this agent's certificate, the server's chain checked
// against the CA and, with verify_server_hostname, its name against
// server.<region>.nomad of this agent's region.
func (s *Store) OutgoingRPC() *tls.Config { return s.OutgoingRPCRegion("") }

// OutgoingRPCRegion is OutgoingRPC for a connection to a server of region
// ("" is this agent's own): with verify_server_hostname the server must
// name server.<region>.nomad, as Nomad checks when a request is forwarded
// to another region.
func (s *Store) OutgoingRPCRegion(region string) *tls.Config {
	m := s.material()
	if region == "" {
		region = m.cfg.Region
	}
	c := m.base()
	c.ServerName = ServerName(region)
	// The chain is verified below, and the name only when asked for,
	// as Nomad does without verify_server_hostname.
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server presented no certificate")
		}
		inter := x509.NewCertPool()
		for _, ic := range cs.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		leaf := cs.PeerCertificates[0]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: m.ca, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("tls: server certificate: %w", err)
		}
		if m.cfg.VerifyServerHostname {
			return CheckPeer(leaf, region, false)
		}
		return nil
	}
	return c
}

// VerifyIncoming checks an RPC peer's certificate names with
// verify_server_hostname: Raft (serverOnly) only from this region's
// servers; everything else from this region's client agents or from
// servers of any region (another region's servers forward requests for
// this one, as Nomad's federation does). Without it any certificate
// signed by the CA is accepted.
func (s *Store) VerifyIncoming(cs tls.ConnectionState, serverOnly bool) error {
	m := s.material()
	if !m.cfg.VerifyServerHostname {
		return nil
	}
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no client certificate presented")
	}
	leaf := cs.PeerCertificates[0]
	if serverOnly {
		return CheckPeer(leaf, m.cfg.Region, false)
	}
	if _, ok := ServerRegion(leaf); ok {
		return nil
	}
	if err := CheckPeer(leaf, m.cfg.Region, true); err != nil {
		return fmt.Errorf("%w, or server.<region>.nomad of another region", err)
	}
	return nil
}
