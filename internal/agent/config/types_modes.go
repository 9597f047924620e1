package config

import "time"

// ServerConfig is the `server` block.
type ServerConfig struct {
	Enabled                   bool                  `hcl:"enabled"`
	AuthoritativeRegion       string                `hcl:"authoritative_region"`
	BootstrapExpect           int                   `hcl:"bootstrap_expect"`
	DataDir                   string                `hcl:"data_dir"`
	ProtocolVersion           int                   `hcl:"protocol_version"`
	RaftProtocol              int                   `hcl:"raft_protocol"`
	RaftMultiplier            *int                  `hcl:"raft_multiplier"`
	NumSchedulers             *int                  `hcl:"num_schedulers"`
	GCHeapFloorMB             *int                  `hcl:"gc_heap_floor_mb"` // Drover: see internal/heapfloor; 0 turns it off
	EnabledSchedulers         []string              `hcl:"enabled_schedulers"`
	NodeGCThreshold           time.Duration         `hcl:"node_gc_threshold"`
	JobGCInterval             time.Duration         `hcl:"job_gc_interval"`
	JobGCThreshold            time.Duration         `hcl:"job_gc_threshold"`
	EvalGCThreshold           time.Duration         `hcl:"eval_gc_threshold"`
	BatchEvalGCThreshold      time.Duration         `hcl:"batch_eval_gc_threshold"`
	DeploymentGCThreshold     time.Duration         `hcl:"deployment_gc_threshold"`
	CSIVolumeClaimGCInterval  time.Duration         `hcl:"csi_volume_claim_gc_interval"`
	CSIVolumeClaimGCThreshold time.Duration         `hcl:"csi_volume_claim_gc_threshold"`
	CSIPluginGCThreshold      time.Duration         `hcl:"csi_plugin_gc_threshold"`
	ACLTokenGCThreshold       time.Duration         `hcl:"acl_token_gc_threshold"`
	RootKeyGCInterval         time.Duration         `hcl:"root_key_gc_interval"`
	RootKeyGCThreshold        time.Duration         `hcl:"root_key_gc_threshold"`
	RootKeyRotationThreshold  time.Duration         `hcl:"root_key_rotation_threshold"`
	HeartbeatGrace            time.Duration         `hcl:"heartbeat_grace"`
	MinHeartbeatTTL           time.Duration         `hcl:"min_heartbeat_ttl"`
	MaxHeartbeatsPerSecond    float64               `hcl:"max_heartbeats_per_second"`
	FailoverHeartbeatTTL      time.Duration         `hcl:"failover_heartbeat_ttl"`
	StartJoin                 []string              `hcl:"start_join" merge:"append"`
	RetryJoin                 []string              `hcl:"retry_join" merge:"append"`
	RetryMaxAttempts          int                   `hcl:"retry_max"`
	RetryInterval             time.Duration         `hcl:"retry_interval"`
	RejoinAfterLeave          bool                  `hcl:"rejoin_after_leave"`
	NonVotingServer           bool                  `hcl:"non_voting_server"`
	RedundancyZone            string                `hcl:"redundancy_zone"`
	UpgradeVersion            string                `hcl:"upgrade_version"`
	EncryptKey                string                `hcl:"encrypt"`
	ServerJoin                *ServerJoin           `hcl:"server_join"`
	DefaultSchedulerConfig    *SchedulerConfig      `hcl:"default_scheduler_config"`
	PlanRejectionTracker      *PlanRejectionTracker `hcl:"plan_rejection_tracker"`
	EnableEventBroker         *bool                 `hcl:"enable_event_broker"`
	EventBufferSize           *int                  `hcl:"event_buffer_size"`
	LicensePath               string                `hcl:"license_path"`
	Search                    *Search               `hcl:"search"`
	DeploymentQueryRateLimit  float64               `hcl:"deploy_query_rate_limit"`
	RaftLogStore              *RaftLogStoreConfig   `hcl:"raft_logstore"`
	RaftBoltDB                *RaftBoltConfig       `hcl:"raft_boltdb"`
	RaftSnapshotThreshold     *int                  `hcl:"raft_snapshot_threshold"`
	RaftSnapshotInterval      time.Duration         `hcl:"raft_snapshot_interval"`
	RaftTrailingLogs          *int                  `hcl:"raft_trailing_logs"`
	JobDefaultPriority        *int                  `hcl:"job_default_priority"`
	JobMaxPriority            *int                  `hcl:"job_max_priority"`
	JobMaxCount               *int                  `hcl:"job_max_count"`
	JobMaxSourceSize          string                `hcl:"job_max_source_size"`
	JobTrackedVersions        *int                  `hcl:"job_tracked_versions"`
	OIDCIssuer                string                `hcl:"oidc_issuer"`
	StartTimeout              time.Duration         `hcl:"start_timeout"`
	LogFile                   string                `hcl:"log_file"`
	NonProduction             bool                  `hcl:"non_production"`
	ClientIntroduction        *ClientIntroduction   `hcl:"client_introduction"`
}

