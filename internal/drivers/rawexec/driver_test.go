package rawexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireRoot skips without root, but fails in CI (GUIDE §4): a skip must
// never hide a broken driver there.
func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but not running as root: cannot test %s", why)
	}
	t.Skipf("needs root to test %s", why)
}

// trackerCases are the trackers this machine can test.
func trackerCases(t *testing.T) map[string]Config {
	cases := map[string]Config{"pgroup": {Enabled: true, DisableCgroups: true}}
	if os.Geteuid() != 0 {
		return cases
	}
	for name, root := range map[string]string{"v2": "", "v1-freezer": "/sys/fs/cgroup/freezer"} {
		cfg := Config{Enabled: true, CgroupRoot: root}
		trk := New(cfg).tracker()
		want := cgV2
		if name == "v1-freezer" {
			want = cgV1Freeze
		}
		if trk.kind != want {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI is set but cgroup tracker %s is unusable: %s", name, trk.desc)
			}
			t.Logf("skipping tracker %s: %s", name, trk.desc)
			continue
		}
		cases[name] = cfg
	}
	return cases
}

func newTask(t *testing.T, id string, config map[string]any, env map[string]string) *drivers.TaskConfig {
	t.Helper()
	dir := t.TempDir()
	if env == nil {
		env = map[string]string{"PATH": "/usr/bin:/bin"}
	}
	allocID := uniqueID("alloc-" + id)
	return &drivers.TaskConfig{
		ID: allocID + "/" + id, AllocID: allocID, Name: id,
		Config: config, Env: env, TaskDir: dir,
		StdoutPath: filepath.Join(dir, "stdout"), StderrPath: filepath.Join(dir, "stderr"),
	}
}

func waitExit(t *testing.T, d *Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatalf("task %s did not exit", id)
		return nil
	}
}

// alive reports whether pid still names the process we saw (not a zombie).
func alive(pid int, start uint64) bool { return processAlive(pid, start) }

func TestStopKillsEveryProcess(t *testing.T) {
	for name, cfg := range trackerCases(t) {
		t.Run(name, func(t *testing.T) {
			d := New(cfg)
			script := "setsid sleep 600 & (sleep 600 &) ; sleep 600"
			if name == "pgroup" {
				// Without cgroups a setsid child is out of reach: don't leak one.
				script = "sleep 600 & (sleep 600 &) ; sleep 600"
			}
			tc := newTask(t, "stop-"+name, map[string]any{
				"command": "/bin/sh",
				"args":    []any{"-c", script},
			}, nil)
			h, err := d.StartTask(tc)
			if err != nil {
				t.Fatal(err)
			}
			if h.State != drivers.TaskStateRunning {
				t.Fatalf("state %q", h.State)
			}
			assertNoThreadInCgroup(t, d.tasks[tc.ID].cg)
			// sh, the (setsid) background sleep, the double-forked sleep,
			// the foreground sleep.
			want := 4
			// The subshell that double-forks exits at once: a pid listed
			// may be gone by the time it is read, so only the processes
			// still there count.
			starts := map[int]uint64{}
			waitFor(t, 10*time.Second, "all task processes", func() bool {
				st, err := d.InspectTask(tc.ID)
				if err != nil {
					t.Fatal(err)
				}
				starts = map[int]uint64{}
				for _, p := range st.PIDs {
					if ps, err := readProcStat(p); err == nil {
						starts[p] = ps.startTime
					}
				}
				return len(starts) >= want
			})
			if err := d.StopTask(tc.ID, 2*time.Second, "SIGTERM"); err != nil {
				t.Fatal(err)
			}
			for p, s := range starts {
				if alive(p, s) {
					t.Errorf("process %d survived StopTask", p)
				}
			}
			r := waitExit(t, d, tc.ID)
			if r.Signal != int(syscall.SIGTERM) || r.ExitCode != 128+int(syscall.SIGTERM) {
				t.Errorf("exit result %+v, want SIGTERM", r)
			}
			if p := d.tasks[tc.ID].cgroupPath(); p != "" {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("task cgroup %s not removed: %v", p, err)
				}
			}
			if err := d.DestroyTask(tc.ID, false); err != nil {
				t.Fatal(err)
			}
			if _, err := d.InspectTask(tc.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
				t.Errorf("after destroy: %v", err)
			}
		})
	}
}

