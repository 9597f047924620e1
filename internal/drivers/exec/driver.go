package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/isolate"
	"github.com/drover-project/drover/internal/drivers/rawexec"
	"github.com/drover-project/drover/internal/structs"
)

// Name is the driver's name in jobspecs.
const Name = "exec"

// DefaultUser is the user a task without `user` runs as (Nomad's default).
const DefaultUser = "nobody"

// Config is the driver's agent configuration.
type Config struct {
	Plugin PluginConfig
	// ChrootEnv is the client's chroot_env (host path -> path in the
	// task); nil means Nomad's default map.
	ChrootEnv map[string]string
	Logger    hclog.Logger
	// Name is the driver's name (the java driver reuses this one); the
	// logger is named after it.
	Name string
}

// Driver is the exec driver. It is safe for concurrent use.
type Driver struct {
	cfg    Config
	name   string
	logger hclog.Logger
	inner  *rawexec.Driver

	mu    sync.Mutex
	tasks map[string]*task
	// leftovers are destroyed tasks whose container could not be removed
	// (the supervisor keeps its own), retried.
	leftovers *rawexec.Leftovers
}

// task is what the driver keeps about a running task beyond the
// supervisor's handle.
type task struct {
	cfg  *drivers.TaskConfig
	spec *isolate.Spec
	cg   *isolate.Cgroups
	// noEnter says why the task cannot be entered (alloc exec): a
	// recovered task whose recorded isolation could not be read has only
	// its identity in spec.
	noEnter error

	statsMu sync.Mutex
	last    *isolate.Sample
}

var (
	_ drivers.Driver        = (*Driver)(nil)
	_ drivers.LogWriter     = (*Driver)(nil)
	_ drivers.StatsDriver   = (*Driver)(nil)
	_ drivers.ExecDriver    = (*Driver)(nil)
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
	if cfg.Plugin.DefaultPIDMode == "" && cfg.Plugin.DefaultIPCMode == "" && cfg.Plugin.AllowCaps == nil {
		p := DefaultPluginConfig()
		p.NoPivotRoot, p.PidsLimit = cfg.Plugin.NoPivotRoot, cfg.Plugin.PidsLimit
		cfg.Plugin = p
	}
	logger := l.Named(name)
	return &Driver{cfg: cfg, name: name, logger: logger,
		inner: rawexec.New(rawexec.Config{Enabled: true, Logger: l, Name: name}), tasks: map[string]*task{},
		leftovers: rawexec.NewLeftovers(logger)}
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return d.name }

// WritesLogs implements drivers.LogWriter: the supervisor writes the
// rotated log files.
func (d *Driver) WritesLogs() bool { return true }

// Fingerprint implements drivers.Driver: detected only as root, healthy
// only with the cgroup hierarchies the limits are written to.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	// Destroyed tasks whose cleanup failed: retried in the background.
	d.inner.SweepLeftovers()
	d.leftovers.SweepAsync()
	if os.Geteuid() != 0 {
		return &drivers.Fingerprint{Attributes: map[string]string{}, Health: drivers.HealthUndetected,
			HealthDescription: d.name + " driver must run as root"}
	}
	if err := isolate.Available(); err != nil {
		return &drivers.Fingerprint{Attributes: map[string]string{}, Health: drivers.HealthUnhealthy,
			HealthDescription: err.Error()}
	}
	if err := isolate.CheckCgroups(); err != nil {
		return &drivers.Fingerprint{Attributes: map[string]string{}, Health: drivers.HealthUnhealthy,
			HealthDescription: err.Error()}
	}
	return &drivers.Fingerprint{Attributes: map[string]string{"driver." + d.name: "1"},
		Health: drivers.HealthHealthy, HealthDescription: "Healthy"}
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil {
		return nil, errors.New("task config is required")
	}
	tc, err := ParseTaskConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	return d.Start(cfg, tc, nil)
}

