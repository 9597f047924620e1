package docker

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// TaskConfig is a docker task's `config {}` block.
type TaskConfig struct {
	Image      string
	Command    string
	Args       []string
	Entrypoint []string

	Ports       []string       // group network port labels to publish
	PortMap     map[string]int // legacy: label -> container port
	NetworkMode string
	Hostname    string
	WorkDir     string
	Labels      map[string]string

	Volumes []string
	Mounts  []Mount
	Devices []Device

	CapAdd      []string
	CapDrop     []string
	Privileged  bool
	SecurityOpt []string

	DNSServers       []string
	DNSSearchDomains []string
	DNSOptions       []string
	ExtraHosts       []string

	Ulimit         map[string]string
	ShmSize        int64
	PidsLimit      int64
	ReadonlyRootfs bool
	Init           bool
	Sysctl         map[string]string
	IPCMode        string
	PIDMode        string
	UTSMode        string
	UsernsMode     string
	Runtime        string
	GroupAdd       []string

	ForcePull        bool
	ImagePullTimeout time.Duration
	Load             string
	// ImageFromLoad: the image is the one Load's archive names (Image is
	// resolved from the tarball when the task starts).
	ImageFromLoad bool
	Auth          *Auth
	AuthSoftFail  bool

	LoggingType   string
	LoggingConfig map[string]string

	MemoryHardLimit int64 // MB; memory becomes the reservation
	CPUHardLimit    bool
	CPUCFSPeriod    int64 // µs
	OOMScoreAdj     int64
	TTY             bool
	Interactive     bool
}

// Auth is the task's `auth {}` block for a private registry.
type Auth struct {
	Username      string
	Password      string
	Email         string
	ServerAddress string
}

// Mount is one `mount {}` block.
type Mount struct {
	Type     string // bind, volume, tmpfs
	Target   string
	Source   string
	ReadOnly bool
	// bind_options
	Propagation string
	// volume_options
	NoCopy       bool
	VolumeLabels map[string]string
	VolumeDriver string
	VolumeOpts   map[string]string
	// tmpfs_options
	TmpfsSize int64
	TmpfsMode int64
}

// Device is one `devices {}` block.
type Device struct {
	HostPath          string
	ContainerPath     string
	CgroupPermissions string
}

const defaultImagePullTimeout = 5 * time.Minute

// taskKeys is every key ParseTaskConfig reads (for the error message).
const taskKeys = "image, command, args, entrypoint, ports, port_map, network_mode, hostname, work_dir, labels, " +
	"volumes, mount, devices, cap_add, cap_drop, privileged, security_opt, dns_servers, dns_search_domains, dns_options, " +
	"extra_hosts, ulimit, shm_size, pids_limit, readonly_rootfs, init, sysctl, ipc_mode, pid_mode, uts_mode, userns_mode, " +
	"runtime, group_add, force_pull, image_pull_timeout, load, auth, auth_soft_fail, logging, memory_hard_limit, " +
	"cpu_hard_limit, cpu_cfs_period, oom_score_adj, tty, interactive"

// ValidateTaskConfig checks a task's `config {}` as StartTask reads it. The
// servers call it at registration (through the catalog), so a typo or an
// option Drover does not implement is refused at submit.
func ValidateTaskConfig(m map[string]any) error {
	_, err := ParseTaskConfig(m)
	return err
}

