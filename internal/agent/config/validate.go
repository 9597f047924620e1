package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/drivers/catalog"
	"github.com/drover-project/drover/internal/structs"
)

// Validate checks the final, merged configuration: value ranges, required
// settings, and the feature gates of features.go. All problems are returned
// together (errors.Join of *Error); nil means the agent may start.
// maxEventBufferSize bounds server.event_buffer_size: the ring is
// allocated at start, and each entry kept holds its changed objects.
const maxEventBufferSize = 1_000_000

func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	serverOn := c.Server != nil && c.Server.Enabled
	clientOn := c.Client != nil && c.Client.Enabled
	if !serverOn && !clientOn && !c.DevMode {
		bad("server.enabled", "neither server nor client is enabled: set server { enabled = true }, client { enabled = true }, or run with -dev, -server or -client")
	}
	if c.DataDir == "" && !c.DevMode && (serverOn || clientOn) {
		bad("data_dir", "data_dir must be set (outside -dev the agent keeps its state there)")
	}
	if c.DataDir != "" && !filepath.IsAbs(c.DataDir) {
		bad("data_dir", "data_dir must be an absolute path, got %q", c.DataDir)
	}
	switch strings.ToUpper(c.LogLevel) {
	case "", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF":
	default:
		bad("log_level", "log_level %q is not one of TRACE, DEBUG, INFO, WARN, ERROR, OFF", c.LogLevel)
	}
	if c.Ports != nil {
		for _, p := range []struct {
			k string
			v int
		}{{"ports.http", c.Ports.HTTP}, {"ports.rpc", c.Ports.RPC}, {"ports.serf", c.Ports.Serf}} {
			if p.v < 1 || p.v > 65535 {
				bad(p.k, "%s must be between 1 and 65535, got %d", p.k, p.v)
			}
		}
	}
	if c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil {
		bad("bind_addr", "bind_addr %q is not an IP address", c.BindAddr)
	}
	if c.LogRotateBytes < 0 || c.LogRotateMaxFiles < 0 {
		bad("log_rotate_bytes", "log_rotate_bytes and log_rotate_max_files must not be negative")
	}
	if l := c.Limits; l != nil && l.HTTPMaxBodySize != "" {
		if n, err := ParseSize(l.HTTPMaxBodySize); err != nil {
			bad("limits.http_max_body_size", "limits.http_max_body_size: %v", err)
		} else if n < 1024 {
			bad("limits.http_max_body_size", "limits.http_max_body_size must be at least 1KiB, got %q", l.HTTPMaxBodySize)
		}
	}
	if s := c.Server; s != nil {
		errs = append(errs, s.validate()...)
	}
	if cl := c.Client; cl != nil {
		errs = append(errs, cl.validate()...)
	}
	if t := c.Telemetry; t != nil {
		errs = append(errs, t.validate()...)
	}
	errs = append(errs, c.validateReplication()...)
	errs = append(errs, c.checkPlugins()...)
	errs = append(errs, c.validateTLS()...)
	errs = append(errs, c.checkFeatureGates()...)
	for _, err := range errs {
		if e, ok := err.(*Error); ok {
			c.locate(e)
		}
	}
	return errors.Join(errs...)
}