// Start runs tc isolated; extraChroot adds host directories to the task's
// root (the java driver adds the JDK's).
func (d *Driver) Start(cfg *drivers.TaskConfig, tc *TaskConfig, extraChroot map[string]string) (_ *drivers.TaskHandle, err error) {
	if cfg == nil || cfg.ID == "" || cfg.TaskDir == "" {
		return nil, errors.New("task config with an ID and a task directory is required")
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the %s driver must run as root", d.name)
	}
	d.mu.Lock()
	_, dup := d.tasks[cfg.ID]
	d.mu.Unlock()
	if dup {
		// Checked before the cgroup cleanup below, which would kill it.
		return nil, fmt.Errorf("task %q is already started", cfg.ID)
	}
	// An earlier run of this task whose container could not be removed at
	// its destroy: this start owns its cgroups now (and removes what is
	// left below); a start that fails hands the cleanup back.
	if cleanup := d.leftovers.TakeOver(cfg.ID); cleanup != nil {
		if cerr := cleanup(); cerr != nil {
			defer func() {
				if err != nil {
					d.leftovers.Add(cfg.ID, cleanup)
				}
			}()
		}
	}
	t, spec, err := d.prepare(cfg, tc, extraChroot)
	if err != nil {
		return nil, err
	}
	// The task's own directories belong to its user, as in Nomad: a task
	// running as nobody reads its secrets and writes its local dir.
	for _, dir := range []string{"local", "secrets", "tmp"} {
		p := filepath.Join(cfg.TaskDir, dir)
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			if err := os.Chown(p, spec.cred.Uid, spec.cred.Gid); err != nil {
				return nil, fmt.Errorf("give %s to the task's user: %w", dir, err)
			}
		}
	}
	// Whatever an earlier start of this task left in its container's
	// cgroups would run twice, and stale limits must not stay.
	if err := t.destroy(); err != nil {
		return nil, err
	}
	h, err := d.inner.StartIsolated(cfg, spec.Spec)
	if err != nil {
		_ = t.destroy()
		return nil, err
	}
	d.mu.Lock()
	d.tasks[cfg.ID] = t
	d.mu.Unlock()
	return h, nil
}

type prepared struct {
	*isolate.Spec
	cred *isolate.Cred
}

// identityTask is a task known by its identity only (its container ID,
// state root and cgroups, all derived from its config): enough to find
// and remove what it left, whatever the plugin's configuration says now.
func identityTask(cfg *drivers.TaskConfig) (*task, error) {
	id := isolate.ContainerID(cfg.ID)
	spec := &isolate.Spec{ID: id, StateRoot: isolate.StateRootOf(cfg.TaskDir),
		Cgroup: isolate.CgroupName{Parent: cfg.CgroupParent, Name: id}}
	cg, err := isolate.NewCgroups(spec.Cgroup)
	if err != nil {
		return nil, err
	}
	return &task{cfg: cfg, spec: spec, cg: cg}, nil
}

// destroy removes what is left of the task's container: processes,
// cgroups, state.
func (t *task) destroy() error {
	return isolate.Destroy(t.spec.StateRoot, t.spec.ID, t.spec.Cgroup)
}

