package taskrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/client/cpuset"
	"github.com/drover-project/drover/internal/client/getter"
	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/client/template"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
)

// maxEvents is how many task events a TaskState keeps.
const maxEvents = 10

// Defaults for kill and logs.
const (
	DefaultKillTimeout = 5 * time.Second
	defaultLogFiles    = 10
	defaultLogSizeMB   = 10
)

// Config is everything a TaskRunner needs.
type Config struct {
	Alloc *structs.Allocation
	Task  *structs.Task
	// Driver is the task's driver; nil when the node has no (detected,
	// healthy) driver of that name: the task then fails with Driver Failure.
	Driver drivers.Driver
	Node   *structs.Node
	Region string

	AllocDir string // <alloc_dir>/<allocID>
	TaskDir  string // <alloc_dir>/<allocID>/<task>
	LogDir   string // <alloc_dir>/<allocID>/alloc/logs

	// MaxKillTimeout caps the task's kill_timeout (0: no cap).
	MaxKillTimeout time.Duration

	// Gate, if set, holds the first start until it is closed (lifecycle
	// ordering). A kill before the gate opens ends the task without running.
	Gate <-chan struct{}

	// OnStateChange is called (without locks held) after every change of
	// the task's state or events.
	OnStateChange func()

	StartLogs         StartLogsFunc
	BuildEnv          BuildEnvFunc
	InterpolateConfig InterpolateConfigFunc
	// ReserveDevices, if set, is called once before the first start for
	// the devices the scheduler granted the task; a failure fails the task.
	ReserveDevices ReserveDevicesFunc
	// SignIdentities, if set, fetches the task's workload identities
	// before its first start (identity.go).
	SignIdentities SignIdentitiesFunc
	// Artifacts is the client's artifact configuration (limits, local
	// source isolation); nil: no limits.
	Artifacts *getter.Config
	// TaskAPI, if set, is served to the task on secrets/api.sock
	// (taskapi.go).
	TaskAPI http.Handler
	// Templates, if set, is where the task's templates read variables
	// and services from (template.go).
	Templates template.Backend
	// StateDB, if set, persists the task's state and driver handle so a
	// restarted client can re-attach (restore.go).
	StateDB StateDB
	// NetNS is the allocation's network namespace ("": the host's).
	NetNS string
	// Cpusets, if set, is the node's shared cpuset: a task without
	// reserved cores starts on it and follows its changes (cpuset.go).
	Cpusets *cpuset.Manager
	// PreKill, if set, runs when a running task is killed, before its
	// shutdown_delay and its kill signal (the allocation runner
	// deregisters the task's services; shutdown_delay.go).
	PreKill func()
	// PreRestart, if set, runs when a running task is about to be stopped
	// for an in-place restart (alloc restart, check_restart), before its
	// kill signal: as Nomad does, the allocation runner deregisters the
	// task's services, and registers them again once the task runs. No
	// shutdown_delay is waited on a restart (Nomad waits it only on a
	// kill).
	PreRestart func()

	Logger hclog.Logger
	Clock  func() time.Time
}

// TaskRunner runs one task. Create with New, then call Run in a goroutine.
type TaskRunner struct {
	cfg    Config
	logger hclog.Logger
	now    func() time.Time
	taskID string

	mu    sync.Mutex
	state *structs.TaskState
	alloc *structs.Allocation

	killOnce   sync.Once
	killCh     chan struct{}
	killReason string
	// exitedBeforeKill: the last run ended on its own, not by a kill.
	exitedBeforeKill bool
	killSignal       string

	waitCh chan struct{}

	// restartCh carries an in-place restart request (user_restart.go);
	// userRestart marks that the last run ended because of one.
	restartCh   chan struct{}
	userRestart bool
	// restartReason is the reason of the last in-place restart asked for
	// (an operator's, a template's), carried by its Restarting event.
	restartReason string

	// deviceEnv is the environment of the reserved devices.
	deviceEnv map[string]string
	// identityEnv holds the workload identities with env = true;
	// defaultIdentity is the default one, for the Task API.
	identityEnv     map[string]string
	defaultIdentity string
	// templateEnv holds what the templates with env = true set. Guarded
	// by mu.
	templateEnv map[string]string

	// local is the persisted local state (handle, restart tracker);
	// restored is set by Restore. Guarded by mu.
	local    state.LocalTaskState
	restored bool
	// logs, for a driver that writes the log files itself.
	logs *drivers.LogConfig

	detachOnce sync.Once
	detachCh   chan struct{}

	// skipDelayCh is closed when the shutdown_delay must no longer be
	// waited (shutdown_delay.go).
	skipDelayOnce sync.Once
	skipDelayCh   chan struct{}
}

