package config

import (
	"github.com/drover-project/drover/internal/tlsutil"
)

// TLSOn reports whether the agent serves HTTPS or RPC over TLS.
func (c *Config) TLSOn() bool {
	return c.TLS != nil && (c.TLS.EnableHTTP || c.TLS.EnableRPC)
}

// TLSMaterial is the tls block as internal/tlsutil reads it.
func (c *Config) TLSMaterial() tlsutil.Config {
	t := c.TLS
	if t == nil {
		t = &TLSConfig{}
	}
	return tlsutil.Config{
		CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		VerifyServerHostname: t.VerifyServerHostname, VerifyHTTPSClient: t.VerifyHTTPSClient,
		MinVersion: t.TLSMinVersion, CipherSuites: t.TLSCipherSuites, Region: c.Region,
	}
}

// validateTLS checks the tls block: versions and suites always, the files
// (readable, a CA, a matching certificate and key) when TLS is on.
func (c *Config) validateTLS() []error {
	t := c.TLS
	if t == nil {
		return nil
	}
	var errs []error
	if _, err := tlsutil.ParseMinVersion(t.TLSMinVersion); err != nil {
		errs = append(errs, &Error{Key: "tls.tls_min_version", Msg: err.Error()})
	}
	if _, err := tlsutil.ParseCipherSuites(t.TLSCipherSuites); err != nil {
		errs = append(errs, &Error{Key: "tls.tls_cipher_suites", Msg: err.Error()})
	}
	if len(errs) == 0 && c.TLSOn() {
		if err := tlsutil.Check(c.TLSMaterial()); err != nil {
			errs = append(errs, &Error{Key: "tls", Msg: err.Error()})
		}
	}
	return errs
}
