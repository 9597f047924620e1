package config

import "time"

// Config is the whole agent configuration. Field tags give the HCL/JSON key;
// tag option "append" makes Merge append lists instead of replacing them,
// "named" marks a list of blocks merged by their `name` key, and "remain"
// marks the map that collects keys a block does not declare (only used for
// enterprise-only or provider-specific blocks that Drover ignores).
type Config struct {
	Region                    string                    `hcl:"region"`
	Datacenter                string                    `hcl:"datacenter"`
	NodeName                  string                    `hcl:"name"`
	DataDir                   string                    `hcl:"data_dir"`
	PluginDir                 string                    `hcl:"plugin_dir"`
	LogLevel                  string                    `hcl:"log_level"`
	LogJSON                   bool                      `hcl:"log_json"`
	LogFile                   string                    `hcl:"log_file"`
	LogIncludeLocation        bool                      `hcl:"log_include_location"`
	LogRotateDuration         time.Duration             `hcl:"log_rotate_duration"`
	LogRotateBytes            int                       `hcl:"log_rotate_bytes"`
	LogRotateMaxFiles         int                       `hcl:"log_rotate_max_files"`
	BindAddr                  string                    `hcl:"bind_addr"`
	EnableDebug               bool                      `hcl:"enable_debug"`
	Ports                     *Ports                    `hcl:"ports"`
	Addresses                 *Addresses                `hcl:"addresses"`
	Advertise                 *Addresses                `hcl:"advertise"`
	Server                    *ServerConfig             `hcl:"server"`
	Client                    *ClientConfig             `hcl:"client"`
	RPC                       *RPCConfig                `hcl:"rpc"`
	ACL                       *ACLConfig                `hcl:"acl"`
	Audit                     *AuditConfig              `hcl:"audit"`
	Autopilot                 *AutopilotConfig          `hcl:"autopilot"`
	Consuls                   []*ConsulConfig           `hcl:"consul,named"`
	Vaults                    []*VaultConfig            `hcl:"vault,named"`
	Telemetry                 *Telemetry                `hcl:"telemetry"`
	TLS                       *TLSConfig                `hcl:"tls"`
	Plugins                   map[string]*PluginConfig  `hcl:"plugin"`
	UI                        *UIConfig                 `hcl:"ui"`
	Sentinel                  *SentinelConfig           `hcl:"sentinel"`
	Keyring                   map[string]*KeyringConfig `hcl:"keyring"`
	Reporting                 *ReportingConfig          `hcl:"reporting"`
	Limits                    *Limits                   `hcl:"limits"`
	Eventlog                  *Eventlog                 `hcl:"eventlog"`
	LeaveOnInterrupt          bool                      `hcl:"leave_on_interrupt"`
	LeaveOnTerminate          bool                      `hcl:"leave_on_terminate"`
	EnableSyslog              bool                      `hcl:"enable_syslog"`
	SyslogFacility            string                    `hcl:"syslog_facility"`
	DisableUpdateCheck        *bool                     `hcl:"disable_update_check"`
	DisableAnonymousSignature bool                      `hcl:"disable_anonymous_signature"`
	HTTPAPIResponseHeaders    map[string]string         `hcl:"http_api_response_headers"`

	// DevMode is set by -dev; it is never read from a file.
	DevMode bool `hcl:"-"`
	// Files lists the config files that were loaded, in order.
	Files []string `hcl:"-" merge:"append"`
	// Origins says where each key was set (full key path → file and line,
	// or flag); later sources replace earlier ones as their values do. It
	// lets Validate name the place of a bad value.
	Origins map[string]Origin `hcl:"-" json:"-"`

	normalized *normalizedAddrs
}

// Ports are the agent's listening ports.
type Ports struct {
	HTTP int `hcl:"http"`
	RPC  int `hcl:"rpc"`
	Serf int `hcl:"serf"`
}

// Addresses is used for both `addresses` (bind per protocol) and
// `advertise` (address, optionally with port, announced to others).
type Addresses struct {
	HTTP string `hcl:"http"`
	RPC  string `hcl:"rpc"`
	Serf string `hcl:"serf"`
}

// ServerJoin is the `server_join` block of server and client.
type ServerJoin struct {
	StartJoin        []string      `hcl:"start_join" merge:"append"`
	RetryJoin        []string      `hcl:"retry_join" merge:"append"`
	RetryMaxAttempts int           `hcl:"retry_max"`
	RetryInterval    time.Duration `hcl:"retry_interval"`
}

