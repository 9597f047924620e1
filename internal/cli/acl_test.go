package cli

import (
	"testing"
)

// The CLI takes its token and TLS settings from Nomad's environment
// variables; the flags win over them.
func TestClientConfigFromEnvironment(t *testing.T) {
	t.Setenv("NOMAD_TOKEN", "env-token")
	t.Setenv("NOMAD_CACERT", "/env/ca.pem")
	t.Setenv("NOMAD_CLIENT_CERT", "/env/cli.pem")
	t.Setenv("NOMAD_CLIENT_KEY", "/env/cli-key.pem")
	t.Setenv("NOMAD_TLS_SERVER_NAME", "server.global.nomad")
	t.Setenv("NOMAD_SKIP_VERIFY", "true")
	m := &Meta{}
	cfg, err := m.clientConfig()
	if err != nil {
		t.Fatal(err)
	}
	tls := cfg.TLSConfig
	if cfg.SecretID != "env-token" || tls == nil || tls.CACert != "/env/ca.pem" || tls.ClientCert != "/env/cli.pem" ||
		tls.ClientKey != "/env/cli-key.pem" || tls.TLSServerName != "server.global.nomad" || !tls.Insecure {
		t.Fatalf("environment not honoured: token %q tls %+v", cfg.SecretID, tls)
	}

	fs := m.FlagSet("x")
	if err := fs.Parse([]string{"-token", "flag-token", "-ca-cert", "/flag/ca.pem", "-tls-server-name", "other.name"}); err != nil {
		t.Fatal(err)
	}
	cfg, err = m.clientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SecretID != "flag-token" || cfg.TLSConfig.CACert != "/flag/ca.pem" || cfg.TLSConfig.TLSServerName != "other.name" ||
		cfg.TLSConfig.ClientCert != "/env/cli.pem" {
		t.Fatalf("flags do not win: token %q tls %+v", cfg.SecretID, cfg.TLSConfig)
	}
}

// Every ACL verb is in the command table and completes its flags.
func TestACLCommandsRegistered(t *testing.T) {
	cmds := Commands(nil, nil)
	for _, name := range []string{"acl", "acl bootstrap", "acl policy apply", "acl policy info", "acl policy list", "acl policy delete",
		"acl token create", "acl token update", "acl token info", "acl token list", "acl token delete", "acl token self",
		"acl role create", "acl role list", "acl auth-method create", "acl binding-rule create", "login"} {
		if _, ok := cmds[name]; !ok {
			t.Errorf("%s is not a command", name)
		}
	}
	if _, ok := commandFlags["acl token create"]["-policy"]; !ok {
		t.Error("acl token create does not complete -policy")
	}
	for _, f := range []string{"-login-token", "-method", "-type", "-oidc-callback-addr", "-oidc-timeout"} {
		if _, ok := commandFlags["login"][f]; !ok {
			t.Errorf("login does not complete %s", f)
		}
	}
}
