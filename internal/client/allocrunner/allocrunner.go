package allocrunner

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/client/cpuset"
	"github.com/drover-project/drover/internal/client/getter"
	"github.com/drover-project/drover/internal/client/taskrunner"
	"github.com/drover-project/drover/internal/client/template"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
)

// AllocDir is what the runner needs from an allocation directory
// (allocdir.AllocDir).
type AllocDir interface {
	Build(tasks []string) error
	TaskDir(task string) string
	LogDir() string
	Destroy() error
	Resolve(rel string) (string, error)
	List(rel string) ([]*api.AllocFileInfo, error)
	Stat(rel string) (*api.AllocFileInfo, error)
	// OpenRead opens a regular file for reading, refusing anything else.
	OpenRead(rel string) (*os.File, error)
	// Scrub rewrites an error's message to name alloc-relative paths only.
	Scrub(err error) error
}

// Config is everything an AllocRunner needs.
type Config struct {
	Alloc     *structs.Allocation
	Node      *structs.Node
	Region    string
	AllocRoot string
	// Drivers by name; only detected drivers belong here.
	Drivers        map[string]drivers.Driver
	MaxKillTimeout time.Duration

	// StateUpdater receives a stripped copy of the allocation (ID, NodeID,
	// ClientStatus, ClientDescription, TaskStates, DeploymentStatus,
	// NetworkStatus) after every change. It must not block for long.
	StateUpdater func(*structs.Allocation)

	NewAllocDir       func(allocRoot, allocID string) AllocDir
	StartLogs         taskrunner.StartLogsFunc
	BuildEnv          taskrunner.BuildEnvFunc
	InterpolateConfig taskrunner.InterpolateConfigFunc
	// ReserveDevices prepares the device instances granted to a task.
	ReserveDevices taskrunner.ReserveDevicesFunc
	// SignIdentities fetches the tasks' workload identities.
	SignIdentities taskrunner.SignIdentitiesFunc
	// TaskAPI is served to each task on secrets/api.sock.
	TaskAPI http.Handler
	// Templates reads what task templates use from the servers.
	Templates template.Backend
	// Artifacts is the client's artifact configuration.
	Artifacts *getter.Config
	// StateDB, if set, persists the tasks' states and handles and the
	// observed deployment health (restore.go).
	StateDB StateDB
	// Services, if set, registers the allocation's nomad-provider
	// services (services.go); nil: they are neither registered nor checked.
	Services ServiceRegistrar

	// Hold, if set, delays starting any task until it is closed (restored
	// allocations wait for the servers; re-attached tasks do not wait).
	Hold <-chan struct{}
	// Network sets up the network of a group in bridge mode (network.go);
	// nil when this node cannot (NetworkUnavailable says why).
	Network            Network
	NetworkUnavailable string
	// Cpusets, if set, is the node's shared cpuset (cpuset.go): the
	// allocation's reserved cores are held in it from New until Run ends,
	// and its tasks without reserved cores run on it.
	Cpusets *cpuset.Manager
	// PrevAlloc, if set, is the allocation this one replaces when its data
	// is to be taken over (sticky ephemeral disk; migrate.go): the tasks
	// start once it is terminal and its data was moved in.
	PrevAlloc PrevAlloc

	Logger hclog.Logger
	Clock  func() time.Time
}

// Lifecycle phases of a task.
const (
	phasePrestart = iota
	phasePrestartSidecar
	phaseMain
	phasePoststart
	phasePoststop
)

type taskEntry struct {
	tr    *taskrunner.TaskRunner
	phase int
	gate  chan struct{}
	open  sync.Once
}