// SchedulerConfig is server.default_scheduler_config.
type SchedulerConfig struct {
	SchedulerAlgorithm            string            `hcl:"scheduler_algorithm"`
	MemoryOversubscriptionEnabled bool              `hcl:"memory_oversubscription_enabled"`
	RejectJobRegistration         bool              `hcl:"reject_job_registration"`
	PauseEvalBroker               bool              `hcl:"pause_eval_broker"`
	PreemptionConfig              *PreemptionConfig `hcl:"preemption_config"`
}

// PreemptionConfig is default_scheduler_config.preemption_config.
type PreemptionConfig struct {
	SystemSchedulerEnabled   *bool `hcl:"system_scheduler_enabled"`
	SysBatchSchedulerEnabled *bool `hcl:"sysbatch_scheduler_enabled"`
	BatchSchedulerEnabled    *bool `hcl:"batch_scheduler_enabled"`
	ServiceSchedulerEnabled  *bool `hcl:"service_scheduler_enabled"`
}

// PlanRejectionTracker is server.plan_rejection_tracker.
type PlanRejectionTracker struct {
	Enabled       *bool         `hcl:"enabled"`
	NodeThreshold int           `hcl:"node_threshold"`
	NodeWindow    time.Duration `hcl:"node_window"`
}

// Search is server.search.
type Search struct {
	FuzzyEnabled  *bool `hcl:"fuzzy_enabled"`
	LimitQuery    int   `hcl:"limit_query"`
	LimitResults  int   `hcl:"limit_results"`
	MinTermLength int   `hcl:"min_term_length"`
}

// RaftLogStoreConfig is server.raft_logstore.
type RaftLogStoreConfig struct {
	Backend         string          `hcl:"backend"`
	DisableLogCache bool            `hcl:"disable_log_cache"`
	BoltDB          *RaftBoltConfig `hcl:"boltdb"`
	WAL             *struct {
		SegmentSizeMB int `hcl:"segment_size_mb"`
	} `hcl:"wal"`
	Verification *struct {
		Enabled  bool          `hcl:"enabled"`
		Interval time.Duration `hcl:"interval"`
	} `hcl:"verification"`
}

// RaftBoltConfig is server.raft_boltdb.
type RaftBoltConfig struct {
	NoFreelistSync bool `hcl:"no_freelist_sync"`
}

// ClientIntroduction is server.client_introduction.
type ClientIntroduction struct {
	Enforcement        string        `hcl:"enforcement"`
	DefaultIdentityTTL time.Duration `hcl:"default_identity_ttl"`
	MaxIdentityTTL     time.Duration `hcl:"max_identity_ttl"`
}

