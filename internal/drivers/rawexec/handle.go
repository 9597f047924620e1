package rawexec

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
)

// driverState is what the client persists (TaskHandle.DriverState) so a new
// client process can re-attach.
type driverState struct {
	PID           int         `json:"pid"`
	StartTime     uint64      `json:"start_time"` // /proc/<pid>/stat starttime (ticks)
	StartedAt     time.Time   `json:"started_at"`
	Cgroup        *taskCgroup `json:"cgroup,omitempty"`
	ShimDir       string      `json:"shim_dir"`
	ShimPID       int         `json:"shim_pid"`
	ShimStartTime uint64      `json:"shim_start_time"`
}

// taskHandle supervises one task through its shim.
type taskHandle struct {
	cfg           *drivers.TaskConfig
	pid           int
	startTime     uint64
	startedAt     time.Time
	cg            *taskCgroup
	shimDir       string
	shimPID       int
	shimStartTime uint64
	logger        hclog.Logger

	// shimExited is closed once the shim, when it is our child, is reaped.
	shimExited chan struct{}
	// killed is set once the driver has killed the task's processes.
	killed atomic.Bool

	done chan struct{} // closed when the main process has exited

	mu          sync.Mutex
	result      *drivers.ExitResult
	completedAt time.Time

	cleanupMu sync.Mutex // serialises killAndCleanup

	statsMu sync.Mutex
	lastCPU cpuSample // TaskStats' previous sample
}

func newHandle(cfg *drivers.TaskConfig, ds driverState, l hclog.Logger) *taskHandle {
	return &taskHandle{cfg: cfg, pid: ds.PID, startTime: ds.StartTime, startedAt: ds.StartedAt, cg: ds.Cgroup,
		shimDir: ds.ShimDir, shimPID: ds.ShimPID, shimStartTime: ds.ShimStartTime,
		logger: l.With("task", cfg.ID), shimExited: make(chan struct{}), done: make(chan struct{})}
}

func (h *taskHandle) state() driverState {
	return driverState{PID: h.pid, StartTime: h.startTime, StartedAt: h.startedAt, Cgroup: h.cg,
		ShimDir: h.shimDir, ShimPID: h.shimPID, ShimStartTime: h.shimStartTime}
}

func (h *taskHandle) cgroupPath() string {
	if h.cg == nil {
		return ""
	}
	return h.cg.Path
}

func (h *taskHandle) finishAt(r *drivers.ExitResult, at time.Time) {
	h.logger.Debug("task exited", "exit_code", r.ExitCode, "signal", r.Signal, "error", r.Err)
	h.mu.Lock()
	h.result = r
	h.completedAt = at
	h.mu.Unlock()
	close(h.done)
}

// reapShim waits for a shim we started (our child) so it leaves no zombie.
func (h *taskHandle) reapShim(cmd *exec.Cmd) {
	_ = cmd.Wait()
	close(h.shimExited)
}

func (h *taskHandle) exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

func (h *taskHandle) exitResult() *drivers.ExitResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := *h.result
	return &r
}

// signalGroup signals the task's process group (the main process leads it).
func (h *taskHandle) signalGroup(sig syscall.Signal) error {
	err := syscall.Kill(-h.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		// The main process may have left its group; signal it directly.
		err = syscall.Kill(h.pid, sig)
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// pids lists every live process of the task.
func (h *taskHandle) pids() []int {
	if h.cg != nil {
		if p, err := h.cg.pids(); err == nil {
			return p
		}
	}
	if h.exited() {
		return pidsInGroup(h.pid)
	}
	p := pidsInGroup(h.pid)
	for _, x := range p {
		if x == h.pid {
			return p
		}
	}
	return append([]int{h.pid}, p...)
}

// killAndCleanup kills everything the task started, waits for the main
// process to be reaped and removes the task's cgroup.
func (h *taskHandle) killAndCleanup() error {
	h.cleanupMu.Lock()
	defer h.cleanupMu.Unlock()
	h.killed.Store(true)
	var errs []error
	if h.cg != nil {
		if err := h.cg.destroy(); err != nil {
			errs = append(errs, err)
		}
	} else {
		deadline := time.Now().Add(cleanupTimeout)
		for {
			left := pidsInGroup(h.pid)
			if !h.exited() {
				left = append(left, h.pid)
			}
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("processes %v survived SIGKILL", left))
				break
			}
			_ = syscall.Kill(-h.pid, syscall.SIGKILL)
			if !h.exited() {
				_ = syscall.Kill(h.pid, syscall.SIGKILL)
			}
			time.Sleep(pollInterval)
		}
	}
	t := time.NewTimer(cleanupTimeout)
	defer t.Stop()
	select {
	case <-h.done:
	case <-t.C:
		errs = append(errs, fmt.Errorf("main process %d did not exit", h.pid))
	}
	if err := h.stopShim(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (h *taskHandle) status() *drivers.TaskStatus {
	s := &drivers.TaskStatus{
		ID:        h.cfg.ID,
		Name:      h.cfg.Name,
		State:     drivers.TaskStateRunning,
		StartedAt: h.startedAt,
		PIDs:      h.pids(),
	}
	if h.exited() {
		h.mu.Lock()
		s.State = drivers.TaskStateExited
		s.CompletedAt = h.completedAt
		r := *h.result
		s.ExitResult = &r
		h.mu.Unlock()
	}
	return s
}
