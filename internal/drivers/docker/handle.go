package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/drivers"
)

// logFlushTimeout bounds how long destroying a task waits for the last of
// its output to be copied.
const logFlushTimeout = 5 * time.Second

// taskHandle supervises one container: a goroutine waits for it to exit
// and another copies its output into the task's log FIFOs.
type taskHandle struct {
	cli    *client.Client
	cfg    *drivers.TaskConfig
	state  driverState
	tty    bool
	logger hclog.Logger
	noLogs bool
	// kernelOOM: an exit by SIGKILL the engine did not flag as an OOM
	// kill is checked against the kernel's OOM records (podman 4.3 never
	// flags one; dockerd may miss one under load).
	kernelOOM bool

	ctx    context.Context // cancelled by destroy
	cancel context.CancelFunc

	done     chan struct{} // closed when the container has exited
	logsDone chan struct{}

	// callTimeout bounds each engine call of a stop (and the wait for the
	// exit after SIGKILL).
	callTimeout time.Duration

	mu          sync.Mutex
	result      *drivers.ExitResult
	completedAt time.Time
}

func newHandle(d *Driver, cli *client.Client, cfg *drivers.TaskConfig, ds driverState, tty bool) *taskHandle {
	ctx, cancel := context.WithCancel(context.Background())
	return &taskHandle{
		cli: cli, cfg: cfg, state: ds, tty: tty,
		logger:    d.logger.With("task", cfg.ID, "container", shortID(ds.ContainerID)),
		noLogs:    d.cfg.DisableLogCollection || (cfg.StdoutPath == "" && cfg.StderrPath == ""),
		kernelOOM: true,
		ctx:       ctx, cancel: cancel,
		callTimeout: d.callTimeout,
		done:        make(chan struct{}), logsDone: make(chan struct{}),
	}
}

// run starts the waiter and the log copier; since is the zero time on a
// fresh start (copy everything) and the recovery time after a restart.
func (h *taskHandle) run(since time.Time) {
	go h.wait()
	if h.noLogs {
		close(h.logsDone)
		return
	}
	go h.copyLogs(since)
}

// wait blocks until the container is not running and records how it
// ended. A lost connection to the engine (the daemon restarting) is
// retried until the container's fate is known or the task is destroyed.
func (h *taskHandle) wait() {
	defer close(h.done)
	for {
		okCh, errCh := h.cli.ContainerWait(h.ctx, h.state.ContainerID, container.WaitConditionNotRunning)
		var err error
		select {
		case <-okCh:
		case err = <-errCh:
		}
		if h.ctx.Err() != nil {
			h.setResult(&drivers.ExitResult{ExitCode: -1, Err: errors.New("task destroyed while waiting")})
			return
		}
		if err == nil || errdefs.IsNotFound(err) {
			h.setResult(h.inspectExit())
			return
		}
		h.logger.Warn("waiting on container failed; retrying", "error", err)
		select {
		case <-h.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// inspectExit reads the exit code and the OOM flag from the engine.
func (h *taskHandle) inspectExit() *drivers.ExitResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := h.cli.ContainerInspect(ctx, h.state.ContainerID)
	if err != nil {
		return &drivers.ExitResult{ExitCode: -1, Err: fmt.Errorf("container %s is gone: %w", shortID(h.state.ContainerID), err)}
	}
	st := info.State
	res := &drivers.ExitResult{ExitCode: st.ExitCode, OOMKilled: st.OOMKilled}
	if !res.OOMKilled && h.kernelOOM && st.ExitCode == 137 {
		res.OOMKilled = kernelOOMKilled(h.state.ContainerID)
	}
	if st.Error != "" {
		res.Err = errors.New(st.Error)
	}
	if res.OOMKilled && res.Err == nil {
		res.Err = errors.New("OOM Killed")
	}
	if t := parseTime(st.FinishedAt); !t.IsZero() {
		h.mu.Lock()
		h.completedAt = t
		h.mu.Unlock()
	}
	return res
}

func (h *taskHandle) setResult(r *drivers.ExitResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.result == nil {
		h.result = r
		if h.completedAt.IsZero() {
			h.completedAt = time.Now()
		}
	}
}

func (h *taskHandle) exitResult() *drivers.ExitResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := *h.result
	return &r
}

func (h *taskHandle) exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// copyLogs follows the container's output into the task's FIFOs (the log
// collector rotates them into <task>.stdout.N / .stderr.N). The stream ends
// when the container stops.
func (h *taskHandle) copyLogs(since time.Time) {
	defer close(h.logsDone)
	stdout, err := h.openLog(h.cfg.StdoutPath)
	if err != nil {
		h.logger.Warn("cannot open stdout log", "error", err)
		return
	}
	defer stdout.Close()
	stderr, err := h.openLog(h.cfg.StderrPath)
	if err != nil {
		h.logger.Warn("cannot open stderr log", "error", err)
		return
	}
	defer stderr.Close()
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true}
	if !since.IsZero() {
		opts.Since = fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond())
	}
	rc, err := h.cli.ContainerLogs(h.ctx, h.state.ContainerID, opts)
	if err != nil {
		if h.ctx.Err() == nil {
			h.logger.Warn("cannot follow container output", "error", err)
		}
		return
	}
	defer rc.Close()
	if h.tty {
		_, err = io.Copy(stdout, rc)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, rc)
	}
	if err != nil && h.ctx.Err() == nil && !errors.Is(err, io.EOF) {
		h.logger.Debug("container output stream ended", "error", err)
	}
}