func (s *ServerConfig) validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if s.BootstrapExpect < 0 {
		bad("server.bootstrap_expect", "server.bootstrap_expect must not be negative, got %d", s.BootstrapExpect)
	}
	switch s.RaftProtocol {
	case 0, 2, 3:
	default:
		bad("server.raft_protocol", "server.raft_protocol must be 2 or 3, got %d", s.RaftProtocol)
	}
	if s.RaftMultiplier != nil && (*s.RaftMultiplier < 1 || *s.RaftMultiplier > 10) {
		bad("server.raft_multiplier", "server.raft_multiplier must be between 1 and 10, got %d", *s.RaftMultiplier)
	}
	if s.NumSchedulers != nil && *s.NumSchedulers < 0 {
		bad("server.num_schedulers", "server.num_schedulers must not be negative")
	}
	if s.GCHeapFloorMB != nil && *s.GCHeapFloorMB < 0 {
		bad("server.gc_heap_floor_mb", "server.gc_heap_floor_mb must not be negative (0 turns the floor off)")
	}
	if s.JobMaxSourceSize != "" {
		if _, err := ParseSize(s.JobMaxSourceSize); err != nil {
			bad("server.job_max_source_size", "server.job_max_source_size: %v", err)
		}
	}
	if s.MaxHeartbeatsPerSecond < 0 {
		bad("server.max_heartbeats_per_second", "server.max_heartbeats_per_second must be positive")
	}
	if s.HeartbeatGrace < 0 || s.MinHeartbeatTTL < 0 || s.FailoverHeartbeatTTL < 0 {
		bad("server.heartbeat_grace", "server heartbeat durations (heartbeat_grace, min_heartbeat_ttl, failover_heartbeat_ttl) must not be negative")
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"job_gc_interval", s.JobGCInterval}, {"job_gc_threshold", s.JobGCThreshold}, {"eval_gc_threshold", s.EvalGCThreshold},
		{"batch_eval_gc_threshold", s.BatchEvalGCThreshold}, {"deployment_gc_threshold", s.DeploymentGCThreshold},
		{"node_gc_threshold", s.NodeGCThreshold}} {
		if d.v < 0 {
			bad("server."+d.key, "server.%s must not be negative, got %s", d.key, d.v)
		}
	}
	if s.EncryptKey != "" {
		k, err := base64.StdEncoding.DecodeString(s.EncryptKey)
		if err != nil || (len(k) != 16 && len(k) != 24 && len(k) != 32) {
			bad("server.encrypt", "server.encrypt must be a base64-encoded 16, 24 or 32 byte key (for example the output of `openssl rand -base64 32`)")
		}
	}
	maxPrio := 100
	if s.JobMaxPriority != nil {
		maxPrio = *s.JobMaxPriority
		if maxPrio < 100 || maxPrio > 32766 {
			bad("server.job_max_priority", "server.job_max_priority must be between 100 and 32766, got %d", maxPrio)
		}
	}
	if s.JobDefaultPriority != nil && (*s.JobDefaultPriority < 50 || *s.JobDefaultPriority > maxPrio) {
		bad("server.job_default_priority", "server.job_default_priority must be between 50 and job_max_priority (%d), got %d", maxPrio, *s.JobDefaultPriority)
	}
	if s.JobMaxCount != nil && *s.JobMaxCount < 0 {
		bad("server.job_max_count", "server.job_max_count must not be negative, got %d (0 turns the limit off)", *s.JobMaxCount)
	}
	if n := s.EventBufferSize; n != nil && (*n < 1 || *n > maxEventBufferSize) {
		bad("server.event_buffer_size", "server.event_buffer_size must be between 1 and %d entries, got %d (enable_event_broker = false turns the event stream off)", maxEventBufferSize, *n)
	}
	if s.DeploymentQueryRateLimit < 0 {
		bad("server.deploy_query_rate_limit", "server.deploy_query_rate_limit must be greater than 0 (queries per second), got %v", s.DeploymentQueryRateLimit)
	}
	for _, sch := range s.EnabledSchedulers {
		switch sch {
		case "service", "batch", "system", "sysbatch", "_core":
		default:
			bad("server.enabled_schedulers", "server.enabled_schedulers: unknown scheduler %q (service, batch, system, sysbatch, _core)", sch)
		}
	}
	if dsc := s.DefaultSchedulerConfig; dsc != nil {
		switch dsc.SchedulerAlgorithm {
		case "", "binpack", "spread":
		default:
			bad("server.default_scheduler_config.scheduler_algorithm", "scheduler_algorithm must be \"binpack\" or \"spread\", got %q", dsc.SchedulerAlgorithm)
		}
	}
	return errs
}

