package structs

import "time"

// Allocation binds one task group instance of a job to a node. The server owns
// the desired fields; the client owns ClientStatus, TaskStates and the rest of
// what it observes.
type Allocation struct {
	_struct struct{} `codec:",omitempty"` // msgpack omits zero fields: see msgpack_tags.go

	ID                    string
	Namespace             string
	EvalID                string
	Name                  string
	NodeID                string
	NodeName              string
	JobID                 string
	Job                   *Job
	TaskGroup             string
	AllocatedResources    *AllocatedResources
	Metrics               *AllocMetric
	DesiredStatus         string
	DesiredDescription    string
	DesiredTransition     DesiredTransition
	ClientStatus          string
	ClientDescription     string
	TaskStates            map[string]*TaskState
	AllocStates           []*AllocState `json:",omitempty"`
	DeploymentID          string
	DeploymentStatus      *AllocDeploymentStatus
	FollowupEvalID        string
	PreviousAllocation    string
	NextAllocation        string
	RescheduleTracker     *RescheduleTracker
	NetworkStatus         *AllocNetworkStatus
	PreemptedAllocations  []string
	PreemptedByAllocation string
	// RestartRequest asks the client to restart tasks in place (a rolling
	// restart, job_restart.go). Drover only: Nomad has no such field.
	RestartRequest   *AllocRestartRequest `json:",omitempty"`
	CreateIndex      uint64
	ModifyIndex      uint64
	AllocModifyIndex uint64
	CreateTime       int64
	ModifyTime       int64
}

// AllocState records a transition of a client-visible field.
type AllocState struct {
	Field string
	Value string
	Time  time.Time
}

// DesiredTransition carries server requests to move an allocation.
type DesiredTransition struct {
	Migrate                 *bool
	Reschedule              *bool
	ForceReschedule         *bool
	NoShutdownDelay         *bool
	MigrateDisablePlacement *bool
}

// ShouldIgnoreShutdownDelay reports whether the stop asked to skip the
// group's and tasks' shutdown_delay (`-no-shutdown-delay`).
func (d DesiredTransition) ShouldIgnoreShutdownDelay() bool {
	return d.NoShutdownDelay != nil && *d.NoShutdownDelay
}

// TaskState is the client's view of one task.
type TaskState struct {
	_struct struct{} `codec:",omitempty"` // msgpack omits zero fields: see msgpack_tags.go

	State       string
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
	TaskHandle  *TaskHandle `json:"-" bexpr:"-"`
}

// TaskHandle is opaque driver state the client keeps to re-attach to a task.
type TaskHandle struct {
	Version     int
	DriverState []byte
}

// TaskEvent is one event in a task's history.
type TaskEvent struct {
	Type             string
	Time             int64
	Message          string
	DisplayMessage   string
	Details          map[string]string
	FailsTask        bool
	RestartReason    string
	SetupError       string
	DriverError      string
	ExitCode         int
	Signal           int
	KillTimeout      time.Duration
	KillError        string
	KillReason       string
	StartDelay       int64
	DownloadError    string
	ValidationError  string
	DiskLimit        int64
	FailedSibling    string
	VaultError       string
	TaskSignalReason string
	TaskSignal       string
	DriverMessage    string
	GenericSource    string
}

// Task event types.
const (
	TaskReceived      = "Received"
	TaskSetup         = "Task Setup"
	TaskStarted       = "Started"
	TaskTerminated    = "Terminated"
	TaskRestarting    = "Restarting"
	TaskNotRestarting = "Not Restarting"
	TaskKilling       = "Killing"
	TaskKilled        = "Killed"
	TaskDriverFailure = "Driver Failure"
	TaskSetupFailure  = "Setup Failure"
	TaskSiblingFailed = "Sibling Task Failed"
	TaskLeaderDead    = "Leader Task Dead"
	TaskReconnected   = "Reconnected"
	TaskDriverMessage = "Driver"
	// TaskDownloadingArtifacts is recorded when the task's artifacts are
	// fetched, TaskArtifactDownloadFailed when one could not be (its
	// DownloadError says why; the task restarts under its policy).
	TaskDownloadingArtifacts   = "Downloading Artifacts"
	TaskArtifactDownloadFailed = "Failed Artifact Download"
	// TaskWaitingShuttingDownDelay: the task's services are gone and its
	// shutdown_delay runs before the kill signal.
	TaskWaitingShuttingDownDelay = "Waiting for shutdown delay"
	// TaskSkippingShutdownDelay: the stop asked for no shutdown delay.
	TaskSkippingShutdownDelay = "Skipping shutdown delay"
	// TaskAllocUnhealthy is recorded on the tasks that kept their allocation
	// from becoming healthy by its deployment's healthy_deadline.
	TaskAllocUnhealthy = "Alloc Unhealthy"
)