func (e *taskEntry) start()       { e.open.Do(func() { close(e.gate) }) }
func (e *taskEntry) done() bool   { return isClosed(e.tr.WaitCh()) }
func (e *taskEntry) failed() bool { return e.tr.State().Failed }

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// AllocRunner runs one allocation. Create with New, then call Run in a
// goroutine.
type AllocRunner struct {
	cfg    Config
	logger hclog.Logger
	dir    AllocDir

	mu    sync.Mutex
	alloc *structs.Allocation
	tasks []*taskEntry // in the job's task order

	reportMu sync.Mutex
	changeCh chan struct{}

	restartIndex uint64 // last in-place restart request handled (restart.go); under mu
	// health judges the allocation's deployment health (health.go).
	health *healthWatcher
	// svc runs the nomad-provider services and checks (services.go,
	// checks.go); svc is nil when the allocation has none.
	svc    *serviceLoop
	checks *checkRunner

	// maxRunCh wakes the max_run_duration watcher after an update;
	// maxRunHit (under mu) records that it stopped the allocation
	// (maxrun.go).
	maxRunCh  chan struct{}
	maxRunHit bool

	killOnce sync.Once
	// preKillOnce runs the group's pre-kill step (kill.go).
	preKillOnce sync.Once
	killCh      chan struct{}
	// killReason is Kill's reason, set before killCh closes.
	killReason string
	waitCh     chan struct{}
	runOnce    sync.Once

	detachOnce sync.Once
	detachCh   chan struct{}

	// skipDelayCh is closed when no shutdown_delay may be waited any
	// more (kill.go).
	skipDelayOnce sync.Once
	skipDelayCh   chan struct{}

	// netns is the path of the allocation's network namespace ("" for
	// host networking).
	netns string
	// netCreator makes the namespace when a task's driver must own it
	// (docker's pause container); nil: the network setup makes it.
	netCreator     drivers.NetworkCreator
	netCreatorName string
}

