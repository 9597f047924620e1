package config

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseAgentArgs_Precedence(t *testing.T) {
	dir := t.TempDir()
	f1 := filepath.Join(dir, "a.hcl")
	f2 := filepath.Join(dir, "b") // no extension, JSON
	os.WriteFile(f1, []byte("data_dir = \"/a\"\nlog_level = \"WARN\"\nregion = \"r-file\"\nclient {\n enabled = false\n node_class = \"c1\"\n}\n"), 0o600)
	os.WriteFile(f2, []byte(`{"log_level": "ERROR", "datacenter": "dc-file", "ports": {"http": 9646}}`), 0o600)

	cfg, paths, dev, err := ParseAgentArgs([]string{
		"-dev", "-config", f1, "-config=" + f2, "-region", "r-flag", "-node-class", "c2",
		"-servers", "s1:4647, s2:4647", "-meta", "a=1", "-meta", "b=x=y", "-retry-join", "j1", "-retry-join", "j2",
		"-bootstrap-expect", "1", "-network-speed", "100", "-consul-address", "127.0.0.1:8500",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !dev || !cfg.DevMode || !reflect.DeepEqual(paths, []string{f1, f2}) {
		t.Fatalf("dev=%v paths=%v", dev, paths)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"dev default kept", cfg.BindAddr, "127.0.0.1"},
		{"later file beats earlier", cfg.LogLevel, "ERROR"},
		{"file beats default", cfg.Datacenter, "dc-file"},
		{"file beats default (port)", cfg.Ports.HTTP, 9646},
		{"flag beats file", cfg.Region, "r-flag"},
		{"flag beats file (client)", cfg.Client.NodeClass, "c2"},
		{"file client.enabled=false keeps -dev client", cfg.Client.Enabled, true},
		{"servers split", cfg.Client.Servers, []string{"s1:4647", "s2:4647"}},
		{"meta", cfg.Client.Meta, map[string]string{"a": "1", "b": "x=y"}},
		{"retry-join repeatable", cfg.Server.RetryJoin, []string{"j1", "j2"}},
		{"network speed", cfg.Client.NetworkSpeed, 100},
		{"data dir from file", cfg.DataDir, "/a"},
		{"consul accepted", cfg.Consuls[0].Address, "127.0.0.1:8500"},
		{"files recorded", cfg.Files, []string{f1, f2}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseAgentArgs_NonDev(t *testing.T) {
	cfg, _, dev, err := ParseAgentArgs([]string{"-server", "-data-dir", "/var/lib/d", "-bind", "10.1.2.3", "-log-json", "-acl-enabled"})
	if err != nil {
		t.Fatal(err)
	}
	if dev || cfg.DevMode || !cfg.Server.Enabled || cfg.Client.Enabled || cfg.BindAddr != "10.1.2.3" || !cfg.LogJSON ||
		cfg.Region != "global" || cfg.Ports.RPC != 4647 {
		t.Fatalf("got %+v", cfg)
	}
	// -acl-enabled turns ACLs on.
	if err := cfg.Validate(); err != nil || !cfg.ACL.Enabled {
		t.Fatalf("Validate = %v, ACL.Enabled = %v", err, cfg.ACL.Enabled)
	}
}

func TestParseAgentArgs_Errors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-no-such-flag"}, "no-such-flag"},
		{[]string{"-dev-connect"}, "-dev-connect is not supported"},
		{[]string{"-dev-vault"}, "-dev-vault is not supported"},
		{[]string{"-meta", "novalue"}, `-meta "novalue" must be key=value`},
		{[]string{"-config", "testdata/typo.hcl"}, `unknown key "server.bootstrap_exepct"`},
		{[]string{"-config", "testdata/nope.hcl"}, "nope.hcl"},
		{[]string{"-bootstrap-expect", "x"}, "bootstrap-expect"},
		{[]string{"-retry-interval", "soon"}, "-retry-interval"},
		{[]string{"-dev", "stray"}, `unexpected argument "stray"`},
	}
	for _, tt := range tests {
		_, _, _, err := ParseAgentArgs(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want it to mention %q", tt.args, err, tt.want)
		}
	}
	_, _, _, err := ParseAgentArgs([]string{"-dev-connect"})
	var ue *UnsupportedFlagError
	if !errors.As(err, &ue) || ue.Flag != "dev-connect" {
		t.Errorf("want *UnsupportedFlagError, got %#v", err)
	}

	// -vault-* accepted while they enable nothing; -vault-enabled refused by Validate.
	cfg, _, _, err := ParseAgentArgs([]string{"-dev", "-vault-address", "https://v:8200"})
	if err != nil || cfg.Validate() != nil || cfg.Vaults[0].Address != "https://v:8200" {
		t.Fatalf("vault address alone: %v / %v", err, cfg.Validate())
	}
	cfg, _, _, err = ParseAgentArgs([]string{"-dev", "-vault-enabled"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "vault.enabled") {
		t.Fatalf("-vault-enabled: Validate = %v", err)
	}
}

func TestNormalizeAddrs(t *testing.T) {
	old := interfaceAddrs
	defer func() { interfaceAddrs = old }()
	interfaceAddrs = func() ([]net.Addr, error) {
		mk := func(s string) net.Addr { ip, n, _ := net.ParseCIDR(s); n.IP = ip; return n }
		return []net.Addr{mk("127.0.0.1/8"), mk("203.0.113.9/24"), mk("10.9.8.7/16")}, nil
	}
	tests := []struct {
		name                     string
		mod                      func(c *Config)
		http, rpc, serf          string // listen
		advHTTP, advRPC, advSerf string
	}{
		{"wildcard picks private IP", func(c *Config) {},
			"0.0.0.0:4646", "0.0.0.0:4647", "0.0.0.0:4648", "10.9.8.7:4646", "10.9.8.7:4647", "10.9.8.7:4648"},
		{"dev wildcard advertises loopback", func(c *Config) { c.DevMode = true },
			"0.0.0.0:4646", "0.0.0.0:4647", "0.0.0.0:4648", "127.0.0.1:4646", "127.0.0.1:4647", "127.0.0.1:4648"},
		{"specific bind is advertised", func(c *Config) { c.BindAddr = "127.0.0.1"; c.Ports.HTTP = 31001 },
			"127.0.0.1:31001", "127.0.0.1:4647", "127.0.0.1:4648", "127.0.0.1:31001", "127.0.0.1:4647", "127.0.0.1:4648"},
		{"per-protocol address and advertise with port", func(c *Config) {
			c.Addresses.HTTP = "127.0.0.2"
			c.Advertise.RPC = "192.0.2.1"
			c.Advertise.Serf = "192.0.2.1:5648"
		}, "127.0.0.2:4646", "0.0.0.0:4647", "0.0.0.0:4648", "127.0.0.2:4646", "192.0.2.1:4647", "192.0.2.1:5648"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(c)
			if err := c.NormalizeAddrs(); err != nil {
				t.Fatal(err)
			}
			got := []string{c.HTTPAddr(), c.RPCAddr(), c.SerfAddr(), c.AdvertiseHTTPAddr(), c.AdvertiseRPCAddr(), c.AdvertiseSerfAddr()}
			want := []string{tt.http, tt.rpc, tt.serf, tt.advHTTP, tt.advRPC, tt.advSerf}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}

	c := DefaultConfig()
	c.BindAddr = "{{ GetPrivateIP }}"
	if err := c.NormalizeAddrs(); err == nil || !strings.Contains(err.Error(), "bind_addr") {
		t.Fatalf("template bind: %v", err)
	}
	c = DefaultConfig()
	c.Advertise.HTTP = "0.0.0.0"
	if err := c.NormalizeAddrs(); err == nil || !strings.Contains(err.Error(), "advertise.http") {
		t.Fatalf("wildcard advertise: %v", err)
	}
	interfaceAddrs = func() ([]net.Addr, error) { return nil, nil }
	c = DefaultConfig()
	if err := c.NormalizeAddrs(); err == nil || !strings.Contains(err.Error(), "advertise") {
		t.Fatalf("no address: %v", err)
	}
}

// A value Validate refuses is reported where it was set: the file and line,
// or the flag that overrode the file.
func TestValidateNamesWhereAValueWasSet(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.hcl")
	src := "data_dir = \"/srv/drover\"\nserver { enabled = true }\n\nlog_level = \"LOUD\"\ntelemetry {\n  prefix_filter = [\"nomad.raft\"]\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, _, err := ParseAgentArgs([]string{"-config", path})
	if err != nil {
		t.Fatal(err)
	}
	msg := cfg.Validate().Error()
	for _, want := range []string{path + ":4: log_level \"LOUD\"", path + ":6: telemetry.prefix_filter"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("error %q does not contain %q", msg, want)
		}
	}

	// A plugin that does not exist is named with the file and the line of
	// its block, in HCL and JSON (which has no lines).
	plugin := filepath.Join(dir, "plugins.hcl")
	if err := os.WriteFile(plugin, []byte("plugin \"raw_exec\" {\n  config { enabled = true }\n}\n\nplugin \"lxc\" {\n  config { allow_privileged = true }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pluginJSON := filepath.Join(dir, "plugins")
	if err := os.WriteFile(pluginJSON, []byte(`{"plugin": {"rkt": {"config": {}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, _, err = ParseAgentArgs([]string{"-config", path, "-config", plugin, "-config", pluginJSON})
	if err != nil {
		t.Fatal(err)
	}
	msg = cfg.Validate().Error()
	for _, want := range []string{plugin + `:5: plugin "lxc" is not a task driver`, pluginJSON + `: plugin "rkt" is not a task driver`} {
		if !strings.Contains(msg, want) {
			t.Fatalf("error %q does not contain %q", msg, want)
		}
	}

	cfg, _, _, err = ParseAgentArgs([]string{"-config", path, "-log-level", "LOUDER"})
	if err != nil {
		t.Fatal(err)
	}
	msg = cfg.Validate().Error()
	if !strings.Contains(msg, "flag -log-level: log_level \"LOUDER\"") || strings.Contains(msg, path+":4") {
		t.Fatalf("flag override not named: %q", msg)
	}
}
