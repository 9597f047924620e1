package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/isolate"
)

func readTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The task's grant becomes its cgroup limits: memory_max is the hard limit
// and memory the soft one (oversubscription), CPU MHz are cpu shares,
// reserved cores are its cpuset; stats come from those cgroups.
func TestExecLimitsAndStats(t *testing.T) {
	requireIsolation(t)
	d := New(Config{})
	tc := newTask(t, "limits", map[string]any{"command": "/bin/sh", "args": []any{"-c",
		`grep Cpus_allowed_list /proc/self/status; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exec sleep 600`}})
	tc.Resources.Memory.MemoryMB, tc.Resources.Memory.MemoryMaxMB = 32, 96
	tc.Resources.Cpu.CpuShares, tc.Resources.Cpu.ReservedCores = 300, []uint16{1}
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	cg := d.mustTask(t, tc.ID).cg
	for file, want := range map[string]string{
		filepath.Join(cg.Dir("memory"), "memory.limit_in_bytes"):      fmt.Sprint(96 << 20),
		filepath.Join(cg.Dir("memory"), "memory.soft_limit_in_bytes"): fmt.Sprint(32 << 20),
		filepath.Join(cg.Dir("cpu"), "cpu.shares"):                    "300",
		filepath.Join(cg.Dir("cpuset"), "cpuset.cpus"):                "1",
		filepath.Join(cg.Dir("pids"), "pids.max"):                     "max",
	} {
		if got := readTrim(t, file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	waitFor(t, 10*time.Second, "the task's cpuset printed", func() bool {
		out, _ := output(t, tc)
		return strings.Contains(out, "Cpus_allowed_list:\t1\n")
	})
	s1, err := d.TaskStats(context.Background(), tc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Memory.Usage == 0 || s1.Memory.RSS == 0 && s1.Memory.Cache == 0 {
		t.Errorf("memory stats empty: %+v", s1.Memory)
	}
	if _, err := d.TaskStats(context.Background(), tc.ID); err != nil {
		t.Fatal(err)
	}
}

func capMask(caps []string) uint64 {
	var m uint64
	for _, c := range caps {
		m |= 1 << uint(isolate.CapNumber(c))
	}
	return m
}

// Capabilities: Nomad's default set, cap_drop = ["all"] leaves none,
// cap_add within allow_caps adds one.
func TestExecCapabilities(t *testing.T) {
	requireIsolation(t)
	for name, c := range map[string]struct {
		plugin PluginConfig
		config map[string]any
		want   []string
	}{
		"default":          {DefaultPluginConfig(), map[string]any{}, isolate.DefaultCaps()},
		"drop all":         {DefaultPluginConfig(), map[string]any{"cap_drop": []any{"all"}}, nil},
		"drop all add one": {DefaultPluginConfig(), map[string]any{"cap_drop": []any{"ALL"}, "cap_add": []any{"CAP_CHOWN"}}, []string{"chown"}},
		"allowed add": {func() PluginConfig {
			p := DefaultPluginConfig()
			p.AllowCaps = append(p.AllowCaps, "net_raw")
			return p
		}(),
			map[string]any{"cap_add": []any{"net_raw"}}, append(isolate.DefaultCaps(), "net_raw")},
	} {
		t.Run(name, func(t *testing.T) {
			d := New(Config{Plugin: c.plugin})
			cfg := map[string]any{"command": "grep", "args": []any{"CapBnd", "/proc/self/status"}}
			for k, v := range c.config {
				cfg[k] = v
			}
			tc := newTask(t, strings.ReplaceAll(name, " ", "-"), cfg)
			tc.User = "root"
			r, out, errOut := runToExit(t, d, tc)
			want := fmt.Sprintf("CapBnd:\t%016x\n", capMask(c.want))
			if !r.Successful() || out != want {
				t.Fatalf("got %q (exit %+v, stderr %q), want %q", out, r, errOut, want)
			}
		})
	}
}

// no_pivot_root still confines the task to its root; pid_mode = "host",
// allowed by the plugin's default_pid_mode, shows the host's processes.
func TestExecPluginModes(t *testing.T) {
	requireIsolation(t)
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := DefaultPluginConfig()
	p.NoPivotRoot = true
	tc := newTask(t, "nopivot", map[string]any{"command": "/bin/sh", "args": []any{"-c", "cat " + secret + " || echo invisible; echo pid=$$"}})
	r, out, errOut := runToExit(t, New(Config{Plugin: p}), tc)
	if !r.Successful() || out != "invisible\npid=1\n" {
		t.Fatalf("no_pivot_root: %q %q %+v", out, errOut, r)
	}

	p = DefaultPluginConfig()
	p.DefaultPIDMode = ModeHost
	tc = newTask(t, "hostpid", map[string]any{"command": "/bin/sh", "pid_mode": "host", "args": []any{"-c", "echo pid=$$; ls /proc | grep -c '^[0-9]'"}})
	r, out, errOut = runToExit(t, New(Config{Plugin: p}), tc)
	if !r.Successful() || strings.HasPrefix(out, "pid=1\n") {
		t.Fatalf("pid_mode host: %q %q %+v", out, errOut, r)
	}
	var n int
	fmt.Sscanf(strings.SplitN(out, "\n", 2)[1], "%d", &n)
	if n < 5 {
		t.Errorf("pid_mode host sees only %d processes", n)
	}
}

// The kernel's memory and knobs are out of a task's reach, even as root.
func TestExecMasksProc(t *testing.T) {
	requireIsolation(t)
	tc := newTask(t, "mask", map[string]any{"command": "/bin/sh", "args": []any{"-c",
		`echo "kcore=$(wc -c < /proc/kcore 2>/dev/null)"; echo 1 > /proc/sys/vm/drop_caches && echo wrote-sysctl; echo "firmware=$(ls /sys/firmware | wc -l)"; echo x > /sys/kernel/profiling && echo wrote-sys; true`}})
	tc.User = "root"
	r, out, errOut := runToExit(t, New(Config{}), tc)
	if !r.Successful() || !strings.Contains(out, "firmware=0\n") || strings.Contains(out, "wrote-") ||
		!strings.Contains(out, "kcore=0\n") && !strings.Contains(out, "kcore=\n") {
		t.Fatalf("proc/sys not masked: %q (stderr %q, exit %+v)", out, errOut, r)
	}
}

// A pids limit as small as the task itself works: the init's own threads
// (it is a Go program until it execs the task) do not count against it.
func TestExecTinyPidsLimit(t *testing.T) {
	requireIsolation(t)
	tc := newTask(t, "tinypids", map[string]any{"command": "/bin/sh", "pids_limit": 1, "args": []any{"-c", "echo alone"}})
	r, out, errOut := runToExit(t, New(Config{}), tc)
	if !r.Successful() || out != "alone\n" {
		t.Fatalf("pids_limit 1: %q %q %+v", out, errOut, r)
	}
}

// alloc exec into a root task gets the task's capability set, not root's
// full one.
func TestExecIntoTaskKeepsCapabilities(t *testing.T) {
	requireIsolation(t)
	d := New(Config{})
	tc := newTask(t, "execcaps", map[string]any{"command": "sleep", "args": []any{"600"}, "cap_drop": []any{"all"}, "cap_add": []any{"chown"}})
	tc.User = "root"
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	var out, errOut strings.Builder
	code, err := d.ExecTask(context.Background(), tc.ID, drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", "grep CapBnd /proc/self/status; id -u; echo pid1=$(cat /proc/1/comm)"}, Stdout: &out, Stderr: &errOut})
	want := fmt.Sprintf("CapBnd:\t%016x\n0\npid1=sleep\n", capMask([]string{"chown"}))
	if err != nil || code != 0 || out.String() != want {
		t.Fatalf("exec: code %d err %v out %q (want %q) stderr %q", code, err, out.String(), want, errOut.String())
	}
}

// A task in the host's PID namespace has no init of its own to reap what
// it leaves behind: its supervisor (their subreaper) does, so orphans do
// not pile up as zombies counting against the pids limit.
func TestExecHostPIDReapsOrphans(t *testing.T) {
	requireIsolation(t)
	p := DefaultPluginConfig()
	p.DefaultPIDMode = ModeHost
	d := New(Config{Plugin: p})
	tc := newTask(t, "orphans", map[string]any{"command": "/bin/sh", "args": []any{"-c",
		`for i in 1 2 3 4 5 6; do (true &); done; echo spawned; exec sleep 600`}})
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	waitFor(t, 10*time.Second, "the orphans spawned", func() bool {
		out, _ := output(t, tc)
		return strings.Contains(out, "spawned\n")
	})
	pid, err := d.inner.MainPID(tc.ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ppid int
	var state0 byte
	fmt.Sscanf(string(st[strings.LastIndexByte(string(st), ')')+2:]), "%c %d", &state0, &ppid)
	zombies := func() []string {
		var z []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			var state byte
			var pp int
			if i < 0 || len(s) < i+4 {
				continue
			}
			fmt.Sscanf(s[i+2:], "%c %d", &state, &pp)
			if pp == ppid && state == 'Z' {
				z = append(z, e.Name())
			}
		}
		return z
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(zombies()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("zombies left under the task's supervisor %d: %v", ppid, zombies())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ppid <= 1 {
		t.Fatalf("task's parent is %d, not its supervisor", ppid)
	}
}

// A task without reserved cores starts on the node's shared cpuset and is
// moved while it runs when the set changes (a task reserving a core
// started or stopped on the node). 2 CPUs: 0-1, then 0, then 0-1.
func TestExecSharedCpusetUpdate(t *testing.T) {
	requireIsolation(t)
	if n := runtime.NumCPU(); n < 2 {
		t.Skipf("needs 2 CPUs, the machine has %d", n)
	}
	d := New(Config{})
	tc := newTask(t, "shared", map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
	tc.SharedCpuset = "0-1"
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	pid, err := d.inner.MainPID(tc.ID)
	if err != nil {
		t.Fatal(err)
	}
	on := func(want string) {
		t.Helper()
		waitFor(t, 10*time.Second, "the task on CPUs "+want, func() bool {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			return strings.Contains(string(b), "Cpus_allowed_list:\t"+want+"\n")
		})
	}
	on("0-1")
	if err := d.UpdateCpuset(tc.ID, "0"); err != nil {
		t.Fatal(err)
	}
	on("0")
	if err := d.UpdateCpuset(tc.ID, "0-1"); err != nil {
		t.Fatal(err)
	}
	on("0-1")
}
