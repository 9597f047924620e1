package docker

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-connections/nat"
	"github.com/docker/go-units"

	"github.com/drover-project/drover/internal/drivers"
)

// Where the allocation's directories appear inside every container, as in
// Nomad.
const (
	containerAllocDir   = "/alloc"
	containerLocalDir   = "/local"
	containerSecretsDir = "/secrets"
)

// Labels Drover puts on its containers.
const (
	labelAllocID = "com.hashicorp.nomad.alloc_id"
	labelPrefix  = "com.hashicorp.nomad."
	// labelTaskID marks the container of one task run, so a container left
	// behind by a crash is found again.
	labelTaskID = "io.drover.task_id"
)

// createSpec is everything ContainerCreate takes.
type createSpec struct {
	Name   string
	Config *container.Config
	Host   *container.HostConfig
}

// buildCreateSpec translates a task into the engine's container
// configuration for the driver's flavor. It is pure: no engine, no host
// access.
func buildCreateSpec(pc *PluginConfig, fl Flavor, cfg *drivers.TaskConfig, tc *TaskConfig, image string) (*createSpec, error) {
	if tc.Privileged && !pc.AllowPrivileged {
		return nil, fmt.Errorf(`privileged containers are disabled on this client: the agent's plugin %q config must set allow_privileged = true`, pc.pluginName())
	}
	if err := checkCaps(pc.AllowCaps, tc.CapAdd); err != nil {
		return nil, err
	}
	if (len(tc.Volumes) > 0 || hasHostBind(tc.Mounts)) && !pc.VolumesEnabled {
		// Binds inside the task dir are always allowed, as in Nomad.
		for _, v := range tc.Volumes {
			if src := strings.SplitN(v, ":", 2)[0]; filepath.IsAbs(src) || !isPathLike(src) {
				return nil, fmt.Errorf("volumes: %q mounts a host path or named volume, but volumes are disabled on this client (plugin %q config volumes.enabled = true allows them)", v, pc.pluginName())
			}
		}
		for _, m := range tc.Mounts {
			if m.Type == "bind" && filepath.IsAbs(m.Source) {
				return nil, fmt.Errorf("mount: bind of host path %q is not allowed while volumes are disabled on this client (plugin %q config volumes.enabled = true allows it)", m.Source, pc.pluginName())
			}
		}
	}
	if tc.Runtime != "" && !contains(pc.AllowRuntimes, tc.Runtime) {
		return nil, fmt.Errorf("runtime %q is not allowed on this client (allow_runtimes: %s)", tc.Runtime, strings.Join(pc.AllowRuntimes, ", "))
	}
	if pc.PidsLimit > 0 && tc.PidsLimit > pc.PidsLimit {
		return nil, fmt.Errorf("pids_limit %d is above this client's limit of %d", tc.PidsLimit, pc.PidsLimit)
	}

	env := containerEnv(cfg.Env)
	c := &container.Config{
		Image:      image,
		Hostname:   tc.Hostname,
		WorkingDir: tc.WorkDir,
		Env:        env,
		Labels:     containerLabels(pc, cfg, tc),
		Tty:        tc.TTY,
		OpenStdin:  tc.Interactive,
	}
	if cfg.User != "" {
		c.User = cfg.User
	}
	if len(tc.Entrypoint) > 0 {
		c.Entrypoint = tc.Entrypoint
	}
	if tc.Command != "" {
		c.Cmd = append([]string{tc.Command}, tc.Args...)
	} else if len(tc.Args) > 0 {
		c.Cmd = append([]string(nil), tc.Args...)
	}

	h := &container.HostConfig{
		Privileged:     tc.Privileged,
		CapAdd:         tc.CapAdd,
		CapDrop:        tc.CapDrop,
		SecurityOpt:    tc.SecurityOpt,
		DNS:            tc.DNSServers,
		DNSSearch:      tc.DNSSearchDomains,
		DNSOptions:     tc.DNSOptions,
		ExtraHosts:     tc.ExtraHosts,
		ShmSize:        tc.ShmSize,
		ReadonlyRootfs: tc.ReadonlyRootfs,
		Sysctls:        tc.Sysctl,
		IpcMode:        container.IpcMode(tc.IPCMode),
		PidMode:        container.PidMode(tc.PIDMode),
		UTSMode:        container.UTSMode(tc.UTSMode),
		UsernsMode:     container.UsernsMode(tc.UsernsMode),
		Runtime:        tc.Runtime,
		GroupAdd:       tc.GroupAdd,
		OomScoreAdj:    int(tc.OOMScoreAdj),
		NetworkMode:    container.NetworkMode(tc.NetworkMode),
	}
	if tc.Init {
		t := true
		h.Init = &t
	}
	h.LogConfig = container.LogConfig{Type: pc.LoggingType, Config: pc.LoggingConfig}
	if tc.LoggingType != "" || tc.LoggingConfig != nil {
		h.LogConfig = container.LogConfig{Type: tc.LoggingType, Config: tc.LoggingConfig}
		if h.LogConfig.Type == "" {
			h.LogConfig.Type = pc.LoggingType
		}
	}
	if cfg.NetNS != "" {
		// A group in bridge mode: the task joins the allocation's
		// namespace, which the client configured; its ports are mapped
		// there, not by the engine.
		if tc.NetworkMode != "" {
			return nil, fmt.Errorf("network_mode %q: the group network is in bridge mode; remove network_mode", tc.NetworkMode)
		}
		if fl.Podman {
			// podman joins a namespace by its path (as `--network
			// ns:<path>`, which its compatible API takes as the network
			// mode) and keeps managing the container's hostname,
			// resolv.conf and hosts file there.
			h.NetworkMode = container.NetworkMode("ns:" + cfg.NetNS)
		} else {
			// Docker joins another container's namespace only: the
			// allocation's pause container. The engine refuses these for
			// a container joining another's network; say which key, as
			// the task wrote it.
			for _, k := range []struct {
				key string
				set bool
			}{{"hostname", tc.Hostname != ""}, {"dns_servers", len(tc.DNSServers) > 0},
				{"dns_search_domains", len(tc.DNSSearchDomains) > 0}, {"dns_options", len(tc.DNSOptions) > 0},
				{"extra_hosts", len(tc.ExtraHosts) > 0}} {
				if k.set {
					return nil, fmt.Errorf("%s: cannot be set on a docker task whose group network is in bridge mode", k.key)
				}
			}
			h.NetworkMode = container.NetworkMode("container:" + PauseName(cfg.AllocID))
		}
	}
	if h.NetworkMode == "" {
		h.NetworkMode = "bridge"
	}

	if err := setResources(h, cfg, tc); err != nil {
		return nil, err
	}
	for _, name := range sortStrings(keysOf(tc.Ulimit)) {
		u, err := parseUlimit(name, tc.Ulimit[name])
		if err != nil {
			return nil, err
		}
		h.Ulimits = append(h.Ulimits, u)
	}
	for _, d := range tc.Devices {
		cp, perm := d.ContainerPath, d.CgroupPermissions
		if cp == "" {
			cp = d.HostPath
		}
		if perm == "" {
			perm = "rwm"
		}
		h.Devices = append(h.Devices, container.DeviceMapping{PathOnHost: d.HostPath, PathInContainer: cp, CgroupPermissions: perm})
	}

	binds, mounts, err := buildMounts(pc, cfg, tc)
	if err != nil {
		return nil, err
	}
	h.Binds, h.Mounts = binds, mounts

	exposed, bindings, err := buildPorts(cfg, tc)
	if err != nil {
		return nil, err
	}
	if len(bindings) > 0 && cfg.NetNS == "" {
		if h.NetworkMode.IsHost() || h.NetworkMode.IsNone() || h.NetworkMode.IsContainer() {
			return nil, fmt.Errorf("ports cannot be published with network_mode %q: remove ports or use the default bridge network", tc.NetworkMode)
		}
		c.ExposedPorts, h.PortBindings = exposed, bindings
	}
	return &createSpec{Name: containerName(cfg), Config: c, Host: h}, nil
}