// ClientConfig is the `client` block.
type ClientConfig struct {
	Enabled                        bool                          `hcl:"enabled"`
	StateDir                       string                        `hcl:"state_dir"`
	AllocDir                       string                        `hcl:"alloc_dir"`
	AllocMountsDir                 string                        `hcl:"alloc_mounts_dir"`
	HostVolumesDir                 string                        `hcl:"host_volumes_dir"`
	HostVolumePluginDir            string                        `hcl:"host_volume_plugin_dir"`
	CommonPluginDir                string                        `hcl:"common_plugin_dir"`
	Servers                        []string                      `hcl:"servers" merge:"append"`
	NodeClass                      string                        `hcl:"node_class"`
	NodePool                       string                        `hcl:"node_pool"`
	Options                        map[string]string             `hcl:"options"`
	Meta                           map[string]string             `hcl:"meta"`
	ChrootEnv                      map[string]string             `hcl:"chroot_env"`
	NetworkInterface               string                        `hcl:"network_interface"`
	PreferredAddressFamily         string                        `hcl:"preferred_address_family"`
	NetworkSpeed                   int                           `hcl:"network_speed"`
	CPUDisableDmidecode            bool                          `hcl:"cpu_disable_dmidecode"`
	CPUTotalCompute                int                           `hcl:"cpu_total_compute"`
	MemoryTotalMB                  int                           `hcl:"memory_total_mb"`
	DiskTotalMB                    int                           `hcl:"disk_total_mb"`
	DiskFreeMB                     int                           `hcl:"disk_free_mb"`
	ReservableCores                string                        `hcl:"reservable_cores"`
	MaxKillTimeout                 time.Duration                 `hcl:"max_kill_timeout"`
	ClientMinPort                  int                           `hcl:"client_min_port"`
	ClientMaxPort                  int                           `hcl:"client_max_port"`
	MinDynamicPort                 int                           `hcl:"min_dynamic_port"`
	MaxDynamicPort                 int                           `hcl:"max_dynamic_port"`
	Reserved                       *Resources                    `hcl:"reserved"`
	GCInterval                     time.Duration                 `hcl:"gc_interval"`
	GCParallelDestroys             int                           `hcl:"gc_parallel_destroys"`
	GCDiskUsageThreshold           float64                       `hcl:"gc_disk_usage_threshold"`
	GCInodeUsageThreshold          float64                       `hcl:"gc_inode_usage_threshold"`
	GCMaxAllocs                    int                           `hcl:"gc_max_allocs"`
	GCVolumesOnNodeGC              bool                          `hcl:"gc_volumes_on_node_gc"`
	NoHostUUID                     *bool                         `hcl:"no_host_uuid"`
	DisableRemoteExec              bool                          `hcl:"disable_remote_exec"`
	Template                       *ClientTemplateConfig         `hcl:"template"`
	ServerJoin                     *ServerJoin                   `hcl:"server_join"`
	HostVolumes                    map[string]*HostVolumeConfig  `hcl:"host_volume"`
	HostNetworks                   map[string]*HostNetworkConfig `hcl:"host_network"`
	CNIPath                        string                        `hcl:"cni_path"`
	CNIConfigDir                   string                        `hcl:"cni_config_dir"`
	BridgeNetworkName              string                        `hcl:"bridge_network_name"`
	BridgeNetworkSubnet            string                        `hcl:"bridge_network_subnet"`
	BridgeNetworkSubnetIPv6        string                        `hcl:"bridge_network_subnet_ipv6"`
	BridgeNetworkHairpinMode       bool                          `hcl:"bridge_network_hairpin_mode"`
	BindWildcardDefaultHostNetwork *bool                         `hcl:"bind_wildcard_default_host_network"`
	CgroupParent                   string                        `hcl:"cgroup_parent"`
	NomadServiceDiscovery          *bool                         `hcl:"nomad_service_discovery"`
	Artifact                       *ArtifactConfig               `hcl:"artifact"`
	DrainOnShutdown                *DrainConfig                  `hcl:"drain_on_shutdown"`
	Users                          *UsersConfig                  `hcl:"users"`
	NodeMaxAllocs                  int                           `hcl:"node_max_allocs"`
	LogFile                        string                        `hcl:"log_file"`
	Fingerprinters                 map[string]map[string]any     `hcl:"fingerprint"`
	DefaultIneligible              bool                          `hcl:"default_ineligible"`

	// DetectForeignPorts is Drover's own: when true the client reports ports
	// bound on the host by processes Drover did not start, so the scheduler
	// does not hand them out (seed 002).
	DetectForeignPorts bool `hcl:"detect_foreign_ports"`
}

