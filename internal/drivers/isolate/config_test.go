//go:build cgo

package isolate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// What a task asks for becomes libcontainer's configuration: its
// namespaces (host PID/IPC left out, the allocation's network namespace
// joined), its root and mounts, its capabilities and its limits.
func TestSpecConfig(t *testing.T) {
	root, shared := t.TempDir(), t.TempDir()
	s := &Spec{
		ID: "a.t", StateRoot: StateRootOf(root), Root: root, SharedAlloc: shared,
		Chroot: map[string]string{"/etc": "/etc", "/no/such/dir": "/x"},
		Args:   []string{"sleep", "1"}, Env: []string{"PATH=/bin"},
		Cred: Cred{Uid: 65534, Gid: 65534}, Caps: []string{"chown", "kill"},
		HostIPC: true, NetNS: "/var/run/netns/x", NoPivotRoot: true,
		Cgroup: CgroupName{Name: "a.t"},
		Limits: Limits{MemoryMB: 32, MemoryMaxMB: 64, CPUShares: 1, Cores: []uint16{0, 1}, PidsMax: 5},
	}
	cfg, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rootfs != root || !cfg.NoPivotRoot || cfg.Readonlyfs {
		t.Errorf("root %q no_pivot_root %v readonly %v", cfg.Rootfs, cfg.NoPivotRoot, cfg.Readonlyfs)
	}
	for _, ns := range []configs.NamespaceType{configs.NEWNS, configs.NEWUTS, configs.NEWPID} {
		if !cfg.Namespaces.Contains(ns) {
			t.Errorf("namespace %s missing", ns)
		}
	}
	if cfg.Namespaces.Contains(configs.NEWIPC) {
		t.Error("ipc_mode host still got a new IPC namespace")
	}
	if p := cfg.Namespaces.PathOf(configs.NEWNET); p != s.NetNS {
		t.Errorf("network namespace %q, want %q", p, s.NetNS)
	}
	mounts := map[string]*configs.Mount{}
	for _, m := range cfg.Mounts {
		mounts[m.Destination] = m
	}
	if m := mounts["/etc"]; m == nil || m.Source != "/etc" || m.Flags&unix.MS_BIND == 0 || m.Flags&unix.MS_RDONLY == 0 {
		t.Errorf("chroot_env /etc not a read-only bind: %+v", m)
	}
	if mounts["/x"] != nil {
		t.Error("a chroot_env entry missing on the host was mounted")
	}
	if m := mounts["/alloc"]; m == nil || m.Source != shared || m.Flags&unix.MS_RDONLY != 0 {
		t.Errorf("/alloc not a writable bind of the shared dir: %+v", m)
	}
	for _, d := range []string{"/proc", "/dev", "/dev/pts", "/sys", "/private"} {
		if mounts[d] == nil {
			t.Errorf("no %s mount", d)
		}
	}
	if !slices.Contains(cfg.MaskPaths, "/proc/kcore") || !slices.Contains(cfg.ReadonlyPaths, "/proc/sys") {
		t.Errorf("masked %v read-only %v", cfg.MaskPaths, cfg.ReadonlyPaths)
	}
	c := cfg.Capabilities
	if !slices.Equal(c.Bounding, []string{"CAP_CHOWN", "CAP_KILL"}) || len(c.Effective) != 0 || len(c.Permitted) != 0 {
		t.Errorf("a non-root task's capabilities: %+v", c)
	}
	r := cfg.Cgroups.Resources
	if cfg.Cgroups.Path != "/drover/a.t" {
		t.Errorf("cgroup path %q", cfg.Cgroups.Path)
	}
	if r.Memory != 64<<20 || r.MemoryReservation != 32<<20 || r.CpuShares != 2 || r.CpusetCpus != "0,1" {
		t.Errorf("resources: memory %d reservation %d shares %d cpus %q", r.Memory, r.MemoryReservation, r.CpuShares, r.CpusetCpus)
	}
	if _, err := os.Stat(filepath.Join(CgroupRoot, "memory", "memory.memsw.limit_in_bytes")); err == nil && r.MemorySwap != 64<<20 {
		t.Errorf("memory+swap limit %d, want the hard limit", r.MemorySwap)
	}
	// The pids limit is written after the init has its threads (Start).
	if r.PidsLimit != nil {
		t.Errorf("pids limit in the create config: %d", *r.PidsLimit)
	}
	if len(r.Devices) < 2 || r.Devices[0].Allow {
		t.Errorf("device rules do not start from deny-all: %v", r.Devices)
	}

	s.Cred, s.HostPID = Cred{}, true
	if cfg, err = s.Config(); err != nil {
		t.Fatal(err)
	}
	if cfg.Namespaces.Contains(configs.NEWPID) {
		t.Error("pid_mode host still got a new PID namespace")
	}
	if c := cfg.Capabilities; len(c.Effective) != 2 || len(c.Permitted) != 2 {
		t.Errorf("a root task's capabilities: %+v", c)
	}
}