// A task ignoring SIGTERM is killed after the timeout, together with a child
// that started its own session.
func TestStopEscalatesAfterTimeout(t *testing.T) {
	requireRoot(t, "cgroup tracking")
	d := New(Config{Enabled: true})
	if d.tracker().kind == cgNone {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: no cgroup tracker: %s", d.tracker().desc)
		}
		t.Skip(d.tracker().desc)
	}
	tc := newTask(t, "escalate", map[string]any{
		"command": "/bin/sh", "args": []string{"-c", "trap '' TERM; setsid sleep 600 & while :; do sleep 1; done"},
	}, nil)
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "setsid child", func() bool {
		st, _ := d.InspectTask(tc.ID)
		return len(st.PIDs) >= 3
	})
	st, _ := d.InspectTask(tc.ID)
	if err := d.StopTask(tc.ID, 200*time.Millisecond, "TERM"); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.PIDs {
		if s, err := readProcStat(p); err == nil && s.state != 'Z' {
			t.Errorf("pid %d still alive (state %c)", p, s.state)
		}
	}
	if r := waitExit(t, d, tc.ID); r.Signal != int(syscall.SIGKILL) {
		t.Errorf("exit %+v, want SIGKILL", r)
	}
	_ = d.DestroyTask(tc.ID, true)
}

