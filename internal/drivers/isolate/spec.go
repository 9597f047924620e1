package isolate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// EnterCommand is the first argument that turns this binary into the
// helper that runs a command inside a running task's container (alloc
// exec): it waits for the command as its subreaper, so the task's own
// namespaces never have to reap it.
const EnterCommand = "__drover_isolate_enter"

// Spec is everything needed to create and start one task's container.
type Spec struct {
	// ID names the container (letters, digits, "._+-"); StateRoot is the
	// directory libcontainer keeps its state in, one subdirectory per ID.
	ID        string `json:"id"`
	StateRoot string `json:"state_root"`
	// Root is the task directory on the host; it becomes "/".
	Root string `json:"root"`
	// SharedAlloc is the allocation's shared directory, mounted at /alloc.
	SharedAlloc string `json:"shared_alloc"`
	// Chroot maps host paths to paths inside the root (chroot_env).
	Chroot map[string]string `json:"chroot"`
	// Binds are host directories bound into the root (host volumes),
	// after the chroot_env entries and /alloc.
	Binds []Bind `json:"binds,omitempty"`
	// Path is the command (absolute inside the root, or a name looked up
	// in the task's PATH inside the root); Args are argv, Args[0] included.
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	// WorkDir inside the root ("/" when empty).
	WorkDir string `json:"work_dir"`
	// User is the task's user as configured; Cred is it resolved.
	User string `json:"user"`
	Cred Cred   `json:"cred"`
	// Caps is the task's capability set (names such as "chown"); every
	// other capability is dropped from the bounding set.
	Caps        []string `json:"caps"`
	NoPivotRoot bool     `json:"no_pivot_root"`
	HostPID     bool     `json:"host_pid"`
	HostIPC     bool     `json:"host_ipc"`
	Hostname    string   `json:"hostname"`
	// Cgroup names the task's cgroups; Limits are written to them.
	Cgroup CgroupName `json:"cgroup"`
	Limits Limits     `json:"limits"`
	// NetNS is a network namespace (a path) the task joins; empty: the
	// host's network.
	NetNS string `json:"netns,omitempty"`
}

// Bind is one host directory bound into the task's root.
type Bind struct {
	Source      string `json:"source"`
	Destination string `json:"destination"` // inside the root
	ReadOnly    bool   `json:"read_only"`
	// Propagation is rprivate (default), rslave or rshared.
	Propagation string `json:"propagation,omitempty"`
}

// reservedRootDirs are the root's directories the container owns: no bind
// may cover them (or the root itself).
var reservedRootDirs = []string{"/private", "/proc", "/dev", "/sys"}

// checkBinds refuses binds over the root or the container's own
// directories, and relative or empty sources.
func (s *Spec) checkBinds() error {
	for _, b := range s.Binds {
		dst := filepath.Clean("/" + b.Destination)
		if dst == "/" {
			return fmt.Errorf("volume mount of %s: destination %q would cover the task's whole root", b.Source, b.Destination)
		}
		for _, r := range reservedRootDirs {
			if dst == r || strings.HasPrefix(dst, r+"/") {
				return fmt.Errorf("volume mount of %s: destination %q is inside %s, which the task's isolation owns", b.Source, b.Destination, r)
			}
		}
		if !filepath.IsAbs(b.Source) {
			return fmt.Errorf("volume mount to %q: host path %q is not absolute", b.Destination, b.Source)
		}
		if host, entry := s.chrootCover(dst); entry != "" {
			// The chroot_env entry is a read-only view of the host's
			// directory: the mount point must already exist there, as it
			// cannot be created through the view (nor on the host).
			if _, err := os.Stat(host); err != nil {
				return fmt.Errorf("volume mount to %q: the destination is inside chroot_env entry %q, a read-only view of the host's directory, where %s does not exist; mount the volume outside the chroot_env entries (for example under /srv or /data)", b.Destination, entry, host)
			}
		}
	}
	return nil
}

// chrootCover is where dst (inside the root) is on the host when a
// chroot_env entry that is bound (a directory present on the host) covers
// it, and that entry's destination; "" when none does.
func (s *Spec) chrootCover(dst string) (host, entry string) {
	best, bestDst := "", ""
	for h, d := range s.Chroot {
		d = filepath.Clean("/" + d)
		if d == "/" || !(dst == d || strings.HasPrefix(dst, d+"/")) || len(d) <= len(bestDst) {
			continue
		}
		fi, err := os.Lstat(h)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue // not bound: neither on this host nor a directory
		}
		best, bestDst = h, d
	}
	if bestDst == "" {
		return "", ""
	}
	return filepath.Join(best, strings.TrimPrefix(dst, bestDst)), bestDst
}

// ContainerID turns a task ID into a container ID.
func ContainerID(taskID string) string {
	return strings.NewReplacer("/", ".", "..", "_").Replace(taskID)
}

