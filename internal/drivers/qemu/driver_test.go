package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

func TestFingerprintUndetectedWithoutQemu(t *testing.T) {
	d := New(Config{Binary: "drover-no-such-qemu"})
	fp := d.Fingerprint()
	if fp.Health != drivers.HealthUndetected || fp.Attributes["driver.qemu"] != "" {
		t.Fatalf("fingerprint without qemu: %+v, want undetected", fp)
	}
	cfg := &drivers.TaskConfig{ID: uniqueID("a") + "/t", TaskDir: t.TempDir(), Config: map[string]any{"image_path": "x"}}
	if _, err := d.StartTask(cfg); err == nil || !strings.Contains(err.Error(), "drover-no-such-qemu not found") {
		t.Fatalf("start without qemu: %v", err)
	}
}

// fakeQemu writes a script that answers --version like qemu does.
func fakeQemu(t *testing.T, version string) string {
	p := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	script := "#!/bin/sh\necho 'QEMU emulator version " + version + " (Debian 1:7.2+dfsg-7+deb12u18+b3)'\necho 'Copyright (c) 2003-2022 Fabrice Bellard and the QEMU Project developers'\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFingerprintVersion(t *testing.T) {
	d := New(Config{Binary: fakeQemu(t, "7.2.22"), KVMDevice: filepath.Join(t.TempDir(), "kvm")})
	fp := d.Fingerprint()
	if fp.Health != drivers.HealthHealthy || fp.Attributes["driver.qemu"] != "1" || fp.Attributes["driver.qemu.version"] != "7.2.22" {
		t.Fatalf("fingerprint: %+v", fp)
	}
	if !strings.Contains(fp.HealthDescription, `accelerator "tcg" only`) {
		t.Fatalf("a node without KVM must say so: %q", fp.HealthDescription)
	}
}

func TestKVMRequestedWithoutKVM(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vm.img"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := New(Config{Binary: fakeQemu(t, "7.2.22"), KVMDevice: filepath.Join(dir, "no-kvm")})
	_, err := d.StartTask(&drivers.TaskConfig{ID: uniqueID("a") + "/t", Name: "t", TaskDir: dir, AllocDir: filepath.Dir(dir),
		Config: map[string]any{"image_path": "vm.img", "accelerator": "kvm"}})
	if err == nil || !strings.Contains(err.Error(), `config: accelerator = "kvm" but KVM is not usable on this node`) ||
		!strings.Contains(err.Error(), `use accelerator = "tcg"`) {
		t.Fatalf("kvm without /dev/kvm: %v", err)
	}
}

// fakeMonitor serves QMP on a unix socket: the greeting, an event before
// each answer (as qemu may send), and records the commands it got.
func fakeMonitor(t *testing.T, path string) <-chan string {
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cmds := make(chan string, 10)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte(`{"QMP": {"version": {"qemu": {"micro": 22, "minor": 2, "major": 7}}, "capabilities": ["oob"]}}` + "\n"))
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(cmds)
				return
			}
			var m struct {
				Execute string `json:"execute"`
			}
			json.Unmarshal([]byte(line), &m)
			cmds <- m.Execute
			c.Write([]byte(`{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "POWERDOWN"}` + "\n"))
			if m.Execute == "bogus" {
				c.Write([]byte(`{"error": {"class": "CommandNotFound", "desc": "The command bogus has not been found"}}` + "\n"))
				continue
			}
			c.Write([]byte(`{"return": {}}` + "\n"))
		}
	}()
	return cmds
}

func TestQMPPowerdown(t *testing.T) {
	// A task directory too deep for a socket address: reached through
	// the directory's descriptor.
	dir := t.TempDir()
	for len(dir) < 120 {
		dir = filepath.Join(dir, "a-long-directory-name")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Listen through a relative path (as qemu does, from the task dir).
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	cmds := fakeMonitor(t, monitorSocket)
	os.Chdir(wd)

	if err := qmpPowerdown(dir, 5*time.Second); err != nil {
		t.Fatalf("powerdown: %v", err)
	}
	var got []string
	for c := range cmds {
		got = append(got, c)
	}
	if strings.Join(got, ",") != "qmp_capabilities,system_powerdown" {
		t.Fatalf("monitor got %v, want qmp_capabilities then system_powerdown", got)
	}

	if err := qmpPowerdown(t.TempDir(), time.Second); err == nil || !strings.Contains(err.Error(), "connect to the QMP monitor") {
		t.Fatalf("no monitor: %v", err)
	}
}

// Through a stand-in emulator (a script): the VM process runs under the
// supervisor with the command line built from the task, its output lands
// in the task's log file, and a graceful stop whose monitor does not
// answer falls back to the stop signal at once instead of waiting out the
// kill timeout.
func TestStopWithoutMonitorFallsBackToSignal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	script := `#!/bin/sh
if [ "$1" = --version ]; then echo 'QEMU emulator version 7.2.22'; exit 0; fi
trap 'echo got-term; exit 3' TERM
echo "args: $*"
while :; do sleep 0.1; done
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	alloc := t.TempDir()
	task := filepath.Join(alloc, "vm")
	logs := filepath.Join(alloc, "alloc", "logs")
	for _, d := range []string{task, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(task, "disk.img"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	allocID := uniqueID("a1")
	cfg := &drivers.TaskConfig{ID: allocID + "/vm", AllocID: allocID, Name: "vm", AllocDir: alloc, TaskDir: task,
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Logs: &drivers.LogConfig{Dir: logs, MaxFiles: 2, MaxFileSizeMB: 1},
		Config: map[string]any{"image_path": "disk.img", "graceful_shutdown": true}}
	d := New(Config{Binary: bin})
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	stdout := filepath.Join(logs, "vm.stdout.0")
	read := func() string { b, _ := os.ReadFile(stdout); return string(b) }
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(read(), "args: ") {
		if time.Now().After(deadline) {
			t.Fatalf("the emulator's output never reached %s", stdout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(task, "disk.img"))
	for _, want := range []string{"-machine type=pc,accel=tcg", "-drive file=" + real + ",if=ide", "-qmp unix:qmp.sock,server=on,wait=off"} {
		if !strings.Contains(read(), want) {
			t.Fatalf("command line %q lacks %q", read(), want)
		}
	}
	start := time.Now()
	if err := d.StopTask(cfg.ID, 30*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("stop took %s: it waited for a monitor that does not exist", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ch, err := d.WaitTask(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r == nil || r.ExitCode != 3 {
		t.Fatalf("exit %+v, want the emulator's own exit code 3 after SIGTERM", r)
	}
	if !strings.Contains(read(), "got-term") {
		t.Fatalf("the emulator never got SIGTERM: %q", read())
	}
}

// uniqueID makes name unique to this test run: a task ID names
// machine-wide cgroups (and container state), so two runs of this
// package's tests at once (a developer's and CI's) must never share one,
// or one run's start or stop kills the other's processes.
func uniqueID(name string) string {
	return fmt.Sprintf("%d-%d-%s", time.Now().UnixNano(), os.Getpid(), name)
}