// RPCConfig tunes the agent-to-agent transport (`rpc` block).
type RPCConfig struct {
	AcceptBacklog          int           `hcl:"accept_backlog"`
	KeepAliveInterval      time.Duration `hcl:"keep_alive_interval"`
	ConnectionWriteTimeout time.Duration `hcl:"connection_write_timeout"`
	StreamOpenTimeout      time.Duration `hcl:"stream_open_timeout"`
	StreamCloseTimeout     time.Duration `hcl:"stream_close_timeout"`
	DialTimeout            time.Duration `hcl:"dial_timeout"`
}

// ACLConfig is the `acl` block.
type ACLConfig struct {
	Enabled               bool          `hcl:"enabled"`
	TokenTTL              time.Duration `hcl:"token_ttl"`
	PolicyTTL             time.Duration `hcl:"policy_ttl"`
	RoleTTL               time.Duration `hcl:"role_ttl"`
	ReplicationToken      string        `hcl:"replication_token"`
	TokenMinExpirationTTL time.Duration `hcl:"token_min_expiration_ttl"`
	TokenMaxExpirationTTL time.Duration `hcl:"token_max_expiration_ttl"`
}

// AuditConfig is the `audit` block (Nomad Enterprise).
type AuditConfig struct {
	Enabled *bool                   `hcl:"enabled"`
	Sinks   map[string]*AuditSink   `hcl:"sink"`
	Filters map[string]*AuditFilter `hcl:"filter"`
}

// AuditSink is one `audit.sink "name"` block.
type AuditSink struct {
	Type              string        `hcl:"type"`
	DeliveryGuarantee string        `hcl:"delivery_guarantee"`
	Format            string        `hcl:"format"`
	Path              string        `hcl:"path"`
	RotateBytes       int           `hcl:"rotate_bytes"`
	RotateDuration    time.Duration `hcl:"rotate_duration"`
	RotateMaxFiles    int           `hcl:"rotate_max_files"`
	Mode              string        `hcl:"mode"`
}

// AuditFilter is one `audit.filter "name"` block.
type AuditFilter struct {
	Type       string   `hcl:"type"`
	Endpoints  []string `hcl:"endpoints"`
	Stages     []string `hcl:"stages"`
	Operations []string `hcl:"operations"`
}

// AutopilotConfig is the `autopilot` block.
type AutopilotConfig struct {
	CleanupDeadServers      *bool         `hcl:"cleanup_dead_servers"`
	LastContactThreshold    time.Duration `hcl:"last_contact_threshold"`
	MaxTrailingLogs         int           `hcl:"max_trailing_logs"`
	MinQuorum               int           `hcl:"min_quorum"`
	ServerStabilizationTime time.Duration `hcl:"server_stabilization_time"`
	EnableRedundancyZones   *bool         `hcl:"enable_redundancy_zones"`
	DisableUpgradeMigration *bool         `hcl:"disable_upgrade_migration"`
	EnableCustomUpgrades    *bool         `hcl:"enable_custom_upgrades"`
}

// WorkloadIdentity is the shape of consul service_identity/task_identity and
// vault default_identity blocks.
type WorkloadIdentity struct {
	Audience     []string          `hcl:"aud"`
	Env          *bool             `hcl:"env"`
	File         *bool             `hcl:"file"`
	TTL          time.Duration     `hcl:"ttl"`
	ExtraClaims  map[string]string `hcl:"extra_claims"`
	ChangeMode   string            `hcl:"change_mode"`
	ChangeSignal string            `hcl:"change_signal"`
}

// ConsulConfig is one `consul` block. Drover accepts it and does not yet
// register services or join through Consul.
type ConsulConfig struct {
	Name                         string            `hcl:"name"`
	Address                      string            `hcl:"address"`
	GRPCAddress                  string            `hcl:"grpc_address"`
	Auth                         string            `hcl:"auth"`
	Token                        string            `hcl:"token"`
	Namespace                    string            `hcl:"namespace"`
	Partition                    string            `hcl:"partition"`
	AutoAdvertise                *bool             `hcl:"auto_advertise"`
	ChecksUseAdvertise           *bool             `hcl:"checks_use_advertise"`
	ClientAutoJoin               *bool             `hcl:"client_auto_join"`
	ClientServiceName            string            `hcl:"client_service_name"`
	ClientHTTPCheckName          string            `hcl:"client_http_check_name"`
	ClientFailuresBeforeCritical int               `hcl:"client_failures_before_critical"`
	ClientFailuresBeforeWarning  int               `hcl:"client_failures_before_warning"`
	ServerAutoJoin               *bool             `hcl:"server_auto_join"`
	ServerServiceName            string            `hcl:"server_service_name"`
	ServerHTTPCheckName          string            `hcl:"server_http_check_name"`
	ServerSerfCheckName          string            `hcl:"server_serf_check_name"`
	ServerRPCCheckName           string            `hcl:"server_rpc_check_name"`
	ServerFailuresBeforeCritical int               `hcl:"server_failures_before_critical"`
	ServerFailuresBeforeWarning  int               `hcl:"server_failures_before_warning"`
	Tags                         []string          `hcl:"tags"`
	Timeout                      time.Duration     `hcl:"timeout"`
	EnableSSL                    *bool             `hcl:"ssl"`
	VerifySSL                    *bool             `hcl:"verify_ssl"`
	ShareSSL                     *bool             `hcl:"share_ssl"`
	CAFile                       string            `hcl:"ca_file"`
	CertFile                     string            `hcl:"cert_file"`
	KeyFile                      string            `hcl:"key_file"`
	GRPCCAFile                   string            `hcl:"grpc_ca_file"`
	AllowUnauthenticated         *bool             `hcl:"allow_unauthenticated"`
	ServiceIdentity              *WorkloadIdentity `hcl:"service_identity"`
	TaskIdentity                 *WorkloadIdentity `hcl:"task_identity"`
	ServiceIdentityAuthMethod    string            `hcl:"service_auth_method"`
	TaskIdentityAuthMethod       string            `hcl:"task_auth_method"`
}