// New builds a runner (and its task runners, each recording Received).
func New(cfg Config) (*AllocRunner, error) {
	if cfg.Alloc == nil || cfg.Alloc.Job == nil {
		return nil, fmt.Errorf("allocation has no job")
	}
	tg := cfg.Alloc.Job.LookupTaskGroup(cfg.Alloc.TaskGroup)
	if tg == nil {
		return nil, fmt.Errorf("task group %q not found in job %q", cfg.Alloc.TaskGroup, cfg.Alloc.JobID)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	ar := &AllocRunner{
		cfg:      cfg,
		logger:   cfg.Logger.With("alloc_id", cfg.Alloc.ID),
		alloc:    cfg.Alloc,
		changeCh: make(chan struct{}, 1),
		maxRunCh: make(chan struct{}, 1),
		killCh:   make(chan struct{}),
		waitCh:   make(chan struct{}),
		detachCh: make(chan struct{}),

		skipDelayCh: make(chan struct{}),
	}
	if rr := cfg.Alloc.RestartRequest; rr != nil {
		ar.restartIndex = rr.Index // asked before this runner existed: not for it
	}
	ar.health = newHealthWatcher(ar)
	ar.checks = newCheckRunner(ar)
	if len(nomadServices(cfg.Alloc)) > 0 {
		ar.svc = newServiceLoop()
	}
	if cfg.NewAllocDir != nil {
		ar.dir = cfg.NewAllocDir(cfg.AllocRoot, cfg.Alloc.ID)
	} else {
		ar.dir = pathsOnly(filepath.Join(cfg.AllocRoot, cfg.Alloc.ID))
	}
	allocDir := filepath.Join(cfg.AllocRoot, cfg.Alloc.ID)
	if bridgeMode(tg) {
		ar.netns = netNSPath(cfg.Alloc.ID)
	}
	for _, t := range tg.Tasks {
		name := t.Name
		e := &taskEntry{phase: phaseOf(t), gate: make(chan struct{})}
		var drv drivers.Driver
		if d, ok := cfg.Drivers[t.Driver]; ok {
			drv = d
			nc, ok := d.(drivers.NetworkCreator)
			ok = ok && nc.CreatesNetwork()
			if ok && ar.netns != "" && ar.netCreator == nil {
				ar.netCreator, ar.netCreatorName = nc, t.Driver
			} else if ok && ar.netns != "" && ar.netCreatorName != t.Driver {
				return nil, fmt.Errorf("tasks of drivers %q and %q cannot share a bridge network", ar.netCreatorName, t.Driver)
			}
		}
		e.tr = taskrunner.New(taskrunner.Config{
			Alloc: cfg.Alloc, Task: t, Driver: drv, Node: cfg.Node, Region: cfg.Region,
			AllocDir: allocDir, TaskDir: ar.dir.TaskDir(t.Name), LogDir: ar.dir.LogDir(), Cpusets: cfg.Cpusets,
			MaxKillTimeout: cfg.MaxKillTimeout, Gate: e.gate, OnStateChange: ar.onTaskChange,
			StartLogs: cfg.StartLogs, BuildEnv: cfg.BuildEnv, InterpolateConfig: cfg.InterpolateConfig,
			ReserveDevices: cfg.ReserveDevices, SignIdentities: cfg.SignIdentities, TaskAPI: cfg.TaskAPI, Templates: cfg.Templates, Artifacts: cfg.Artifacts, Logger: ar.logger, Clock: cfg.Clock,
			StateDB: taskStateDB(cfg.StateDB), NetNS: ar.netns,
			PreKill:    func() { ar.dropServices(name) },
			PreRestart: func() { ar.pauseServices(name) },
		})
		ar.tasks = append(ar.tasks, e)
	}
	ar.holdCores()
	return ar, nil
}

func phaseOf(t *structs.Task) int {
	if t.Lifecycle == nil {
		return phaseMain
	}
	switch t.Lifecycle.Hook {
	case "prestart":
		if t.Lifecycle.Sidecar {
			return phasePrestartSidecar
		}
		return phasePrestart
	case "poststart":
		return phasePoststart
	case "poststop":
		return phasePoststop
	}
	return phaseMain
}

// ID is the allocation ID.
func (ar *AllocRunner) ID() string { return ar.cfg.Alloc.ID }

// AllocDir returns the allocation's directory.
func (ar *AllocRunner) AllocDir() AllocDir { return ar.dir }

// WaitCh is closed when every task is done for good.
func (ar *AllocRunner) WaitCh() <-chan struct{} { return ar.waitCh }

// TaskState returns a copy of one task's state, or nil for unknown tasks.
func (ar *AllocRunner) TaskState(task string) *structs.TaskState {
	for _, e := range ar.tasks {
		if e.tr.Task().Name == task {
			return e.tr.State()
		}
	}
	return nil
}

// Alloc returns the server's copy of the allocation with the client's
// observed fields (ClientStatus, ClientDescription, TaskStates) filled in.
func (ar *AllocRunner) Alloc() *structs.Allocation {
	ar.mu.Lock()
	a := *ar.alloc
	ar.mu.Unlock()
	a.TaskStates = ar.taskStates()
	a.ClientStatus, a.ClientDescription = ClientStatus(a.TaskStates)
	if ds := ar.health.status(&a); ds != nil {
		a.DeploymentStatus = ds
	}
	return &a
}

func (ar *AllocRunner) taskStates() map[string]*structs.TaskState {
	m := make(map[string]*structs.TaskState, len(ar.tasks))
	for _, e := range ar.tasks {
		m[e.tr.Task().Name] = e.tr.State()
	}
	return m
}

// stripped is the update the client sends for this allocation.
func (ar *AllocRunner) stripped() *structs.Allocation {
	ar.mu.Lock()
	src := ar.alloc
	ar.mu.Unlock()
	a := &structs.Allocation{
		ID:               src.ID,
		NodeID:           src.NodeID,
		DeploymentStatus: ar.health.status(src),
		NetworkStatus:    src.NetworkStatus,
		TaskStates:       ar.taskStates(),
	}
	if a.NetworkStatus == nil {
		// Host networking has no interface of its own; say so explicitly.
		a.NetworkStatus = &structs.AllocNetworkStatus{}
	}
	a.ClientStatus, a.ClientDescription = ClientStatus(a.TaskStates)
	if a.ClientStatus == structs.AllocClientStatusComplete && ar.maxRunExceeded() {
		a.ClientDescription = MaxRunExceededDesc
	}
	return a
}

func (ar *AllocRunner) onTaskChange() {
	select {
	case ar.changeCh <- struct{}{}:
	default:
	}
	ar.health.taskChanged()
	ar.pokeServices()
	ar.report()
}

// CheckStatuses returns the latest results of the allocation's service
// checks by check ID (empty when it has none running).
func (ar *AllocRunner) CheckStatuses() api.AllocCheckStatuses { return ar.checks.Statuses() }

// Report sends the current state again, changed or not (the client's node
// was registered anew and the servers must hear every allocation's state).
func (ar *AllocRunner) Report() { ar.report() }

// report sends the current state; serialised so updates arrive in order.
func (ar *AllocRunner) report() {
	if ar.cfg.StateUpdater == nil {
		return
	}
	ar.reportMu.Lock()
	defer ar.reportMu.Unlock()
	a := ar.stripped()
	ar.persistDeployment(a)
	ar.cfg.StateUpdater(a)
}

// Update gives the runner the server's newest copy. A server-terminal
// allocation (desired stop/evict) is killed; one the server marked
// `unknown` (reconnect after a disconnect) gets a Reconnected event so its
// true state is sent again. Anything else is an in-place update: the runner
// and its tasks take the new job and resources and keep running, and a new
// deployment gets its own health judgement.
func (ar *AllocRunner) Update(alloc *structs.Allocation) {
	ar.mu.Lock()
	if alloc.NetworkStatus == nil && ar.alloc.NetworkStatus != nil {
		// The client knows its network; a server copy sent before it
		// heard of it must not make the tasks forget.
		cp := *alloc
		cp.NetworkStatus = ar.alloc.NetworkStatus
		alloc = &cp
	}
	ar.alloc = alloc
	ar.mu.Unlock()
	if alloc.DesiredTransition.ShouldIgnoreShutdownDelay() {
		ar.SkipShutdownDelay()
	}
	for _, e := range ar.tasks {
		e.tr.Update(alloc)
	}
	if alloc.ServerTerminalStatus() {
		ar.Kill("alloc desired status is " + alloc.DesiredStatus)
		return
	}
	ar.pokeMaxRun()
	ar.health.observe(alloc)
	ar.pokeServices()
	if alloc.ClientStatus == structs.AllocClientStatusUnknown {
		for _, e := range ar.tasks {
			e.tr.EmitEvent(e.tr.NewEvent(structs.TaskReconnected, "Client reconnected"))
		}
	}
}

// Kill stops every task in kill order (kill.go); poststop tasks still run
// afterwards. It returns at once; wait on WaitCh.
func (ar *AllocRunner) Kill(reason string) {
	ar.killOnce.Do(func() {
		ar.killReason = reason
		close(ar.killCh)
		go ar.killInOrder(reason)
	})
}

// Killed reports whether Kill was called.
func (ar *AllocRunner) Killed() bool {
	select {
	case <-ar.killCh:
		return true
	default:
		return false
	}
}

// Destroy kills the allocation, waits for its tasks and removes its
// directory.
func (ar *AllocRunner) Destroy() error {
	ar.Kill("alloc destroyed")
	ar.runOnce.Do(func() { go ar.Run() }) // never ran: let the tasks end
	<-ar.waitCh
	ar.teardownNetwork()
	return ar.dir.Destroy()
}

// Shutdown stops the tasks and waits for them (client shutdown; no state is
// persisted yet so nothing can be re-attached later).
func (ar *AllocRunner) Shutdown() {
	ar.Kill("client shutting down")
	ar.runOnce.Do(func() { go ar.Run() })
	<-ar.waitCh
}

// Start runs the allocation in a goroutine (once).
func (ar *AllocRunner) Start() { ar.runOnce.Do(func() { go ar.Run() }) }

// TaskFinished reports whether the task exists and whether its runner is
// done for good (its log collector flushed and closed).
func (ar *AllocRunner) TaskFinished(task string) (known, finished bool) {
	for _, e := range ar.tasks {
		if e.tr.Task().Name == task {
			return true, e.done()
		}
	}
	return false, false
}