func (c *ClientConfig) validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if c.MinDynamicPort != 0 || c.MaxDynamicPort != 0 {
		if c.MinDynamicPort < 1 || c.MaxDynamicPort > 65535 || c.MinDynamicPort > c.MaxDynamicPort {
			bad("client.min_dynamic_port", "client dynamic port range %d-%d is invalid: need 1 <= min_dynamic_port <= max_dynamic_port <= 65535", c.MinDynamicPort, c.MaxDynamicPort)
		}
	}
	for _, g := range []struct {
		k string
		v float64
	}{{"client.gc_disk_usage_threshold", c.GCDiskUsageThreshold}, {"client.gc_inode_usage_threshold", c.GCInodeUsageThreshold}} {
		if g.v < 0 || g.v > 100 {
			bad(g.k, "%s is a percentage (0-100), got %v", g.k, g.v)
		}
	}
	if c.NodePool != "" && (c.NodePool == structs.AllNodePool || !structs.ValidNodePoolName(c.NodePool)) {
		bad("client.node_pool", "client.node_pool %q is not a node pool a client can join: use 1 to 128 letters, digits, '-' or '_', and not \"all\"", c.NodePool)
	}
	if c.GCMaxAllocs < 0 || c.GCParallelDestroys < 0 || c.NodeMaxAllocs < 0 {
		bad("client.gc_max_allocs", "client gc_max_allocs, gc_parallel_destroys and node_max_allocs must not be negative")
	}
	if d := c.DrainOnShutdown; d != nil && d.Deadline < 0 {
		bad("client.drain_on_shutdown.deadline", "client.drain_on_shutdown.deadline must not be negative, got %s (use force = true to stop every allocation at once)", d.Deadline)
	}
	if a := c.Artifact; a != nil {
		for _, f := range []struct{ key, val string }{{"http_max_size", a.HTTPMaxSize}, {"decompression_size_limit", a.DecompressionSizeLimit}} {
			if f.val == "" {
				continue
			}
			if _, err := ParseSize(f.val); err != nil {
				bad("client.artifact."+f.key, "client.artifact.%s: %v", f.key, err)
			}
		}
		for _, f := range []struct {
			key string
			d   time.Duration
		}{{"http_read_timeout", a.HTTPReadTimeout}, {"gcs_timeout", a.GCSTimeout}, {"git_timeout", a.GitTimeout}, {"hg_timeout", a.HgTimeout}, {"s3_timeout", a.S3Timeout}} {
			if f.d < 0 {
				bad("client.artifact."+f.key, "client.artifact.%s must not be negative, got %s", f.key, f.d)
			}
		}
		if n := a.DecompressionFileCountLimit; n != nil && *n < 0 {
			bad("client.artifact.decompression_file_count_limit", "client.artifact.decompression_file_count_limit must not be negative, got %d (0 is no limit)", *n)
		}
	}
	if c.MaxKillTimeout < 0 || c.GCInterval < 0 {
		bad("client.max_kill_timeout", "client max_kill_timeout and gc_interval must not be negative")
	}
	if _, err := structs.ParseCores(c.ReservableCores); err != nil {
		bad("client.reservable_cores", "client.reservable_cores: %v", err)
	}
	if c.Reserved != nil {
		if _, err := ParsePortRanges(c.Reserved.ReservedPorts); err != nil {
			bad("client.reserved.reserved_ports", "client.reserved.reserved_ports: %v", err)
		}
		if _, err := structs.ParseCores(c.Reserved.Cores); err != nil {
			bad("client.reserved.cores", "client.reserved.cores: %v", err)
		}
		if c.Reserved.CPU < 0 || c.Reserved.MemoryMB < 0 || c.Reserved.DiskMB < 0 {
			bad("client.reserved", "client.reserved cpu, memory and disk must not be negative")
		}
	}
	for name, hv := range c.HostVolumes {
		if hv == nil || hv.Path == "" {
			bad("client.host_volume."+name, "client.host_volume %q needs a path", name)
		} else if !filepath.IsAbs(hv.Path) {
			bad("client.host_volume."+name, "client.host_volume %q: path must be absolute, got %q", name, hv.Path)
		}
	}
	// chroot_env: a relative host path would be read from wherever the
	// agent was started, an empty one silently skipped.
	for _, host := range slices.Sorted(maps.Keys(c.ChrootEnv)) {
		dst := c.ChrootEnv[host]
		if !filepath.IsAbs(host) {
			bad("client.chroot_env", "client.chroot_env: host path %q must be absolute", host)
		} else if !filepath.IsAbs(dst) {
			bad("client.chroot_env", "client.chroot_env: %q is mounted at %q in the task, which must be an absolute path", host, dst)
		}
	}
	for name, hn := range c.HostNetworks {
		if hn == nil || (hn.CIDR == "" && hn.Interface == "") {
			bad("client.host_network."+name, "client.host_network %q needs a cidr or an interface", name)
			continue
		}
		if hn.CIDR != "" {
			if _, _, err := net.ParseCIDR(hn.CIDR); err != nil {
				bad("client.host_network."+name, "client.host_network %q: invalid cidr %q", name, hn.CIDR)
			}
		}
		if _, err := ParsePortRanges(hn.ReservedPorts); err != nil {
			bad("client.host_network."+name, "client.host_network %q reserved_ports: %v", name, err)
		}
	}
	switch c.PreferredAddressFamily {
	case "", "ipv4", "ipv6":
	default:
		bad("client.preferred_address_family", "client.preferred_address_family must be \"ipv4\" or \"ipv6\", got %q", c.PreferredAddressFamily)
	}
	return errs
}