// VaultConfig is one `vault` block.
type VaultConfig struct {
	Name                 string            `hcl:"name"`
	Enabled              *bool             `hcl:"enabled"`
	Address              string            `hcl:"address"`
	Role                 string            `hcl:"role"`
	Namespace            string            `hcl:"namespace"`
	JWTAuthBackendPath   string            `hcl:"jwt_auth_backend_path"`
	DefaultIdentity      *WorkloadIdentity `hcl:"default_identity"`
	Token                string            `hcl:"token"`
	CreateFromRole       string            `hcl:"create_from_role"`
	TaskTokenTTL         string            `hcl:"task_token_ttl"`
	AllowUnauthenticated *bool             `hcl:"allow_unauthenticated"`
	ConnectionRetryIntv  time.Duration     `hcl:"connection_retry_intv"`
	CAFile               string            `hcl:"ca_file"`
	CAPath               string            `hcl:"ca_path"`
	CertFile             string            `hcl:"cert_file"`
	KeyFile              string            `hcl:"key_file"`
	TLSServerName        string            `hcl:"tls_server_name"`
	TLSSkipVerify        *bool             `hcl:"tls_skip_verify"`
}

// Telemetry is the `telemetry` block.
type Telemetry struct {
	InMemoryCollectionInterval         time.Duration `hcl:"in_memory_collection_interval"`
	InMemoryRetentionPeriod            time.Duration `hcl:"in_memory_retention_period"`
	StatsiteAddr                       string        `hcl:"statsite_address"`
	StatsdAddr                         string        `hcl:"statsd_address"`
	DataDogAddr                        string        `hcl:"datadog_address"`
	DataDogTags                        []string      `hcl:"datadog_tags"`
	PrometheusMetrics                  bool          `hcl:"prometheus_metrics"`
	DisableHostname                    bool          `hcl:"disable_hostname"`
	UseNodeName                        bool          `hcl:"use_node_name"`
	CollectionInterval                 time.Duration `hcl:"collection_interval"`
	PublishAllocationMetrics           bool          `hcl:"publish_allocation_metrics"`
	PublishNodeMetrics                 bool          `hcl:"publish_node_metrics"`
	IncludeAllocMetadataInMetrics      bool          `hcl:"include_alloc_metadata_in_metrics"`
	AllowedMetadataKeysInMetrics       []string      `hcl:"allowed_metadata_keys_in_metrics"`
	PrefixFilter                       []string      `hcl:"prefix_filter"`
	FilterDefault                      *bool         `hcl:"filter_default"`
	DisableDispatchedJobSummaryMetrics bool          `hcl:"disable_dispatched_job_summary_metrics"`
	DisableQuotaUtilizationMetrics     bool          `hcl:"disable_quota_utilization_metrics"`
	DisableRPCRateMetricsLabels        bool          `hcl:"disable_rpc_rate_metrics_labels"`
	DisableAllocationHookMetrics       *bool         `hcl:"disable_allocation_hook_metrics"`
	DisableTaggedMetrics               bool          `hcl:"disable_tagged_metrics"`
	BackwardsCompatibleMetrics         bool          `hcl:"backwards_compatible_metrics"`
	CirconusAPIToken                   string        `hcl:"circonus_api_token"`
	CirconusAPIApp                     string        `hcl:"circonus_api_app"`
	CirconusAPIURL                     string        `hcl:"circonus_api_url"`
	CirconusSubmissionInterval         string        `hcl:"circonus_submission_interval"`
	CirconusCheckSubmissionURL         string        `hcl:"circonus_submission_url"`
	CirconusCheckID                    string        `hcl:"circonus_check_id"`
	CirconusCheckForceMetricActivation string        `hcl:"circonus_check_force_metric_activation"`
	CirconusCheckInstanceID            string        `hcl:"circonus_check_instance_id"`
	CirconusCheckSearchTag             string        `hcl:"circonus_check_search_tag"`
	CirconusCheckTags                  string        `hcl:"circonus_check_tags"`
	CirconusCheckDisplayName           string        `hcl:"circonus_check_display_name"`
	CirconusBrokerID                   string        `hcl:"circonus_broker_id"`
	CirconusBrokerSelectTag            string        `hcl:"circonus_broker_select_tag"`
}

