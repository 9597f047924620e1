package java

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/exec"
	"github.com/drover-project/drover/internal/drivers/isolate"
)

// Name is the driver's name in jobspecs.
const Name = "java"

// Config is the driver's agent configuration: exec's plugin options and
// the client's chroot_env.
type Config struct {
	Plugin    exec.PluginConfig
	ChrootEnv map[string]string
	Logger    hclog.Logger
	// JavaPath overrides the java binary (tests); empty: "java" in PATH.
	JavaPath string
}

// Driver is the java driver: exec's driver with its own config block and
// fingerprint.
type Driver struct {
	*exec.Driver
	cfg Config

	mu   sync.Mutex
	info *javaInfo // cached after the first successful `java -version`
	// probed is closed once the first probe (started by New, so a JVM's
	// start-up never delays the agent's) has finished.
	probed chan struct{}
}

var (
	_ drivers.Driver      = (*Driver)(nil)
	_ drivers.StatsDriver = (*Driver)(nil)
	_ drivers.ExecDriver  = (*Driver)(nil)
	// exec's: the JVM runs in its container's cpuset cgroup.
	_ drivers.CpusetUpdater = (*Driver)(nil)
)

// New returns a driver.
func New(cfg Config) *Driver {
	d := &Driver{Driver: exec.New(exec.Config{Plugin: cfg.Plugin, ChrootEnv: cfg.ChrootEnv, Logger: cfg.Logger, Name: Name}),
		cfg: cfg, probed: make(chan struct{})}
	go func() {
		if os.Geteuid() == 0 { // else the driver is undetected anyway
			_, _ = d.java()
		}
		close(d.probed)
	}()
	return d
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

type javaInfo struct {
	path                 string // resolved binary
	home                 string // the JDK's directory
	version, runtime, vm string
}

var versionRe = regexp.MustCompile(`version "([^"]+)"`)

// parseVersion reads `java -version` output: the quoted version on the
// first line, the runtime and the VM on the next two.
func parseVersion(out string) (version, runtime, vm string, err error) {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Picked up ") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "", "", "", errors.New("java -version printed nothing")
	}
	m := versionRe.FindStringSubmatch(lines[0])
	if m == nil {
		return "", "", "", fmt.Errorf("unexpected java -version output %q", lines[0])
	}
	version = m[1]
	if len(lines) > 1 {
		runtime = lines[1]
	}
	if len(lines) > 2 {
		vm = lines[2]
	}
	return version, runtime, vm, nil
}

// java finds the JVM and asks its version, once.
func (d *Driver) java() (*javaInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.info != nil {
		return d.info, nil
	}
	bin := d.cfg.JavaPath
	if bin == "" {
		p, err := osexec.LookPath("java")
		if err != nil {
			return nil, errors.New("java not found in PATH")
		}
		bin = p
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, fmt.Errorf("java binary %s: %w", bin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := osexec.CommandContext(ctx, real, "-version")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("java -version: %v: %s", err, strings.TrimSpace(out.String()))
	}
	v, rt, vm, err := parseVersion(out.String())
	if err != nil {
		return nil, err
	}
	d.info = &javaInfo{path: real, home: filepath.Dir(filepath.Dir(real)), version: v, runtime: rt, vm: vm}
	return d.info, nil
}

// Fingerprint implements drivers.Driver: exec's health, plus the JVM.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	fp := d.Driver.Fingerprint()
	if fp.Health == drivers.HealthUndetected {
		return fp
	}
	select {
	case <-d.probed:
	default:
		// The client fingerprints again shortly.
		return &drivers.Fingerprint{Attributes: map[string]string{}, Health: drivers.HealthUndetected,
			HealthDescription: "checking the JVM (java -version)"}
	}
	info, err := d.java()
	if err != nil {
		return &drivers.Fingerprint{Attributes: map[string]string{}, Health: drivers.HealthUndetected, HealthDescription: err.Error()}
	}
	if fp.Health != drivers.HealthHealthy {
		return fp
	}
	fp.Attributes = map[string]string{"driver.java": "1", "driver.java.version": info.version,
		"driver.java.runtime": info.runtime, "driver.java.vm": info.vm}
	return fp
}