// Resources is client.reserved.
type Resources struct {
	CPU           int    `hcl:"cpu"`
	Cores         string `hcl:"cores"`
	MemoryMB      int    `hcl:"memory"`
	DiskMB        int    `hcl:"disk"`
	ReservedPorts string `hcl:"reserved_ports"`
}

// HostVolumeConfig is client.host_volume "name".
type HostVolumeConfig struct {
	Path     string `hcl:"path"`
	ReadOnly bool   `hcl:"read_only"`
}

// HostNetworkConfig is client.host_network "name".
type HostNetworkConfig struct {
	CIDR          string `hcl:"cidr"`
	Interface     string `hcl:"interface"`
	ReservedPorts string `hcl:"reserved_ports"`
}

// RetryConfig is the shape of template.{consul,vault,nomad}_retry.
type RetryConfig struct {
	Attempts   *int          `hcl:"attempts"`
	Backoff    time.Duration `hcl:"backoff"`
	MaxBackoff time.Duration `hcl:"max_backoff"`
}

// WaitConfig is template.wait / template.wait_bounds.
type WaitConfig struct {
	Min time.Duration `hcl:"min"`
	Max time.Duration `hcl:"max"`
}

// ClientTemplateConfig is client.template.
type ClientTemplateConfig struct {
	FunctionDenylist   []string      `hcl:"function_denylist"`
	FunctionBlacklist  []string      `hcl:"function_blacklist"`
	DisableSandbox     bool          `hcl:"disable_file_sandbox"`
	MaxStale           time.Duration `hcl:"max_stale"`
	BlockQueryWaitTime time.Duration `hcl:"block_query_wait"`
	Wait               *WaitConfig   `hcl:"wait"`
	WaitBounds         *WaitConfig   `hcl:"wait_bounds"`
	ConsulRetry        *RetryConfig  `hcl:"consul_retry"`
	VaultRetry         *RetryConfig  `hcl:"vault_retry"`
	NomadRetry         *RetryConfig  `hcl:"nomad_retry"`
}

// ArtifactConfig is client.artifact.
type ArtifactConfig struct {
	HTTPReadTimeout               time.Duration `hcl:"http_read_timeout"`
	HTTPMaxSize                   string        `hcl:"http_max_size"`
	GCSTimeout                    time.Duration `hcl:"gcs_timeout"`
	GitTimeout                    time.Duration `hcl:"git_timeout"`
	HgTimeout                     time.Duration `hcl:"hg_timeout"`
	S3Timeout                     time.Duration `hcl:"s3_timeout"`
	DecompressionSizeLimit        string        `hcl:"decompression_size_limit"`
	DecompressionFileCountLimit   *int          `hcl:"decompression_file_count_limit"`
	DisableFilesystemIsolation    *bool         `hcl:"disable_filesystem_isolation"`
	FilesystemIsolationExtraPaths []string      `hcl:"filesystem_isolation_extra_paths"`
	SetEnvironmentVariables       string        `hcl:"set_environment_variables"`
}

// DrainConfig is client.drain_on_shutdown: a graceful shutdown of the
// client first drains its node (deadline 0: one hour, Nomad's default;
// force: stop every allocation at once, ignoring migrate blocks).
type DrainConfig struct {
	Deadline         time.Duration `hcl:"deadline"`
	Force            *bool         `hcl:"force"`
	IgnoreSystemJobs *bool         `hcl:"ignore_system_jobs"`
}

// UsersConfig is client.users.
type UsersConfig struct {
	DynamicUserMin *int `hcl:"dynamic_user_min"`
	DynamicUserMax *int `hcl:"dynamic_user_max"`
}
