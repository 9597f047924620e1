package config

import (
	"strconv"
	"strings"
	"time"
)

func ptr[T any](v T) *T { return &v }

// DefaultConfig returns the configuration an agent has before any file or
// flag is applied. Values follow Nomad's defaults (reference Appendix B):
// region "global", datacenter "dc1", ports 4646/4647/4648, bind 0.0.0.0,
// heartbeat TTL 10s / grace 10s / failover 300s (but 5,000 heartbeats per
// second, not 50: TTLs must not grow with cluster size; see
// internal/server/heartbeat/doc.go), dynamic ports 20000-32000, client GC
// every 1m at 80% disk / 70% inodes / 50 allocs. server.num_schedulers stays nil: the server uses the CPU count.
func DefaultConfig() *Config {
	return &Config{
		Region:            "global",
		Datacenter:        "dc1",
		BindAddr:          "0.0.0.0",
		LogLevel:          "INFO",
		LogRotateDuration: 24 * time.Hour,
		SyslogFacility:    "LOCAL0",
		Ports:             &Ports{HTTP: 4646, RPC: 4647, Serf: 4648},
		Addresses:         &Addresses{},
		Advertise:         &Addresses{},
		Server: &ServerConfig{
			RaftProtocol:              3,
			HeartbeatGrace:            10 * time.Second,
			MinHeartbeatTTL:           10 * time.Second,
			MaxHeartbeatsPerSecond:    5000,
			FailoverHeartbeatTTL:      300 * time.Second,
			NodeGCThreshold:           24 * time.Hour,
			JobGCInterval:             5 * time.Minute,
			JobGCThreshold:            4 * time.Hour,
			EvalGCThreshold:           time.Hour,
			BatchEvalGCThreshold:      24 * time.Hour,
			DeploymentGCThreshold:     time.Hour,
			CSIVolumeClaimGCInterval:  5 * time.Minute,
			CSIVolumeClaimGCThreshold: 5 * time.Minute,
			CSIPluginGCThreshold:      time.Hour,
			ACLTokenGCThreshold:       time.Hour,
			RootKeyGCInterval:         10 * time.Minute,
			RootKeyGCThreshold:        time.Hour,
			RootKeyRotationThreshold:  30 * 24 * time.Hour,
			RetryInterval:             30 * time.Second,
			ServerJoin:                &ServerJoin{RetryInterval: 30 * time.Second},
			EnableEventBroker:         ptr(true),
			EventBufferSize:           ptr(100),
			JobDefaultPriority:        ptr(50),
			JobMaxPriority:            ptr(100),
			JobMaxCount:               ptr(50000),
			JobTrackedVersions:        ptr(6),
			RaftSnapshotThreshold:     ptr(8192),
			RaftSnapshotInterval:      120 * time.Second,
			RaftTrailingLogs:          ptr(10240),
			DeploymentQueryRateLimit:  100,
			PlanRejectionTracker:      &PlanRejectionTracker{Enabled: ptr(false), NodeThreshold: 100, NodeWindow: 5 * time.Minute},
			Search:                    &Search{FuzzyEnabled: ptr(true), LimitQuery: 20, LimitResults: 100, MinTermLength: 2},
		},
		Client: &ClientConfig{
			MinDynamicPort:                 20000,
			MaxDynamicPort:                 32000,
			MaxKillTimeout:                 30 * time.Second,
			GCInterval:                     time.Minute,
			GCDiskUsageThreshold:           80,
			GCInodeUsageThreshold:          70,
			GCMaxAllocs:                    50,
			GCParallelDestroys:             2,
			NoHostUUID:                     ptr(true),
			BindWildcardDefaultHostNetwork: ptr(true),
			NomadServiceDiscovery:          ptr(true),
			CNIPath:                        "/opt/cni/bin",
			CNIConfigDir:                   "/opt/cni/config",
			BridgeNetworkName:              "nomad",
			BridgeNetworkSubnet:            "172.26.64.0/20",
			Reserved:                       &Resources{},
			ServerJoin:                     &ServerJoin{RetryInterval: 30 * time.Second},
			Template:                       &ClientTemplateConfig{FunctionDenylist: []string{"plugin", "writeToFile"}},
			Artifact: &ArtifactConfig{
				HTTPReadTimeout:             30 * time.Minute,
				HTTPMaxSize:                 "100GB",
				GCSTimeout:                  30 * time.Minute,
				GitTimeout:                  30 * time.Minute,
				HgTimeout:                   30 * time.Minute,
				S3Timeout:                   30 * time.Minute,
				DecompressionSizeLimit:      "100GB",
				DecompressionFileCountLimit: ptr(4096),
			},
		},
		ACL: &ACLConfig{
			TokenTTL:              30 * time.Second,
			PolicyTTL:             30 * time.Second,
			RoleTTL:               30 * time.Second,
			TokenMinExpirationTTL: time.Minute,
			TokenMaxExpirationTTL: 24 * time.Hour,
		},
		Telemetry: &Telemetry{
			CollectionInterval:         time.Second,
			InMemoryCollectionInterval: 10 * time.Second,
			InMemoryRetentionPeriod:    time.Minute,
		},
		Autopilot: &AutopilotConfig{
			CleanupDeadServers:      ptr(true),
			LastContactThreshold:    200 * time.Millisecond,
			MaxTrailingLogs:         250,
			ServerStabilizationTime: 10 * time.Second,
		},
		RPC: &RPCConfig{
			AcceptBacklog:          256,
			KeepAliveInterval:      30 * time.Second,
			ConnectionWriteTimeout: 10 * time.Second,
			StreamOpenTimeout:      75 * time.Second,
			StreamCloseTimeout:     5 * time.Minute,
			DialTimeout:            10 * time.Second,
		},
		Limits: &Limits{
			HTTPSHandshakeTimeout: 5 * time.Second,
			HTTPMaxConnsPerClient: ptr(100),
			RPCHandshakeTimeout:   5 * time.Second,
			RPCMaxConnsPerClient:  ptr(100),
		},
		TLS:                &TLSConfig{},
		UI:                 &UIConfig{Enabled: ptr(true)},
		Sentinel:           &SentinelConfig{},
		Audit:              &AuditConfig{},
		Reporting:          &ReportingConfig{},
		DisableUpdateCheck: ptr(false),
	}
}