// New returns a runner for cfg.Task and records the Received event.
func New(cfg Config) *TaskRunner {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.BuildEnv == nil {
		cfg.BuildEnv = defaultEnv
	}
	tr := &TaskRunner{
		cfg:      cfg,
		logger:   cfg.Logger.With("task", cfg.Task.Name),
		now:      cfg.Clock,
		taskID:   cfg.Alloc.ID + "/" + cfg.Task.Name,
		state:    &structs.TaskState{State: structs.TaskStatePending},
		alloc:    cfg.Alloc,
		killCh:   make(chan struct{}),
		waitCh:   make(chan struct{}),
		detachCh: make(chan struct{}),

		skipDelayCh: make(chan struct{}),
		restartCh:   make(chan struct{}, 1),
	}
	tr.appendEvent(tr.newEvent(structs.TaskReceived, "Task received by client"))
	return tr
}

// TaskID is the driver-level ID "<allocID>/<task>".
func (tr *TaskRunner) TaskID() string { return tr.taskID }

// Task returns the task spec.
func (tr *TaskRunner) Task() *structs.Task { return tr.cfg.Task }

// WaitCh is closed when Run has returned: the task is dead for good.
func (tr *TaskRunner) WaitCh() <-chan struct{} { return tr.waitCh }

// State returns a copy of the task's state.
func (tr *TaskRunner) State() *structs.TaskState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return copyState(tr.state)
}

func copyState(s *structs.TaskState) *structs.TaskState {
	c := *s
	c.Events = make([]*structs.TaskEvent, len(s.Events))
	for i, e := range s.Events {
		ec := *e
		ec.Details = maps.Clone(e.Details)
		c.Events[i] = &ec
	}
	return &c
}

// Update gives the runner the server's newest copy of the allocation.
func (tr *TaskRunner) Update(alloc *structs.Allocation) {
	tr.mu.Lock()
	tr.alloc = alloc
	tr.mu.Unlock()
	if alloc.DesiredTransition.ShouldIgnoreShutdownDelay() {
		tr.SkipShutdownDelay()
	}
}

// EmitEvent appends an event (e.g. Sibling Task Failed, Reconnected).
func (tr *TaskRunner) EmitEvent(ev *structs.TaskEvent) {
	if ev.Time == 0 {
		ev.Time = tr.now().UnixNano()
	}
	tr.appendEvent(ev)
	tr.notify()
}

// NewEvent builds an event stamped with the runner's clock.
func (tr *TaskRunner) NewEvent(typ, msg string) *structs.TaskEvent { return tr.newEvent(typ, msg) }

// Kill asks the task to stop (kill_signal, then kill_timeout capped by
// MaxKillTimeout). It returns at once; wait on WaitCh. Idempotent.
func (tr *TaskRunner) Kill(reason string) {
	tr.killOnce.Do(func() {
		if isDone(tr.waitCh) {
			close(tr.killCh)
			return
		}
		tr.mu.Lock()
		tr.killReason = reason
		tr.mu.Unlock()
		ev := tr.newEvent(structs.TaskKilling, "Sent interrupt. Waiting "+tr.killTimeout().String()+" before force killing")
		ev.KillTimeout = tr.killTimeout()
		ev.KillReason = reason
		tr.appendEvent(ev)
		close(tr.killCh)
		tr.notify()
	})
}

