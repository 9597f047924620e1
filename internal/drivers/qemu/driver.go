package qemu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/rawexec"
)

// DefaultBinary is the emulator the driver runs.
const DefaultBinary = "qemu-system-x86_64"

// Config is the driver's agent configuration.
type Config struct {
	Plugin PluginConfig
	Logger hclog.Logger
	// Binary is the emulator's name or path (tests); empty: DefaultBinary
	// from PATH.
	Binary string
	// KVMDevice is the KVM device node (tests); empty: /dev/kvm.
	KVMDevice string
	// CgroupRoot is passed to the supervisor's task tracker (tests).
	CgroupRoot string
}

// Driver is the qemu driver. It is safe for concurrent use.
type Driver struct {
	cfg    Config
	logger hclog.Logger
	// inner supervises the qemu processes: raw_exec's shim, cgroup tracking
	// and recovery, fed with the command line this driver builds.
	inner *rawexec.Driver

	mu    sync.Mutex
	tasks map[string]*task

	fpMu      sync.Mutex
	fpBinary  string
	fpModTime time.Time
	fpVersion string
}

// task is what the driver keeps per VM beyond the supervisor's handle.
type task struct {
	cfg      *drivers.TaskConfig
	graceful bool

	statsMu  sync.Mutex
	lastCPU  uint64 // clock ticks used, summed over the task's processes
	lastTime time.Time
}

var (
	_ drivers.Driver      = (*Driver)(nil)
	_ drivers.LogWriter   = (*Driver)(nil)
	_ drivers.StatsDriver = (*Driver)(nil)
	// The qemu process runs in raw_exec's task cgroups, cpuset included.
	_ drivers.CpusetUpdater = (*Driver)(nil)
)

// New returns a driver.
func New(cfg Config) *Driver {
	l := cfg.Logger
	if l == nil {
		l = hclog.NewNullLogger()
	}
	l = l.Named(Name)
	return &Driver{
		cfg: cfg, logger: l, tasks: map[string]*task{},
		inner: rawexec.New(rawexec.Config{Enabled: true, CgroupRoot: cfg.CgroupRoot, Logger: l}),
	}
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// WritesLogs implements drivers.LogWriter: the supervisor writes the
// serial console into the rotated log files.
func (d *Driver) WritesLogs() bool { return true }

func (d *Driver) binary() (string, error) {
	b := d.cfg.Binary
	if b == "" {
		b = DefaultBinary
	}
	return exec.LookPath(b)
}

var versionRE = regexp.MustCompile(`version ([0-9]+\.[0-9]+(\.[0-9]+)?)`)

// Fingerprint implements drivers.Driver. Without the emulator the driver
// is undetected (the node simply does not offer qemu); an emulator that
// does not answer --version is unhealthy.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	// Destroyed VMs whose cleanup failed: retried in the background.
	d.inner.SweepLeftovers()
	bin, err := d.binary()
	if err != nil {
		return &drivers.Fingerprint{Attributes: map[string]string{}, Health: drivers.HealthUndetected,
			HealthDescription: fmt.Sprintf("%s not found", d.binaryName())}
	}
	v, err := d.version(bin)
	if err != nil {
		return &drivers.Fingerprint{Attributes: map[string]string{}, Health: drivers.HealthUnhealthy,
			HealthDescription: err.Error()}
	}
	desc := "Healthy"
	if err := d.kvmUsable(); err != nil {
		desc = "Healthy; kvm unavailable (" + err.Error() + "): accelerator \"tcg\" only"
	}
	return &drivers.Fingerprint{
		Attributes: map[string]string{"driver.qemu": "1", "driver.qemu.version": v},
		Health:     drivers.HealthHealthy, HealthDescription: desc,
	}
}

func (d *Driver) binaryName() string {
	if d.cfg.Binary != "" {
		return d.cfg.Binary
	}
	return DefaultBinary
}

// version runs `<bin> --version` once per binary (and again when it
// changes on disk: an upgrade).
func (d *Driver) version(bin string) (string, error) {
	st, err := os.Stat(bin)
	if err != nil {
		return "", err
	}
	d.fpMu.Lock()
	defer d.fpMu.Unlock()
	if d.fpBinary == bin && d.fpModTime.Equal(st.ModTime()) && d.fpVersion != "" {
		return d.fpVersion, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", bin, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s --version printed no version: %q", bin, firstLine(out))
	}
	d.fpBinary, d.fpModTime, d.fpVersion = bin, st.ModTime(), string(m[1])
	return d.fpVersion, nil
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// kvmUsable reports why the KVM device cannot be used, or nil.
func (d *Driver) kvmUsable() error {
	dev := d.cfg.KVMDevice
	if dev == "" {
		dev = "/dev/kvm"
	}
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// innerConfig is the task as the supervisor runs it: qemu with its
// command line.
func innerConfig(cfg *drivers.TaskConfig, bin string, args []string) *drivers.TaskConfig {
	c := *cfg
	as := make([]any, len(args))
	for i, a := range args {
		as[i] = a
	}
	c.Config = map[string]any{"command": bin, "args": as}
	return &c
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("task config with an ID is required")
	}
	if cfg.TaskDir == "" {
		return nil, errors.New("task config without a task directory")
	}
	tc, err := ParseTaskConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	if err := d.cfg.Plugin.checkArgs(tc.Args); err != nil {
		return nil, err
	}
	bin, err := d.binary()
	if err != nil {
		return nil, fmt.Errorf("qemu driver: %s not found on this node: %w", d.binaryName(), err)
	}
	image, err := d.cfg.Plugin.resolveImage(tc.ImagePath, cfg.TaskDir, cfg.AllocDir)
	if err != nil {
		return nil, err
	}
	v := vm{Image: image}
	if tc.Accelerator == AccelKVM {
		if err := d.kvmUsable(); err != nil {
			return nil, fmt.Errorf("config: accelerator = \"kvm\" but KVM is not usable on this node (%v); use accelerator = \"tcg\"", err)
		}
		v.KVM = true
	}
	if v.Forwards, err = forwards(cfg, tc.PortMap); err != nil {
		return nil, err
	}
	// A socket left by an earlier run of the task would make qemu fail.
	for _, s := range []string{monitorSocket, guestAgentSocket} {
		_ = os.Remove(filepath.Join(cfg.TaskDir, s))
	}
	args := commandArgs(cfg, tc, v)
	h, err := d.inner.StartTask(innerConfig(cfg, bin, args))
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.tasks[cfg.ID] = &task{cfg: cfg, graceful: tc.GracefulShutdown}
	d.mu.Unlock()
	d.logger.Debug("vm started", "task", cfg.ID, "args", args)
	return &drivers.TaskHandle{Version: h.Version, Config: cfg, State: h.State, DriverState: h.DriverState}, nil
}

