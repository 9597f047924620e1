package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

// The task is PID 1 of its own PID namespace, sees only its own processes,
// runs as nobody by default, and cannot see host files outside its root.
func TestExecIsolatesTask(t *testing.T) {
	requireIsolation(t)
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := New(Config{})
	tc := newTask(t, "iso", map[string]any{"command": "/bin/sh", "args": []any{"-c",
		`echo "pid=$$"; echo "procs=$(ls /proc | grep -c '^[0-9]')"; echo "uid=$(id -u)"; ` +
			`cat ` + secret + ` || echo "secret=invisible"; echo "taskdir=$NOMAD_TASK_DIR"; ls /alloc; echo hi > /local/out; ` +
			`echo tok > /secrets/token && cat /secrets/token`}})
	r, out, errOut := runToExit(t, d, tc)
	t.Logf("task's stdout:\n%s", out)
	if !r.Successful() {
		t.Fatalf("task failed: %+v\nstdout: %s\nstderr: %s", r, out, errOut)
	}
	for _, want := range []string{"pid=1\n", "uid=65534\n", "secret=invisible\n", "taskdir=/local\n", "logs\n", "tok\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr: %s", want, out, errOut)
		}
	}
	// sh, ls and grep (and the subshell): nowhere near the host's count.
	if i := strings.Index(out, "procs="); i < 0 || len(out) < i+7 || out[i+6] > '5' || out[i+7] != '\n' {
		t.Errorf("task sees more processes than its own: %s", out)
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("task read a host file outside its root: %s", out)
	}
	if b, err := os.ReadFile(filepath.Join(tc.TaskDir, "local", "out")); err != nil || string(b) != "hi\n" {
		t.Errorf("task's write to /local did not land in the task dir: %q %v", b, err)
	}
	// Nothing the task mounted leaks into the host's mount table.
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), tc.TaskDir) {
		t.Errorf("task mounts visible on the host")
	}
}

func TestExecUserRoot(t *testing.T) {
	requireIsolation(t)
	d := New(Config{})
	tc := newTask(t, "root", map[string]any{"command": "id", "args": []any{"-u"}})
	tc.User = "root"
	r, out, errOut := runToExit(t, d, tc)
	if !r.Successful() || out != "0\n" {
		t.Fatalf("user root: %+v %q %q", r, out, errOut)
	}
}

// A task allocating past its memory limit is killed by the kernel and the
// exit says OOM Killed.
func TestExecOOMKilled(t *testing.T) {
	requireIsolation(t)
	d := New(Config{})
	// tail keeps the "last line" of an endless stream with no newline.
	tc := newTask(t, "oom", map[string]any{"command": "tail", "args": []any{"/dev/zero"}})
	tc.Resources.Memory.MemoryMB = 32
	r, out, errOut := runToExit(t, d, tc)
	if !r.OOMKilled || r.Err == nil || r.Err.Error() != "OOM Killed" || r.Signal != 9 {
		t.Fatalf("want OOM Killed by SIGKILL, got %+v (stdout %q stderr %q)", r, out, errOut)
	}
}

// The pids limit holds: a task forking past it is refused forks.
func TestExecPidsLimit(t *testing.T) {
	requireIsolation(t)
	d := New(Config{})
	tc := newTask(t, "pids", map[string]any{"command": "/bin/sh", "pids_limit": 10, "args": []any{"-c",
		`n=1; while [ $n -lt 40 ]; do sleep 30 & n=$((n+1)); echo "started=$n"; done`}})
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	r := waitExit(t, d, tc.ID)
	out, errOut := output(t, tc)
	cg := d.mustTask(t, tc.ID).cg.Dir("pids")
	cur, _ := os.ReadFile(filepath.Join(cg, "pids.max"))
	events, _ := os.ReadFile(filepath.Join(cg, "pids.events"))
	if err := d.DestroyTask(tc.ID, true); err != nil {
		t.Error(err)
	}
	if strings.TrimSpace(string(cur)) != "10" {
		t.Errorf("pids.max = %q, want 10", cur)
	}
	if !strings.Contains(errOut, "fork") {
		t.Errorf("no fork was refused (stderr %q, stdout %q, exit %+v)", errOut, out, r)
	}
	if strings.TrimSpace(string(events)) == "max 0" {
		t.Errorf("the pids cgroup never refused a fork: %q", events)
	}
	// The shell counts itself: the 10th process is the last one it gets.
	if !strings.Contains(out, "started=10\n") || strings.Contains(out, "started=11\n") {
		t.Errorf("task forked past pids_limit 10: %q (stderr %q, exit %+v)", out, errOut, r)
	}
}