func (tr *TaskRunner) killed() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

func (tr *TaskRunner) killTimeout() time.Duration {
	t := tr.newestTask().KillTimeout
	if t <= 0 {
		t = DefaultKillTimeout
	}
	if tr.cfg.MaxKillTimeout > 0 && t > tr.cfg.MaxKillTimeout {
		t = tr.cfg.MaxKillTimeout
	}
	return t
}

func (tr *TaskRunner) newEvent(typ, msg string) *structs.TaskEvent {
	return &structs.TaskEvent{Type: typ, Time: tr.now().UnixNano(), Message: msg, DisplayMessage: msg}
}

func (tr *TaskRunner) appendEvent(ev *structs.TaskEvent) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if ev.DisplayMessage == "" {
		ev.DisplayMessage = ev.Message
	}
	tr.state.Events = append(tr.state.Events, ev)
	if n := len(tr.state.Events); n > maxEvents {
		tr.state.Events = append([]*structs.TaskEvent(nil), tr.state.Events[n-maxEvents:]...)
	}
	if ev.FailsTask {
		tr.state.Failed = true
	}
}

func (tr *TaskRunner) notify() {
	tr.persistState()
	if tr.cfg.OnStateChange != nil {
		tr.cfg.OnStateChange()
	}
}

func (tr *TaskRunner) setState(state string, ev *structs.TaskEvent) {
	tr.mu.Lock()
	now := tr.now()
	switch state {
	case structs.TaskStateRunning:
		if tr.state.State != structs.TaskStateRunning {
			tr.state.StartedAt = now
			tr.state.FinishedAt = time.Time{}
		}
	case structs.TaskStateDead:
		if tr.state.FinishedAt.IsZero() {
			tr.state.FinishedAt = now
		}
	}
	tr.state.State = state
	tr.mu.Unlock()
	if ev != nil {
		tr.appendEvent(ev)
	}
	tr.notify()
}