// prepare resolves the task's isolation from its config and the plugin's.
func (d *Driver) prepare(cfg *drivers.TaskConfig, tc *TaskConfig, extraChroot map[string]string) (*task, *prepared, error) {
	pc := d.cfg.Plugin
	pidMode, ipcMode := tc.PIDMode, tc.IPCMode
	if pidMode == "" {
		pidMode = pc.DefaultPIDMode
	}
	if ipcMode == "" {
		ipcMode = pc.DefaultIPCMode
	}
	if tc.PIDMode == ModeHost && pc.DefaultPIDMode != ModeHost {
		return nil, nil, fmt.Errorf(`config: pid_mode = "host" is not allowed: the %s plugin's default_pid_mode is %q`, d.name, pc.DefaultPIDMode)
	}
	if tc.IPCMode == ModeHost && pc.DefaultIPCMode != ModeHost {
		return nil, nil, fmt.Errorf(`config: ipc_mode = "host" is not allowed: the %s plugin's default_ipc_mode is %q`, d.name, pc.DefaultIPCMode)
	}
	caps, err := isolate.ResolveCaps(isolate.DefaultCaps(), pc.AllowCaps, tc.CapAdd, tc.CapDrop)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	pids := tc.PidsLimit
	if pc.PidsLimit > 0 {
		if pids == 0 {
			pids = pc.PidsLimit
		} else if pids > pc.PidsLimit {
			return nil, nil, fmt.Errorf("config: pids_limit %d is above the %s plugin's pids_limit %d", pids, d.name, pc.PidsLimit)
		}
	}
	user := cfg.User
	if user == "" {
		user = DefaultUser
	}
	cred, err := isolate.LookupUser(user)
	if err != nil {
		return nil, nil, err
	}
	if pc.DeniedUIDs.Contains(cred.Uid) {
		return nil, nil, fmt.Errorf("user %q (uid %d) is denied by the %s plugin's denied_host_uids", user, cred.Uid, d.name)
	}
	for _, g := range append([]int{cred.Gid}, cred.Groups...) {
		if pc.DeniedGIDs.Contains(g) {
			return nil, nil, fmt.Errorf("user %q (group %d) is denied by the %s plugin's denied_host_gids", user, g, d.name)
		}
	}
	chroot := d.cfg.ChrootEnv
	if chroot == nil {
		chroot = isolate.DefaultChrootEnv()
	}
	all := make(map[string]string, len(chroot)+len(extraChroot))
	for k, v := range chroot {
		all[k] = v
	}
	for k, v := range extraChroot {
		all[k] = v
	}
	rw := rewriter(cfg)
	env := make(map[string]string, len(cfg.Env)+3)
	for k, v := range cfg.Env {
		env[k] = rw(v)
	}
	// Inside the root the task's directories have their chroot paths.
	env["NOMAD_TASK_DIR"], env["NOMAD_ALLOC_DIR"], env["NOMAD_SECRETS_DIR"] = "/local", "/alloc", "/secrets"
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"
	}
	envList := make([]string, 0, len(env))
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	sort.Strings(envList)
	args := []string{rw(tc.Command)}
	for _, a := range tc.Args {
		args = append(args, rw(a))
	}
	limits := isolate.Limits{PidsMax: pids}
	if r := cfg.Resources; r != nil {
		limits.MemoryMB, limits.MemoryMaxMB = r.Memory.MemoryMB, r.Memory.MemoryMaxMB
		limits.CPUShares, limits.Cores = r.Cpu.CpuShares, r.Cpu.ReservedCores
	}
	if len(limits.Cores) == 0 && cfg.SharedCpuset != "" {
		// No reserved cores: the node's shared cpuset, kept off the cores
		// other tasks reserved (UpdateCpuset follows its changes).
		shared, err := structs.ParseCores(cfg.SharedCpuset)
		if err != nil {
			return nil, nil, fmt.Errorf("shared cpuset: %w", err)
		}
		limits.Cores = shared
	}
	id := isolate.ContainerID(cfg.ID)
	spec := &isolate.Spec{
		ID: id, StateRoot: isolate.StateRootOf(cfg.TaskDir),
		Root: cfg.TaskDir, SharedAlloc: filepath.Join(cfg.AllocDir, "alloc"), Chroot: all,
		Path: args[0], Args: args, Env: envList, WorkDir: tc.WorkDir, User: user, Cred: *cred, Caps: caps,
		NoPivotRoot: pc.NoPivotRoot, HostPID: pidMode == ModeHost, HostIPC: ipcMode == ModeHost,
		Cgroup: isolate.CgroupName{Parent: cfg.CgroupParent, Name: id}, Limits: limits,
	}
	for _, m := range cfg.Mounts {
		// Host volumes: bound into the root, which is the task directory.
		spec.Binds = append(spec.Binds, isolate.Bind{Source: m.HostPath, Destination: m.TaskPath,
			ReadOnly: m.ReadOnly, Propagation: m.Propagation()})
	}
	cg, err := isolate.NewCgroups(spec.Cgroup)
	if err != nil {
		return nil, nil, err
	}
	t := &task{cfg: cfg, spec: spec, cg: cg}
	return t, &prepared{Spec: spec, cred: cred}, nil
}

// rewriter maps host paths of the task's directories, as interpolated into
// its env and args, to their paths inside the task's root.
func rewriter(cfg *drivers.TaskConfig) func(string) string {
	shared := filepath.Join(cfg.AllocDir, "alloc")
	return func(s string) string {
		if cfg.AllocDir != "" {
			s = strings.ReplaceAll(s, shared, "/alloc")
		}
		if cfg.TaskDir != "" {
			s = strings.ReplaceAll(s, cfg.TaskDir+"/", "/")
			if s == cfg.TaskDir {
				s = "/"
			}
		}
		return s
	}
}

