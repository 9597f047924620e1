package rawexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/isolate"
)

// Name is the driver's name in jobspecs.
const Name = "raw_exec"

// handleVersion is the version of the DriverState format.
const handleVersion = 2

// Config is the driver's agent configuration.
type Config struct {
	// Enabled mirrors `plugin "raw_exec" { config { enabled = true } }`
	// (and -dev). A disabled driver fingerprints as undetected.
	Enabled bool
	// CgroupRoot overrides the cgroup mount the driver creates task cgroups
	// under (tests). Empty: detect (/sys/fs/cgroup when pure v2, then
	// /sys/fs/cgroup/unified, then the v1 freezer).
	CgroupRoot string
	// DisableCgroups forces the process-group-only fallback.
	DisableCgroups bool
	Logger         hclog.Logger
	// Name names the logger (drivers built on this one: "exec", "java").
	Name string
}

// Driver is the raw_exec driver. It is safe for concurrent use.
type Driver struct {
	cfg    Config
	logger hclog.Logger

	trackerOnce sync.Once
	trk         tracker

	mu    sync.Mutex
	tasks map[string]*taskHandle
	// leftovers are the failed cleanups of destroyed tasks, retried.
	leftovers *Leftovers
}

// ErrCleanupIncomplete is wrapped by DestroyTask's error when the task was
// destroyed (forgotten) but what it left behind could not all be removed
// yet: the driver retries that cleanup on its fingerprint, and the task's
// next start kills whatever is left in its cgroup.
var ErrCleanupIncomplete = errors.New("task destroyed, but its cleanup did not finish (retried in the background and by the task's next start)")

var (
	_ drivers.Driver        = (*Driver)(nil)
	_ drivers.LogWriter     = (*Driver)(nil)
	_ drivers.CpusetUpdater = (*Driver)(nil)
)

// New returns a driver.
func New(cfg Config) *Driver {
	l := cfg.Logger
	if l == nil {
		l = hclog.NewNullLogger()
	}
	name := cfg.Name
	if name == "" {
		name = Name
	}
	logger := l.Named(name)
	return &Driver{cfg: cfg, logger: logger, tasks: map[string]*taskHandle{}, leftovers: NewLeftovers(logger)}
}

func (d *Driver) tracker() tracker {
	d.trackerOnce.Do(func() {
		d.trk = detectTracker(d.cfg.CgroupRoot, d.cfg.DisableCgroups)
		d.logger.Debug("task tracking", "kind", d.trk.kind, "detail", d.trk.desc)
	})
	return d.trk
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// SweepLeftovers retries, in the background, the cleanups of destroyed
// tasks that failed. Fingerprint does; drivers built on this one call it
// from theirs.
func (d *Driver) SweepLeftovers() { d.leftovers.SweepAsync() }

// Fingerprint implements drivers.Driver.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	d.SweepLeftovers()
	if !d.cfg.Enabled {
		return &drivers.Fingerprint{
			Attributes:        map[string]string{},
			Health:            drivers.HealthUndetected,
			HealthDescription: "disabled",
		}
	}
	t := d.tracker()
	desc := "Healthy"
	if t.kind == cgNone {
		desc = "Healthy; " + t.desc
	}
	return &drivers.Fingerprint{
		Attributes:        map[string]string{"driver.raw_exec": "1"},
		Health:            drivers.HealthHealthy,
		HealthDescription: desc,
	}
}

// ValidatePluginConfig checks the agent's `plugin "raw_exec" { config {} }`.
// Only `enabled` is read; Nomad's other options would be silently ignored,
// and denied_host_uids/gids are a guarantee Drover cannot keep (every task
// runs as the agent's user), so they are errors.
func ValidatePluginConfig(m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "enabled":
		case "denied_host_uids", "denied_host_gids":
			return fmt.Errorf("config: %s is not supported yet: raw_exec runs every task as the agent's user and cannot keep tasks off those IDs; remove it", k)
		case "no_cgroups":
			return fmt.Errorf("config: no_cgroups is not supported: raw_exec tracks each task in a cgroup when the host has one; remove it")
		default:
			return fmt.Errorf("config: unknown key %q (raw_exec's agent options: enabled)", k)
		}
	}
	return nil
}

// taskConfig is the task's `config {}` block.
type taskConfig struct {
	Command    string
	Args       []string
	V2Override string
	V1Override string
}