// ParseTaskConfig reads a task's `config {}` block. Every error starts with
// "config: " and names the key.
func ParseTaskConfig(m map[string]any) (*TaskConfig, error) {
	tc := &TaskConfig{ImagePullTimeout: defaultImagePullTimeout}
	for _, k := range sortedKeys(m) {
		if err := tc.set(k, m[k]); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	if strings.TrimSpace(tc.Image) == "" {
		return nil, errors.New(`config: "image" is required`)
	}
	return tc, nil
}

func (tc *TaskConfig) set(k string, v any) (err error) {
	switch k {
	case "image":
		tc.Image, err = asString(k, v)
	case "command":
		tc.Command, err = asString(k, v)
	case "args":
		tc.Args, err = asStringList(k, v)
	case "entrypoint":
		tc.Entrypoint, err = asStringList(k, v)
	case "ports":
		tc.Ports, err = asStringList(k, v)
	case "port_map":
		var sm map[string]any
		if bs, e := asBlocks(k, v); e == nil {
			sm = map[string]any{}
			for _, b := range bs {
				for l, p := range b {
					sm[l] = p
				}
			}
		} else {
			return fmt.Errorf("port_map must be a map of port label to container port, got %s", typeName(v))
		}
		tc.PortMap = map[string]int{}
		for _, l := range sortedKeys(sm) {
			p, e := asInt("port_map."+l, sm[l])
			if e != nil {
				return e
			}
			if p < 1 || p > 65535 {
				return fmt.Errorf("port_map.%s must be a port between 1 and 65535, got %d", l, p)
			}
			tc.PortMap[l] = int(p)
		}
	case "network_mode":
		tc.NetworkMode, err = asString(k, v)
	case "hostname":
		tc.Hostname, err = asString(k, v)
	case "work_dir":
		tc.WorkDir, err = asString(k, v)
	case "labels":
		tc.Labels, err = asStringMap(k, v)
	case "volumes":
		tc.Volumes, err = asStringList(k, v)
		for i, vol := range tc.Volumes {
			if len(strings.Split(vol, ":")) < 2 || len(strings.Split(vol, ":")) > 3 {
				return fmt.Errorf("volumes[%d] must be \"source:target\" or \"source:target:options\", got %q", i, vol)
			}
		}
	case "mount", "mounts":
		var bs []map[string]any
		if bs, err = asBlocks(k, v); err == nil {
			for i, b := range bs {
				mnt, e := parseMount(fmt.Sprintf("mount[%d]", i), b)
				if e != nil {
					return e
				}
				tc.Mounts = append(tc.Mounts, mnt)
			}
		}
	case "devices":
		var bs []map[string]any
		if bs, err = asBlocks(k, v); err == nil {
			for i, b := range bs {
				d, e := parseDevice(fmt.Sprintf("devices[%d]", i), b)
				if e != nil {
					return e
				}
				tc.Devices = append(tc.Devices, d)
			}
		}
	case "cap_add":
		tc.CapAdd, err = asStringList(k, v)
	case "cap_drop":
		tc.CapDrop, err = asStringList(k, v)
	case "privileged":
		tc.Privileged, err = asBool(k, v)
	case "security_opt":
		tc.SecurityOpt, err = asStringList(k, v)
	case "dns_servers":
		tc.DNSServers, err = asStringList(k, v)
	case "dns_search_domains":
		tc.DNSSearchDomains, err = asStringList(k, v)
	case "dns_options":
		tc.DNSOptions, err = asStringList(k, v)
	case "extra_hosts":
		tc.ExtraHosts, err = asStringList(k, v)
		for i, h := range tc.ExtraHosts {
			if !strings.Contains(h, ":") {
				return fmt.Errorf("extra_hosts[%d] must be \"host:ip\", got %q", i, h)
			}
		}
	case "ulimit":
		tc.Ulimit, err = asStringMap(k, v)
		if err == nil {
			for _, name := range sortStrings(keysOf(tc.Ulimit)) {
				if _, e := parseUlimit(name, tc.Ulimit[name]); e != nil {
					return e
				}
			}
		}
	case "shm_size":
		tc.ShmSize, err = asInt(k, v)
		if err == nil && tc.ShmSize < 0 {
			err = errors.New("shm_size must not be negative")
		}
	case "pids_limit":
		tc.PidsLimit, err = asInt(k, v)
		if err == nil && tc.PidsLimit < 0 {
			err = errors.New("pids_limit must not be negative")
		}
	case "readonly_rootfs":
		tc.ReadonlyRootfs, err = asBool(k, v)
	case "init":
		tc.Init, err = asBool(k, v)
	case "sysctl":
		tc.Sysctl, err = asStringMap(k, v)
	case "ipc_mode":
		tc.IPCMode, err = asString(k, v)
	case "pid_mode":
		tc.PIDMode, err = asString(k, v)
	case "uts_mode":
		tc.UTSMode, err = asString(k, v)
	case "userns_mode":
		tc.UsernsMode, err = asString(k, v)
	case "runtime":
		tc.Runtime, err = asString(k, v)
	case "group_add":
		tc.GroupAdd, err = asStringList(k, v)
	case "force_pull":
		tc.ForcePull, err = asBool(k, v)
	case "image_pull_timeout":
		tc.ImagePullTimeout, err = asDuration(k, v)
	case "load":
		tc.Load, err = asString(k, v)
	case "auth":
		var b map[string]any
		if b, err = asBlock(k, v); err == nil {
			tc.Auth, err = parseAuth(b)
		}
	case "auth_soft_fail":
		tc.AuthSoftFail, err = asBool(k, v)
	case "logging":
		var b map[string]any
		if b, err = asBlock(k, v); err == nil {
			err = tc.parseLogging(b)
		}
	case "memory_hard_limit":
		tc.MemoryHardLimit, err = asInt(k, v)
		if err == nil && tc.MemoryHardLimit < 0 {
			err = errors.New("memory_hard_limit must not be negative")
		}
	case "cpu_hard_limit":
		tc.CPUHardLimit, err = asBool(k, v)
	case "cpu_cfs_period":
		tc.CPUCFSPeriod, err = asInt(k, v)
		if err == nil && (tc.CPUCFSPeriod < 0 || tc.CPUCFSPeriod > 1000000) {
			err = errors.New("cpu_cfs_period must be between 0 and 1000000 microseconds")
		}
	case "oom_score_adj":
		tc.OOMScoreAdj, err = asInt(k, v)
		if err == nil && tc.OOMScoreAdj < 0 {
			err = errors.New("oom_score_adj must not be negative")
		}
	case "tty":
		tc.TTY, err = asBool(k, v)
	case "interactive":
		tc.Interactive, err = asBool(k, v)
	case "mac_address", "ipv4_address", "ipv6_address", "advertise_ipv6_address", "healthchecks",
		"isolation", "storage_opt", "cpuset_cpus", "image_pull_retries", "container_exists_attempts", "network_aliases":
		err = fmt.Errorf("%s is not supported by Drover's docker driver yet; remove it", k)
	default:
		err = fmt.Errorf("unknown key %q (docker takes %s)", k, taskKeys)
	}
	return err
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func parseAuth(b map[string]any) (*Auth, error) {
	a := &Auth{}
	for _, k := range sortedKeys(b) {
		var err error
		switch k {
		case "username":
			a.Username, err = asString("auth.username", b[k])
		case "password":
			a.Password, err = asString("auth.password", b[k])
		case "email":
			a.Email, err = asString("auth.email", b[k])
		case "server_address":
			a.ServerAddress, err = asString("auth.server_address", b[k])
		default:
			err = fmt.Errorf("unknown key %q in auth (it takes username, password, email, server_address)", k)
		}
		if err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (tc *TaskConfig) parseLogging(b map[string]any) error {
	for _, k := range sortedKeys(b) {
		var err error
		switch k {
		case "type", "driver":
			tc.LoggingType, err = asString("logging."+k, b[k])
			if err == nil {
				err = checkLogDriver("logging."+k, tc.LoggingType)
			}
		case "config":
			tc.LoggingConfig, err = asStringMap("logging.config", b[k])
		default:
			err = fmt.Errorf("unknown key %q in logging (it takes type, config)", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func parseMount(path string, b map[string]any) (Mount, error) {
	mnt := Mount{Type: "volume"}
	for _, k := range sortedKeys(b) {
		key := path + "." + k
		v := b[k]
		var err error
		switch k {
		case "type":
			mnt.Type, err = asString(key, v)
		case "target":
			mnt.Target, err = asString(key, v)
		case "source":
			mnt.Source, err = asString(key, v)
		case "readonly":
			mnt.ReadOnly, err = asBool(key, v)
		case "bind_options":
			var o map[string]any
			if o, err = asBlock(key, v); err == nil {
				for _, ok := range sortedKeys(o) {
					if ok != "propagation" {
						return mnt, fmt.Errorf("unknown key %q in %s (it takes propagation)", ok, key)
					}
					if mnt.Propagation, err = asString(key+".propagation", o[ok]); err != nil {
						return mnt, err
					}
				}
			}
		case "volume_options":
			var o map[string]any
			if o, err = asBlock(key, v); err == nil {
				err = parseVolumeOptions(key, o, &mnt)
			}
		case "tmpfs_options":
			var o map[string]any
			if o, err = asBlock(key, v); err == nil {
				for _, ok := range sortedKeys(o) {
					switch ok {
					case "size":
						mnt.TmpfsSize, err = asInt(key+".size", o[ok])
					case "mode":
						mnt.TmpfsMode, err = asInt(key+".mode", o[ok])
					default:
						err = fmt.Errorf("unknown key %q in %s (it takes size, mode)", ok, key)
					}
					if err != nil {
						return mnt, err
					}
				}
			}
		default:
			err = fmt.Errorf("unknown key %q in %s (it takes type, target, source, readonly, bind_options, volume_options, tmpfs_options)", k, path)
		}
		if err != nil {
			return mnt, err
		}
	}
	switch mnt.Type {
	case "bind", "volume", "tmpfs":
	default:
		return mnt, fmt.Errorf("%s.type must be bind, volume or tmpfs, got %q", path, mnt.Type)
	}
	if mnt.Target == "" {
		return mnt, fmt.Errorf("%s.target is required", path)
	}
	if mnt.Type == "bind" && mnt.Source == "" {
		return mnt, fmt.Errorf("%s.source is required for a bind mount", path)
	}
	if mnt.Type == "tmpfs" && mnt.Source != "" {
		return mnt, fmt.Errorf("%s.source must be empty for a tmpfs mount", path)
	}
	return mnt, nil
}

func parseVolumeOptions(key string, o map[string]any, mnt *Mount) error {
	for _, k := range sortedKeys(o) {
		var err error
		switch k {
		case "no_copy":
			mnt.NoCopy, err = asBool(key+".no_copy", o[k])
		case "labels":
			mnt.VolumeLabels, err = asStringMap(key+".labels", o[k])
		case "driver_config":
			var dc map[string]any
			if dc, err = asBlock(key+".driver_config", o[k]); err == nil {
				for _, dk := range sortedKeys(dc) {
					switch dk {
					case "name":
						mnt.VolumeDriver, err = asString(key+".driver_config.name", dc[dk])
					case "options":
						mnt.VolumeOpts, err = asStringMap(key+".driver_config.options", dc[dk])
					default:
						err = fmt.Errorf("unknown key %q in %s.driver_config (it takes name, options)", dk, key)
					}
					if err != nil {
						return err
					}
				}
			}
		default:
			err = fmt.Errorf("unknown key %q in %s (it takes no_copy, labels, driver_config)", k, key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func parseDevice(path string, b map[string]any) (Device, error) {
	var d Device
	for _, k := range sortedKeys(b) {
		var err error
		switch k {
		case "host_path":
			d.HostPath, err = asString(path+".host_path", b[k])
		case "container_path":
			d.ContainerPath, err = asString(path+".container_path", b[k])
		case "cgroup_permissions":
			d.CgroupPermissions, err = asString(path+".cgroup_permissions", b[k])
		default:
			err = fmt.Errorf("unknown key %q in %s (it takes host_path, container_path, cgroup_permissions)", k, path)
		}
		if err != nil {
			return d, err
		}
	}
	if d.HostPath == "" {
		return d, fmt.Errorf("%s.host_path is required", path)
	}
	return d, nil
}