// ParsePortRanges parses a reserved-ports spec such as "22,80,8000-8100"
// into the individual ports, rejecting ports outside 1-65535.
func ParsePortRanges(spec string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("%q is not a port or range", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				return nil, fmt.Errorf("%q is not a port or range", part)
			}
		}
		if a < 1 || b > 65535 || a > b {
			return nil, fmt.Errorf("%q is outside 1-65535 or reversed", part)
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out, nil
}

func (t *Telemetry) validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, d := range []struct {
		k string
		v time.Duration
	}{{"telemetry.collection_interval", t.CollectionInterval},
		{"telemetry.in_memory_collection_interval", t.InMemoryCollectionInterval},
		{"telemetry.in_memory_retention_period", t.InMemoryRetentionPeriod}} {
		if d.v < 0 {
			bad(d.k, "%s must not be negative, got %s", d.k, d.v)
		}
	}
	if t.InMemoryCollectionInterval > 0 && t.InMemoryRetentionPeriod > 0 && t.InMemoryRetentionPeriod < t.InMemoryCollectionInterval {
		bad("telemetry.in_memory_retention_period", "telemetry.in_memory_retention_period (%s) must be at least in_memory_collection_interval (%s)",
			t.InMemoryRetentionPeriod, t.InMemoryCollectionInterval)
	}
	for _, r := range t.PrefixFilter {
		if len(r) < 2 || (r[0] != '+' && r[0] != '-') {
			bad("telemetry.prefix_filter", "telemetry.prefix_filter entry %q must be a metric prefix after + (allow) or - (block), e.g. \"+nomad.raft\"", r)
		}
	}
	return errs
}

// checkPlugins refuses a `plugin "<name>"` block for a driver or device
// plugin Drover does not have (Nomad would load it from plugin_dir or has it
// built in, e.g. docker): its tasks would never run, and the block would
// look like it configured something. A built-in plugin's config is checked
// against the options it reads, so a typo is not silently ignored.
func (c *Config) checkPlugins() []error {
	names := make([]string, 0, len(c.Plugins))
	for n := range c.Plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if !catalog.IsPlugin(n) {
			errs = append(errs, &Error{Key: "plugin." + n, Msg: fmt.Sprintf(
				"plugin %q is not a task driver or device plugin built into Drover (built in: %s); remove the block",
				n, strings.Join(catalog.PluginNames(), ", "))})
			continue
		}
		if p := c.Plugins[n]; p != nil {
			if err := catalog.CheckPluginConfig(n, p.Config); err != nil {
				errs = append(errs, &Error{Key: "plugin." + n, Msg: fmt.Sprintf("plugin %q %v", n, err)})
			}
		}
	}
	return errs
}

// validateReplication checks ACL replication (server.authoritative_region,
// acl.replication_token): a server with ACLs on in a region other than the
// authoritative one mirrors the global ACL objects from there and needs a
// token to read them with; a token that is not a secret ID could never
// work.
func (c *Config) validateReplication() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &Error{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	token := ""
	if c.ACL != nil {
		token = c.ACL.ReplicationToken
	}
	if token != "" {
		if _, err := uuid.Parse(token); err != nil {
			bad("acl.replication_token", "acl.replication_token must be the secret ID (a UUID) of a management token of the authoritative region")
		}
	}
	s := c.Server
	if s == nil || !s.Enabled || c.ACL == nil || !c.ACL.Enabled {
		return errs
	}
	if strings.TrimSpace(s.AuthoritativeRegion) != s.AuthoritativeRegion {
		bad("server.authoritative_region", "server.authoritative_region %q must not have surrounding spaces", s.AuthoritativeRegion)
	}
	region := c.Region
	if region == "" {
		region = "global"
	}
	if s.AuthoritativeRegion != "" && s.AuthoritativeRegion != region && token == "" {
		bad("acl.replication_token", "acl.replication_token must be set: this server's region %q is not the authoritative region %q (server.authoritative_region), and it replicates the ACL policies and global tokens from there with that token (a management token of %q)", region, s.AuthoritativeRegion, s.AuthoritativeRegion)
	}
	return errs
}