// ValidateTaskConfig checks a task's `config {}` block as StartTask would
// read it: every key known and of the right type, `command` present. The
// servers call it at registration so a typo is refused there, not when the
// task first starts on a client.
func ValidateTaskConfig(m map[string]any) error {
	_, err := parseTaskConfig(m)
	return err
}

func parseTaskConfig(m map[string]any) (*taskConfig, error) {
	tc := &taskConfig{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad key named is the same every time
	for _, k := range keys {
		v := m[k]
		switch k {
		case "command":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("config: command must be a string, got %T", v)
			}
			tc.Command = s
		case "args":
			switch a := v.(type) {
			case nil:
			case []string:
				tc.Args = append([]string(nil), a...)
			case []any:
				for i, e := range a {
					s, ok := e.(string)
					if !ok {
						return nil, fmt.Errorf("config: args[%d] must be a string, got %T", i, e)
					}
					tc.Args = append(tc.Args, s)
				}
			default:
				return nil, fmt.Errorf("config: args must be a list of strings, got %T", v)
			}
		case "cgroup_v2_override":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("config: cgroup_v2_override must be a string, got %T", v)
			}
			tc.V2Override = s
		case "cgroup_v1_override":
			// Nomad takes a map of controller -> path; only the freezer
			// matters to us. A plain string is accepted too.
			switch o := v.(type) {
			case string:
				tc.V1Override = o
			case map[string]string:
				tc.V1Override = o["freezer"]
			case map[string]any:
				if s, ok := o["freezer"].(string); ok {
					tc.V1Override = s
				}
			default:
				return nil, fmt.Errorf("config: cgroup_v1_override must be a map of controller to path, got %T", v)
			}
		case "oom_score_adj", "work_dir":
			// Nomad's raw_exec has these; ours does not yet.
			return nil, fmt.Errorf("config: %s is not supported by Drover's raw_exec yet (it takes command, args, cgroup_v2_override, cgroup_v1_override)", k)
		default:
			return nil, fmt.Errorf("config: unknown key %q (raw_exec takes command, args, cgroup_v2_override, cgroup_v1_override)", k)
		}
	}
	if strings.TrimSpace(tc.Command) == "" {
		return nil, errors.New(`config: "command" is required`)
	}
	// exec(2) cannot pass a NUL byte: the task would fail at every start.
	if strings.ContainsRune(tc.Command, 0) {
		return nil, errors.New("config: command contains a NUL byte")
	}
	for i, a := range tc.Args {
		if strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf("config: args[%d] contains a NUL byte", i)
		}
	}
	return tc, nil
}

// resolveCommand finds the executable: absolute as is, a relative path
// against the task dir, a bare name in the task dir then in the task's PATH
// (the agent's PATH when the task has none).
func resolveCommand(cmd, taskDir string, env map[string]string) (string, error) {
	isExec := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
	}
	if filepath.IsAbs(cmd) {
		return cmd, nil
	}
	if strings.Contains(cmd, "/") {
		return filepath.Join(taskDir, cmd), nil
	}
	if taskDir != "" {
		for _, p := range []string{filepath.Join(taskDir, cmd), filepath.Join(taskDir, "local", cmd)} {
			if isExec(p) {
				return p, nil
			}
		}
	}
	path, ok := env["PATH"]
	if !ok {
		path = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(taskDir, dir)
		}
		if p := filepath.Join(dir, cmd); isExec(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in the task dir or PATH %q", cmd, path)
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func openLog(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

func cgroupName(id string) string {
	return strings.NewReplacer("/", ".", "..", "_").Replace(id)
}

// WritesLogs implements drivers.LogWriter: the task's shim writes the
// rotated log files itself.
func (d *Driver) WritesLogs() bool { return true }

// StartTask implements drivers.Driver. The task runs under a shim (see the
// package doc); StartTask returns once the shim has started it.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("task config with an ID is required")
	}
	if cfg.TaskDir == "" {
		return nil, errors.New("task config without a task directory")
	}
	if !d.cfg.Enabled {
		return nil, errors.New("raw_exec driver is disabled")
	}
	d.mu.Lock()
	_, dup := d.tasks[cfg.ID]
	d.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("task %q is already started", cfg.ID)
	}
	tc, err := parseTaskConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	path, err := resolveCommand(tc.Command, cfg.TaskDir, cfg.Env)
	if err != nil {
		return nil, err
	}
	return d.start(cfg, tc, path, nil)
}