// Run runs the task until it is done for good (completed, failed past its
// restart policy, or killed). Call it once, in its own goroutine.
func (tr *TaskRunner) Run() {
	defer func() {
		close(tr.waitCh)
		tr.notify() // observers may wait for WaitCh, not just the state
	}()

	if tr.restoredDead() {
		tr.cleanupRestoredDead()
		return
	}
	// A restored task still running (or ended while the client was down)
	// is re-attached, not started again.
	attached := tr.recoverTask()
	if !attached && tr.cfg.Gate != nil {
		select {
		case <-tr.cfg.Gate:
		case <-tr.killCh:
			tr.setState(structs.TaskStateDead, nil)
			return
		case <-tr.detachCh:
			return
		}
	}
	if !attached && tr.killed() {
		tr.setState(structs.TaskStateDead, nil)
		return
	}

	if tr.cfg.Driver == nil {
		ev := tr.newEvent(structs.TaskDriverFailure, fmt.Sprintf("failed to start task: driver %q is not available on this node", tr.cfg.Task.Driver))
		ev.DriverError = ev.Message
		ev.FailsTask = true
		tr.setState(structs.TaskStateDead, ev)
		return
	}

	if !attached {
		tr.setState(structs.TaskStatePending, tr.newEvent(structs.TaskSetup, "Building Task Directory"))
	}
	if err := tr.writeDispatchPayload(); err != nil {
		ev := tr.newEvent(structs.TaskSetupFailure, "failed to write dispatch payload: "+err.Error())
		ev.SetupError = err.Error()
		ev.FailsTask = true
		tr.setState(structs.TaskStateDead, ev)
		return
	}

	if err := tr.reserveDevices(); err != nil {
		ev := tr.newEvent(structs.TaskSetupFailure, "failed to reserve devices: "+err.Error())
		ev.SetupError = err.Error()
		ev.FailsTask = true
		tr.setState(structs.TaskStateDead, ev)
		return
	}

	if !attached {
		first, err := tr.setupIdentities()
		if err != nil {
			ev := tr.newEvent(structs.TaskSetupFailure, "failed to fetch workload identities: "+err.Error())
			ev.SetupError = err.Error()
			ev.FailsTask = true
			tr.setState(structs.TaskStateDead, ev)
			return
		}
		go tr.renewIdentities(first)
	} else {
		// A re-attached task gets its identities again, as at a start: the
		// files rewritten with fresh tokens and renewed before they
		// expire, the Task API's identity and the environment a restart
		// of the task uses. The task keeps running if the servers cannot
		// sign yet (the client may have restored before reaching them):
		// the renewal retries.
		first, err := tr.setupIdentities()
		if err != nil {
			tr.logger.Warn("fetching the workload identities of a restored task failed; retrying", "error", err)
			first = time.Now()
		}
		go tr.renewIdentities(first)
	}
	// Artifacts first: a template's source may be a fetched file.
	if !attached && !tr.runArtifacts() {
		return
	}
	if !tr.renderTemplates(attached) {
		return
	}
	if stopAPI, err := tr.startTaskAPI(); err != nil {
		tr.logger.Warn("task API socket not started", "error", err)
	} else {
		defer stopAPI()
	}

	var logs LogCollector
	stdout, stderr := "", ""
	if tr.driverWritesLogs() && (tr.cfg.Task.LogConfig == nil || !tr.cfg.Task.LogConfig.Disabled) {
		tr.logs = &drivers.LogConfig{Dir: tr.cfg.LogDir, MaxFiles: defaultLogFiles, MaxFileSizeMB: defaultLogSizeMB}
		if lc := tr.cfg.Task.LogConfig; lc != nil {
			if lc.MaxFiles > 0 {
				tr.logs.MaxFiles = lc.MaxFiles
			}
			if lc.MaxFileSizeMB > 0 {
				tr.logs.MaxFileSizeMB = lc.MaxFileSizeMB
			}
		}
	} else if tr.cfg.StartLogs != nil && (tr.cfg.Task.LogConfig == nil || !tr.cfg.Task.LogConfig.Disabled) {
		files, size := defaultLogFiles, defaultLogSizeMB
		if lc := tr.cfg.Task.LogConfig; lc != nil {
			if lc.MaxFiles > 0 {
				files = lc.MaxFiles
			}
			if lc.MaxFileSizeMB > 0 {
				size = lc.MaxFileSizeMB
			}
		}
		var err error
		logs, err = tr.cfg.StartLogs(tr.cfg.LogDir, tr.cfg.Task.Name, files, size)
		if err != nil {
			ev := tr.newEvent(structs.TaskSetupFailure, "failed to start log collection: "+err.Error())
			ev.SetupError = err.Error()
			ev.FailsTask = true
			tr.setState(structs.TaskStateDead, ev)
			return
		}
		defer logs.Close()
		stdout, stderr = logs.StdoutPath(), logs.StderrPath()
	}

	tracker := newRestartTracker(tr.restartPolicy(), tr.jobType(), tr.cfg.Task.Lifecycle)
	tr.restoreTracker(tracker)
	for {
		res, startErr := tr.runOnce(stdout, stderr, attached)
		attached = false
		if errors.Is(startErr, errDetached) {
			return
		}
		if tr.killed() && tr.takeExitedBeforeKill() && res != nil && !res.Successful() {
			// The task failed on its own before the stop reached it (a
			// client back after a disconnection finds the stop and the
			// task's end together): its real outcome is kept, not
			// reported as a kill that made the allocation complete.
			ev := tr.newEvent(structs.TaskNotRestarting, "Task failed before it was stopped")
			ev.FailsTask = true
			tr.setState(structs.TaskStateDead, ev)
			return
		}
		if tr.killed() {
			ev := tr.newEvent(structs.TaskKilled, "Task successfully killed")
			tr.mu.Lock()
			ev.KillReason = tr.killReason
			tr.mu.Unlock()
			tr.setState(structs.TaskStateDead, ev)
			return
		}
		if tr.takeUserRestart() {
			continue // restarted on request: not counted against the policy
		}
		tracker.setPolicy(tr.restartPolicy())
		d := tracker.next(tr.now(), res != nil && res.Successful(), startErr != nil)
		tr.saveTracker(tracker)
		if !d.restart && !d.failed {
			// A batch or ephemeral lifecycle task that completed: nothing
			// to say beyond Terminated.
			tr.setState(structs.TaskStateDead, nil)
			return
		}
		if !d.restart {
			ev := tr.newEvent(structs.TaskNotRestarting, d.reason)
			ev.RestartReason = d.reason
			ev.FailsTask = true
			tr.setState(structs.TaskStateDead, ev)
			return
		}
		ev := tr.newEvent(structs.TaskRestarting, fmt.Sprintf("Task restarting in %s", d.wait))
		ev.RestartReason = d.reason
		ev.StartDelay = int64(d.wait)
		// Counted with its Restarting event (as Nomad counts it), so the
		// state stored with the event carries it: a client stopped during
		// the delay leaves the count to the client that makes the restart.
		tr.mu.Lock()
		tr.state.Restarts++
		tr.state.LastRestart = tr.now()
		tr.mu.Unlock()
		tr.setState(structs.TaskStatePending, ev)
		timer := time.NewTimer(d.wait)
		select {
		case <-timer.C:
		case <-tr.killCh:
			timer.Stop()
			tr.setState(structs.TaskStateDead, tr.newEvent(structs.TaskKilled, "Task successfully killed"))
			return
		case <-tr.detachCh:
			timer.Stop()
			return
		}
	}
}