func TestExitCodesAndSignals(t *testing.T) {
	d := New(Config{Enabled: true, DisableCgroups: os.Geteuid() != 0})
	cases := []struct {
		script  string
		code    int
		signal  int
		success bool
	}{
		{"exit 0", 0, 0, true},
		{"exit 3", 3, 0, false},
		{"kill -KILL $$", 137, 9, false},
		{"kill -USR1 $$", 128 + int(syscall.SIGUSR1), int(syscall.SIGUSR1), false},
	}
	for i, c := range cases {
		tc := newTask(t, "exit"+string(rune('a'+i)), map[string]any{"command": "sh", "args": []string{"-c", c.script}}, nil)
		if _, err := d.StartTask(tc); err != nil {
			t.Fatal(err)
		}
		r := waitExit(t, d, tc.ID)
		if r.ExitCode != c.code || r.Signal != c.signal || r.Successful() != c.success || r.Err != nil {
			t.Errorf("%q: got %+v", c.script, r)
		}
		st, err := d.InspectTask(tc.ID)
		if err != nil || st.State != drivers.TaskStateExited || st.ExitResult == nil || st.CompletedAt.IsZero() {
			t.Errorf("%q: inspect %+v %v", c.script, st, err)
		}
		if err := d.DestroyTask(tc.ID, false); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEnvIsExactlyGiven(t *testing.T) {
	t.Setenv("DROVER_LEAK_CHECK", "host-value")
	d := New(Config{Enabled: true, DisableCgroups: os.Geteuid() != 0})
	env := map[string]string{"PATH": "/usr/bin:/bin", "FOO": "bar baz", "NOMAD_TASK_NAME": "web", "EMPTY": ""}
	tc := newTask(t, "env", map[string]any{"command": "env"}, env)
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(tc.ID, true) })
	if r := waitExit(t, d, tc.ID); !r.Successful() {
		t.Fatalf("env failed: %+v", r)
	}
	b, err := os.ReadFile(tc.StdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Strings(got)
	want := envList(env)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("task env:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCwdStderrAndTaskDirCommand(t *testing.T) {
	d := New(Config{Enabled: true, DisableCgroups: os.Geteuid() != 0})
	tc := newTask(t, "cwd", map[string]any{"command": "run.sh"}, nil)
	script := "#!/bin/sh\npwd\necho oops >&2\n"
	if err := os.WriteFile(filepath.Join(tc.TaskDir, "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// Existing content is appended to, not truncated (the log collector may own it).
	if err := os.WriteFile(tc.StderrPath, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(tc.ID, true) })
	if r := waitExit(t, d, tc.ID); !r.Successful() {
		t.Fatalf("%+v", r)
	}
	out, _ := os.ReadFile(tc.StdoutPath)
	if strings.TrimSpace(string(out)) != tc.TaskDir {
		t.Errorf("cwd %q, want %q", out, tc.TaskDir)
	}
	errOut, _ := os.ReadFile(tc.StderrPath)
	if string(errOut) != "before\noops\n" {
		t.Errorf("stderr %q", errOut)
	}
}

func TestConfigErrors(t *testing.T) {
	d := New(Config{Enabled: true, DisableCgroups: true})
	for name, cfg := range map[string]map[string]any{
		"missing command": {"args": []string{"x"}},
		"bad args":        {"command": "sh", "args": "x"},
		"unknown key":     {"command": "sh", "image": "x"},
		"not found":       {"command": "definitely-not-a-command-xyz"},
	} {
		if _, err := d.StartTask(newTask(t, "bad", cfg, nil)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A NUL byte cannot reach exec(2): refused when the job is registered.
	for want, cfg := range map[string]map[string]any{
		"args[1] contains a NUL byte": {"command": "sh", "args": []any{"-c", "a\x00"}},
		"command contains a NUL byte": {"command": "s\x00h"},
	} {
		if err := ValidateTaskConfig(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want %q, got %v", cfg, want, err)
		}
	}
	if _, err := New(Config{}).StartTask(newTask(t, "off", map[string]any{"command": "sh"}, nil)); err == nil {
		t.Error("disabled driver started a task")
	}
}

func TestFingerprint(t *testing.T) {
	fp := New(Config{}).Fingerprint()
	if fp.Health != drivers.HealthUndetected || fp.Attributes["driver.raw_exec"] != "" {
		t.Errorf("disabled: %+v", fp)
	}
	fp = New(Config{Enabled: true}).Fingerprint()
	if fp.Health != drivers.HealthHealthy || fp.Attributes["driver.raw_exec"] != "1" {
		t.Errorf("enabled: %+v", fp)
	}
	fp = New(Config{Enabled: true, DisableCgroups: true}).Fingerprint()
	if fp.Health != drivers.HealthHealthy || !strings.Contains(fp.HealthDescription, "process group only") {
		t.Errorf("no cgroups: %+v", fp)
	}
}

func TestSignalTask(t *testing.T) {
	d := New(Config{Enabled: true, DisableCgroups: os.Geteuid() != 0})
	tc := newTask(t, "sig", map[string]any{"command": "sh", "args": []string{"-c", "trap 'exit 7' USR1; echo ready; while :; do sleep 0.05; done"}}, nil)
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "trap installed", func() bool {
		b, _ := os.ReadFile(tc.StdoutPath)
		return strings.Contains(string(b), "ready")
	})
	if err := d.SignalTask(tc.ID, "SIGUSR1"); err != nil {
		t.Fatal(err)
	}
	r := waitExit(t, d, tc.ID)
	if r.ExitCode != 7 {
		t.Errorf("exit %+v, want 7 from the trap", r)
	}
	if err := d.SignalTask(tc.ID, "SIGBOGUS"); err == nil {
		t.Error("bogus signal accepted")
	}
	_ = d.DestroyTask(tc.ID, true)
}

func TestRecoverTask(t *testing.T) {
	for name, cfg := range trackerCases(t) {
		t.Run(name, func(t *testing.T) {
			d1 := New(cfg)
			script := "setsid sleep 600 & sleep 600"
			if name == "pgroup" {
				script = "sleep 600 & sleep 600"
			}
			tc := newTask(t, "recover-"+name, map[string]any{"command": "sh", "args": []string{"-c", script}}, nil)
			h, err := d1.StartTask(tc)
			if err != nil {
				t.Fatal(err)
			}
			// A new client process: a fresh driver with only the persisted handle.
			d2 := New(cfg)
			if err := d2.RecoverTask(h); err != nil {
				t.Fatal(err)
			}
			st, err := d2.InspectTask(tc.ID)
			if err != nil || st.State != drivers.TaskStateRunning {
				t.Fatalf("recovered: %+v %v", st, err)
			}
			ch, _ := d2.WaitTask(context.Background(), tc.ID)
			if err := d2.StopTask(tc.ID, time.Second, ""); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-ch:
				// The task's supervisor reaped it: the real status, even
				// though this driver never was its parent.
				if r.Err != nil || r.Signal != int(syscall.SIGTERM) || r.ExitCode != 128+int(syscall.SIGTERM) {
					t.Errorf("recovered exit %+v", r)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no exit after stop")
			}
			// A task that ended is recovered with how it ended.
			d3 := New(cfg)
			if err := d3.RecoverTask(h); err != nil {
				t.Fatalf("recover an exited task: %v", err)
			}
			if r := waitExit(t, d3, tc.ID); r.Signal != int(syscall.SIGTERM) {
				t.Errorf("exited task recovered with %+v", r)
			}
			// A task with neither a supervisor nor an exit record is not
			// recovered, and a pid reused by another process (different
			// start time) is not adopted.
			var ds driverState
			ds.PID, ds.StartTime = os.Getpid(), 1
			h.DriverState, _ = jsonMarshal(ds)
			if err := New(cfg).RecoverTask(h); err == nil {
				t.Error("adopted a reused pid")
			}
			_ = d1.DestroyTask(tc.ID, true)
		})
	}
}

// assertNoThreadInCgroup fails if any thread of this (the driver's) process
// was left in the task's cgroup: freezing or killing it would hit us.
func assertNoThreadInCgroup(t *testing.T, cg *taskCgroup) {
	t.Helper()
	if cg == nil {
		return
	}
	rel := strings.TrimPrefix(cg.Path, cg.Root)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "cgroup"))
		if err != nil {
			continue // thread exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasSuffix(line, ":"+rel) {
				t.Fatalf("driver thread %s left in task cgroup: %s", e.Name(), line)
			}
		}
	}
}

