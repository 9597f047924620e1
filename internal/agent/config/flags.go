package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// stringList is a repeatable flag (-config a -config b).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// ParseAgentArgs parses the arguments of `drover agent` (Nomad's single-dash
// flags), loads every -config path in order and returns the merged config:
// DefaultConfig (DevConfig with -dev) < config files in order < flags. dev
// reports -dev; configPaths are the -config values as given. The result is
// not validated; call Validate (and NormalizeAddrs) next. An unknown flag,
// an unreadable or invalid config, or a flag for an unbuilt feature
// (-dev-connect, -dev-consul, -dev-vault) is an error naming it.
func ParseAgentArgs(args []string) (cfg *Config, configPaths []string, dev bool, err error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)

	fc := &Config{Ports: &Ports{}, Server: &ServerConfig{}, Client: &ClientConfig{}, ACL: &ACLConfig{}}
	var (
		configs, retryJoin, startJoin, meta   stringList
		servers, retryInterval                string
		devConnect, devConsul, devVault       bool
		vault                                 VaultConfig
		vaultEnabled, vaultAllowUnauth        boolFlag
		vaultTLSSkip                          boolFlag
		consul                                ConsulConfig
		consulAutoAdvertise, consulClientJoin boolFlag
		consulServerJoin, consulSSL           boolFlag
		consulVerifySSL, consulChecksAdv      boolFlag
	)
	fs.BoolVar(&dev, "dev", false, "")
	fs.BoolVar(&devConnect, "dev-connect", false, "")
	fs.BoolVar(&devConsul, "dev-consul", false, "")
	fs.BoolVar(&devVault, "dev-vault", false, "")
	fs.Var(&configs, "config", "")
	fs.BoolVar(&fc.Server.Enabled, "server", false, "")
	fs.BoolVar(&fc.Client.Enabled, "client", false, "")

	// general
	fs.StringVar(&fc.BindAddr, "bind", "", "")
	fs.StringVar(&fc.Region, "region", "", "")
	fs.StringVar(&fc.Datacenter, "dc", "", "")
	fs.StringVar(&fc.NodeName, "node", "", "")
	fs.StringVar(&fc.DataDir, "data-dir", "", "")
	fs.StringVar(&fc.PluginDir, "plugin-dir", "", "")
	fs.StringVar(&fc.LogLevel, "log-level", "", "")
	fs.BoolVar(&fc.LogJSON, "log-json", false, "")
	fs.BoolVar(&fc.LogIncludeLocation, "log-include-location", false, "")
	fs.StringVar(&fc.LogFile, "log-file", "", "")
	fs.IntVar(&fc.LogRotateBytes, "log-rotate-bytes", 0, "")
	fs.DurationVar(&fc.LogRotateDuration, "log-rotate-duration", 0, "")
	fs.IntVar(&fc.LogRotateMaxFiles, "log-rotate-max-files", 0, "")

	// server
	fs.IntVar(&fc.Server.BootstrapExpect, "bootstrap-expect", 0, "")
	fs.StringVar(&fc.Server.EncryptKey, "encrypt", "", "")
	fs.IntVar(&fc.Server.RaftProtocol, "raft-protocol", 0, "")
	fs.BoolVar(&fc.Server.RejoinAfterLeave, "rejoin", false, "")
	fs.Var(&retryJoin, "retry-join", "")
	fs.Var(&startJoin, "join", "")
	fs.IntVar(&fc.Server.RetryMaxAttempts, "retry-max", 0, "")
	fs.StringVar(&retryInterval, "retry-interval", "", "")

	// client
	fs.StringVar(&servers, "servers", "", "")
	fs.StringVar(&fc.Client.NodeClass, "node-class", "", "")
	fs.StringVar(&fc.Client.NodePool, "node-pool", "", "")
	fs.StringVar(&fc.Client.StateDir, "state-dir", "", "")
	fs.StringVar(&fc.Client.AllocDir, "alloc-dir", "", "")
	fs.StringVar(&fc.Client.AllocMountsDir, "alloc-mounts-dir", "", "")
	fs.StringVar(&fc.Client.NetworkInterface, "network-interface", "", "")
	fs.IntVar(&fc.Client.NetworkSpeed, "network-speed", 0, "")
	fs.Var(&meta, "meta", "")

	// acl
	fs.BoolVar(&fc.ACL.Enabled, "acl-enabled", false, "")
	fs.StringVar(&fc.ACL.ReplicationToken, "acl-replication-token", "", "")

	// vault
	fs.Var(&vaultEnabled, "vault-enabled", "")
	fs.Var(&vaultAllowUnauth, "vault-allow-unauthenticated", "")
	fs.Var(&vaultTLSSkip, "vault-tls-skip-verify", "")
	fs.StringVar(&vault.Address, "vault-address", "", "")
	fs.StringVar(&vault.Token, "vault-token", "", "")
	fs.StringVar(&vault.CreateFromRole, "vault-create-from-role", "", "")
	fs.StringVar(&vault.Namespace, "vault-namespace", "", "")
	fs.StringVar(&vault.Role, "vault-role", "", "")
	fs.StringVar(&vault.JWTAuthBackendPath, "vault-jwt-auth-backend-path", "", "")
	fs.StringVar(&vault.CAFile, "vault-ca-file", "", "")
	fs.StringVar(&vault.CAPath, "vault-ca-path", "", "")
	fs.StringVar(&vault.CertFile, "vault-cert-file", "", "")
	fs.StringVar(&vault.KeyFile, "vault-key-file", "", "")
	fs.StringVar(&vault.TLSServerName, "vault-tls-server-name", "", "")

	// consul (accepted: Drover does not use Consul, see features.go)
	fs.StringVar(&consul.Address, "consul-address", "", "")
	fs.StringVar(&consul.Auth, "consul-auth", "", "")
	fs.StringVar(&consul.Token, "consul-token", "", "")
	fs.StringVar(&consul.CAFile, "consul-ca-file", "", "")
	fs.StringVar(&consul.CertFile, "consul-cert-file", "", "")
	fs.StringVar(&consul.KeyFile, "consul-key-file", "", "")
	fs.StringVar(&consul.ClientServiceName, "consul-client-service-name", "", "")
	fs.StringVar(&consul.ClientHTTPCheckName, "consul-client-http-check-name", "", "")
	fs.StringVar(&consul.ServerServiceName, "consul-server-service-name", "", "")
	fs.StringVar(&consul.ServerHTTPCheckName, "consul-server-http-check-name", "", "")
	fs.StringVar(&consul.ServerSerfCheckName, "consul-server-serf-check-name", "", "")
	fs.StringVar(&consul.ServerRPCCheckName, "consul-server-rpc-check-name", "", "")
	fs.Var(&consulAutoAdvertise, "consul-auto-advertise", "")
	fs.Var(&consulClientJoin, "consul-client-auto-join", "")
	fs.Var(&consulServerJoin, "consul-server-auto-join", "")
	fs.Var(&consulSSL, "consul-ssl", "")
	fs.Var(&consulVerifySSL, "consul-verify-ssl", "")
	fs.Var(&consulChecksAdv, "consul-checks-use-advertise", "")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, false, fmt.Errorf("agent: -help requested")
		}
		return nil, nil, false, fmt.Errorf("agent: %v", err)
	}
	if fs.NArg() > 0 {
		return nil, nil, false, fmt.Errorf("agent: unexpected argument %q (the agent takes only flags; use -config for files)", fs.Arg(0))
	}
	switch {
	case devConnect:
		return nil, nil, false, &UnsupportedFlagError{"dev-connect", "Consul Connect is not built; use -dev"}
	case devConsul:
		return nil, nil, false, &UnsupportedFlagError{"dev-consul", "the Consul integration is not built; use -dev"}
	case devVault:
		return nil, nil, false, &UnsupportedFlagError{"dev-vault", "the Vault integration is not built; use -dev"}
	}

	// fold the flag-only shapes into fc
	if servers != "" {
		for _, s := range strings.Split(servers, ",") {
			if s = strings.TrimSpace(s); s != "" {
				fc.Client.Servers = append(fc.Client.Servers, s)
			}
		}
	}
	fc.Server.RetryJoin = retryJoin
	fc.Server.StartJoin = startJoin
	if retryInterval != "" {
		d, err := parseDurationFlag("retry-interval", retryInterval)
		if err != nil {
			return nil, nil, false, err
		}
		fc.Server.RetryInterval = d
	}
	for _, kv := range meta {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, nil, false, fmt.Errorf("agent: -meta %q must be key=value", kv)
		}
		if fc.Client.Meta == nil {
			fc.Client.Meta = map[string]string{}
		}
		fc.Client.Meta[k] = v
	}
	vault.Enabled, vault.AllowUnauthenticated, vault.TLSSkipVerify = vaultEnabled.ptr(), vaultAllowUnauth.ptr(), vaultTLSSkip.ptr()
	if (vault != VaultConfig{}) {
		fc.Vaults = []*VaultConfig{&vault}
	}
	consul.AutoAdvertise, consul.ClientAutoJoin, consul.ServerAutoJoin = consulAutoAdvertise.ptr(), consulClientJoin.ptr(), consulServerJoin.ptr()
	consul.EnableSSL, consul.VerifySSL, consul.ChecksUseAdvertise = consulSSL.ptr(), consulVerifySSL.ptr(), consulChecksAdv.ptr()
	if !isZeroConsul(&consul) {
		fc.Consuls = []*ConsulConfig{&consul}
	}

	cfg = DefaultConfig()
	if dev {
		cfg = DevConfig()
	}
	var errs []error
	for _, p := range configs {
		c, err := LoadPath(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg = Merge(cfg, c)
	}
	if len(errs) > 0 {
		return nil, nil, false, errors.Join(errs...)
	}
	fs.Visit(func(f *flag.Flag) {
		if key, ok := flagKeys[f.Name]; ok {
			if fc.Origins == nil {
				fc.Origins = map[string]Origin{}
			}
			fc.Origins[key] = Origin{Flag: f.Name}
		}
	})
	cfg = Merge(cfg, fc)
	cfg.DevMode = dev
	return cfg, []string(configs), dev, nil
}

