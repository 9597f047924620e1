package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMerge(t *testing.T) {
	tru, fal := true, false
	a := &Config{
		LogLevel: "INFO", Region: "r1",
		Server:  &ServerConfig{Enabled: true, RetryJoin: []string{"x"}, HeartbeatGrace: 10 * time.Second, EnabledSchedulers: []string{"service"}},
		Client:  &ClientConfig{Enabled: true, Meta: map[string]string{"a": "1", "b": "1"}, NoHostUUID: &tru},
		Plugins: map[string]*PluginConfig{"docker": {Config: map[string]any{"a": 1, "b": 2}}},
		Consuls: []*ConsulConfig{{Address: "one"}},
	}
	b := &Config{
		LogLevel: "DEBUG",
		Server:   &ServerConfig{Enabled: false, RetryJoin: []string{"y", "x"}, EnabledSchedulers: []string{"batch"}},
		Client:   &ClientConfig{Enabled: false, Meta: map[string]string{"b": "2"}, NoHostUUID: &fal},
		Plugins:  map[string]*PluginConfig{"docker": {Config: map[string]any{"c": 3}}},
		Consuls:  []*ConsulConfig{{Token: "tok"}, {Name: "other"}},
		ACL:      &ACLConfig{Enabled: false},
	}
	got := Merge(a, b)

	tests := []struct {
		name      string
		got, want any
	}{
		{"string overridden", got.LogLevel, "DEBUG"},
		{"empty string keeps a", got.Region, "r1"},
		{"server.enabled OR-ed", got.Server.Enabled, true},
		{"client.enabled OR-ed", got.Client.Enabled, true},
		{"zero duration keeps a", got.Server.HeartbeatGrace, 10 * time.Second},
		{"join list appended, deduplicated", got.Server.RetryJoin, []string{"x", "y"}},
		{"other lists replaced", got.Server.EnabledSchedulers, []string{"batch"}},
		{"maps merged", got.Client.Meta, map[string]string{"a": "1", "b": "2"}},
		{"*bool false wins", *got.Client.NoHostUUID, false},
		{"plugin block replaced whole", got.Plugins["docker"].Config, map[string]any{"c": 3}},
		{"consul merged by name", len(got.Consuls), 2},
		{"consul default keeps address", got.Consuls[0].Address, "one"},
		{"consul default gets token", got.Consuls[0].Token, "tok"},
		{"nil block in a taken from b", got.ACL != nil, true},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}

	// Inputs are untouched and not aliased.
	if a.LogLevel != "INFO" || len(a.Consuls) != 1 || a.Consuls[0].Token != "" || a.Client.Meta["b"] != "1" {
		t.Fatalf("Merge modified a: %+v", a)
	}
	got.Client.Meta["z"] = "z"
	got.Plugins["docker"].Config["c"] = 99
	if _, ok := a.Client.Meta["z"]; ok || b.Plugins["docker"].Config["c"] != 3 {
		t.Fatal("Merge result shares maps with its inputs")
	}
	if Merge(nil, nil) != nil || Merge(a, nil).LogLevel != "INFO" || Merge(nil, b).LogLevel != "DEBUG" {
		t.Fatal("nil handling")
	}
}

func TestDefaultsAndDev(t *testing.T) {
	d := DefaultConfig()
	if d.Region != "global" || d.Datacenter != "dc1" || d.BindAddr != "0.0.0.0" || d.LogLevel != "INFO" ||
		*d.Ports != (Ports{4646, 4647, 4648}) {
		t.Errorf("top-level defaults wrong: %+v", d)
	}
	s := d.Server
	if s.MinHeartbeatTTL != 10*time.Second || s.HeartbeatGrace != 10*time.Second ||
		s.MaxHeartbeatsPerSecond != 5000 || s.FailoverHeartbeatTTL != 300*time.Second {
		t.Errorf("heartbeat defaults wrong: %+v", s)
	}
	c := d.Client
	if c.MinDynamicPort != 20000 || c.MaxDynamicPort != 32000 || c.MaxKillTimeout != 30*time.Second ||
		c.GCInterval != time.Minute || c.GCDiskUsageThreshold != 80 || c.GCInodeUsageThreshold != 70 ||
		c.GCMaxAllocs != 50 || c.GCParallelDestroys != 2 {
		t.Errorf("client defaults wrong: %+v", c)
	}
	if RawExecEnabled(d) {
		t.Error("raw_exec must be off by default")
	}

	dev := DevConfig()
	if !dev.DevMode || !dev.Server.Enabled || !dev.Client.Enabled || dev.Server.BootstrapExpect != 1 ||
		dev.BindAddr != "127.0.0.1" || dev.Client.NetworkInterface != "lo" || dev.LogLevel != "DEBUG" || !dev.EnableDebug {
		t.Errorf("dev config wrong: %+v", dev)
	}
	if !RawExecEnabled(dev) {
		t.Error("-dev must enable raw_exec")
	}
	if err := dev.Validate(); err != nil {
		t.Errorf("DevConfig must validate: %v", err)
	}
	// Default alone is neither server nor client: refused with advice.
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "-dev") {
		t.Errorf("DefaultConfig().Validate() = %v", err)
	}
}

