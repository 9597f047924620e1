package cli

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"

	"github.com/drover-project/drover/internal/tlsutil"
)

// TLSCACreateCommand is `tls ca create`: a CA for the agents' certificates.
type TLSCACreateCommand struct{ Meta }

func (c *TLSCACreateCommand) Synopsis() string { return "Create a certificate authority for Drover" }
func (c *TLSCACreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: ` + BinaryName + ` tls ca create [options]

  Creates a certificate authority (ECDSA P-256) in the current directory:
  <domain>-agent-ca.pem and <domain>-agent-ca-key.pem. Sign the agents'
  certificates with it (tls cert create) and give the .pem to every agent
  (tls.ca_file) and CLI user (NOMAD_CACERT).

Options:

  -days=<int>            Days the CA is valid. Default 1825.
  -domain=<string>       Domain of the certificates. Default "nomad".
  -common-name=<string>  Common name of the CA. Default "Nomad Agent CA <serial>".
  -name-constraint       Limit the CA to the domain, localhost and
                         -additional-domain (repeatable).
`)
}

func (c *TLSCACreateCommand) Run(args []string) int {
	fs := flag.NewFlagSet("tls ca create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	days := fs.Int("days", 1825, "")
	domain := fs.String("domain", tlsutil.DefaultDomain, "")
	cn := fs.String("common-name", "", "")
	constraint := fs.Bool("name-constraint", false, "")
	var extra stringList
	fs.Var(&extra, "additional-domain", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		if err != nil {
			c.Ui.Error(err.Error())
			c.Ui.Error(commandErrorText(c))
			return 1
		}
		c.Ui.Error("This command takes no arguments; see -help")
		return 1
	}
	if *days <= 0 {
		c.Ui.Error("-days must be a positive number of days")
		return 1
	}
	certFile, keyFile := *domain+"-agent-ca.pem", *domain+"-agent-ca-key.pem"
	if err := notExisting(certFile, keyFile); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	cert, key, err := tlsutil.GenerateCA(tlsutil.CAOptions{Domain: *domain, CommonName: *cn, Days: *days,
		NameConstraint: *constraint, AdditionalDomains: extra})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the CA: %s", err))
		return 1
	}
	if err := writeNew(certFile, cert, 0o644); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if err := writeNew(keyFile, key, 0o600); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	c.Ui.Output("==> CA certificate saved to: " + certFile)
	c.Ui.Output("==> CA certificate key saved to: " + keyFile)
	return 0
}

// TLSCertCreateCommand is `tls cert create`: a server, client or CLI
// certificate signed by the CA.
type TLSCertCreateCommand struct{ Meta }

func (c *TLSCertCreateCommand) Synopsis() string {
	return "Create a server, client or CLI certificate signed by the CA"
}
func (c *TLSCertCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: ` + BinaryName + ` tls cert create -server|-client|-cli [options]

  Creates a certificate and its ECDSA P-256 key in the current directory,
  signed by the CA made by tls ca create:

    -server: <region>-server-<domain>.pem, names server.<region>.<domain>,
             localhost and 127.0.0.1
    -client: <region>-client-<domain>.pem, names client.<region>.<domain>,
             localhost and 127.0.0.1
    -cli:    <region>-cli-<domain>.pem, names cli.<region>.<domain> and
             localhost

  and the key as <name>-key.pem. With verify_server_hostname, agents check
  that servers present server.<region>.<domain>, and servers that peers
  present a server or client name of their region.

Options:

  -ca=<path>                    CA certificate. Default <domain>-agent-ca.pem.
  -key=<path>                   CA key. Default <domain>-agent-ca-key.pem.
  -days=<int>                   Days the certificate is valid. Default 365.
  -domain=<string>              Domain. Default "nomad".
  -region=<string>              Region. Default "global".
  -additional-dnsname=<name>    Another DNS name (repeatable).
  -additional-ipaddress=<ip>    Another IP address (repeatable).
`)
}

func (c *TLSCertCreateCommand) Run(args []string) int {
	fs := flag.NewFlagSet("tls cert create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := fs.Bool("server", false, "")
	client := fs.Bool("client", false, "")
	cli := fs.Bool("cli", false, "")
	caFile := fs.String("ca", "", "")
	keyFile := fs.String("key", "", "")
	days := fs.Int("days", 365, "")
	domain := fs.String("domain", tlsutil.DefaultDomain, "")
	region := fs.String("region", "global", "")
	var dnsNames, ips stringList
	fs.Var(&dnsNames, "additional-dnsname", "")
	fs.Var(&ips, "additional-ipaddress", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		if err != nil {
			c.Ui.Error(err.Error())
			c.Ui.Error(commandErrorText(c))
			return 1
		}
		c.Ui.Error("Usage: tls cert create -server|-client|-cli [options]; see -help")
		return 1
	}
	kinds := 0
	for _, b := range []bool{*server, *client, *cli} {
		if b {
			kinds++
		}
	}
	if kinds != 1 {
		c.Ui.Error("Exactly one of -server, -client or -cli must be given")
		return 1
	}
	if *days <= 0 {
		c.Ui.Error("-days must be a positive number of days")
		return 1
	}
	if *region == "" || *domain == "" {
		c.Ui.Error("-region and -domain must not be empty")
		return 1
	}
	if *caFile == "" {
		*caFile = *domain + "-agent-ca.pem"
	}
	if *keyFile == "" {
		*keyFile = *domain + "-agent-ca-key.pem"
	}
	kind := "server"
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	switch {
	case *client:
		kind = "client"
	case *cli:
		kind = "cli"
	}
	name := kind + "." + *region + "." + *domain
	names := []string{name, "localhost"}
	var addrs []net.IP
	if kind != "cli" {
		addrs = append(addrs, net.ParseIP("127.0.0.1"))
	}
	names = append(names, dnsNames...)
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			c.Ui.Error(fmt.Sprintf("-additional-ipaddress %q is not an IP address", s))
			return 1
		}
		addrs = append(addrs, ip)
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the CA certificate (-ca): %s", err))
		return 1
	}
	caKey, err := os.ReadFile(*keyFile)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the CA key (-key): %s", err))
		return 1
	}
	base := *region + "-" + kind + "-" + *domain
	certFile, certKeyFile := base+".pem", base+"-key.pem"
	if err := notExisting(certFile, certKeyFile); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	cert, key, err := tlsutil.GenerateCert(caPEM, caKey, tlsutil.CertOptions{CommonName: name, DNSNames: names,
		IPAddresses: addrs, Days: *days, ExtKeyUsage: usage})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the certificate: %s", err))
		return 1
	}
	if err := writeNew(certFile, cert, 0o644); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if err := writeNew(certKeyFile, key, 0o600); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	c.Ui.Output("==> Using CA file " + *caFile + " and CA key " + *keyFile)
	c.Ui.Output("==> " + capitalize(kind) + " Certificate saved to " + certFile)
	c.Ui.Output("==> " + capitalize(kind) + " Certificate key saved to " + certKeyFile)
	return 0
}

func capitalize(s string) string {
	if s == "cli" {
		return "CLI"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// notExisting refuses to overwrite certificates or keys.
func notExisting(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("File %q already exists: remove it or work in another directory", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("Error writing %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("Error writing %s: %w", path, err)
	}
	return f.Close()
}
