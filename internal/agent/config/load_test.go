package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// checkFull asserts what a user of full.hcl / full.json would rely on.
func checkFull(t *testing.T, c *Config) {
	t.Helper()
	eq := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	eq("region", c.Region, "eu")
	eq("datacenter", c.Datacenter, "dc2")
	eq("name", c.NodeName, "node-a")
	eq("log_json", c.LogJSON, true)
	eq("log_rotate_duration", c.LogRotateDuration, time.Hour)
	eq("disable_update_check", *c.DisableUpdateCheck, true)
	eq("ports", *c.Ports, Ports{HTTP: 5646, RPC: 5647, Serf: 5648})
	eq("advertise.rpc", c.Advertise.RPC, "192.168.1.10:6647")
	eq("server.bootstrap_expect", c.Server.BootstrapExpect, 3)
	eq("server.heartbeat_grace", c.Server.HeartbeatGrace, 30*time.Second)
	eq("server.max_heartbeats_per_second", c.Server.MaxHeartbeatsPerSecond, 25.5)
	eq("server.num_schedulers", *c.Server.NumSchedulers, 4)
	eq("server.gc_heap_floor_mb", *c.Server.GCHeapFloorMB, 256)
	eq("server.enabled_schedulers", c.Server.EnabledSchedulers, []string{"service", "batch"})
	eq("server.server_join.retry_join", c.Server.ServerJoin.RetryJoin, []string{"10.0.0.6", "10.0.0.7"})
	eq("server.server_join.retry_interval", c.Server.ServerJoin.RetryInterval, 15*time.Second)
	eq("scheduler_algorithm", c.Server.DefaultSchedulerConfig.SchedulerAlgorithm, "spread")
	eq("preemption batch", *c.Server.DefaultSchedulerConfig.PreemptionConfig.BatchSchedulerEnabled, true)
	eq("client.servers", c.Client.Servers, []string{"10.0.0.6:4647"})
	eq("client.max_kill_timeout", c.Client.MaxKillTimeout, time.Minute)
	eq("client.detect_foreign_ports", c.Client.DetectForeignPorts, true)
	eq("client.options", c.Client.Options, map[string]string{"driver.raw_exec.enable": "1", "fingerprint.denylist": "env_aws"})
	eq("client.meta", c.Client.Meta, map[string]string{"rack": "r1"})
	eq("client.reserved", *c.Client.Reserved, Resources{CPU: 500, MemoryMB: 512, ReservedPorts: "22,80,8000-8010"})
	eq("client.host_volume", c.Client.HostVolumes, map[string]*HostVolumeConfig{
		"data": {Path: "/srv/data", ReadOnly: true}, "logs": {Path: "/srv/logs"}})
	eq("client.host_network", c.Client.HostNetworks, map[string]*HostNetworkConfig{"public": {CIDR: "203.0.113.0/24"}})
	eq("plugin fake_device", c.Plugins["fake_device"].Config, map[string]any{
		"vendor": "drover", "attributes": map[string]any{"memory": "8 GiB"}})
	eq("raw_exec enabled", RawExecEnabled(c), true)
	if len(c.Consuls) != 1 || c.Consuls[0].Address != "127.0.0.1:8500" || !*c.Consuls[0].ServerAutoJoin {
		t.Errorf("consul = %#v", c.Consuls)
	}
	if len(c.Vaults) != 1 || *c.Vaults[0].Enabled || c.Vaults[0].Address != "https://vault:8200" {
		t.Errorf("vault = %#v", c.Vaults)
	}
	eq("telemetry.collection_interval", c.Telemetry.CollectionInterval, 5*time.Second)
	eq("acl.token_ttl", c.ACL.TokenTTL, time.Minute)
	eq("ui.consul.ui_url", c.UI.Consul.BaseUIURL, "https://consul.example.com/ui")
	eq("audit sink", c.Audit.Sinks["file"].Path, "/var/log/audit.log")
	eq("limits", *c.Limits.HTTPMaxConnsPerClient, 200)
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestLoadFile_HCLAndJSONAgree(t *testing.T) {
	for _, f := range []string{"full.hcl", "full.json"} {
		t.Run(f, func(t *testing.T) {
			c, err := LoadFile(filepath.Join("testdata", f))
			if err != nil {
				t.Fatal(err)
			}
			checkFull(t, c)
		})
	}
	// The JSON twin also loads from a file with no extension.
	src, err := os.ReadFile("testdata/full.json")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "agentconfig")
	if err := os.WriteFile(p, append([]byte("\n  "), src...), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadFile(p)
	if err != nil {
		t.Fatalf("extension-less JSON: %v", err)
	}
	checkFull(t, c)
}

// The exact file Nomad's api test harness writes must load and, merged over
// -dev, keep the client that -dev enabled.
func TestLoadFile_NomadAPIHarness(t *testing.T) {
	c, err := LoadFile("testdata/nomad-api-harness")
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeName != "node-31001" || c.Ports.HTTP != 31001 || c.Ports.Serf != 31003 ||
		!c.Server.Enabled || c.Server.BootstrapExpect != 1 || c.Server.RaftProtocol != 3 ||
		c.Client.Enabled || c.Client.Options["test.tighten_network_timeouts"] != "true" ||
		c.Advertise.RPC != "127.0.0.1" || c.LogLevel != "ERROR" || !*c.DisableUpdateCheck {
		t.Fatalf("harness config decoded wrong: %+v", c)
	}
	if len(c.Vaults) != 1 || c.Vaults[0].Enabled == nil || *c.Vaults[0].Enabled {
		t.Fatalf("vault.enabled=false not kept: %#v", c.Vaults)
	}

	dev := Merge(DevConfig(), c)
	if !dev.Client.Enabled {
		t.Fatal("client.enabled=false in the file disabled the -dev client")
	}
	if !dev.Server.Enabled || dev.LogLevel != "ERROR" || dev.Ports.HTTP != 31001 {
		t.Fatalf("file did not override dev defaults: %+v", dev)
	}
	if err := dev.Validate(); err != nil {
		t.Fatalf("harness config (dev) should validate: %v", err)
	}
	if err := Merge(DefaultConfig(), c).Validate(); err != nil {
		t.Fatalf("harness config (non-dev) should validate: %v", err)
	}

	arr, err := LoadFile("testdata/nomad-testutil-arrays")
	if err != nil {
		t.Fatal(err)
	}
	if len(arr.Consuls) != 1 || arr.Consuls[0].Address != "127.0.0.1:8500" || arr.Client.CPUTotalCompute != 4000 {
		t.Fatalf("array form decoded wrong: consul=%#v client=%+v", arr.Consuls, arr.Client)
	}
}

func TestLoadFile_BlockAsObjectOrList(t *testing.T) {
	tests := []struct{ name, src string }{
		{"object", `{"server": {"enabled": true, "bootstrap_expect": 2}}`},
		{"list", `{"server": [{"enabled": true, "bootstrap_expect": 2}]}`},
		{"list split", `{"server": [{"enabled": true}, {"bootstrap_expect": 2}]}`},
		{"only nested blocks (flattened by the JSON parser)", `{"server": {"server_join": {"retry_max": 2}, "plan_rejection_tracker": {"node_threshold": 2}}, "ports": {"http": 1}}`},
		{"hcl", "server {\n enabled = true\n bootstrap_expect = 2\n}"},
		{"hcl list", "server = [{ enabled = true }, { bootstrap_expect = 2 }]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("t", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tt.name, "flattened") {
				if c.Server.ServerJoin.RetryMaxAttempts != 2 || c.Server.PlanRejectionTracker.NodeThreshold != 2 {
					t.Fatalf("got %+v", c.Server)
				}
				return
			}
			if !c.Server.Enabled || c.Server.BootstrapExpect != 2 {
				t.Fatalf("got %+v", c.Server)
			}
		})
	}
	// Two consul blocks with distinct names stay two; same name merges.
	c, err := Parse("t.json", []byte(`{"consul": [{"address": "a"}, {"name": "other", "address": "b"}, {"token": "t"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Consuls) != 2 || c.Consuls[0].Address != "a" || c.Consuls[0].Token != "t" || c.Consuls[1].Name != "other" {
		t.Fatalf("consul blocks: %+v %+v", c.Consuls[0], c.Consuls)
	}
}

func TestLoadFile_Errors(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"typo.hcl", []string{
			`testdata/typo.hcl:5: unknown key "server.bootstrap_exepct" (did you mean "server.bootstrap_expect"?)`,
			`testdata/typo.hcl:11: unknown key "client.host_volume.x.paht" (did you mean "client.host_volume.x.path"?)`,
		}},
		{"wrongtype.hcl", []string{
			`testdata/wrongtype.hcl:3: wrong type for "server.bootstrap_expect": expected an integer, got a string ("three")`,
			`testdata/wrongtype.hcl:4: wrong type for "server.heartbeat_grace": expected a duration string such as "30s", got a number (10)`,
			`testdata/wrongtype.hcl:7: wrong type for "ports.http"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := LoadFile(filepath.Join("testdata", tt.file))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File == "" || ce.Key == "" {
				t.Errorf("error is not a *config.Error with file and key: %#v", err)
			}
		})
	}

	// JSON: the unknown key is named with its path and file.
	p := filepath.Join(t.TempDir(), "cfg")
	os.WriteFile(p, []byte(`{"client": {"enabled": true, "optoins": {}}}`), 0o600)
	_, err := LoadFile(p)
	if err == nil || !strings.Contains(err.Error(), `unknown key "client.optoins"`) || !strings.Contains(err.Error(), p) {
		t.Fatalf("JSON unknown key error = %v", err)
	}

	// Syntax errors name the file.
	_, err = Parse("broken.hcl", []byte("server {"))
	if err == nil || !strings.HasPrefix(err.Error(), "broken.hcl: syntax error") {
		t.Fatalf("syntax error = %v", err)
	}
}