func TestRawExecEnabled(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{`plugin "raw_exec" { config { enabled = true } }`, true},
		{`plugin "raw_exec" { config { enabled = false } }`, false},
		{`client { options { "driver.raw_exec.enable" = "1" } }`, true},
		{`client { options { "driver.raw_exec.enable" = true } }`, true},
		{`client { options { "driver.raw_exec.enable" = "false" } }`, false},
		{`plugin "docker" { config { enabled = true } }`, false},
	}
	for _, tt := range tests {
		c, err := Parse("t.hcl", []byte(tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if got := RawExecEnabled(c); got != tt.want {
			t.Errorf("%s: RawExecEnabled = %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestValidate_FeatureGates(t *testing.T) {
	base := "data_dir = \"/d\"\nserver { enabled = true }\n"
	tests := []struct {
		name, src string
		wantErr   string // "" = accepted
	}{
		{"acl enabled", "acl { enabled = true }", ""},
		{"acl off with ttls", "acl {\n enabled = false\n token_ttl = \"1m\"\n}", ""},
		{"tls http without files", "tls { http = true }", "tls.ca_file, tls.cert_file, tls.key_file must be set"},
		{"tls rpc missing ca", "tls {\n rpc = true\n ca_file = \"/nonexistent/ca.pem\"\n cert_file = \"/c\"\n key_file = \"/k\"\n}", "tls.ca_file: open /nonexistent/ca.pem"},
		{"tls bad min version", "tls { tls_min_version = \"tls9\" }", "tls.tls_min_version \"tls9\" is not one of"},
		{"tls bad suite", "tls { tls_cipher_suites = \"TLS_NOPE\" }", "unknown cipher suite \"TLS_NOPE\""},
		{"tls files only", "tls { ca_file = \"/ca.pem\" }", ""},
		{"vault enabled", "vault {\n enabled = true\n address = \"https://v\"\n}", "vault.enabled = true is not supported yet"},
		{"vault off", "vault {\n enabled = false\n address = \"https://v\"\n}", ""},
		{"consul with auto join", "consul {\n address = \"1.2.3.4:8500\"\n server_auto_join = true\n client_auto_join = true\n}", ""},
		{"kms keyring", "keyring \"awskms\" {\n active = true\n region = \"us-east-1\"\n}", "external KMS"},
		{"aead keyring", "keyring \"aead\" { active = true }", ""},
		{"audit on", "audit { enabled = true }", ""},
		{"sentinel", "sentinel {\n import \"x\" { path = \"/p\" }\n}", ""},
		{"license path", "server { license_path = \"/l\" }", ""},
		{"encrypt ok", "server { encrypt = \"pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s=\" }", ""},
		{"encrypt bad", "server { encrypt = \"nope\" }", "server.encrypt must be a base64"},
		{"ui links", "ui {\n vault { ui_url = \"https://v\" }\n}", ""},
		{"acl replication ok", "region = \"west\"\nserver { authoritative_region = \"east\" }\nacl {\n enabled = true\n replication_token = \"8a2b4f0e-6d1c-4f3e-9b7a-1c2d3e4f5a6b\"\n}", ""},
		{"acl authoritative itself", "region = \"east\"\nserver { authoritative_region = \"east\" }\nacl { enabled = true }", ""},
		{"acl replication no token", "region = \"west\"\nserver { authoritative_region = \"east\" }\nacl { enabled = true }", `acl.replication_token must be set: this server's region "west" is not the authoritative region "east"`},
		{"acl replication bad token", "acl { replication_token = \"hunter2\" }", "acl.replication_token must be the secret ID (a UUID)"},
		{"strict intro", "server {\n client_introduction { enforcement = \"strict\" }\n}", "client_introduction.enforcement"},
		{"bridge ipv6", "client { bridge_network_subnet_ipv6 = \"fd00::/64\" }", "client.bridge_network_subnet_ipv6 is not supported yet"},
		{"bridge hairpin", "client { bridge_network_hairpin_mode = true }", "client.bridge_network_hairpin_mode = true is not supported yet"},
		{"bridge name and subnet", "client {\n bridge_network_name = \"br0\"\n bridge_network_subnet = \"10.9.0.0/24\"\n}", ""},
		{"bad ports", "client {\n enabled = true\n min_dynamic_port = 40000\n max_dynamic_port = 30000\n}", "dynamic port range"},
		{"bad log level", "log_level = \"LOUD\"", "log_level \"LOUD\""},
		{"relative data_dir", "data_dir = \"rel\"", "absolute"},
		{"telemetry filters", "telemetry {\n prefix_filter = [\"+nomad.raft\", \"-nomad.client\"]\n collection_interval = \"5s\"\n}", ""},
		{"telemetry datadog", "telemetry { datadog_address = \"localhost:8125\" }", "telemetry.statsd_address at the Datadog agent"},
		{"telemetry statsd", "telemetry { statsd_address = \"localhost:8125\" }", ""},
		{"telemetry bad filter", "telemetry { prefix_filter = [\"nomad.raft\"] }", `telemetry.prefix_filter entry "nomad.raft"`},
		{"telemetry short retention", "telemetry {\n in_memory_collection_interval = \"10s\"\n in_memory_retention_period = \"5s\"\n}", "in_memory_retention_period (5s) must be at least"},
		{"heap floor off", "server { gc_heap_floor_mb = 0 }", ""},
		{"heap floor negative", "server { gc_heap_floor_mb = -1 }", "server.gc_heap_floor_mb must not be negative"},
		{"plugin raw_exec", "plugin \"raw_exec\" {\n config { enabled = true }\n}", ""},
		{"plugin fake_device", "plugin \"fake_device\" {\n config { count = 1 }\n}", ""},
		{"plugin lxc", "plugin \"lxc\" {}", `plugin "lxc" is not a task driver or device plugin built into Drover (built in: docker, exec, fake_device, java, mock_driver, nomad-driver-podman, podman, qemu, raw_exec)`},
		{"reserved cores", "client {\n reserved { cores = \"0-1\" }\n reservable_cores = \"0-3\"\n}", ""},
		{"reserved cores bad", "client {\n reserved { cores = \"two\" }\n}", `client.reserved.cores: "two" is not a core ID or range`},
		{"reservable cores bad", "client {\n reservable_cores = \"3-1\"\n}", `client.reservable_cores: "3-1" is not a core ID or range`},
		{"chroot_env ok", "client {\n chroot_env {\n \"/bin\" = \"/bin\"\n \"/etc/ssl\" = \"/etc/ssl\"\n }\n}", ""},
		{"chroot_env relative host", "client {\n chroot_env { \"relative/x\" = \"/etc\" }\n}", `client.chroot_env: host path "relative/x" must be absolute`},
		{"chroot_env relative task", "client {\n chroot_env { \"/etc\" = \"etc\" }\n}", `client.chroot_env: "/etc" is mounted at "etc" in the task, which must be an absolute path`},
		{"chroot_env empty", "client {\n chroot_env { \"\" = \"\" }\n}", `client.chroot_env: host path "" must be absolute`},
		{"plugin docker", "plugin \"docker\" {\n config {\n allow_privileged = true\n volumes { enabled = true }\n }\n}", ""},
		{"docker option typo", "plugin \"docker\" {\n config { endpiont = \"unix:///x\" }\n}", `plugin "docker" config: unknown key "endpiont"`},
		{"raw_exec option typo", "plugin \"raw_exec\" {\n config { enabeld = true }\n}", `plugin "raw_exec" config: unknown key "enabeld" (raw_exec's agent options: enabled)`},
		{"raw_exec denied uids", "plugin \"raw_exec\" {\n config {\n enabled = true\n denied_host_uids = \"0\"\n }\n}", `plugin "raw_exec" config: denied_host_uids is not supported yet`},
		{"fake_device bad count", "plugin \"fake_device\" {\n config { count = 0 }\n}", `plugin "fake_device" config: count must be a positive integer, got 0`},
		{"plugin from plugin_dir", "plugin \"nomad-driver-lxc\" {\n config { volumes { enabled = true } }\n}", `plugin "nomad-driver-lxc" is not a task driver`},
		{"plugin podman", "plugin \"nomad-driver-podman\" {\n config {\n socket_path = \"unix:///run/podman/podman.sock\"\n volumes { enabled = false }\n gc { container = true }\n }\n}", ""},
		{"podman option typo", "plugin \"nomad-driver-podman\" {\n config { sokcet_path = \"x\" }\n}", `plugin "nomad-driver-podman" config: unknown key "sokcet_path"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("t.hcl", []byte(base+tt.src))
			if err != nil {
				t.Fatal(err)
			}
			err = Merge(DefaultConfig(), f).Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("should be accepted: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Key == "" {
				t.Fatalf("not a keyed *Error: %#v", err)
			}
		})
	}
}

func TestParsePortRanges(t *testing.T) {
	got, err := ParsePortRanges("22, 80,8000-8002")
	if err != nil || !reflect.DeepEqual(got, []int{22, 80, 8000, 8001, 8002}) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"x", "10-5", "0", "70000", "1-"} {
		if _, err := ParsePortRanges(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