// StateRootOf is where a task's container state lives: inside the task
// directory's private dir, which the task cannot see (a tmpfs hides it in
// its root), so a restarted agent finds it from the task config alone.
func StateRootOf(taskDir string) string {
	return filepath.Join(taskDir, "private", "libcontainer")
}

// DefaultChrootEnv is Nomad's default chroot_env: host path -> path in the
// task's root.
func DefaultChrootEnv() map[string]string {
	return map[string]string{
		"/bin":                 "/bin",
		"/etc":                 "/etc",
		"/lib":                 "/lib",
		"/lib32":               "/lib32",
		"/lib64":               "/lib64",
		"/run/resolvconf":      "/run/resolvconf",
		"/run/systemd/resolve": "/run/systemd/resolve",
		"/sbin":                "/sbin",
		"/usr":                 "/usr",
	}
}

// capNumbers maps Linux capability names (lower case, no "cap_" prefix)
// to their numbers.
var capNumbers = map[string]int{
	"chown": 0, "dac_override": 1, "dac_read_search": 2, "fowner": 3, "fsetid": 4, "kill": 5,
	"setgid": 6, "setuid": 7, "setpcap": 8, "linux_immutable": 9, "net_bind_service": 10,
	"net_broadcast": 11, "net_admin": 12, "net_raw": 13, "ipc_lock": 14, "ipc_owner": 15,
	"sys_module": 16, "sys_rawio": 17, "sys_chroot": 18, "sys_ptrace": 19, "sys_pacct": 20,
	"sys_admin": 21, "sys_boot": 22, "sys_nice": 23, "sys_resource": 24, "sys_time": 25,
	"sys_tty_config": 26, "mknod": 27, "lease": 28, "audit_write": 29, "audit_control": 30,
	"setfcap": 31, "mac_override": 32, "mac_admin": 33, "syslog": 34, "wake_alarm": 35,
	"block_suspend": 36, "audit_read": 37, "perfmon": 38, "bpf": 39, "checkpoint_restore": 40,
}

// DefaultCaps is Nomad's default capability set for exec and java tasks
// (Docker's default set without net_raw).
func DefaultCaps() []string {
	return []string{"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod",
		"net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot"}
}

// AllCaps lists every capability name, sorted.
func AllCaps() []string {
	out := make([]string, 0, len(capNumbers))
	for k := range capNumbers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// NormalizeCap turns "CAP_NET_ADMIN", "net_admin" or "NET_ADMIN" into
// "net_admin"; "all" stays "all". ok is false for an unknown name.
func NormalizeCap(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "cap_")
	if n == "all" {
		return n, true
	}
	_, ok := capNumbers[n]
	return n, ok
}

// ociCaps turns capability names into libcontainer's ("CAP_CHOWN").
func ociCaps(caps []string) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		if _, ok := capNumbers[c]; ok {
			out = append(out, "CAP_"+strings.ToUpper(c))
		}
	}
	return out
}

// ResolveCaps computes a task's capability set as Nomad does: the default
// set minus cap_drop, plus cap_add ("all" allowed in both, so cap_drop =
// ["all"] with cap_add = ["chown"] leaves chown only); every added
// capability must be in allowed (the plugin's allow_caps).
func ResolveCaps(defaults, allowed, add, drop []string) ([]string, error) {
	norm := func(field string, in []string) ([]string, error) {
		var out []string
		for _, c := range in {
			n, ok := NormalizeCap(c)
			if !ok {
				return nil, fmt.Errorf("%s: unknown capability %q", field, c)
			}
			out = append(out, n)
		}
		return out, nil
	}
	allow, err := norm("allow_caps", allowed)
	if err != nil {
		return nil, err
	}
	addN, err := norm("cap_add", add)
	if err != nil {
		return nil, err
	}
	dropN, err := norm("cap_drop", drop)
	if err != nil {
		return nil, err
	}
	allowSet := map[string]bool{}
	for _, c := range allow {
		if c == "all" {
			for _, a := range AllCaps() {
				allowSet[a] = true
			}
			continue
		}
		allowSet[c] = true
	}
	set := map[string]bool{}
	for _, c := range defaults {
		if allowSet[c] {
			set[c] = true
		}
	}
	for _, c := range dropN {
		if c == "all" {
			set = map[string]bool{}
			continue
		}
		delete(set, c)
	}
	var denied []string
	for _, c := range addN {
		if c == "all" {
			for _, a := range AllCaps() {
				if !allowSet[a] {
					denied = append(denied, a)
				}
				set[a] = true
			}
			continue
		}
		if !allowSet[c] {
			denied = append(denied, c)
		}
		set[c] = true
	}
	if len(denied) > 0 {
		return nil, fmt.Errorf("cap_add: capabilities %s are not allowed by the driver's allow_caps", strings.Join(denied, ", "))
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out, nil
}

// CapNumber is a capability's number (-1: unknown).
func CapNumber(name string) int {
	if n, ok := capNumbers[name]; ok {
		return n
	}
	return -1
}