// TaskConfig is a java task's `config {}` block.
type TaskConfig struct {
	JarPath    string
	Class      string
	ClassPath  string
	JVMOptions []string
	Args       []string
	// Isolation options shared with exec.
	Exec map[string]any
}

// ValidateTaskConfig checks a task's `config {}` block; servers call it at
// registration.
func ValidateTaskConfig(m map[string]any) error {
	_, err := ParseTaskConfig(m)
	return err
}

// ParseTaskConfig reads a java task's config block.
func ParseTaskConfig(m map[string]any) (*TaskConfig, error) {
	tc := &TaskConfig{Exec: map[string]any{"command": "java"}}
	str := func(k string, v any) (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("config: %s must be a string, got %T", k, v)
		}
		if strings.ContainsRune(s, 0) {
			return "", fmt.Errorf("config: %s contains a NUL byte", k) // exec(2) cannot pass it
		}
		return s, nil
	}
	list := func(k string, v any) ([]string, error) {
		switch a := v.(type) {
		case nil:
			return nil, nil
		case []string:
			a = append([]string(nil), a...)
			for i, e := range a {
				if strings.ContainsRune(e, 0) {
					return nil, fmt.Errorf("config: %s[%d] contains a NUL byte", k, i)
				}
			}
			return a, nil
		case []any:
			var out []string
			for i, e := range a {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("config: %s[%d] must be a string, got %T", k, i, e)
				}
				if strings.ContainsRune(s, 0) {
					return nil, fmt.Errorf("config: %s[%d] contains a NUL byte", k, i)
				}
				out = append(out, s)
			}
			return out, nil
		}
		return nil, fmt.Errorf("config: %s must be a list of strings, got %T", k, v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad key named is the same every time
	for _, k := range keys {
		v := m[k]
		var err error
		switch k {
		case "jar_path":
			tc.JarPath, err = str(k, v)
		case "class":
			tc.Class, err = str(k, v)
		case "class_path":
			tc.ClassPath, err = str(k, v)
		case "jvm_options":
			tc.JVMOptions, err = list(k, v)
		case "args":
			tc.Args, err = list(k, v)
		case "pid_mode", "ipc_mode", "cap_add", "cap_drop", "work_dir", "pids_limit":
			tc.Exec[k] = v
		default:
			err = fmt.Errorf("config: unknown key %q (java takes jar_path, class, class_path, jvm_options, args, pid_mode, ipc_mode, cap_add, cap_drop, work_dir, pids_limit)", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if tc.JarPath == "" && tc.Class == "" {
		return nil, errors.New(`config: "jar_path" or "class" is required`)
	}
	if _, err := exec.ParseTaskConfig(tc.Exec); err != nil {
		return nil, err
	}
	return tc, nil
}

// argv is the JVM's arguments as Nomad builds them.
func (tc *TaskConfig) argv() []string {
	args := append([]string(nil), tc.JVMOptions...)
	if tc.ClassPath != "" {
		args = append(args, "-cp", tc.ClassPath)
	}
	if tc.JarPath != "" {
		args = append(args, "-jar", tc.JarPath)
	} else {
		args = append(args, tc.Class)
	}
	return append(args, tc.Args...)
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil {
		return nil, errors.New("task config is required")
	}
	jc, err := ParseTaskConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	info, err := d.java()
	if err != nil {
		return nil, err
	}
	ec, err := exec.ParseTaskConfig(jc.Exec)
	if err != nil {
		return nil, err
	}
	ec.Command, ec.Args = info.path, jc.argv()
	// The JDK must be visible inside the task's root.
	chroot := d.cfg.ChrootEnv
	if chroot == nil {
		chroot = isolate.DefaultChrootEnv()
	}
	var extra map[string]string
	if !covered(chroot, info.home) {
		extra = map[string]string{info.home: info.home}
	}
	return d.Driver.Start(cfg, ec, extra)
}

// covered reports whether a chroot_env entry already shows dir at its own
// path.
func covered(chroot map[string]string, dir string) bool {
	for host, in := range chroot {
		if host == in && (dir == host || strings.HasPrefix(dir, strings.TrimSuffix(host, "/")+"/")) {
			if fi, err := os.Lstat(host); err == nil && fi.Mode()&os.ModeSymlink == 0 {
				return true
			}
		}
	}
	return false
}
