package rawexec

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
)

// driverState is what the client persists (TaskHandle.DriverState) so a new
// client process can re-attach.
type driverState struct {
	PID       int         `json:"pid"`
	StartTime uint64      `json:"start_time"` // /proc/<pid>/stat starttime (ticks)
	StartedAt time.Time   `json:"started_at"`
	Cgroup    *taskCgroup `json:"cgroup,omitempty"`
}

// taskHandle supervises one running task.
type taskHandle struct {
	cfg       *drivers.TaskConfig
	pid       int
	startTime uint64
	startedAt time.Time
	cg        *taskCgroup
	logger    hclog.Logger

	done chan struct{} // closed when the main process has exited

	mu          sync.Mutex
	result      *drivers.ExitResult
	completedAt time.Time

	cleanupMu sync.Mutex // serialises killAndCleanup
}

func newHandle(cfg *drivers.TaskConfig, pid int, startTime uint64, startedAt time.Time, cg *taskCgroup, l hclog.Logger) *taskHandle {
	return &taskHandle{cfg: cfg, pid: pid, startTime: startTime, startedAt: startedAt, cg: cg,
		logger: l.With("task", cfg.ID), done: make(chan struct{})}
}

func (h *taskHandle) state() driverState {
	return driverState{PID: h.pid, StartTime: h.startTime, StartedAt: h.startedAt, Cgroup: h.cg}
}

func (h *taskHandle) cgroupPath() string {
	if h.cg == nil {
		return ""
	}
	return h.cg.Path
}

func (h *taskHandle) finish(r *drivers.ExitResult) {
	h.mu.Lock()
	h.result = r
	h.completedAt = time.Now()
	h.mu.Unlock()
	close(h.done)
}

// waitChild reaps the main process we started.
func (h *taskHandle) waitChild(cmd *exec.Cmd) {
	err := cmd.Wait()
	r := &drivers.ExitResult{}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws, ok := ee.Sys().(syscall.WaitStatus)
		switch {
		case ok && ws.Signaled():
			r.Signal = int(ws.Signal())
			r.ExitCode = 128 + r.Signal // the shell's convention, as Nomad reports it
		case ok:
			r.ExitCode = ws.ExitStatus()
		default:
			r.ExitCode = ee.ExitCode()
		}
	default:
		r.Err = err
	}
	h.logger.Debug("task exited", "exit_code", r.ExitCode, "signal", r.Signal, "error", r.Err)
	h.finish(r)
}

// errUnknownExit is the result of a task recovered after a client restart:
// it is not our child, so its exit status cannot be collected.
var errUnknownExit = errors.New("task exited while not a child of this client process (recovered after a restart): exit status unknown")

// pollExit watches a recovered process through /proc.
func (h *taskHandle) pollExit() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for processAlive(h.pid, h.startTime) {
		<-t.C
	}
	h.finish(&drivers.ExitResult{ExitCode: 0, Err: errUnknownExit})
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
