// Package drivers owns the task driver contract: what the client's task
// runner asks of a driver (start, wait, stop, destroy, inspect, signal,
// recover) and what a driver reports about itself (fingerprint).
//
// A driver must never talk to the servers or touch allocation state; it runs
// and supervises processes and reports what happened.
package drivers

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Health of a driver on this node.
const (
	HealthUndetected = "undetected"
	HealthUnhealthy  = "unhealthy"
	HealthHealthy    = "healthy"
)

// Fingerprint is what a driver reports about itself.
type Fingerprint struct {
	// Attributes become node attributes ("driver.raw_exec" = "1", ...).
	Attributes        map[string]string
	Health            string
	HealthDescription string
}

// TaskConfig is everything a driver needs to start one task.
type TaskConfig struct {
	ID            string // "<allocID>/<task>"
	AllocID       string
	JobID         string
	JobName       string
	TaskGroupName string
	Name          string // task name
	Namespace     string
	NodeID        string
	NodeName      string

	// Config is the task's opaque `config {}` block, already interpolated.
	Config map[string]any
	// Env is the full environment (NOMAD_* plus task env), interpolated.
	Env  map[string]string
	User string

	Resources *structs.AllocatedTaskResources

	AllocDir   string // <alloc_dir>/<allocID>
	TaskDir    string // <alloc_dir>/<allocID>/<task>
	StdoutPath string // file or fifo the driver writes stdout to
	StderrPath string
	// Logs, set instead of StdoutPath/StderrPath for a LogWriter driver,
	// says where and how the driver itself writes the rotated log files.
	Logs *LogConfig
	// CgroupParent is the parent under which the driver may create the
	// task's cgroup (may be empty: driver default).
	CgroupParent string

	// Ports are the allocation's group network ports (label, host port,
	// `to` port, host IP), for drivers that publish them (docker).
	Ports structs.AllocatedPorts
	// NetNS is the path of the allocation's network namespace (group
	// network mode "bridge"); the task joins it. Empty: the host's network.
	NetNS string
	// CPUTotalCompute is the node's total CPU in MHz (0: unknown), for
	// drivers that turn a task's MHz into a CPU quota.
	CPUTotalCompute int64
	// SharedCpuset is the node's shared cpuset when the task starts, in
	// the kernel's list format ("0,2-3"): the CPUs a task without reserved
	// cores (Resources.Cpu.ReservedCores) runs on, so it stays off the
	// cores other tasks reserved. Empty: every CPU. A task with reserved
	// cores runs on those instead. Drivers that implement CpusetUpdater
	// are told when it changes.
	SharedCpuset string

	// Mounts are the task's host volume mounts (volume_mount blocks,
	// resolved by the client against its host volumes): drivers that
	// isolate the filesystem bind HostPath at TaskPath.
	Mounts []MountConfig

	// EmitEvent, when set, records a driver event on the task (Nomad's
	// "Driver" task events, e.g. "Downloading image" with the image in
	// details) while the driver works. It is never persisted: a recovered
	// task's config has none.
	EmitEvent func(message string, details map[string]string) `codec:"-" json:"-"`
}

// MountConfig is one bind mount of a host volume into a task.
type MountConfig struct {
	// TaskPath is the destination inside the task (relative: inside the
	// task's directory for exec and java, the container's root for docker
	// and podman); HostPath the volume's path on the host.
	TaskPath string
	HostPath string
	ReadOnly bool
	// PropagationMode is "private" (default), "host-to-task" or
	// "bidirectional"; SELinuxLabel is "", "z" or "Z".
	PropagationMode string
	SELinuxLabel    string
}

// Propagation is the mount's propagation in the kernel's words
// (rprivate, rslave, rshared).
func (m MountConfig) Propagation() string {
	switch m.PropagationMode {
	case "host-to-task":
		return "rslave"
	case "bidirectional":
		return "rshared"
	}
	return "rprivate"
}

// ReservedCores is the task's reserved cores in the kernel's list format
// ("1,3"); "" when it reserves none.
func (cfg *TaskConfig) ReservedCores() string {
	if cfg == nil || cfg.Resources == nil || len(cfg.Resources.Cpu.ReservedCores) == 0 {
		return ""
	}
	s := make([]string, len(cfg.Resources.Cpu.ReservedCores))
	for i, c := range cfg.Resources.Cpu.ReservedCores {
		s[i] = strconv.Itoa(int(c))
	}
	return strings.Join(s, ",")
}