func TestLoadPath_DirectoryOrder(t *testing.T) {
	c, err := LoadPath("testdata/dir")
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "TRACE" { // 30-last.hcl wins; README.md and sub/ skipped
		t.Errorf("log_level = %q, want TRACE", c.LogLevel)
	}
	if !c.Server.Enabled {
		t.Error("server.enabled=false in a later file must not disable the server")
	}
	if !reflect.DeepEqual(c.Server.RetryJoin, []string{"a", "b"}) {
		t.Errorf("retry_join = %v, want appended [a b]", c.Server.RetryJoin)
	}
	if !reflect.DeepEqual(c.Client.Meta, map[string]string{"zone": "a", "rack": "2"}) {
		t.Errorf("meta = %v, want merged", c.Client.Meta)
	}
	want := []string{"testdata/dir/10-base.hcl", "testdata/dir/20-override.json", "testdata/dir/30-last.hcl"}
	if !reflect.DeepEqual(c.Files, want) {
		t.Errorf("files = %v, want %v", c.Files, want)
	}

	empty, err := LoadPath(t.TempDir())
	if err != nil || empty == nil {
		t.Fatalf("empty dir: %v %v", empty, err)
	}
	if _, err := LoadPath("testdata/missing"); err == nil {
		t.Fatal("missing path must be an error")
	}
}
