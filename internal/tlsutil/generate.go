package tlsutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// CAOptions describe a new CA (`drover tls ca create`).
type CAOptions struct {
	Domain     string // "nomad"
	CommonName string // "" derives "Nomad Agent CA <serial>"
	Days       int
	// NameConstraint limits the CA to Domain, localhost and
	// AdditionalDomains.
	NameConstraint    bool
	AdditionalDomains []string
	Now               time.Time
}

// GenerateCA makes a self-signed CA with an ECDSA P-256 key; both are PEM.
func GenerateCA(o CAOptions) (certPEM, keyPEM []byte, err error) {
	if o.Days <= 0 {
		return nil, nil, errors.New("days must be positive")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	cn := o.CommonName
	if cn == "" {
		cn = fmt.Sprintf("Nomad Agent CA %d", serial)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Drover"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, o.Days),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          keyID(key.Public()),
	}
	if o.NameConstraint {
		tmpl.PermittedDNSDomainsCritical = true
		tmpl.PermittedDNSDomains = append([]string{o.Domain, "localhost"}, o.AdditionalDomains...)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

// CertOptions describe a certificate signed by a CA (`drover tls cert
// create`).
type CertOptions struct {
	CommonName  string
	DNSNames    []string
	IPAddresses []net.IP
	Days        int
	ExtKeyUsage []x509.ExtKeyUsage
	Now         time.Time
}

// GenerateCert makes a certificate with a new ECDSA P-256 key, signed by
// the CA in caCertPEM/caKeyPEM.
func GenerateCert(caCertPEM, caKeyPEM []byte, o CertOptions) (certPEM, keyPEM []byte, err error) {
	if o.Days <= 0 {
		return nil, nil, errors.New("days must be positive")
	}
	ca, caKey, err := parseCA(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: o.CommonName},
		DNSNames:              o.DNSNames,
		IPAddresses:           o.IPAddresses,
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, o.Days),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           o.ExtKeyUsage,
		BasicConstraintsValid: true,
		SubjectKeyId:          keyID(key.Public()),
		AuthorityKeyId:        ca.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

func parseCA(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, nil, errors.New("the CA file holds no PEM certificate")
	}
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("the CA certificate: %w", err)
	}
	if !ca.IsCA {
		return nil, nil, errors.New("the CA file's certificate is not a CA")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, errors.New("the CA key file holds no PEM key")
	}
	var signer crypto.Signer
	switch kb.Type {
	case "EC PRIVATE KEY":
		signer, err = x509.ParseECPrivateKey(kb.Bytes)
	case "PRIVATE KEY":
		var k any
		if k, err = x509.ParsePKCS8PrivateKey(kb.Bytes); err == nil {
			var ok bool
			if signer, ok = k.(crypto.Signer); !ok {
				err = errors.New("unsupported key type")
			}
		}
	case "RSA PRIVATE KEY":
		signer, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	default:
		err = fmt.Errorf("unsupported PEM block %q", kb.Type)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the CA key: %w", err)
	}
	return ca, signer, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) ([]byte, []byte, error) {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func keyID(pub crypto.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}