// RecoverTask implements drivers.Driver: the VM's supervisor outlived the
// agent, and the driver re-attaches to it without restarting the VM.
func (d *Driver) RecoverTask(th *drivers.TaskHandle) error {
	if th == nil || th.Config == nil {
		return errors.New("handle with a task config is required")
	}
	d.mu.Lock()
	_, exists := d.tasks[th.Config.ID]
	d.mu.Unlock()
	if exists {
		return nil
	}
	graceful := false
	if tc, err := ParseTaskConfig(th.Config.Config); err == nil {
		graceful = tc.GracefulShutdown
	}
	// The supervisor needs the task's identity and directories only; its
	// command is recorded in what it left on disk.
	ih := &drivers.TaskHandle{Version: th.Version, Config: innerConfig(th.Config, "", nil), State: th.State, DriverState: th.DriverState}
	if err := d.inner.RecoverTask(ih); err != nil {
		return err
	}
	d.mu.Lock()
	d.tasks[th.Config.ID] = &task{cfg: th.Config, graceful: graceful}
	d.mu.Unlock()
	return nil
}

func (d *Driver) get(id string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.tasks[id]
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	return t, nil
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	if _, err := d.get(taskID); err != nil {
		return nil, err
	}
	return d.inner.WaitTask(ctx, taskID)
}

// StopTask implements drivers.Driver. With graceful_shutdown the guest is
// asked to power down through the QMP monitor and given the timeout to do
// so; otherwise (or if the monitor does not answer) qemu gets the signal.
// Whatever still runs after the timeout is killed.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	st, err := d.inner.InspectTask(taskID)
	if err != nil {
		return err
	}
	if t.graceful && st.State == drivers.TaskStateRunning {
		deadline := time.Now().Add(timeout)
		qerr := qmpPowerdown(t.cfg.TaskDir, minDuration(timeout, 5*time.Second))
		if qerr == nil {
			d.logger.Debug("asked the guest to power down", "task", taskID)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			ch, err := d.inner.WaitTask(ctx, taskID)
			if err == nil {
				select {
				case <-ch:
				case <-ctx.Done():
					d.logger.Info("guest did not power down within the kill timeout; killing the VM", "task", taskID, "timeout", timeout)
				}
			}
			cancel()
			// Exited: this only cleans up. Still running: killed now.
			return d.inner.StopTask(taskID, 0, "SIGKILL")
		}
		d.logger.Warn("graceful shutdown through the QMP monitor failed; signalling qemu", "task", taskID, "error", qerr)
		timeout = time.Until(deadline)
		if timeout < 0 {
			timeout = 0
		}
	}
	return d.inner.StopTask(taskID, timeout, signal)
}

func minDuration(a, b time.Duration) time.Duration {
	if a > 0 && a < b {
		return a
	}
	return b
}

// DestroyTask implements drivers.Driver. A VM whose cleanup fails (a
// process that would not die, a cgroup that would not go) is forgotten all
// the same: kept, every later start of the task failed as "already
// started". The supervisor retries the cleanup on the fingerprint and at
// the task's next start; the error wraps rawexec.ErrCleanupIncomplete.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	err = d.inner.DestroyTask(taskID, force)
	switch {
	case err == nil, errors.Is(err, rawexec.ErrCleanupIncomplete):
	case errors.Is(err, drivers.ErrTaskNotFound):
		err = nil // the supervisor's part is already gone
	default:
		return err // not destroyed (still running without force)
	}
	for _, s := range []string{monitorSocket, guestAgentSocket} {
		_ = os.Remove(filepath.Join(t.cfg.TaskDir, s))
	}
	d.mu.Lock()
	delete(d.tasks, taskID)
	d.mu.Unlock()
	return err
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	if _, err := d.get(taskID); err != nil {
		return nil, err
	}
	return d.inner.InspectTask(taskID)
}

// SignalTask implements drivers.Driver: the signal goes to the qemu
// process (SIGTERM or SIGINT end the VM at once, as pulling its plug).
func (d *Driver) SignalTask(taskID string, signal string) error {
	if _, err := d.get(taskID); err != nil {
		return err
	}
	return d.inner.SignalTask(taskID, signal)
}

// UpdateCpuset implements drivers.CpusetUpdater: the VM's qemu process
// (and its vCPU threads) runs in its supervisor's cpuset cgroup, which
// takes the new CPUs. A VM with reserved cores keeps them.
func (d *Driver) UpdateCpuset(taskID, cpus string) error {
	return d.inner.UpdateCpuset(taskID, cpus)
}
