package java

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

func TestParseVersion(t *testing.T) {
	out := `openjdk version "17.0.15" 2025-04-15
OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)
OpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, sharing)
`
	v, rt, vm, err := parseVersion(out)
	if err != nil || v != "17.0.15" || rt != "OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)" ||
		vm != "OpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, sharing)" {
		t.Fatalf("got %q %q %q %v", v, rt, vm, err)
	}
	if v, _, _, err := parseVersion("Picked up JAVA_TOOL_OPTIONS: -Xmx1g\n" + `java version "1.8.0_402"` + "\nJava(TM) SE\nHotSpot\n"); err != nil || v != "1.8.0_402" {
		t.Errorf("old style: %q %v", v, err)
	}
	if _, _, _, err := parseVersion("garbage"); err == nil {
		t.Error("garbage parsed")
	}
}

func TestParseTaskConfig(t *testing.T) {
	tc, err := ParseTaskConfig(map[string]any{"class": "Main", "class_path": "local/a.jar", "jvm_options": []any{"-Xmx64m"}, "args": []any{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tc.argv(), " "); got != "-Xmx64m -cp local/a.jar Main x" {
		t.Errorf("argv %q", got)
	}
	for cfg, want := range map[string]map[string]any{
		`"jar_path" or "class" is required`:  {"args": []any{"x"}},
		`unknown key "jar"`:                  {"jar": "x.jar"},
		"jvm_options must be a list":         {"jar_path": "a.jar", "jvm_options": "-Xmx1g"},
		`pid_mode must be`:                   {"jar_path": "a.jar", "pid_mode": "shared"},
		"jvm_options[0] contains a NUL byte": {"jar_path": "a.jar", "jvm_options": []any{"-X\x00"}},
		"jar_path contains a NUL byte":       {"jar_path": "a\x00.jar"},
	} {
		if _, err := ParseTaskConfig(want); err == nil || !strings.Contains(err.Error(), cfg) {
			t.Errorf("%v: want %q, got %v", want, cfg, err)
		}
	}
}

// requireJava skips without root, cgroups or a JDK, but fails in CI.
func requireJava(t *testing.T) *Driver {
	t.Helper()
	d := New(Config{})
	<-d.probed
	fp := d.Fingerprint()
	why := ""
	if fp.Health != drivers.HealthHealthy {
		why = fp.HealthDescription
	} else if _, err := exec.LookPath("javac"); err != nil {
		why = "javac not found"
	}
	if why == "" {
		return d
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but the java driver cannot be tested here: %s", why)
	}
	t.Skipf("java driver unavailable: %s", why)
	return nil
}

func TestJavaFingerprint(t *testing.T) {
	d := requireJava(t)
	fp := d.Fingerprint()
	for _, k := range []string{"driver.java", "driver.java.version", "driver.java.runtime", "driver.java.vm"} {
		if fp.Attributes[k] == "" {
			t.Errorf("fingerprint lacks %s: %v", k, fp.Attributes)
		}
	}
}

// A jar compiled here runs isolated, prints its environment and exits 0.
func TestJavaRunsJar(t *testing.T) {
	d := requireJava(t)
	src := t.TempDir()
	java := `public class Hello { public static void main(String[] a) {
  System.out.println("args=" + String.join(",", a));
  System.out.println("user=" + System.getProperty("user.name"));
  System.getenv().forEach((k, v) -> System.out.println(k + "=" + v)); } }`
	if err := os.WriteFile(filepath.Join(src, "Hello.java"), []byte(java), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"javac", "Hello.java"}, {"jar", "cfe", "hello.jar", "Hello", "Hello.class"}} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	tc := newTask(t, "hello")
	jar, _ := os.ReadFile(filepath.Join(src, "hello.jar"))
	if err := os.WriteFile(filepath.Join(tc.TaskDir, "local", "hello.jar"), jar, 0o644); err != nil {
		t.Fatal(err)
	}
	tc.Config = map[string]any{"jar_path": "local/hello.jar", "jvm_options": []any{"-Xmx32m", "-Xshare:off"}, "args": []any{"a", "b"}}
	tc.Env["GREETING"] = "from-drover"
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch, err := d.WaitTask(ctx, tc.ID)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	out, _ := os.ReadFile(tc.StdoutPath)
	errOut, _ := os.ReadFile(tc.StderrPath)
	if r == nil || !r.Successful() {
		t.Fatalf("java task: %+v\nstdout: %s\nstderr: %s", r, out, errOut)
	}
	for _, want := range []string{"args=a,b\n", "user=nobody\n", "GREETING=from-drover\n", "NOMAD_TASK_DIR=/local\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

func newTask(t *testing.T, id string) *drivers.TaskConfig {
	t.Helper()
	allocDir := filepath.Join(t.TempDir(), "alloc-"+id)
	taskDir := filepath.Join(allocDir, id)
	for _, d := range []string{filepath.Join(allocDir, "alloc", "logs"), filepath.Join(taskDir, "local"),
		filepath.Join(taskDir, "secrets"), filepath.Join(taskDir, "tmp"), filepath.Join(taskDir, "private")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Chmod(filepath.Join(taskDir, "tmp"), 0o777|os.ModeSticky)
	// Only the test's own dirs: never the system temp dir itself.
	for p := taskDir; p != "/" && p != os.TempDir() && strings.HasPrefix(p, os.TempDir()+string(filepath.Separator)); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755)
	}
	_ = os.Chmod(filepath.Join(taskDir, "tmp"), 0o777|os.ModeSticky)
	allocID := uniqueID("alloc-" + id)
	return &drivers.TaskConfig{
		ID: allocID + "/" + id, AllocID: allocID, Name: id,
		Env: map[string]string{"PATH": "/usr/bin:/bin", "NOMAD_TASK_DIR": filepath.Join(taskDir, "local")}, TaskDir: taskDir, AllocDir: allocDir,
		StdoutPath: filepath.Join(allocDir, "alloc", "logs", id+".stdout"),
		StderrPath: filepath.Join(allocDir, "alloc", "logs", id+".stderr"),
		Resources: &structs.AllocatedTaskResources{Cpu: structs.AllocatedCpuResources{CpuShares: 500},
			Memory: structs.AllocatedMemoryResources{MemoryMB: 256}},
	}
}

// The JDK's directory joins the task's root only when chroot_env does not
// already show it at the same path (through a real directory).
func TestJDKCovered(t *testing.T) {
	jdk := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Dir(jdk), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		chroot map[string]string
		want   bool
	}{
		{map[string]string{filepath.Dir(jdk): filepath.Dir(jdk)}, true},
		{map[string]string{jdk: jdk}, true},
		{map[string]string{filepath.Dir(jdk): "/elsewhere"}, false},
		{map[string]string{"/usr": "/usr"}, strings.HasPrefix(jdk, "/usr/")},
		{map[string]string{link: link}, false},
	} {
		if got := covered(c.chroot, jdk); got != c.want {
			t.Errorf("covered(%v, %s) = %v, want %v", c.chroot, jdk, got, c.want)
		}
	}
}

// uniqueID makes name unique to this test run: a task ID names
// machine-wide cgroups (and container state), so two runs of this
// package's tests at once (a developer's and CI's) must never share one,
// or one run's start or stop kills the other's processes.
func uniqueID(name string) string {
	return fmt.Sprintf("%d-%d-%s", time.Now().UnixNano(), os.Getpid(), name)
}