// RecoverTask implements drivers.Driver: the supervisor outlived the
// agent; the task's container is found again from its ID. The task is
// re-attached with the isolation it was started with: today's plugin
// configuration (denied users, pids_limit, allow_caps, the default modes)
// governs new starts only, as in Nomad. Refusing a running task here would
// leave it running untracked beside the copy the client then starts.
func (d *Driver) RecoverTask(h *drivers.TaskHandle) error {
	if h == nil || h.Config == nil {
		return errors.New("handle with a task config is required")
	}
	d.mu.Lock()
	_, exists := d.tasks[h.Config.ID]
	d.mu.Unlock()
	if exists {
		return nil // already attached
	}
	cfg := h.Config
	t, err := identityTask(cfg)
	if err != nil {
		return fmt.Errorf("recover task: %w", err)
	}
	if err := d.inner.RecoverTask(h); err != nil {
		// The task is gone for good: so are its limits and state.
		if derr := t.destroy(); derr != nil {
			d.logger.Warn("cleanup of a task that could not be recovered failed; retrying later", "task", cfg.ID, "error", derr)
			d.leftovers.Add(cfg.ID, t.destroy)
		}
		return err
	}
	if spec, err := d.inner.IsolationSpec(cfg.ID); err == nil {
		if spec.Cgroup != t.spec.Cgroup {
			if cg, err := isolate.NewCgroups(spec.Cgroup); err == nil {
				t.cg = cg
			}
		}
		t.spec = spec
	} else {
		d.logger.Warn("recovered task cannot be entered (alloc exec)", "task", cfg.ID, "error", err)
		t.noEnter = fmt.Errorf("exec: the task's isolation could not be recovered: %w", err)
	}
	d.mu.Lock()
	d.tasks[cfg.ID] = t
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

// WaitTask implements drivers.Driver. A task whose memory cgroup saw the
// OOM killer is reported OOMKilled, "OOM Killed" as Nomad says.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	in, err := d.inner.WaitTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	out := make(chan *drivers.ExitResult, 1)
	go func() {
		select {
		case r := <-in:
			if r != nil && t.cg.OOMKilled() {
				r.OOMKilled = true
				if r.Err == nil {
					r.Err = errors.New("OOM Killed")
				}
			}
			out <- r
		case <-ctx.Done():
		}
	}()
	return out, nil
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	return d.inner.StopTask(taskID, timeout, signal)
}

// DestroyTask implements drivers.Driver: the supervisor's cleanup, then
// the task's container (cgroups and state). A task whose cleanup fails is
// forgotten all the same (kept, every later start of its ID failed as
// "already started"); the cleanup is retried on the fingerprint and by the
// task's next start, and the error wraps rawexec.ErrCleanupIncomplete.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	ierr := d.inner.DestroyTask(taskID, force)
	switch {
	case ierr == nil, errors.Is(ierr, rawexec.ErrCleanupIncomplete):
	case errors.Is(ierr, drivers.ErrTaskNotFound):
		ierr = nil // the supervisor's part is already gone
	default:
		return ierr // not destroyed (still running without force)
	}
	var derr error
	if err := t.destroy(); err != nil {
		d.logger.Warn("task destroyed but its container could not be removed; retrying later", "task", taskID, "error", err)
		// Recorded before the task is forgotten, so a start of the same
		// ID always finds it.
		d.leftovers.Add(taskID, t.destroy)
		derr = fmt.Errorf("%w: %w", rawexec.ErrCleanupIncomplete, err)
	}
	d.mu.Lock()
	delete(d.tasks, taskID)
	d.mu.Unlock()
	return errors.Join(ierr, derr)
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	return d.inner.InspectTask(taskID)
}

// SignalTask implements drivers.Driver. The task is PID 1 of its
// namespace: like any init it receives only signals it handles (and
// SIGKILL).
func (d *Driver) SignalTask(taskID string, signal string) error {
	return d.inner.SignalTask(taskID, signal)
}

// UpdateCpuset implements drivers.CpusetUpdater: the CPUs of the task's
// container's cpuset cgroup (v1: its cpuset hierarchy; v2: its cgroup)
// change, and the kernel moves every process in it. A task with reserved
// cores keeps them.
func (d *Driver) UpdateCpuset(taskID, cpus string) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	if t.cfg.ReservedCores() != "" {
		return nil
	}
	p := filepath.Join(t.cg.Dir("cpuset"), "cpuset.cpus")
	if err := os.WriteFile(p, []byte(cpus), 0); err != nil {
		return fmt.Errorf("set %s to %q: %w", p, cpus, err)
	}
	return nil
}