// containerName is unique per allocation and task, as in Nomad.
func containerName(cfg *drivers.TaskConfig) string {
	return strings.NewReplacer("/", "-", " ", "_").Replace(cfg.Name + "-" + cfg.AllocID)
}

// containerEnv is the task environment with the allocation's directories
// as the container sees them.
func containerEnv(env map[string]string) []string {
	m := make(map[string]string, len(env)+3)
	for k, v := range env {
		m[k] = v
	}
	m["NOMAD_ALLOC_DIR"] = containerAllocDir
	m["NOMAD_TASK_DIR"] = containerLocalDir
	m["NOMAD_SECRETS_DIR"] = containerSecretsDir
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func containerLabels(pc *PluginConfig, cfg *drivers.TaskConfig, tc *TaskConfig) map[string]string {
	l := map[string]string{}
	for k, v := range tc.Labels {
		l[k] = v
	}
	l[labelAllocID] = cfg.AllocID
	l[labelTaskID] = cfg.ID
	extra := map[string]string{
		"job_name":        cfg.JobName,
		"job_id":          cfg.JobID,
		"task_group_name": cfg.TaskGroupName,
		"task_name":       cfg.Name,
		"namespace":       cfg.Namespace,
		"node_id":         cfg.NodeID,
		"node_name":       cfg.NodeName,
	}
	for _, want := range pc.ExtraLabels {
		for k, v := range extra {
			if ok, _ := filepath.Match(want, k); ok {
				l[labelPrefix+k] = v
			}
		}
	}
	return l
}

func setResources(h *container.HostConfig, cfg *drivers.TaskConfig, tc *TaskConfig) error {
	// Reserved cores, else the node's shared cpuset (kept off the cores
	// other tasks reserved; UpdateCpuset follows its changes).
	h.CpusetCpus = cfg.Cpus()
	r := cfg.Resources
	if r == nil {
		return nil
	}
	const mb = 1 << 20
	memMB, maxMB := r.Memory.MemoryMB, r.Memory.MemoryMaxMB
	if maxMB == 0 && tc.MemoryHardLimit > 0 {
		maxMB = tc.MemoryHardLimit
	}
	switch {
	case maxMB > 0 && maxMB < memMB:
		return fmt.Errorf("memory_max (%d MB) must not be below memory (%d MB)", maxMB, memMB)
	case maxMB > 0:
		h.Memory = maxMB * mb
		h.MemoryReservation = memMB * mb
	case memMB > 0:
		h.Memory = memMB * mb
	}
	if h.Memory > 0 {
		h.MemorySwap = h.Memory // no swap beyond the limit
	}
	if shares := r.Cpu.CpuShares; shares > 0 {
		h.CPUShares = shares
		if h.CPUShares < 2 {
			h.CPUShares = 2
		}
	}
	if tc.CPUHardLimit {
		period := tc.CPUCFSPeriod
		if period == 0 {
			period = 100000
		}
		total := cfg.CPUTotalCompute
		if total <= 0 {
			return fmt.Errorf("cpu_hard_limit needs the node's total CPU compute, which this client did not report")
		}
		cores := int64(runtime.NumCPU())
		quota := r.Cpu.CpuShares * period * cores / total
		if quota < 1000 {
			quota = 1000 // the kernel's minimum
		}
		h.CPUPeriod, h.CPUQuota = period, quota
	}
	if tc.PidsLimit > 0 {
		p := tc.PidsLimit
		h.PidsLimit = &p
	}
	return nil
}

// buildMounts mounts the allocation's directories as Nomad does and adds
// the task's volumes and mounts. Relative sources are inside the task dir.
func buildMounts(pc *PluginConfig, cfg *drivers.TaskConfig, tc *TaskConfig) ([]string, []mount.Mount, error) {
	var binds []string
	if cfg.AllocDir != "" && cfg.TaskDir != "" {
		binds = append(binds,
			filepath.Join(cfg.AllocDir, "alloc")+":"+containerAllocDir,
			filepath.Join(cfg.TaskDir, "local")+":"+containerLocalDir,
			filepath.Join(cfg.TaskDir, "secrets")+":"+containerSecretsDir,
		)
	}
	for _, v := range tc.Volumes {
		parts := strings.SplitN(v, ":", 3)
		src := parts[0]
		if isPathLike(src) && !filepath.IsAbs(src) {
			src = filepath.Join(cfg.TaskDir, src)
		}
		b := src + ":" + parts[1]
		if len(parts) == 3 {
			b += ":" + parts[2]
		}
		if pc.SELinuxLabel != "" {
			if len(parts) == 3 {
				b += "," + pc.SELinuxLabel
			} else {
				b += ":" + pc.SELinuxLabel
			}
		}
		binds = append(binds, b)
	}
	// Host volumes (volume_mount): the operator exposed them in the
	// client's host_volume blocks, so volumes.enabled does not apply.
	for _, m := range cfg.Mounts {
		binds = append(binds, hostVolumeBind(m))
	}
	var mounts []mount.Mount
	for _, m := range tc.Mounts {
		dm := mount.Mount{Type: mount.Type(m.Type), Target: m.Target, Source: m.Source, ReadOnly: m.ReadOnly}
		switch m.Type {
		case "bind":
			if !filepath.IsAbs(dm.Source) {
				dm.Source = filepath.Join(cfg.TaskDir, dm.Source)
			}
			if m.Propagation != "" {
				dm.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(m.Propagation)}
			}
		case "volume":
			if m.NoCopy || len(m.VolumeLabels) > 0 || m.VolumeDriver != "" {
				dm.VolumeOptions = &mount.VolumeOptions{NoCopy: m.NoCopy, Labels: m.VolumeLabels}
				if m.VolumeDriver != "" || len(m.VolumeOpts) > 0 {
					dm.VolumeOptions.DriverConfig = &mount.Driver{Name: m.VolumeDriver, Options: m.VolumeOpts}
				}
			}
			if dm.Source != "" && !pc.VolumesEnabled {
				return nil, nil, fmt.Errorf("mount: named volume %q is not allowed while volumes are disabled on this client (plugin %q config volumes.enabled = true allows it)", dm.Source, pc.pluginName())
			}
		case "tmpfs":
			if m.TmpfsSize > 0 || m.TmpfsMode > 0 {
				dm.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: m.TmpfsSize, Mode: os.FileMode(m.TmpfsMode)}
			}
		}
		mounts = append(mounts, dm)
	}
	return binds, mounts, nil
}

