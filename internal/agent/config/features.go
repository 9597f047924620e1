package config

import "fmt"

// Feature gates: keys Drover reads but whose feature it has not built (or
// never will, e.g. Nomad Enterprise features). The rule: a key is accepted
// while it leaves the feature off or is inert; it is refused, with a message
// that says what to do, when it would make the operator believe a guarantee
// is in force (security, secrecy) that Drover does not provide.
//
//	Key(s)                                   Decision
//	---------------------------------------  -----------------------------------------------
//	acl.enabled = true                       accepted: ACLs are enforced (internal/acl)
//	acl.{token,policy,role}_ttl, ...         accepted; resolutions are cached until any
//	                                         ACL table changes, so the TTLs are not needed
//	acl.replication_token,                   accepted and honoured: ACL replication from the
//	  server.authoritative_region            authoritative region (server/acl_replication.go)
//	tls.* (http, rpc, files, verify_*, ...)  accepted and honoured (tls.go, internal/tlsutil)
//	vault.enabled = true (any vault block)   REFUSED: Vault integration is not built
//	vault.{address,role,namespace,...}       accepted (inert while enabled is not true)
//	consul.* (address, auto_advertise,       accepted: Drover neither registers the agent
//	  {client,server}_auto_join, tokens ...) in Consul nor discovers servers through it;
//	                                         use server_join / client.servers to join
//	keyring "<kms>" other than "aead"        REFUSED: external KMS wrapping is not built;
//	                                         keys would be stored unwrapped
//	server.client_introduction               REFUSED when enforcement = "strict": client
//	  .enforcement                           introduction tokens are not verified
//	server.encrypt                           accepted when a valid base64 16/24/32-byte key
//	                                         (gossip encryption key for serf)
//	audit.enabled = true, audit.sink/filter  accepted and ignored, as Nomad CE does
//	sentinel.import                          accepted and ignored (Nomad Enterprise)
//	server.license_path, reporting.*         accepted and ignored (Nomad Enterprise)
//	server.redundancy_zone, upgrade_version, accepted and ignored (Enterprise autopilot)
//	  autopilot.enable_redundancy_zones ...
//	ui.consul.ui_url, ui.vault.ui_url        accepted: they only add links in the web UI
//	enable_syslog, eventlog.enabled          accepted; logs still go to stderr/log_file
//	telemetry.datadog_address,               REFUSED: those sinks are not built and the
//	  telemetry.circonus_api_token            metrics would go nowhere; the Datadog agent
//	                                         takes statsd_address (DogStatsD speaks statsd)
//	telemetry.disable_dispatched_job_      accepted and ignored
//	  summary_metrics
//	client.bridge_network_subnet_ipv6,       REFUSED when set: bridge networks are IPv4 only
//	  client.bridge_network_hairpin_mode     and hairpin mode is not set on the bridge ports
//	flags -dev-connect, -dev-consul,         REFUSED by ParseAgentArgs: Consul Connect and
//	  -dev-vault                             the dev integrations are not built
var featureGates = []struct {
	key     string
	refused func(*Config) bool
	msg     string
}{
	{"vault.enabled", func(c *Config) bool {
		for _, v := range c.Vaults {
			if v != nil && v.Enabled != nil && *v.Enabled {
				return true
			}
		}
		return false
	}, "vault.enabled = true is not supported yet: Drover has no Vault integration, so tasks would get no Vault tokens. Remove the vault block or set enabled = false"},
	{"keyring", func(c *Config) bool {
		for name := range c.Keyring {
			if name != "aead" {
				return true
			}
		}
		return false
	}, "keyring blocks for external KMS providers are not supported yet: root keys would be stored without the KMS wrapping you asked for. Remove the keyring block (or use keyring \"aead\")"},
	{"telemetry.datadog_address", func(c *Config) bool { return c.Telemetry != nil && c.Telemetry.DataDogAddr != "" },
		"telemetry.datadog_address is not supported yet: the metrics would go nowhere. Point telemetry.statsd_address at the Datadog agent instead (DogStatsD accepts the statsd protocol)"},
	{"telemetry.circonus_api_token", func(c *Config) bool { return c.Telemetry != nil && c.Telemetry.CirconusAPIToken != "" },
		"telemetry.circonus_api_token is not supported yet: the Circonus sink is not built, so the metrics would go nowhere. Use telemetry.statsd_address or prometheus_metrics"},
	{"server.client_introduction.enforcement", func(c *Config) bool {
		return c.Server != nil && c.Server.ClientIntroduction != nil && c.Server.ClientIntroduction.Enforcement == "strict"
	}, "server.client_introduction.enforcement = \"strict\" is not supported yet: Drover does not verify client introduction tokens. Use \"warn\" or remove the block"},
	{"client.bridge_network_subnet_ipv6", func(c *Config) bool { return c.Client != nil && c.Client.BridgeNetworkSubnetIPv6 != "" },
		"client.bridge_network_subnet_ipv6 is not supported yet: bridge allocations get an IPv4 address only. Remove it"},
	{"client.bridge_network_hairpin_mode", func(c *Config) bool { return c.Client != nil && c.Client.BridgeNetworkHairpinMode },
		"client.bridge_network_hairpin_mode = true is not supported yet: an allocation could not reach itself through its host port. Remove it"},
}

func (c *Config) checkFeatureGates() []error {
	var errs []error
	for _, g := range featureGates {
		if g.refused(c) {
			errs = append(errs, &Error{Key: g.key, Msg: g.msg})
		}
	}
	return errs
}

// UnsupportedFlagError is returned by ParseAgentArgs for a Nomad flag whose
// feature Drover does not provide.
type UnsupportedFlagError struct{ Flag, Why string }

func (e *UnsupportedFlagError) Error() string {
	return fmt.Sprintf("flag -%s is not supported by Drover: %s", e.Flag, e.Why)
}
