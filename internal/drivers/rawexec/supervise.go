package rawexec

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

// Timing of the driver's side of the shim.
const (
	shimStartTimeout = 15 * time.Second
	shimExitTimeout  = 5 * time.Second
	// watchInterval is how often a recovered handle looks for the shim's
	// exit file; a handle to a shim this process started is woken by the
	// shim instead and only checks this often as a fallback.
	watchInterval      = 250 * time.Millisecond
	watchIntervalChild = 2 * time.Second
)

// shimDirOf is where a task's shim keeps its files: the task's private dir,
// so a restarted client finds it from the task config alone.
func shimDirOf(cfg *drivers.TaskConfig) string {
	return filepath.Join(cfg.TaskDir, "private", "rawexec")
}

// shimExecutable is the binary re-executed as the shim.
var shimExecutable = os.Executable

// startShim starts the supervisor for spec and waits until it reports the
// task started (or why it could not). The returned channel is closed when
// the shim says the task exited (or the shim is gone).
func startShim(dir string, spec *shimSpec) (*shimState, *exec.Cmd, <-chan struct{}, error) {
	exe, err := shimExecutable()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("find the agent binary to supervise the task: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	// A former run's files (a restart of the task) must not be mistaken
	// for this run's.
	for _, f := range []string{shimStateFile, shimExitFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil, err
		}
	}
	if err := writeFileAtomic(filepath.Join(dir, shimSpecFile), spec); err != nil {
		return nil, nil, nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, shimLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, nil, err
	}
	defer logf.Close()
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	keepRd := false
	defer func() {
		if !keepRd {
			rd.Close()
		}
	}()
	cmd := &exec.Cmd{
		Path: exe, Args: []string{exe, ShimCommand, dir},
		Env:    []string{"GOMAXPROCS=1"},
		Dir:    "/",
		Stdout: logf, Stderr: logf,
		// ExtraFiles[0] is fd 3 in the shim.
		ExtraFiles: []*os.File{wr},
		// Its own session: neither the agent's terminal nor a signal to the
		// agent's process group reaches it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	wr.Close()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start task supervisor: %w", err)
	}
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	br := bufio.NewReader(rd)
	go func() {
		line, err := br.ReadString('\n')
		ch <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-time.After(shimStartTimeout):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, nil, nil, fmt.Errorf("task supervisor did not report within %s", shimStartTimeout)
	}
	line := strings.TrimSpace(a.line)
	switch {
	case strings.HasPrefix(line, "ok "):
	case strings.HasPrefix(line, "error "):
		_ = cmd.Wait()
		return nil, nil, nil, errors.New(strings.TrimPrefix(line, "error "))
	default:
		_ = cmd.Wait()
		b, _ := os.ReadFile(filepath.Join(dir, shimLogFile))
		return nil, nil, nil, fmt.Errorf("task supervisor failed (%v): %s", a.err, strings.TrimSpace(string(b)))
	}
	var st shimState
	if err := readJSON(filepath.Join(dir, shimStateFile), &st); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, nil, nil, fmt.Errorf("read task supervisor state: %w", err)
	}
	if pid, _ := strconv.Atoi(strings.TrimPrefix(line, "ok ")); pid != st.PID {
		return nil, nil, nil, fmt.Errorf("task supervisor reported pid %d but recorded %d", pid, st.PID)
	}
	exited := make(chan struct{})
	keepRd = true
	go func() {
		defer rd.Close()
		_, _ = br.ReadString('\n') // "exited", or EOF when the shim is gone
		close(exited)
	}()
	return &st, cmd, exited, nil
}

// readExit returns the shim's record of the task's exit, if there is one.
func readExit(dir string) (*drivers.ExitResult, time.Time, bool) {
	var ex shimExit
	if err := readJSON(filepath.Join(dir, shimExitFile), &ex); err != nil {
		return nil, time.Time{}, false
	}
	return &drivers.ExitResult{ExitCode: ex.ExitCode, Signal: ex.Signal}, ex.FinishedAt, true
}

// errSupervisorLost is the result of a task whose supervisor died before it
// recorded the task's exit (it was killed from outside).
var errSupervisorLost = errors.New("the task's supervisor process died before recording how the task ended: exit status unknown")

// watch waits for the task's exit: the shim's exit file, or the shim's
// death without one.
func (h *taskHandle) watch(wake <-chan struct{}) {
	every := watchInterval
	if wake != nil {
		every = watchIntervalChild
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if r, at, ok := readExit(h.shimDir); ok {
			h.finishAt(r, at)
			return
		}
		if !h.shimAlive() {
			if r, at, ok := readExit(h.shimDir); ok {
				h.finishAt(r, at)
				return
			}
			r := &drivers.ExitResult{ExitCode: -1, Err: errSupervisorLost}
			if !processAlive(h.pid, h.startTime) && h.killed.Load() {
				// We killed the task (and with it the shim's tree): say so.
				r = &drivers.ExitResult{ExitCode: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)}
			}
			h.finishAt(r, time.Now())
			return
		}
		select {
		case <-t.C:
		case <-h.shimExited:
		case <-wake:
			wake = nil // a closed channel wakes once
		}
	}
}

func (h *taskHandle) shimAlive() bool {
	select {
	case <-h.shimExited:
		return false
	default:
	}
	return processAlive(h.shimPID, h.shimStartTime)
}

// stopShim tells the shim the task is destroyed (it drains the output and
// exits), and kills it if it does not.
func (h *taskHandle) stopShim() error {
	if !h.shimAlive() {
		return nil
	}
	_ = syscall.Kill(h.shimPID, syscall.SIGTERM)
	deadline := time.Now().Add(shimExitTimeout)
	for h.shimAlive() {
		if time.Now().After(deadline) {
			_ = syscall.Kill(h.shimPID, syscall.SIGKILL)
			return fmt.Errorf("task supervisor %d did not exit within %s; killed", h.shimPID, shimExitTimeout)
		}
		time.Sleep(pollInterval)
	}
	return nil
}