// hostVolumeBind is the bind of a host volume mount:
// "<host>:<dest>:<ro|rw>,<propagation>[,<selinux label>]". A relative
// destination is below the container's root.
func hostVolumeBind(m drivers.MountConfig) string {
	dst := m.TaskPath
	if !path.IsAbs(dst) {
		dst = path.Join("/", dst)
	}
	opts := []string{"rw"}
	if m.ReadOnly {
		opts[0] = "ro"
	}
	opts = append(opts, m.Propagation())
	if m.SELinuxLabel != "" {
		opts = append(opts, m.SELinuxLabel)
	}
	return m.HostPath + ":" + dst + ":" + strings.Join(opts, ",")
}

// buildPorts publishes each port label of `ports` (or `port_map`) on the
// allocation's address and host port, to the container port `to` (or the
// host port when `to` is not set), TCP and UDP, as Nomad does.
func buildPorts(cfg *drivers.TaskConfig, tc *TaskConfig) (nat.PortSet, nat.PortMap, error) {
	labels := append([]string(nil), tc.Ports...)
	for l := range tc.PortMap {
		if !contains(labels, l) {
			labels = append(labels, l)
		}
	}
	if len(labels) == 0 {
		return nil, nil, nil
	}
	exposed, bindings := nat.PortSet{}, nat.PortMap{}
	for _, l := range labels {
		p, ok := cfg.Ports.Get(l)
		if !ok {
			return nil, nil, fmt.Errorf("ports: the group network has no port labeled %q", l)
		}
		to := p.To
		if mp, ok := tc.PortMap[l]; ok {
			to = mp
		}
		if to <= 0 {
			to = p.Value
		}
		for _, proto := range []string{"tcp", "udp"} {
			cp, err := nat.NewPort(proto, strconv.Itoa(to))
			if err != nil {
				return nil, nil, err
			}
			exposed[cp] = struct{}{}
			bindings[cp] = append(bindings[cp], nat.PortBinding{HostIP: p.HostIP, HostPort: strconv.Itoa(p.Value)})
		}
	}
	return exposed, bindings, nil
}