// DevConfig is DefaultConfig changed for `agent -dev` (reference §13.2):
// server and client in one process, bootstrap_expect 1, everything bound
// to 127.0.0.1, client fingerprinting on "lo", raw_exec enabled, DEBUG
// logging with the debug endpoints, short client GC and Prometheus metrics.
func DevConfig() *Config {
	c := DefaultConfig()
	c.DevMode = true
	c.BindAddr = "127.0.0.1"
	c.LogLevel = "DEBUG"
	c.EnableDebug = true
	c.DisableAnonymousSignature = true
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 1
	c.Client.Enabled = true
	c.Client.NetworkInterface = "lo"
	c.Client.Options = map[string]string{
		"driver.raw_exec.enable":        "true",
		"driver.docker.volumes":         "true",
		"test.tighten_network_timeouts": "true",
	}
	c.Client.GCInterval = 10 * time.Minute
	c.Client.GCDiskUsageThreshold = 99
	c.Client.GCInodeUsageThreshold = 99
	c.Client.GCMaxAllocs = 50
	c.Client.BindWildcardDefaultHostNetwork = ptr(true)
	c.Client.NomadServiceDiscovery = ptr(true)
	c.Telemetry.PrometheusMetrics = true
	c.Telemetry.PublishAllocationMetrics = true
	c.Telemetry.PublishNodeMetrics = true
	return c
}

// RawExecEnabled reports whether the raw_exec driver is switched on, either
// by `plugin "raw_exec" { config { enabled = true } }` or by the legacy
// client option driver.raw_exec.enable (which -dev sets).
func RawExecEnabled(c *Config) bool {
	if c == nil {
		return false
	}
	if p := c.Plugins["raw_exec"]; p != nil && truthy(p.Config["enabled"]) {
		return true
	}
	return c.Client != nil && truthy(c.Client.Options["driver.raw_exec.enable"])
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case int:
		return x != 0
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		return err == nil && b
	}
	return false
}