func (d *Driver) mustTask(t *testing.T, id string) *task {
	t.Helper()
	tk, err := d.get(id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// alloc exec runs inside the task's namespaces: it sees the task as PID 1.
func TestExecIntoTask(t *testing.T) {
	requireIsolation(t)
	d := New(Config{})
	tc := newTask(t, "enter", map[string]any{"command": "sleep", "args": []any{"600"}})
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	var out, errOut strings.Builder
	code, err := d.ExecTask(context.Background(), tc.ID, drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", `tr '\0' ' ' < /proc/1/cmdline; echo; id -u; ls /proc | grep -c '^[0-9]'`},
		Stdout:  &out, Stderr: &errOut})
	if err != nil || code != 0 {
		t.Fatalf("exec: code %d err %v stderr %q", code, err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || strings.TrimSpace(lines[0]) != "sleep 600" || lines[1] != "65534" {
		t.Fatalf("exec did not run inside the task as its user: %q", out.String())
	}
	code, err = d.ExecTask(context.Background(), tc.ID, drivers.ExecOptions{Command: []string{"/bin/sh", "-c", "exit 3"}})
	if err != nil || code != 3 {
		t.Errorf("exit code: %d %v", code, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var tty strings.Builder
	code, err = d.ExecTask(ctx, tc.ID, drivers.ExecOptions{Command: []string{"/bin/sh", "-c", "test -t 1 && echo tty"}, Tty: true, Stdout: &tty})
	if err != nil || code != 0 || !strings.Contains(tty.String(), "tty") {
		t.Errorf("tty exec: %d %v %q", code, err, tty.String())
	}
}

// A new driver (a restarted agent) re-attaches to the running task: same
// PID, not restarted, and can still stop it.
func TestExecRecover(t *testing.T) {
	requireIsolation(t)
	tc := newTask(t, "recover", map[string]any{"command": "sleep", "args": []any{"600"}})
	h, err := New(Config{}).StartTask(tc)
	if err != nil {
		t.Fatal(err)
	}
	d2 := New(Config{})
	if err := d2.RecoverTask(h); err != nil {
		t.Fatal(err)
	}
	if err := d2.RecoverTask(h); err != nil {
		t.Fatalf("recovering twice: %v", err)
	}
	st0, err := d2.InspectTask(tc.ID)
	if err != nil || len(st0.PIDs) == 0 {
		t.Fatalf("inspect: %+v %v", st0, err)
	}
	// Starting it again must neither work nor harm the running task.
	if _, err := d2.StartTask(tc); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Fatalf("second start: %v", err)
	}
	for _, pid := range st0.PIDs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(b)); err != nil || len(f) < 3 || f[2] == "Z" {
			t.Fatalf("the refused second start killed the task's process %d", pid)
		}
	}
	st, err := d2.InspectTask(tc.ID)
	if err != nil || st.State != drivers.TaskStateRunning {
		t.Fatalf("recovered task: %+v %v", st, err)
	}
	if _, err := d2.TaskStats(context.Background(), tc.ID); err != nil {
		t.Errorf("stats after recovery: %v", err)
	}
	// The restarted agent finds the task's container from its state in
	// the task dir: alloc exec still runs inside it.
	var out strings.Builder
	code, err := d2.ExecTask(context.Background(), tc.ID, drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", "cat /proc/1/comm; ls /private | wc -l"}, Stdout: &out})
	if err != nil || code != 0 || out.String() != "sleep\n0\n" {
		t.Errorf("exec after recovery: %d %v %q", code, err, out.String())
	}
	if err := d2.StopTask(tc.ID, time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if r := waitExit(t, d2, tc.ID); r.Signal != 9 {
		t.Errorf("stopped task: %+v", r)
	}
	if err := d2.DestroyTask(tc.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d2.tasksCgroupDir(t, tc)); !os.IsNotExist(err) {
		t.Errorf("task cgroup left behind: %v", err)
	}
}

func (d *Driver) tasksCgroupDir(t testing.TB, tc *drivers.TaskConfig) string {
	return (&task{}).cgFor(t, tc).Dir("memory")
}

// What the task or the plugin configuration forbids fails the start with
// the reason, and leaves no cgroup behind.
func TestExecStartRefusals(t *testing.T) {
	requireIsolation(t)
	p, err := ParsePluginConfig(map[string]any{"denied_host_uids": "0,100-200", "denied_host_gids": "5"})
	if err != nil {
		t.Fatal(err)
	}
	d := New(Config{Plugin: p})
	for name, c := range map[string]struct {
		config map[string]any
		user   string
		want   string
	}{
		"missing command":  {map[string]any{"command": "no-such-cmd"}, "", `command "no-such-cmd" not found`},
		"host pid mode":    {map[string]any{"command": "true", "pid_mode": "host"}, "", `pid_mode = "host" is not allowed`},
		"cap not allowed":  {map[string]any{"command": "true", "cap_add": []any{"net_raw"}}, "", "net_raw are not allowed"},
		"unknown user":     {map[string]any{"command": "true"}, "no-such-user", `user "no-such-user" does not exist`},
		"pids above agent": {map[string]any{"command": "true", "pids_limit": 5}, "", ""},
		"denied uid":       {map[string]any{"command": "true"}, "root", `user "root" (uid 0) is denied by the exec plugin's denied_host_uids`},
		"denied gid":       {map[string]any{"command": "true"}, "65534:5", `user "65534:5" (group 5) is denied by the exec plugin's denied_host_gids`},
	} {
		t.Run(name, func(t *testing.T) {
			tc := newTask(t, strings.ReplaceAll(name, " ", "-"), c.config)
			tc.User = c.user
			_, err := d.StartTask(tc)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				waitExit(t, d, tc.ID)
				_ = d.DestroyTask(tc.ID, true)
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want error with %q, got %v", c.want, err)
			}
			if _, err := os.Stat(d.tasksCgroupDir(t, tc)); !os.IsNotExist(err) {
				t.Errorf("failed start left its cgroup: %v", err)
			}
		})
	}
}

// A task cannot make the next start create files on the host through a
// symlink it left in its own directory.
func TestExecRefusesSymlinkedMountTargets(t *testing.T) {
	requireIsolation(t)
	hostDir := t.TempDir()
	src := t.TempDir()
	d := New(Config{ChrootEnv: map[string]string{"/bin": "/bin", "/lib": "/lib", "/lib64": "/lib64", "/usr": "/usr", src: "/run/thing"}})
	tc := newTask(t, "symlink", map[string]any{"command": "/bin/true"})
	if err := os.Symlink(hostDir, filepath.Join(tc.TaskDir, "run")); err != nil {
		t.Fatal(err)
	}
	_, err := d.StartTask(tc)
	if err == nil || !strings.Contains(err.Error(), "/run in the task directory is a symlink") {
		t.Fatalf("want a refusal naming the symlink, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "thing")); !os.IsNotExist(err) {
		t.Fatalf("the init created a directory on the host through the task's symlink: %v", err)
	}
}

// An exec whose caller gives up (its context ends) does not leave its
// command running inside the task.
func TestExecIntoTaskCancelled(t *testing.T) {
	requireIsolation(t)
	d := New(Config{})
	tc := newTask(t, "execcancel", map[string]any{"command": "sleep", "args": []any{"600"}})
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	// The command's argument is this test process's own (the PID): another
	// run of these tests at once execs its own sleep, which this one must
	// not wait for.
	secs := strconv.Itoa(1000 + os.Getpid())
	if _, err := d.ExecTask(ctx, tc.ID, drivers.ExecOptions{Command: []string{"sleep", secs}}); err == nil {
		t.Fatal("a cancelled exec reported success")
	}
	running := func() bool {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && string(b) == "sleep\x00"+secs+"\x00" {
				return true
			}
		}
		return false
	}
	waitFor(t, 10*time.Second, "the cancelled exec's command to end", func() bool { return !running() })
}

// A task that exits while the agent is down is reported with its own exit
// code by the restarted agent (the supervisor waited for the container's
// init and recorded it), and its output written meanwhile is in the logs.
func TestExecRecoverAfterExit(t *testing.T) {
	requireIsolation(t)
	tc := newTask(t, "recexit", map[string]any{"command": "/bin/sh", "args": []any{"-c", "sleep 0.3; echo done; exit 7"}})
	d1 := New(Config{})
	h, err := d1.StartTask(tc)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := d1.inner.MainPID(tc.ID)
	if err != nil {
		t.Fatal(err)
	}
	// d1 stands for the agent that died: only a new driver looks from now on.
	waitFor(t, 10*time.Second, "the task to exit", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
	d2 := New(Config{})
	if err := d2.RecoverTask(h); err != nil {
		t.Fatal(err)
	}
	r := waitExit(t, d2, tc.ID)
	if r.ExitCode != 7 || r.Signal != 0 || r.OOMKilled {
		t.Errorf("exit after recovery: %+v", r)
	}
	if out, _ := output(t, tc); out != "done\n" {
		t.Errorf("output written while the agent was down: %q", out)
	}
	if err := d2.DestroyTask(tc.ID, true); err != nil {
		t.Fatal(err)
	}
}