// TLSConfig is the `tls` block.
type TLSConfig struct {
	EnableHTTP                  bool     `hcl:"http"`
	EnableRPC                   bool     `hcl:"rpc"`
	VerifyServerHostname        bool     `hcl:"verify_server_hostname"`
	VerifyHTTPSClient           bool     `hcl:"verify_https_client"`
	RPCUpgradeMode              bool     `hcl:"rpc_upgrade_mode"`
	CAFile                      string   `hcl:"ca_file"`
	CertFile                    string   `hcl:"cert_file"`
	KeyFile                     string   `hcl:"key_file"`
	TLSCipherSuites             string   `hcl:"tls_cipher_suites"`
	TLSMinVersion               string   `hcl:"tls_min_version"`
	TLSPreferServerCipherSuites bool     `hcl:"tls_prefer_server_cipher_suites"`
	Checksum                    string   `hcl:"checksum"`
	KeyLoader                   []string `hcl:"-"`
}

// PluginConfig is one `plugin "name"` block: a task driver or device plugin.
type PluginConfig struct {
	Args   []string       `hcl:"args"`
	Config map[string]any `hcl:"config"`
}

// UIConfig is the `ui` block.
type UIConfig struct {
	Enabled               *bool    `hcl:"enabled"`
	ShowCLIHints          *bool    `hcl:"show_cli_hints"`
	ContentSecurityPolicy *UICSP   `hcl:"content_security_policy"`
	Consul                *UILink  `hcl:"consul"`
	Vault                 *UILink  `hcl:"vault"`
	Label                 *UILabel `hcl:"label"`
}

// UICSP is ui.content_security_policy.
type UICSP struct {
	ConnectSrc     []string `hcl:"connect_src"`
	DefaultSrc     []string `hcl:"default_src"`
	FormAction     []string `hcl:"form_action"`
	FrameAncestors []string `hcl:"frame_ancestors"`
	ImgSrc         []string `hcl:"img_src"`
	ScriptSrc      []string `hcl:"script_src"`
	StyleSrc       []string `hcl:"style_src"`
}

// UILink is ui.consul / ui.vault.
type UILink struct {
	BaseUIURL string `hcl:"ui_url"`
}

// UILabel is ui.label.
type UILabel struct {
	Text            string `hcl:"text"`
	BackgroundColor string `hcl:"background_color"`
	TextColor       string `hcl:"text_color"`
}

// SentinelConfig is the `sentinel` block (Nomad Enterprise).
type SentinelConfig struct {
	Imports map[string]*SentinelImport `hcl:"import"`
}

// SentinelImport is sentinel.import "name".
type SentinelImport struct {
	Path string   `hcl:"path"`
	Args []string `hcl:"args"`
}

// KeyringConfig is one `keyring "provider"` block (a key-encryption-key
// provider). Provider-specific keys land in Options.
type KeyringConfig struct {
	Active  *bool          `hcl:"active"`
	Name    string         `hcl:"name"`
	Options map[string]any `hcl:",remain"`
}

// ReportingConfig is the `reporting` block (Nomad Enterprise license
// reporting). Unknown keys are kept in Options and ignored.
type ReportingConfig struct {
	License *struct {
		Enabled *bool `hcl:"enabled"`
	} `hcl:"license"`
	Options map[string]any `hcl:",remain"`
}

// Limits is the `limits` block.
type Limits struct {
	HTTPSHandshakeTimeout time.Duration `hcl:"https_handshake_timeout"`
	HTTPMaxConnsPerClient *int          `hcl:"http_max_conns_per_client"`
	RPCHandshakeTimeout   time.Duration `hcl:"rpc_handshake_timeout"`
	RPCMaxConnsPerClient  *int          `hcl:"rpc_max_conns_per_client"`
	// HTTPMaxBodySize bounds HTTP request bodies (Drover's; Nomad has no
	// limit): "" means the HTTP API's default (8 MiB). See ParseSize.
	HTTPMaxBodySize string `hcl:"http_max_body_size"`
}

// Eventlog is the `eventlog` block (Windows event log).
type Eventlog struct {
	Enabled bool   `hcl:"enabled"`
	Level   string `hcl:"level"`
}