// StartIsolated starts a task of a driver built on this one (exec, java):
// the same supervisor, logs, tracking and recovery as raw_exec, with the
// task started in the libcontainer container described by spec.
func (d *Driver) StartIsolated(cfg *drivers.TaskConfig, spec *isolate.Spec) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("task config with an ID is required")
	}
	if cfg.TaskDir == "" {
		return nil, errors.New("task config without a task directory")
	}
	if spec == nil {
		return nil, errors.New("isolation spec is required")
	}
	d.mu.Lock()
	_, dup := d.tasks[cfg.ID]
	d.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("task %q is already started", cfg.ID)
	}
	return d.start(cfg, &taskConfig{Command: spec.Path, Args: spec.Args}, spec.Path, spec)
}

// MainPID is the host PID of a running task's main process.
func (d *Driver) MainPID(taskID string) (int, error) {
	h, err := d.get(taskID)
	if err != nil {
		return 0, err
	}
	if h.exited() || !processAlive(h.pid, h.startTime) {
		return 0, fmt.Errorf("task %q has exited", taskID)
	}
	return h.pid, nil
}

func (d *Driver) start(cfg *drivers.TaskConfig, tc *taskConfig, path string, iso *isolate.Spec) (_ *drivers.TaskHandle, err error) {
	// An earlier run of this task whose cleanup failed at its destroy:
	// this start owns its cgroup now, and cleans up first. Whatever the
	// cleanup could not remove, the check below kills; a start that fails
	// hands the cleanup back to be retried.
	if cleanup := d.leftovers.TakeOver(cfg.ID); cleanup != nil {
		if cerr := cleanup(); cerr != nil {
			d.logger.Warn("cleanup of the task's earlier run failed again", "task", cfg.ID, "error", cerr)
			defer func() {
				if err != nil {
					d.leftovers.Add(cfg.ID, cleanup)
				}
			}()
		}
	}
	// An isolated task gets its user from its container.
	var usr *taskUser
	if iso == nil {
		if usr, err = resolveUser(cfg.User); err != nil {
			return nil, err
		}
		if err := usr.checkReach(cfg.TaskDir); err != nil {
			return nil, err
		}
	}
	trk := d.tracker()
	override := tc.V2Override
	if trk.kind == cgV1Freeze {
		override = tc.V1Override
	}
	cg, err := trk.newTaskCgroup(cfg.CgroupParent, cgroupName(cfg.ID), override)
	if err != nil {
		return nil, err
	}
	// Whatever an earlier client left in this task's cgroup (it died while
	// starting the task) would run twice: kill it first.
	if cg != nil && cg.Owned {
		if pids, _ := cg.pids(); len(pids) > 0 {
			d.logger.Warn("killing processes left in the task's cgroup by an earlier start", "task", cfg.ID, "pids", pids)
			if err := cg.destroy(); err != nil {
				return nil, err
			}
			if err := os.MkdirAll(cg.Path, 0o755); err != nil {
				return nil, fmt.Errorf("create task cgroup: %w", err)
			}
		}
	}
	if iso == nil && cg != nil {
		// The task's CPUs: its reserved cores, else the node's shared set
		// (an isolated task's container has its own cpuset cgroup).
		cg.Cpuset, err = newCpuset(cg, cfg.CgroupParent, cgroupName(cfg.ID), cfg.Cpus())
		switch {
		case err != nil && cfg.ReservedCores() != "":
			if cg.Owned {
				_ = os.Remove(cg.Path)
			}
			return nil, fmt.Errorf("reserved cores %s: %w", cfg.ReservedCores(), err)
		case err != nil:
			// raw_exec does not isolate: a host whose cpuset this agent
			// cannot write (rootless) still runs the task, on every CPU.
			d.logger.Warn("task runs without a cpuset cgroup, on every CPU", "task", cfg.ID, "error", err)
			cg.Cpuset = nil
		}
	}
	spec := &shimSpec{
		Path: path, Args: append([]string{tc.Command}, tc.Args...), Env: envList(cfg.Env), Dir: cfg.TaskDir,
		Cgroup: cg, Task: cfg.Name, Logs: cfg.Logs, StdoutPath: cfg.StdoutPath, StderrPath: cfg.StderrPath,
		User: usr, Isolation: iso, NetNS: cfg.NetNS,
	}
	if spec.Task == "" {
		spec.Task = cgroupName(cfg.ID)
	}
	dir := shimDirOf(cfg)
	st, cmd, exited, err := startShim(dir, spec)
	if err != nil {
		if cg != nil {
			_ = cg.Cpuset.remove()
			if cg.Owned {
				_ = os.Remove(cg.Path)
			}
		}
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	ds := driverState{PID: st.PID, StartTime: st.StartTime, StartedAt: st.StartedAt, Cgroup: cg,
		ShimDir: dir, ShimPID: st.ShimPID, ShimStartTime: st.ShimStartTime}
	h := newHandle(cfg, ds, d.logger)
	go h.reapShim(cmd)
	go h.watch(exited)

	state, err := json.Marshal(h.state())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.tasks[cfg.ID] = h
	d.mu.Unlock()
	d.logger.Debug("task started", "task", cfg.ID, "pid", st.PID, "shim_pid", st.ShimPID, "cgroup", h.cgroupPath())
	return &drivers.TaskHandle{Version: handleVersion, Config: cfg, State: drivers.TaskStateRunning, DriverState: state}, nil
}

// RecoverTask implements drivers.Driver. The shim that supervises the task
// outlived the client that started it: the handle re-attaches to it, and a
// task that exited meanwhile is reported with the exit status the shim
// recorded.
func (d *Driver) RecoverTask(th *drivers.TaskHandle) error {
	if th == nil || th.Config == nil {
		return errors.New("handle with a task config is required")
	}
	d.mu.Lock()
	_, exists := d.tasks[th.Config.ID]
	d.mu.Unlock()
	if exists {
		return nil // already attached
	}
	var ds driverState
	if len(th.DriverState) > 0 {
		if err := json.Unmarshal(th.DriverState, &ds); err != nil {
			return fmt.Errorf("decode driver state: %w", err)
		}
	} else {
		// The client died between starting the task and storing the
		// handle: what the shim wrote is all there is.
		if th.Config.TaskDir == "" {
			return errors.New("handle without driver state or task directory")
		}
		ds.ShimDir = shimDirOf(th.Config)
		var st shimState
		if err := readJSON(filepath.Join(ds.ShimDir, shimStateFile), &st); err != nil {
			d.cleanupUnstarted(th.Config)
			return fmt.Errorf("task was not started (no supervisor state: %v)", err)
		}
		var spec shimSpec
		if err := readJSON(filepath.Join(ds.ShimDir, shimSpecFile), &spec); err == nil {
			ds.Cgroup = spec.Cgroup
		}
		ds.PID, ds.StartTime, ds.StartedAt = st.PID, st.StartTime, st.StartedAt
		ds.ShimPID, ds.ShimStartTime = st.ShimPID, st.ShimStartTime
	}
	h := newHandle(th.Config, ds, d.logger)
	_, _, exitKnown := readExit(ds.ShimDir)
	if !exitKnown && !processAlive(ds.PID, ds.StartTime) && !processAlive(ds.ShimPID, ds.ShimStartTime) {
		// Neither the task nor its supervisor runs, and nothing says how
		// the task ended. Whatever it left in its cgroup belongs to
		// nobody now: clean it up.
		if err := ds.Cgroup.destroy(); err != nil {
			d.logger.Warn("cleanup of dead task's cgroup failed; retrying later", "task", th.Config.ID, "error", err)
			d.leftovers.Add(th.Config.ID, ds.Cgroup.destroy)
		}
		return fmt.Errorf("task process %d is no longer running and its exit status is unknown", ds.PID)
	}
	go h.watch(nil)
	if !exitKnown {
		d.adoptCpuset(h)
	}
	d.mu.Lock()
	d.tasks[th.Config.ID] = h
	d.mu.Unlock()
	d.logger.Debug("task recovered", "task", th.Config.ID, "pid", ds.PID, "shim_pid", ds.ShimPID, "exited", exitKnown)
	return nil
}

// cleanupUnstarted kills whatever sits in the cgroup a task would have had.
func (d *Driver) cleanupUnstarted(cfg *drivers.TaskConfig) {
	trk := d.tracker()
	if trk.kind == cgNone {
		return
	}
	parent := cfg.CgroupParent
	if parent == "" {
		parent = defaultParent
	}
	cg := &taskCgroup{Kind: trk.kind, Root: trk.root, Owned: true,
		Path: filepath.Join(trk.root, filepath.Clean("/"+parent), cgroupName(cfg.ID))}
	if err := cg.destroy(); err != nil {
		d.logger.Warn("cleanup of an unstarted task's cgroup failed; retrying later", "task", cfg.ID, "error", err)
		d.leftovers.Add(cfg.ID, cg.destroy)
	}
}

func (d *Driver) get(id string) (*taskHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, ok := d.tasks[id]
	if !ok {
		return nil, drivers.ErrTaskNotFound
	}
	return h, nil
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	ch := make(chan *drivers.ExitResult, 1)
	go func() {
		select {
		case <-h.done:
			ch <- h.exitResult()
		case <-ctx.Done():
		}
	}()
	return ch, nil
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	sig, err := parseSignal(signal, syscall.SIGTERM)
	if err != nil {
		return err
	}
	if !h.exited() {
		if err := h.signalGroup(sig); err != nil {
			d.logger.Debug("signal failed", "task", taskID, "error", err)
		}
		t := time.NewTimer(timeout)
		select {
		case <-h.done:
		case <-t.C:
		}
		t.Stop()
	}
	return h.killAndCleanup()
}

// DestroyTask implements drivers.Driver.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	if !h.exited() && !force {
		return fmt.Errorf("task %q is still running; stop it or destroy with force", taskID)
	}
	err = h.killAndCleanup()
	if err != nil {
		// Forgotten all the same: kept, the task made every later start
		// of its ID fail as "already started" for as long as the agent
		// ran. Recorded before it is forgotten, so a start of the same ID
		// always finds it (and owns the cleanup from then on).
		d.logger.Warn("task destroyed but its cleanup failed; retrying later", "task", taskID, "error", err)
		d.leftovers.Add(taskID, h.killAndCleanup)
		err = fmt.Errorf("%w: %w", ErrCleanupIncomplete, err)
	}
	d.mu.Lock()
	delete(d.tasks, taskID)
	d.mu.Unlock()
	return err
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	return h.status(), nil
}