func (tr *TaskRunner) restartPolicy() *structs.RestartPolicy {
	if p := tr.newestTask().RestartPolicy; p != nil {
		return p
	}
	if tg := tr.newestGroup(); tg != nil {
		return tg.RestartPolicy
	}
	return nil
}

func (tr *TaskRunner) jobType() string {
	if tr.cfg.Alloc.Job != nil {
		return tr.cfg.Alloc.Job.Type
	}
	return structs.JobTypeService
}

// runOnce starts the task (or, attached, takes the task re-attached after a
// client restart), waits for it to exit (or be killed) and returns how it
// ended. On a start failure it returns the error instead; errDetached when
// the runner was detached from the still running task.
func (tr *TaskRunner) runOnce(stdout, stderr string, attached bool) (*drivers.ExitResult, error) {
	if !attached {
		// A re-attached task ran all along: a restart asked for meanwhile
		// (a template that changed while the client was down) stands.
		tr.drainRestart()
	}
	tr.takeExitedBeforeKill()
	startedOn := "" // re-attached: the set it runs on is not known
	if !attached {
		tc := tr.taskConfig(stdout, stderr)
		startedOn = tc.SharedCpuset
		tc.Logs = tr.logs
		tr.mu.Lock()
		alloc := tr.alloc
		tr.mu.Unlock()
		mounts, err := HostVolumeMounts(alloc, tr.cfg.Task, tr.cfg.Node)
		if err != nil {
			err = fmt.Errorf("failed to set up host volumes: %w", err)
			ev := tr.newEvent(structs.TaskSetupFailure, err.Error())
			ev.SetupError = err.Error()
			tr.appendEvent(ev)
			tr.notify()
			return nil, err
		}
		tc.Mounts = mounts
		// Stored before the start: a client that dies before it stores
		// the driver's handle still asks the driver to find the task.
		tr.setHandle(&drivers.TaskHandle{Config: tc, State: drivers.TaskStateStarting})
		h, err := tr.cfg.Driver.StartTask(tc)
		if err != nil {
			tr.setHandle(nil)
			ev := tr.newEvent(structs.TaskDriverFailure, "failed to start task: "+err.Error())
			ev.DriverError = err.Error()
			tr.appendEvent(ev)
			tr.notify()
			return nil, err
		}
		tr.setHandle(h)
	}
	detached := false
	defer func() {
		if detached {
			return // the task keeps running; a later client re-attaches
		}
		if err := tr.cfg.Driver.DestroyTask(tr.taskID, true); err != nil && err != drivers.ErrTaskNotFound {
			tr.logger.Warn("failed to destroy task", "error", err)
		}
		tr.setHandle(nil)
	}()
	// Registered after the destroy above, so it is untracked before the
	// task is destroyed.
	defer tr.trackCpuset(startedOn)()
	tr.mu.Lock()
	recorded := tr.state.State == structs.TaskStateRunning
	tr.mu.Unlock()
	// A re-attached task keeps its restored state, unless the client that
	// started it stopped before recording the start (only its "starting"
	// handle was stored): the task runs, so it is reported running.
	if !attached || !recorded {
		tr.setState(structs.TaskStateRunning, tr.newEvent(structs.TaskStarted, "Task started by client"))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitCh, err := tr.cfg.Driver.WaitTask(ctx, tr.taskID)
	if err != nil {
		ev := tr.newEvent(structs.TaskDriverFailure, "failed to wait for task: "+err.Error())
		ev.DriverError = err.Error()
		tr.appendEvent(ev)
		tr.notify()
		return nil, err
	}

	var res *drivers.ExitResult
	select {
	case res = <-waitCh:
		tr.setExitedBeforeKill()
	case <-tr.killCh:
		if r, ok := tr.alreadyExited(waitCh); ok {
			res = r
			tr.setExitedBeforeKill()
			break
		}
		var exited bool
		if res, exited = tr.preKill(waitCh); exited {
			break
		}
		if isDone(tr.detachCh) {
			detached = true
			return nil, errDetached
		}
		sig := tr.newestTask().KillSignal
		err := tr.cfg.Driver.StopTask(tr.taskID, tr.killTimeout(), sig)
		if err != nil {
			tr.logger.Warn("failed to stop task", "error", err)
		}
		if res, detached = tr.awaitStopped(waitCh, err); detached {
			return nil, errDetached
		}
	case <-tr.restartCh:
		if tr.cfg.PreRestart != nil {
			tr.cfg.PreRestart()
		}
		if res, detached = tr.awaitStopped(waitCh, tr.stopForRestart()); detached {
			return nil, errDetached
		}
	case <-tr.detachCh:
		detached = true
		return nil, errDetached
	}
	if res == nil {
		res = &drivers.ExitResult{ExitCode: -1, Err: fmt.Errorf("driver lost the task")}
	}
	msg := fmt.Sprintf("Exit Code: %d", res.ExitCode)
	if res.Signal != 0 {
		msg += fmt.Sprintf(", Signal: %d", res.Signal)
	}
	if res.Err != nil {
		msg += ", Exit Message: " + res.Err.Error()
	}
	ev := tr.newEvent(structs.TaskTerminated, msg)
	ev.ExitCode = res.ExitCode
	ev.Signal = res.Signal
	ev.Details = map[string]string{"exit_code": fmt.Sprint(res.ExitCode), "signal": fmt.Sprint(res.Signal), "oom_killed": fmt.Sprint(res.OOMKilled)}
	tr.appendEvent(ev)
	tr.notify()
	return res, nil
}

// stopRetryMax caps the backoff between attempts to kill a task whose stop
// failed.
var stopRetryMax = 30 * time.Second

// awaitStopped waits for a stopped task to exit. A stop the driver failed
// (its engine down or not answering, so the task may run on) is tried
// again with SIGKILL, backing off from 1 s to stopRetryMax, until the task
// exits: before, the runner waited for an exit nobody was bringing about,
// and the allocation never stopped. A detaching client stops waiting
// (detached true): the task is left to the next client, which finds the
// stop again.
func (tr *TaskRunner) awaitStopped(waitCh <-chan *drivers.ExitResult, stopErr error) (res *drivers.ExitResult, detached bool) {
	backoff := time.Second
	for {
		var retry <-chan time.Time
		var timer *time.Timer
		if stopErr != nil {
			timer = time.NewTimer(backoff)
			retry = timer.C
		}
		select {
		case res = <-waitCh:
		case <-tr.detachCh:
			detached = true
		case <-retry:
			stopErr = tr.cfg.Driver.StopTask(tr.taskID, 0, "SIGKILL")
			if stopErr != nil {
				tr.logger.Warn("failed to kill task; trying again", "error", stopErr, "in", backoff)
				backoff = min(2*backoff, stopRetryMax)
			}
			continue
		}
		if timer != nil {
			timer.Stop()
		}
		return res, detached
	}
}

func (tr *TaskRunner) taskConfig(stdout, stderr string) *drivers.TaskConfig {
	tr.mu.Lock()
	alloc := tr.alloc
	tr.mu.Unlock()
	task := tr.cfg.Task
	in := EnvInput{Alloc: alloc, Task: task, Node: tr.cfg.Node, Region: tr.cfg.Region, AllocDir: tr.cfg.AllocDir, TaskDir: tr.cfg.TaskDir}
	env := tr.cfg.BuildEnv(in)
	for k, v := range tr.deviceEnv {
		env[k] = v
	}
	tr.mu.Lock()
	for k, v := range tr.identityEnv {
		env[k] = v
	}
	for k, v := range tr.templateEnv {
		env[k] = v
	}
	tr.mu.Unlock()
	conf := task.Config
	if tr.cfg.InterpolateConfig != nil {
		conf = tr.cfg.InterpolateConfig(task.Config, in, env)
	}
	tc := &drivers.TaskConfig{
		ID:            tr.taskID,
		AllocID:       alloc.ID,
		JobID:         alloc.JobID,
		TaskGroupName: alloc.TaskGroup,
		Name:          task.Name,
		Namespace:     alloc.Namespace,
		Config:        conf,
		Env:           env,
		User:          task.User,
		AllocDir:      tr.cfg.AllocDir,
		TaskDir:       tr.cfg.TaskDir,
		StdoutPath:    stdout,
		StderrPath:    stderr,
		EmitEvent: func(msg string, details map[string]string) {
			ev := tr.newEvent(structs.TaskDriverMessage, msg)
			ev.DriverMessage, ev.Details = msg, details
			tr.EmitEvent(ev)
		},
		NetNS:        tr.cfg.NetNS,
		SharedCpuset: tr.sharedCpuset(),
	}
	if alloc.Job != nil {
		tc.JobName = alloc.Job.Name
	}
	if tr.cfg.Node != nil {
		tc.NodeID, tc.NodeName = tr.cfg.Node.ID, tr.cfg.Node.Name
		tc.CgroupParent = tr.cfg.Node.CgroupParent
		if nr := tr.cfg.Node.NodeResources; nr != nil {
			tc.CPUTotalCompute = nr.Cpu.CpuShares
		}
	}
	if alloc.AllocatedResources != nil {
		tc.Resources = alloc.AllocatedResources.Tasks[task.Name]
		tc.Ports = alloc.AllocatedResources.Shared.Ports
	}
	return tc
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// reserveDevices reserves the device instances the allocation grants this
// task, keeping the environment they need for every start.
func (tr *TaskRunner) reserveDevices() error {
	alloc := tr.cfg.Alloc
	if alloc.AllocatedResources == nil {
		return nil
	}
	res := alloc.AllocatedResources.Tasks[tr.cfg.Task.Name]
	if res == nil || len(res.Devices) == 0 {
		return nil
	}
	if tr.cfg.ReserveDevices == nil {
		return fmt.Errorf("task was granted devices but this client has no device plugins")
	}
	env, err := tr.cfg.ReserveDevices(res.Devices)
	if err != nil {
		return err
	}
	tr.deviceEnv = env
	return nil
}