// AllocMetric records how the scheduler reached a placement (or failed to).
type AllocMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesInPool        int
	NodePool           string
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	ResourcesExhausted map[string]*Resources
	Scores             map[string]float64
	ScoreMetaData      []*NodeScoreMeta
	AllocationTime     time.Duration
	CoalescedFailures  int
}

// NodeScoreMeta is the per-node breakdown of a score.
type NodeScoreMeta struct {
	NodeID    string
	Scores    map[string]float64
	NormScore float64
}

// ServerTerminalStatus reports whether the server wants the alloc stopped.
func (a *Allocation) ServerTerminalStatus() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.DesiredStatus == AllocDesiredStatusEvict
}

// ClientTerminalStatus reports whether the alloc finished on the client.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// TerminalStatus reports whether the alloc is terminal on either side.
func (a *Allocation) TerminalStatus() bool {
	return a.ServerTerminalStatus() || a.ClientTerminalStatus()
}

// Terminated reports whether the alloc no longer holds node resources.
// Resources are held until the client reports a terminal state, or the
// server marks it lost.
func (a *Allocation) Terminated() bool {
	return a.ClientTerminalStatus()
}

// CopySkipJob copies the allocation, sharing its (immutable) job.
func (a *Allocation) CopySkipJob() *Allocation {
	if a == nil {
		return nil
	}
	// Never write to a: allocations read from the state store are shared.
	shallow := *a
	shallow.Job = nil
	var out Allocation
	mustDeepCopy(&shallow, &out)
	out.Job = a.Job
	return &out
}

// Index returns the n in "job.group[n]".
func (a *Allocation) Index() uint {
	return AllocIndexFromName(a.Name)
}

// AllocIndexFromName parses the index of an allocation name.
func AllocIndexFromName(name string) uint {
	l := len(name)
	if l < 3 || name[l-1] != ']' {
		return 0
	}
	i := l - 2
	for i >= 0 && name[i] != '[' {
		i--
	}
	var n uint
	for _, c := range name[i+1 : l-1] {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint(c-'0')
	}
	return n
}

// AllocName builds "job.group[idx]".
func AllocName(job, group string, idx uint) string {
	return job + "." + group + "[" + uitoa(idx) + "]"
}

func uitoa(u uint) string {
	if u == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	return string(b[i:])
}

// AllocListStub is the list view of an allocation.
type AllocListStub struct {
	ID                    string
	EvalID                string
	Name                  string
	Namespace             string
	NodeID                string
	NodeName              string
	JobID                 string
	JobType               string
	JobVersion            uint64
	TaskGroup             string
	AllocatedResources    *AllocatedResources `json:",omitempty"`
	DesiredStatus         string
	DesiredDescription    string
	ClientStatus          string
	ClientDescription     string
	TaskStates            map[string]*TaskState
	DeploymentStatus      *AllocDeploymentStatus
	FollowupEvalID        string
	RescheduleTracker     *RescheduleTracker
	PreemptedAllocations  []string
	PreemptedByAllocation string
	CreateIndex           uint64
	ModifyIndex           uint64
	CreateTime            int64
	ModifyTime            int64
}

// StubWithResources returns the list view including AllocatedResources.
func (a *Allocation) StubWithResources() *AllocListStub {
	s := a.Stub()
	s.AllocatedResources = a.AllocatedResources
	return s
}

// Stub returns the list view.
func (a *Allocation) Stub() *AllocListStub {
	s := &AllocListStub{
		ID:                    a.ID,
		EvalID:                a.EvalID,
		Name:                  a.Name,
		Namespace:             a.Namespace,
		NodeID:                a.NodeID,
		NodeName:              a.NodeName,
		JobID:                 a.JobID,
		TaskGroup:             a.TaskGroup,
		DesiredStatus:         a.DesiredStatus,
		DesiredDescription:    a.DesiredDescription,
		ClientStatus:          a.ClientStatus,
		ClientDescription:     a.ClientDescription,
		TaskStates:            a.TaskStates,
		DeploymentStatus:      a.DeploymentStatus,
		FollowupEvalID:        a.FollowupEvalID,
		RescheduleTracker:     a.RescheduleTracker,
		PreemptedAllocations:  a.PreemptedAllocations,
		PreemptedByAllocation: a.PreemptedByAllocation,
		CreateIndex:           a.CreateIndex,
		ModifyIndex:           a.ModifyIndex,
		CreateTime:            a.CreateTime,
		ModifyTime:            a.ModifyTime,
	}
	if a.Job != nil {
		s.JobType = a.Job.Type
		s.JobVersion = a.Job.Version
	}
	return s
}