func isZeroConsul(c *ConsulConfig) bool {
	return c.Address == "" && c.Auth == "" && c.Token == "" && c.CAFile == "" && c.CertFile == "" &&
		c.KeyFile == "" && c.ClientServiceName == "" && c.ClientHTTPCheckName == "" &&
		c.ServerServiceName == "" && c.ServerHTTPCheckName == "" && c.ServerSerfCheckName == "" &&
		c.ServerRPCCheckName == "" && c.AutoAdvertise == nil && c.ClientAutoJoin == nil &&
		c.ServerAutoJoin == nil && c.EnableSSL == nil && c.VerifySSL == nil && c.ChecksUseAdvertise == nil
}

func parseDurationFlag(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("agent: -%s %q is not a duration (use e.g. 30s, 5m)", name, v)
	}
	return d, nil
}

// boolFlag is a tri-state boolean flag: unset, true or false.
type boolFlag struct{ set, val bool }

func (b *boolFlag) IsBoolFlag() bool { return true }
func (b *boolFlag) String() string {
	if b == nil || !b.set {
		return ""
	}
	return fmt.Sprint(b.val)
}
func (b *boolFlag) Set(s string) error {
	switch strings.ToLower(s) {
	case "1", "t", "true":
		b.val = true
	case "0", "f", "false":
		b.val = false
	default:
		return fmt.Errorf("%q is not a boolean", s)
	}
	b.set = true
	return nil
}
func (b *boolFlag) ptr() *bool {
	if !b.set {
		return nil
	}
	v := b.val
	return &v
}

// flagKeys names the configuration key each value flag sets, so that a bad
// value is reported against the flag rather than a file that set it earlier.
var flagKeys = map[string]string{
	"bind": "bind_addr", "region": "region", "dc": "datacenter", "node": "name",
	"data-dir": "data_dir", "plugin-dir": "plugin_dir", "log-level": "log_level", "log-file": "log_file",
	"log-rotate-bytes": "log_rotate_bytes", "log-rotate-duration": "log_rotate_duration",
	"log-rotate-max-files": "log_rotate_max_files",
	"bootstrap-expect":     "server.bootstrap_expect", "encrypt": "server.encrypt",
	"raft-protocol": "server.raft_protocol", "retry-max": "server.retry_max", "retry-interval": "server.retry_interval",
	"servers": "client.servers", "node-class": "client.node_class", "node-pool": "client.node_pool",
	"state-dir": "client.state_dir", "alloc-dir": "client.alloc_dir", "alloc-mounts-dir": "client.alloc_mounts_dir",
	"network-interface": "client.network_interface", "network-speed": "client.network_speed",
	"acl-enabled": "acl.enabled", "vault-enabled": "vault.enabled",
}