// logOpenWait is how long a log FIFO nobody reads yet is retried: after a
// client restart the task may be recovered before its log collector runs.
const logOpenWait = 30 * time.Second

// openLog opens a log FIFO, waiting (up to logOpenWait, or until the task
// is destroyed) for its reader.
func (h *taskHandle) openLog(path string) (io.WriteCloser, error) {
	deadline := time.Now().Add(logOpenWait)
	for {
		w, err := openFifo(path)
		if err == nil || !errors.Is(err, errNoReader) || time.Now().After(deadline) {
			return w, err
		}
		select {
		case <-h.ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errNoReader: a FIFO that nobody reads.
var errNoReader = errors.New("no log collector is reading it")

// openFifo opens the task's log FIFO (or file) for writing. It never
// blocks: a FIFO nobody reads (no log collector running) is an error, not
// a goroutine stuck in open.
func openFifo(path string) (io.WriteCloser, error) {
	if path == "" {
		return nopWriteCloser{io.Discard}, nil
	}
	// Never created here: a FIFO that is missing belongs to a collector
	// that has not started (or has gone); a file in its place would hide
	// the output from the collector.
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%s: %w", path, errNoReader)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// stop sends signal, waits up to timeout for the container to exit, then
// kills it.
func (h *taskHandle) stop(timeout time.Duration, signal string) error {
	if h.exited() {
		return nil
	}
	if signal == "" {
		signal = "SIGTERM"
	}
	if strings.TrimPrefix(strings.ToUpper(signal), "SIG") != "KILL" {
		ctx, cancel := context.WithTimeout(context.Background(), h.callTimeout)
		err := h.cli.ContainerKill(ctx, h.state.ContainerID, signal)
		cancel()
		if err != nil && !isNotRunning(err) {
			h.logger.Debug("signal failed", "signal", signal, "error", err)
		}
		t := time.NewTimer(timeout)
		select {
		case <-h.done:
		case <-t.C:
		}
		t.Stop()
		if h.exited() {
			return nil
		}
	}
	// Its own deadline, counted from now: one shared with the signal above
	// had run out during a kill_timeout of 30 s or more, so SIGKILL was
	// never sent and a container ignoring SIGTERM ran on.
	ctx, cancel := context.WithTimeout(context.Background(), h.callTimeout)
	defer cancel()
	if err := h.cli.ContainerKill(ctx, h.state.ContainerID, "SIGKILL"); err != nil && !isNotRunning(err) {
		return fmt.Errorf("kill container %s: %w", shortID(h.state.ContainerID), err)
	}
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("container %s did not exit after SIGKILL", shortID(h.state.ContainerID))
	}
}

// isNotRunning is the engine's answer to signalling a container that has
// already exited (or is gone).
func isNotRunning(err error) bool {
	return errdefs.IsNotFound(err) || errdefs.IsConflict(err) || strings.Contains(err.Error(), "is not running")
}

// destroy waits briefly for the last output, stops the goroutines and
// removes the container.
func (h *taskHandle) destroy(remove bool) error {
	select {
	case <-h.logsDone:
	case <-time.After(logFlushTimeout):
	}
	h.cancel()
	<-h.done
	<-h.logsDone
	if !remove {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := h.cli.ContainerRemove(ctx, h.state.ContainerID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", shortID(h.state.ContainerID), err)
	}
	return nil
}

func (h *taskHandle) status() *drivers.TaskStatus {
	s := &drivers.TaskStatus{ID: h.cfg.ID, Name: h.cfg.Name, State: drivers.TaskStateRunning, StartedAt: h.state.StartedAt}
	if h.exited() {
		s.State = drivers.TaskStateExited
		s.ExitResult = h.exitResult()
		h.mu.Lock()
		s.CompletedAt = h.completedAt
		h.mu.Unlock()
		return s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if info, err := h.cli.ContainerInspect(ctx, h.state.ContainerID); err == nil && info.State != nil && info.State.Pid > 0 {
		s.PIDs = []int{info.State.Pid}
	}
	return s
}