// The signals the shim ignores for itself (HUP, INT, QUIT, PIPE, ...) are
// not ignored in the task: a shell's trap on SIGHUP runs (a template's
// change_signal, `alloc signal -s SIGHUP`), and a plain program dies of
// SIGINT as it would anywhere.
func TestSignalTaskHUPAndINTReachTheTask(t *testing.T) {
	d := New(Config{Enabled: true, DisableCgroups: os.Geteuid() != 0})
	tc := newTask(t, "sighup", map[string]any{"command": "sh", "args": []string{"-c", "trap 'exit 9' HUP; echo ready; while :; do sleep 0.05; done"}}, nil)
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "trap installed", func() bool {
		b, _ := os.ReadFile(tc.StdoutPath)
		return strings.Contains(string(b), "ready")
	})
	if err := d.SignalTask(tc.ID, "SIGHUP"); err != nil {
		t.Fatal(err)
	}
	if r := waitExit(t, d, tc.ID); r.ExitCode != 9 {
		t.Errorf("exit %+v, want 9 from the HUP trap", r)
	}
	_ = d.DestroyTask(tc.ID, true)

	tc = newTask(t, "sigint", map[string]any{"command": "sleep", "args": []string{"600"}}, nil)
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	if err := d.SignalTask(tc.ID, "SIGINT"); err != nil {
		t.Fatal(err)
	}
	if r := waitExit(t, d, tc.ID); r.Signal != int(syscall.SIGINT) {
		t.Errorf("exit %+v, want killed by SIGINT", r)
	}
	_ = d.DestroyTask(tc.ID, true)
}