// SignalTask implements drivers.Driver.
func (d *Driver) SignalTask(taskID string, signal string) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	sig, err := parseSignal(signal, syscall.SIGTERM)
	if err != nil {
		return err
	}
	if h.exited() || !processAlive(h.pid, h.startTime) {
		return fmt.Errorf("task %q has exited", taskID)
	}
	return syscall.Kill(h.pid, sig)
}

// UpdateCpuset implements drivers.CpusetUpdater: the task's cpuset cgroup
// gets the new CPUs, which the kernel applies to every process in it at
// once. A task with reserved cores keeps them.
func (d *Driver) UpdateCpuset(taskID, cpus string) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	if h.cfg.ReservedCores() != "" {
		return nil
	}
	if h.cg == nil || h.cg.Cpuset == nil {
		return fmt.Errorf("task %q has no cpuset cgroup (%s)", taskID, d.tracker().desc)
	}
	if h.exited() {
		return fmt.Errorf("task %q has exited", taskID)
	}
	return h.cg.Cpuset.set(cpus)
}

// TaskCpus is the CPUs a task's cpuset cgroup confines it to ("" with no
// cpuset cgroup).
func (d *Driver) TaskCpus(taskID string) (string, error) {
	h, err := d.get(taskID)
	if err != nil {
		return "", err
	}
	if h.cg == nil || h.cg.Cpuset == nil {
		return "", nil
	}
	return h.cg.Cpuset.cpus()
}

// IsolationSpec is the isolation a task started by StartIsolated runs
// with, as recorded when it started (a recovered task's too): what a
// restarted agent enters it with, whatever its configuration says today.
func (d *Driver) IsolationSpec(taskID string) (*isolate.Spec, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	var spec shimSpec
	if err := readJSON(filepath.Join(h.shimDir, shimSpecFile), &spec); err != nil {
		return nil, fmt.Errorf("read the task's recorded isolation: %w", err)
	}
	if spec.Isolation == nil {
		return nil, fmt.Errorf("task %q was not started isolated", taskID)
	}
	return spec.Isolation, nil
}
