package drivers

import (
	"context"
	"io"
	"time"
)

// Optional driver abilities. The client asks for them with a type
// assertion; a driver without one simply does not offer it.

// TaskResourceUsage is one sample of a task's CPU and memory use, in the
// shape of Nomad's api.TaskResourceUsage.
type TaskResourceUsage struct {
	Timestamp time.Time
	CPU       CPUUsage
	Memory    MemoryUsage
}

// CPUUsage: Percent is of one core (200 = two cores busy); TotalTicks is
// the MHz in use; UserMode/SystemMode are percents like Percent.
type CPUUsage struct {
	Percent          float64
	TotalTicks       float64
	UserMode         float64
	SystemMode       float64
	ThrottledPeriods uint64
	ThrottledTime    uint64
	Measured         []string
}

// MemoryUsage in bytes.
type MemoryUsage struct {
	RSS      uint64
	Cache    uint64
	Swap     uint64
	Usage    uint64
	MaxUsage uint64
	Measured []string
}

// StatsDriver samples a running task's resource use.
type StatsDriver interface {
	TaskStats(ctx context.Context, taskID string) (*TaskResourceUsage, error)
}

// ExecOptions is one command run inside a task (`alloc exec`, script
// checks). Nil streams are empty input or discarded output.
type ExecOptions struct {
	Command []string
	Tty     bool
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer // unused with Tty: the terminal merges both
	// Resize carries terminal size changes (Tty only); may be nil.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct {
	Height, Width uint
}

// ExecDriver runs commands inside a running task.
type ExecDriver interface {
	// ExecTask runs the command to completion (or until ctx ends) and
	// returns its exit code.
	ExecTask(ctx context.Context, taskID string, opts ExecOptions) (exitCode int, err error)
}

// CpusetUpdater moves a running task without reserved cores onto another
// set of CPUs. The node's shared cpuset (TaskConfig.SharedCpuset) shrinks
// when a task reserving cores starts on the node and grows back when it
// stops; the client calls UpdateCpuset on every running task of a driver
// that offers it. cpus is in the kernel's list format ("0,2-3"), never
// empty. A task with reserved cores is never moved.
type CpusetUpdater interface {
	UpdateCpuset(taskID string, cpus string) error
}