func parseUlimit(name, v string) (*units.Ulimit, error) {
	soft, hard, found := strings.Cut(v, ":")
	s, err := strconv.ParseInt(strings.TrimSpace(soft), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("ulimit.%s must be \"soft\" or \"soft:hard\" as integers, got %q", name, v)
	}
	hd := s
	if found {
		if hd, err = strconv.ParseInt(strings.TrimSpace(hard), 10, 64); err != nil {
			return nil, fmt.Errorf("ulimit.%s must be \"soft\" or \"soft:hard\" as integers, got %q", name, v)
		}
	}
	if hd < s {
		return nil, fmt.Errorf("ulimit.%s: the soft limit %d is above the hard limit %d", name, s, hd)
	}
	return &units.Ulimit{Name: name, Soft: s, Hard: hd}, nil
}

func checkCaps(allowed, add []string) error {
	if contains(allowed, "all") {
		return nil
	}
	var bad []string
	for _, c := range normalizeCaps(add) {
		if c != "all" && !contains(allowed, c) || c == "all" {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("cap_add: %s not allowed on this client (allow_caps: %s)", strings.Join(bad, ", "), strings.Join(allowed, ", "))
	}
	return nil
}

func hasHostBind(ms []Mount) bool {
	for _, m := range ms {
		if m.Type == "bind" || (m.Type == "volume" && m.Source != "") {
			return true
		}
	}
	return false
}

// isPathLike tells a path ("./data", "/srv", "data/x") from a named
// volume ("data").
func isPathLike(s string) bool {
	return strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.Contains(s, "/")
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