// Cpus is the set of CPUs the task runs on: its reserved cores, else the
// node's shared cpuset; "" means every CPU.
func (cfg *TaskConfig) Cpus() string {
	if r := cfg.ReservedCores(); r != "" {
		return r
	}
	if cfg == nil {
		return ""
	}
	return cfg.SharedCpuset
}

// Event records a driver event on cfg's task, if its client listens.
func (cfg *TaskConfig) Event(message string, details map[string]string) {
	if cfg != nil && cfg.EmitEvent != nil {
		cfg.EmitEvent(message, details)
	}
}

// LogConfig is a task's log rotation: files <Dir>/<task>.stdout.<n> and
// .stderr.<n>, at most MaxFiles of each, rotated at MaxFileSizeMB.
type LogConfig struct {
	Dir           string
	MaxFiles      int
	MaxFileSizeMB int
}

// TaskHandle is what a driver returns on start and can recover from.
type TaskHandle struct {
	Version     int
	Config      *TaskConfig
	State       string // TaskStateRunning / TaskStateExited (TaskStateStarting: see below)
	DriverState []byte // opaque, persisted by the client
}

// Task states as a driver sees them.
const (
	TaskStateUnknown = "unknown"
	TaskStateRunning = "running"
	TaskStateExited  = "exited"
	// TaskStateStarting marks a handle the client persisted just before
	// StartTask, with the config only and no DriverState: a client that
	// died before storing the driver's handle asks RecoverTask with it, and
	// the driver finds the task (if it started) from what it left on disk.
	TaskStateStarting = "starting"
)

// ExitResult is how a task ended.
type ExitResult struct {
	ExitCode  int
	Signal    int
	OOMKilled bool
	Err       error
}

// Successful reports a clean exit.
func (r *ExitResult) Successful() bool {
	return r.ExitCode == 0 && r.Signal == 0 && r.Err == nil
}

// TaskStatus is a driver's view of a task.
type TaskStatus struct {
	ID          string
	Name        string
	State       string
	StartedAt   time.Time
	CompletedAt time.Time
	ExitResult  *ExitResult
	// PIDs of every process the task has (the tracked group), for diagnostics
	// and tests.
	PIDs []int
}

// Driver runs tasks of one kind.
type Driver interface {
	// Name is the driver's name as used in jobspecs ("raw_exec").
	Name() string
	// Fingerprint reports the driver's attributes and health now.
	Fingerprint() *Fingerprint
	// StartTask starts the task and returns a handle to persist.
	StartTask(cfg *TaskConfig) (*TaskHandle, error)
	// RecoverTask re-attaches to a task started by an earlier client
	// process (or by this one: then it is a no-op). A task that ended while
	// no client watched it is recovered too when the driver still knows how
	// it ended: WaitTask then yields that real result at once. An error
	// means the driver can neither find the task nor say how it ended; it
	// has then released whatever the task left behind, and the client may
	// start the task anew without duplicating it. A handle in state
	// TaskStateStarting (no DriverState) is recovered from what the driver
	// left on disk for that task ID, if anything.
	RecoverTask(h *TaskHandle) error
	// WaitTask returns a channel that yields exactly one ExitResult.
	WaitTask(ctx context.Context, taskID string) (<-chan *ExitResult, error)
	// StopTask sends signal (default SIGTERM), waits up to timeout, then kills
	// everything the task started (including processes that left its
	// process group).
	StopTask(taskID string, timeout time.Duration, signal string) error
	// DestroyTask releases everything; with force it kills a running task.
	DestroyTask(taskID string, force bool) error
	// InspectTask reports the task's status.
	InspectTask(taskID string) (*TaskStatus, error)
	// SignalTask sends a signal to the task's main process.
	SignalTask(taskID string, signal string) error
}

// LogWriter is implemented by drivers that copy a task's output into the
// rotated log files themselves (TaskConfig.Logs), from a process that
// outlives the client, so output is captured while the client is down or
// restarting. The client starts no log collector for them.
type LogWriter interface {
	WritesLogs() bool
}

// ErrTaskNotFound is returned for unknown task IDs.
var ErrTaskNotFound = errTaskNotFound{}

type errTaskNotFound struct{}

func (errTaskNotFound) Error() string { return "task not found for given id" }
