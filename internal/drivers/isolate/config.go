//go:build cgo

package isolate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	// Registers the device cgroup rules writer (v1 devices.allow, v2 eBPF).
	_ "github.com/opencontainers/cgroups/devices"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// maskedPaths and readonlyPaths keep the kernel's memory, keys, timers
// and knobs out of a task's reach, as Docker's and Nomad's defaults do.
var (
	maskedPaths = []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"}
	readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// CgroupPath is the task's cgroup path below each hierarchy's root:
// /<parent>/<name>, parent "drover" unless the client names one.
func (s *Spec) CgroupPath() string { return s.Cgroup.Path() }

// ociSpec is the task's container as an OCI runtime spec, which runc's own
// converter (specconv) turns into libcontainer's configuration: the same
// translation `runc run` applies, device rules and all.
func (s *Spec) ociSpec() (*specs.Spec, error) {
	nsfd := []string{"nosuid", "noexec", "nodev"}
	var mounts []specs.Mount
	dsts := make([]string, 0, len(s.Chroot))
	byDst := map[string]string{}
	for host, dst := range s.Chroot {
		d := filepath.Clean("/" + dst)
		dsts = append(dsts, d)
		byDst[d] = host
	}
	sort.Strings(dsts) // parents before children
	for _, dst := range dsts {
		host := byDst[dst]
		fi, err := os.Lstat(host)
		if errors.Is(err, os.ErrNotExist) || err == nil && fi.Mode()&os.ModeSymlink != 0 {
			continue // not on this host, or recreated as a symlink (prepareRoot)
		}
		if err != nil {
			return nil, fmt.Errorf("chroot_env %s: %w", host, err)
		}
		mounts = append(mounts, specs.Mount{Destination: dst, Type: "bind", Source: host, Options: []string{"rbind", "ro"}})
	}
	if s.SharedAlloc != "" {
		mounts = append(mounts, specs.Mount{Destination: "/alloc", Type: "bind", Source: s.SharedAlloc, Options: []string{"rbind", "rw"}})
	}
	for _, b := range s.Binds {
		mode := "rw"
		if b.ReadOnly {
			mode = "ro"
		}
		prop := b.Propagation
		if prop == "" {
			prop = "rprivate"
		}
		mounts = append(mounts, specs.Mount{Destination: filepath.Clean("/" + b.Destination), Type: "bind", Source: b.Source,
			Options: []string{"rbind", mode, prop}})
	}
	mounts = append(mounts,
		// The driver's private files (the supervisor's spec, logs and this
		// container's state) are not the task's business.
		specs.Mount{Destination: "/private", Type: "tmpfs", Source: "tmpfs", Options: append(nsfd, "mode=700", "size=64k")},
		specs.Mount{Destination: "/proc", Type: "proc", Source: "proc", Options: nsfd},
		specs.Mount{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: append(nsfd, "mode=1777", "size=65536k")},
		specs.Mount{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: nsfd},
		specs.Mount{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: append(nsfd, "ro")},
	)
	ns := []specs.LinuxNamespace{{Type: specs.MountNamespace}, {Type: specs.UTSNamespace}}
	if !s.HostPID {
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
	}
	if !s.HostIPC {
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace})
	}
	if s.NetNS != "" {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: s.NetNS})
	}
	caps := ociCaps(s.Caps)
	pc := &specs.LinuxCapabilities{Bounding: caps}
	if s.Cred.Uid == 0 {
		// A non-root task gets no effective capabilities (as Docker and
		// Nomad do): only the bounding set limits what it may gain.
		pc.Effective, pc.Permitted = caps, caps
	}
	res := &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}
	l := s.Limits
	if l.MemoryMB > 0 {
		hard := l.MemoryMB
		if l.MemoryMaxMB > hard {
			hard = l.MemoryMaxMB
		}
		hb, sb := hard<<20, l.MemoryMB<<20
		res.Memory = &specs.LinuxMemory{Limit: &hb, Reservation: &sb}
		if swapAccounted() {
			// With swap, the limit would only push the task out to swap.
			res.Memory.Swap = &hb
		}
	}
	if l.CPUShares > 0 || len(l.Cores) > 0 {
		res.CPU = &specs.LinuxCPU{}
		if l.CPUShares > 0 {
			sh := uint64(max(l.CPUShares, 2))
			res.CPU.Shares = &sh
		}
		if len(l.Cores) > 0 {
			parts := make([]string, 0, len(l.Cores))
			for _, c := range l.Cores {
				parts = append(parts, strconv.Itoa(int(c)))
			}
			res.CPU.Cpus = strings.Join(parts, ",")
		}
	}
	wd := s.WorkDir
	if wd == "" {
		wd = "/"
	}
	return &specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: s.Root},
		Hostname: s.Hostname,
		Mounts:   mounts,
		Process: &specs.Process{
			Args: s.Args, Env: s.Env, Cwd: wd,
			User:         specs.User{UID: uint32(s.Cred.Uid), GID: uint32(s.Cred.Gid), AdditionalGids: gids(s.Cred.Groups)},
			Capabilities: pc,
		},
		Linux: &specs.Linux{
			Namespaces:    ns,
			CgroupsPath:   s.CgroupPath(),
			Resources:     res,
			MaskedPaths:   maskedPaths,
			ReadonlyPaths: readonlyPaths,
		},
	}, nil
}

func gids(in []int) []uint32 {
	out := make([]uint32, 0, len(in))
	for _, g := range in {
		out = append(out, uint32(g))
	}
	return out
}

// swapAccounted reports whether memory+swap can be limited: cgroup v1 with
// the memsw files, or v2 (where libcontainer writes memory.swap.max = 0,
// and skips it on a host without swap accounting).
func swapAccounted() bool {
	if isV2() {
		return true
	}
	_, err := os.Stat(filepath.Join(CgroupRoot, "memory", "memory.memsw.limit_in_bytes"))
	return err == nil
}

// Config is the libcontainer configuration of the task's container.
func (s *Spec) Config() (*configs.Config, error) {
	spec, err := s.ociSpec()
	if err != nil {
		return nil, err
	}
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName: s.ID, NoPivotRoot: s.NoPivotRoot, Spec: spec,
	})
	if err != nil {
		return nil, fmt.Errorf("container config: %w", err)
	}
	return cfg, nil
}
