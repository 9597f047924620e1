package docker

import (
	"reflect"
	"strings"
	"testing"

	"github.com/docker/go-connections/nat"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

func baseTask() *drivers.TaskConfig {
	return &drivers.TaskConfig{
		ID: "a1/web", AllocID: "a1", Name: "web", JobID: "job", JobName: "job", TaskGroupName: "g", Namespace: "default",
		Env:      map[string]string{"NOMAD_ALLOC_DIR": "/host/a1/alloc", "FOO": "bar"},
		AllocDir: "/data/alloc/a1", TaskDir: "/data/alloc/a1/web",
		Resources: &structs.AllocatedTaskResources{
			Cpu:    structs.AllocatedCpuResources{CpuShares: 500},
			Memory: structs.AllocatedMemoryResources{MemoryMB: 256},
		},
		Ports:           structs.AllocatedPorts{{Label: "http", Value: 25000, To: 8080, HostIP: "10.0.0.5"}, {Label: "metrics", Value: 25001, HostIP: "10.0.0.5"}},
		CPUTotalCompute: 4000,
	}
}

func spec(t *testing.T, pc PluginConfig, cfg *drivers.TaskConfig, conf map[string]any) *createSpec {
	t.Helper()
	tc, err := ParseTaskConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	s, err := buildCreateSpec(&pc, Flavor{}, cfg, tc, tc.Image)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func specErr(pc PluginConfig, cfg *drivers.TaskConfig, conf map[string]any) error {
	tc, err := ParseTaskConfig(conf)
	if err != nil {
		return err
	}
	_, err = buildCreateSpec(&pc, Flavor{}, cfg, tc, tc.Image)
	return err
}

// Ports are published on the allocation's address and host port, to the
// `to` port (or the host port when `to` is unset), TCP and UDP.
func TestTranslatePorts(t *testing.T) {
	s := spec(t, DefaultPluginConfig(), baseTask(), map[string]any{"image": "x", "ports": []any{"http", "metrics"}})
	want := nat.PortMap{
		"8080/tcp":  {{HostIP: "10.0.0.5", HostPort: "25000"}},
		"8080/udp":  {{HostIP: "10.0.0.5", HostPort: "25000"}},
		"25001/tcp": {{HostIP: "10.0.0.5", HostPort: "25001"}},
		"25001/udp": {{HostIP: "10.0.0.5", HostPort: "25001"}},
	}
	if !reflect.DeepEqual(s.Host.PortBindings, want) {
		t.Fatalf("bindings %v, want %v", s.Host.PortBindings, want)
	}
	if len(s.Config.ExposedPorts) != 4 {
		t.Fatalf("exposed %v", s.Config.ExposedPorts)
	}
	// port_map (legacy) overrides the container port.
	s = spec(t, DefaultPluginConfig(), baseTask(), map[string]any{"image": "x", "port_map": []map[string]any{{"http": 9090}}})
	if b := s.Host.PortBindings["9090/tcp"]; len(b) != 1 || b[0].HostPort != "25000" {
		t.Fatalf("port_map bindings %v", s.Host.PortBindings)
	}
	if err := specErr(DefaultPluginConfig(), baseTask(), map[string]any{"image": "x", "ports": []any{"grpc"}}); err == nil || !strings.Contains(err.Error(), `no port labeled "grpc"`) {
		t.Fatalf("unknown label: %v", err)
	}
	if err := specErr(DefaultPluginConfig(), baseTask(), map[string]any{"image": "x", "ports": []any{"http"}, "network_mode": "host"}); err == nil || !strings.Contains(err.Error(), "network_mode") {
		t.Fatalf("ports with host network: %v", err)
	}
}

// The allocation's directories are mounted where Nomad mounts them, and
// the task sees them there.
func TestTranslateAllocDirsAndEnv(t *testing.T) {
	s := spec(t, DefaultPluginConfig(), baseTask(), map[string]any{"image": "x", "command": "/bin/app", "args": []any{"-v"}, "entrypoint": []any{"/init"}})
	want := []string{"/data/alloc/a1/alloc:/alloc", "/data/alloc/a1/web/local:/local", "/data/alloc/a1/web/secrets:/secrets"}
	if !reflect.DeepEqual(s.Host.Binds, want) {
		t.Fatalf("binds %v", s.Host.Binds)
	}
	env := strings.Join(s.Config.Env, " ")
	for _, w := range []string{"NOMAD_ALLOC_DIR=/alloc", "NOMAD_TASK_DIR=/local", "NOMAD_SECRETS_DIR=/secrets", "FOO=bar"} {
		if !strings.Contains(env, w) {
			t.Errorf("env %q lacks %s", env, w)
		}
	}
	if strings.Join(s.Config.Cmd, " ") != "/bin/app -v" || strings.Join(s.Config.Entrypoint, " ") != "/init" {
		t.Fatalf("cmd %v entrypoint %v", s.Config.Cmd, s.Config.Entrypoint)
	}
	if s.Name != "web-a1" || s.Config.Labels[labelAllocID] != "a1" {
		t.Fatalf("name %q labels %v", s.Name, s.Config.Labels)
	}
	if s.Host.NetworkMode != "bridge" || s.Host.LogConfig.Type != "json-file" || s.Host.LogConfig.Config["max-size"] != "2m" {
		t.Fatalf("network %q log %q", s.Host.NetworkMode, s.Host.LogConfig.Type)
	}
}

// memory is the hard limit; with memory_max (or memory_hard_limit) the
// limit is that and memory the reservation; cpu MHz are the shares,
// cpu_hard_limit a CFS quota of the node's compute, cores a cpuset.
func TestTranslateResources(t *testing.T) {
	const mb = 1 << 20
	s := spec(t, DefaultPluginConfig(), baseTask(), map[string]any{"image": "x"})
	if s.Host.Memory != 256*mb || s.Host.MemorySwap != 256*mb || s.Host.MemoryReservation != 0 || s.Host.CPUShares != 500 {
		t.Fatalf("memory %d swap %d reservation %d shares %d", s.Host.Memory, s.Host.MemorySwap, s.Host.MemoryReservation, s.Host.CPUShares)
	}
	cfg := baseTask()
	cfg.Resources.Memory.MemoryMaxMB = 512
	s = spec(t, DefaultPluginConfig(), cfg, map[string]any{"image": "x"})
	if s.Host.Memory != 512*mb || s.Host.MemoryReservation != 256*mb {
		t.Fatalf("memory_max: limit %d reservation %d", s.Host.Memory, s.Host.MemoryReservation)
	}
	s = spec(t, DefaultPluginConfig(), baseTask(), map[string]any{"image": "x", "memory_hard_limit": 1024})
	if s.Host.Memory != 1024*mb || s.Host.MemoryReservation != 256*mb {
		t.Fatalf("memory_hard_limit: limit %d reservation %d", s.Host.Memory, s.Host.MemoryReservation)
	}
	s = spec(t, DefaultPluginConfig(), baseTask(), map[string]any{"image": "x", "cpu_hard_limit": true})
	if s.Host.CPUPeriod != 100000 || s.Host.CPUQuota <= 0 {
		t.Fatalf("cpu_hard_limit: period %d quota %d", s.Host.CPUPeriod, s.Host.CPUQuota)
	}
	cfg = baseTask()
	cfg.Resources.Cpu.ReservedCores = []uint16{1, 3}
	s = spec(t, DefaultPluginConfig(), cfg, map[string]any{"image": "x", "pids_limit": 50})
	if s.Host.CpusetCpus != "1,3" || s.Host.PidsLimit == nil || *s.Host.PidsLimit != 50 {
		t.Fatalf("cpuset %q pids %v", s.Host.CpusetCpus, s.Host.PidsLimit)
	}
	// Reserved cores win over the node's shared cpuset; without them the
	// container is created on the shared set.
	cfg.SharedCpuset = "0,2"
	if s = spec(t, DefaultPluginConfig(), cfg, map[string]any{"image": "x"}); s.Host.CpusetCpus != "1,3" {
		t.Fatalf("reserved cores with a shared cpuset: cpuset %q", s.Host.CpusetCpus)
	}
	cfg = baseTask()
	cfg.SharedCpuset = "0,2"
	if s = spec(t, DefaultPluginConfig(), cfg, map[string]any{"image": "x"}); s.Host.CpusetCpus != "0,2" {
		t.Fatalf("no reserved cores: cpuset %q, want the shared set", s.Host.CpusetCpus)
	}
}

// Options the operator gates (privileged, capabilities, host volumes,
// runtimes) are refused unless the agent's plugin config allows them.
func TestTranslateOperatorGates(t *testing.T) {
	cfg := baseTask()
	if err := specErr(DefaultPluginConfig(), cfg, map[string]any{"image": "x", "privileged": true}); err == nil || !strings.Contains(err.Error(), "allow_privileged") {
		t.Fatalf("privileged: %v", err)
	}
	pc := DefaultPluginConfig()
	pc.AllowPrivileged = true
	if s := spec(t, pc, cfg, map[string]any{"image": "x", "privileged": true}); !s.Host.Privileged {
		t.Fatal("privileged not set")
	}
	if err := specErr(DefaultPluginConfig(), cfg, map[string]any{"image": "x", "cap_add": []any{"SYS_ADMIN"}}); err == nil || !strings.Contains(err.Error(), "sys_admin not allowed") {
		t.Fatalf("cap_add: %v", err)
	}
	if s := spec(t, DefaultPluginConfig(), cfg, map[string]any{"image": "x", "cap_add": []any{"CAP_NET_BIND_SERVICE"}, "cap_drop": []any{"ALL"}}); len(s.Host.CapAdd) != 1 || s.Host.CapDrop[0] != "ALL" {
		t.Fatalf("caps %v %v", s.Host.CapAdd, s.Host.CapDrop)
	}
	if err := specErr(DefaultPluginConfig(), cfg, map[string]any{"image": "x", "volumes": []any{"/etc:/host-etc"}}); err == nil || !strings.Contains(err.Error(), "volumes.enabled") {
		t.Fatalf("host volume: %v", err)
	}
	if err := specErr(DefaultPluginConfig(), cfg, map[string]any{"image": "x", "mount": []map[string]any{{"type": "bind", "source": "/etc", "target": "/e"}}}); err == nil || !strings.Contains(err.Error(), "volumes.enabled") {
		t.Fatalf("host bind mount: %v", err)
	}
	// Inside the task dir is always allowed.
	s := spec(t, DefaultPluginConfig(), cfg, map[string]any{"image": "x", "volumes": []any{"local/data:/data:ro"}})
	if got := s.Host.Binds[3]; got != "/data/alloc/a1/web/local/data:/data:ro" {
		t.Fatalf("relative volume %q", got)
	}
	pc = DefaultPluginConfig()
	pc.VolumesEnabled = true
	s = spec(t, pc, cfg, map[string]any{"image": "x", "volumes": []any{"/etc:/host-etc"}, "mount": []map[string]any{
		{"type": "tmpfs", "target": "/scratch", "tmpfs_options": []map[string]any{{"size": 1 << 20}}},
		{"type": "volume", "source": "cache", "target": "/cache", "readonly": true},
	}})
	if s.Host.Binds[3] != "/etc:/host-etc" || len(s.Host.Mounts) != 2 || s.Host.Mounts[0].TmpfsOptions.SizeBytes != 1<<20 || !s.Host.Mounts[1].ReadOnly {
		t.Fatalf("binds %v mounts %+v", s.Host.Binds, s.Host.Mounts)
	}
	if err := specErr(DefaultPluginConfig(), cfg, map[string]any{"image": "x", "runtime": "kata"}); err == nil || !strings.Contains(err.Error(), `runtime "kata" is not allowed`) {
		t.Fatalf("runtime: %v", err)
	}
}

// The remaining options reach the engine's host config.
func TestTranslateHostOptions(t *testing.T) {
	s := spec(t, DefaultPluginConfig(), baseTask(), map[string]any{
		"image": "x", "hostname": "h", "work_dir": "/w", "labels": []map[string]any{{"team": "a"}},
		"dns_servers": []any{"1.1.1.1"}, "dns_search_domains": []any{"svc"}, "dns_options": []any{"ndots:2"},
		"extra_hosts": []any{"db:10.0.0.9"}, "ulimit": []map[string]any{{"nofile": "1024:2048", "nproc": "64"}},
		"shm_size": 1 << 26, "readonly_rootfs": true, "security_opt": []any{"no-new-privileges"}, "init": true,
		"sysctl": []map[string]any{{"net.core.somaxconn": "1024"}}, "ipc_mode": "host", "pid_mode": "host", "uts_mode": "host",
		"devices": []map[string]any{{"host_path": "/dev/null", "container_path": "/dev/nothing"}},
		"logging": []map[string]any{{"type": "local", "config": []map[string]any{{"max-size": "10m"}}}},
	})
	h, c := s.Host, s.Config
	if c.Hostname != "h" || c.WorkingDir != "/w" || c.Labels["team"] != "a" {
		t.Fatalf("config %+v", c)
	}
	if h.DNS[0] != "1.1.1.1" || h.DNSSearch[0] != "svc" || h.DNSOptions[0] != "ndots:2" || h.ExtraHosts[0] != "db:10.0.0.9" {
		t.Fatalf("dns %v %v %v %v", h.DNS, h.DNSSearch, h.DNSOptions, h.ExtraHosts)
	}
	if len(h.Ulimits) != 2 || h.Ulimits[0].Name != "nofile" || h.Ulimits[0].Soft != 1024 || h.Ulimits[0].Hard != 2048 || h.Ulimits[1].Hard != 64 {
		t.Fatalf("ulimits %+v", h.Ulimits)
	}
	if h.ShmSize != 1<<26 || !h.ReadonlyRootfs || h.SecurityOpt[0] != "no-new-privileges" || h.Init == nil || !*h.Init {
		t.Fatalf("host %+v", h)
	}
	if h.Sysctls["net.core.somaxconn"] != "1024" || h.IpcMode != "host" || h.PidMode != "host" || h.UTSMode != "host" {
		t.Fatalf("sysctl/modes %+v", h)
	}
	if len(h.Devices) != 1 || h.Devices[0].PathInContainer != "/dev/nothing" || h.Devices[0].CgroupPermissions != "rwm" {
		t.Fatalf("devices %+v", h.Devices)
	}
	if h.LogConfig.Type != "local" || h.LogConfig.Config["max-size"] != "10m" {
		t.Fatalf("logging %+v", h.LogConfig)
	}
}

// Host volume mounts are binds with their mode, propagation and SELinux
// label, allowed while volumes.enabled is off (the operator exposed them
// as host_volume blocks).
func TestTranslateHostVolumeMounts(t *testing.T) {
	pc := DefaultPluginConfig()
	pc.VolumesEnabled = false
	cfg := baseTask()
	cfg.Mounts = []drivers.MountConfig{
		{HostPath: "/srv/pg", TaskPath: "/var/lib/postgresql/data"},
		{HostPath: "/etc/certs", TaskPath: "certs", ReadOnly: true, PropagationMode: "host-to-task", SELinuxLabel: "Z"},
	}
	s := spec(t, pc, cfg, map[string]any{"image": "x"})
	want := []string{"/data/alloc/a1/alloc:/alloc", "/data/alloc/a1/web/local:/local", "/data/alloc/a1/web/secrets:/secrets",
		"/srv/pg:/var/lib/postgresql/data:rw,rprivate", "/etc/certs:/certs:ro,rslave,Z"}
	if !reflect.DeepEqual(s.Host.Binds, want) {
		t.Fatalf("binds %q, want %q", s.Host.Binds, want)
	}
}
