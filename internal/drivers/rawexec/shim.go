package rawexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/drover-project/drover/internal/atomicfile"
	"github.com/drover-project/drover/internal/client/logs"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/isolate"
)

// ShimCommand is the first argument that turns this binary into a task's
// supervisor (see the package doc). Any binary that links this package
// answers to it, the drover binary and test binaries alike.
const ShimCommand = "__drover_rawexec_shim"

func init() {
	if len(os.Args) > 2 && os.Args[1] == ShimCommand {
		os.Exit(shimMain(os.Args[2]))
	}
}

// Files in a task's shim directory.
const (
	shimSpecFile  = "spec.json"
	shimStateFile = "shim.json"
	shimExitFile  = "exit.json"
	shimLogFile   = "shim.log"
	// shimReadyFD is the pipe on which the shim says "ok" or why it could
	// not start the task, then "exited" when the task has exited and its
	// exit status is recorded.
	shimReadyFD = 3
)

// shimSpec is what the driver asks the shim to run.
type shimSpec struct {
	Path   string      `json:"path"`
	Args   []string    `json:"args"`
	Env    []string    `json:"env"`
	Dir    string      `json:"dir"`
	Cgroup *taskCgroup `json:"cgroup,omitempty"`
	// Task and Logs: the shim writes <Logs.Dir>/<Task>.stdout.<n> itself.
	Task string             `json:"task"`
	Logs *drivers.LogConfig `json:"logs,omitempty"`
	// StdoutPath/StderrPath when Logs is nil: files (or FIFOs) the task's
	// output goes to directly.
	StdoutPath string `json:"stdout_path,omitempty"`
	StderrPath string `json:"stderr_path,omitempty"`
	// User is the task's `user`, resolved (nil: the agent's user).
	User *taskUser `json:"user,omitempty"`
	// Isolation, for drivers built on this one (exec, java): the task is
	// started in a libcontainer container (package isolate) instead of
	// directly (Path, Args, Env and Dir are then unused).
	Isolation *isolate.Spec `json:"isolation,omitempty"`
	// NetNS is the allocation's network namespace the task joins.
	NetNS string `json:"netns,omitempty"`
}

// shimState is written by the shim once the task runs.
type shimState struct {
	ShimPID       int       `json:"shim_pid"`
	ShimStartTime uint64    `json:"shim_start_time"`
	PID           int       `json:"pid"`
	StartTime     uint64    `json:"start_time"`
	StartedAt     time.Time `json:"started_at"`
}

// shimExit is written by the shim when the task's main process has exited.
type shimExit struct {
	ExitCode   int       `json:"exit_code"`
	Signal     int       `json:"signal"`
	FinishedAt time.Time `json:"finished_at"`
}

// writeFileAtomic writes v as JSON so that readers see all of it or
// nothing, and it is on disk before the call returns.
func writeFileAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// shimMain is the supervisor process. It starts the task as its child,
// copies the task's stdout and stderr into the rotated log files, and when
// the task exits records its exit status in exit.json. It runs in its own
// session and ignores the signals an agent's terminal or process group
// would get, so it outlives the agent. It ends once the task has exited and
// its output is drained (all writers closed), or when told to finish with
// SIGTERM after the task has exited.
func shimMain(dir string) int {
	// The ready pipe must not leak into the task.
	syscall.CloseOnExec(shimReadyFD)
	ready := os.NewFile(shimReadyFD, "ready")
	fail := func(err error) int {
		if ready != nil {
			fmt.Fprintf(ready, "error %s\n", err)
			ready.Close()
		}
		return 1
	}
	// Caught and dropped, not ignored: an ignored signal stays ignored
	// across exec, so the task would start deaf to SIGHUP (a shell's trap,
	// a template's change_signal) and SIGINT; a caught one is reset to its
	// default in the task.
	drop := make(chan os.Signal, 16)
	signal.Notify(drop, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	go func() {
		for range drop {
		}
	}()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)

	var spec shimSpec
	if err := readJSON(filepath.Join(dir, shimSpecFile), &spec); err != nil {
		return fail(fmt.Errorf("read task spec: %w", err))
	}
	outW, errW, copiers, err := spec.outputs()
	if err != nil {
		return fail(err)
	}
	var (
		pid  int
		wait func() (*os.ProcessState, error)
	)
	if spec.Isolation != nil {
		// exec and java: the task runs in a libcontainer container this
		// process creates, starts and waits for; libcontainer reports why
		// it could not start the task before its own program runs (a
		// signal never reaches a half-built container).
		iso := *spec.Isolation
		if iso.NetNS == "" {
			iso.NetNS = spec.NetNS
		}
		task, err := isolate.Start(&iso, outW, errW, spec.Cgroup.join)
		outW.Close()
		errW.Close()
		if err != nil {
			copiers.stop()
			copiers.wait()
			copiers.close()
			return fail(err)
		}
		pid, wait = task.Pid(), task.Wait
	} else {
		cmd := &exec.Cmd{
			Path: spec.Path, Args: spec.Args, Env: spec.Env, Dir: spec.Dir,
			Stdout: outW, Stderr: errW,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Credential: spec.User.credential()},
		}
		if err := spec.Cgroup.startIn(cmd, spec.NetNS); err != nil {
			return fail(fmt.Errorf("start %s: %w", spec.Path, err))
		}
		// The child holds its own copies of the write ends.
		outW.Close()
		errW.Close()
		pid = cmd.Process.Pid
		wait = func() (*os.ProcessState, error) {
			err := cmd.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = nil
			}
			return cmd.ProcessState, err
		}
	}
	self, _ := readProcStat(os.Getpid())
	st := shimState{ShimPID: os.Getpid(), ShimStartTime: self.startTime, PID: pid, StartedAt: time.Now()}
	if ps, err := readProcStat(pid); err == nil {
		st.StartTime = ps.startTime
	}
	if err := writeFileAtomic(filepath.Join(dir, shimStateFile), st); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_, _ = wait()
		return fail(fmt.Errorf("record task state: %w", err))
	}
	fmt.Fprintf(ready, "ok %d\n", pid)

	ps, werr := wait()
	ex := shimExit{FinishedAt: time.Now()}
	// What the task wrote before it exited reaches the log files before its
	// exit is told (a batch task's output must be there once it reads
	// complete): the pipes close with the task unless something it left
	// behind still holds them, which gets a short grace and is then copied
	// in the background below.
	done := make(chan struct{})
	go func() { copiers.wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(250 * time.Millisecond):
	}
	switch {
	case werr != nil || ps == nil:
		ex.ExitCode = -1
	default:
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ex.Signal = int(ws.Signal())
			ex.ExitCode = 128 + ex.Signal // the shell's convention, as Nomad reports it
		} else {
			ex.ExitCode = ps.ExitCode()
		}
	}
	if err := writeFileAtomic(filepath.Join(dir, shimExitFile), ex); err != nil {
		fmt.Fprintf(os.Stderr, "record exit status: %v\n", err)
	}
	// Wake the driver that started us, if it still runs (else EPIPE).
	fmt.Fprintf(ready, "exited\n")
	ready.Close()

	// Keep copying while anything the task left behind writes its output,
	// until every writer is gone or the driver says the task is destroyed.
	select {
	case <-done:
	case <-term:
		copiers.stop()
		<-done
	}
	copiers.close()
	return 0
}

// copiers copy the task's output pipes into the log rotators.
type copiers struct {
	wg    sync.WaitGroup
	pipes []*os.File
	sinks []io.Closer
}

func (c *copiers) wait() { c.wg.Wait() }

// stop makes the copiers drain what is buffered and return.
func (c *copiers) stop() {
	for _, p := range c.pipes {
		_ = p.SetReadDeadline(time.Now())
	}
}

func (c *copiers) close() {
	for _, s := range c.sinks {
		_ = s.Close()
	}
}

func (c *copiers) add(r *os.File, w io.WriteCloser) {
	c.pipes = append(c.pipes, r)
	c.sinks = append(c.sinks, w)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		buf := make([]byte, 32*1024)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n]) // a full disk loses lines, never the task
			}
			if err == nil {
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// Told to stop: take what is buffered without waiting.
				if rc, err := r.SyscallConn(); err == nil {
					for {
						var n int
						_ = rc.Read(func(fd uintptr) bool {
							n, _ = syscall.Read(int(fd), buf)
							return true
						})
						if n <= 0 {
							break
						}
						_, _ = w.Write(buf[:n])
					}
				}
			}
			_ = r.Close()
			return
		}
	}()
}

// outputs returns the write ends the task gets as stdout and stderr, and
// the copiers that move what it writes into the log files.
func (s *shimSpec) outputs() (stdout, stderr *os.File, c *copiers, err error) {
	c = &copiers{}
	if s.Logs == nil {
		if stdout, err = openLog(s.StdoutPath); err != nil {
			return nil, nil, nil, fmt.Errorf("open stdout: %w", err)
		}
		if stderr, err = openLog(s.StderrPath); err != nil {
			stdout.Close()
			return nil, nil, nil, fmt.Errorf("open stderr: %w", err)
		}
		return stdout, stderr, c, nil
	}
	files, size := s.Logs.MaxFiles, s.Logs.MaxFileSizeMB
	if files <= 0 {
		files = 10
	}
	if size <= 0 {
		size = 10
	}
	var ws [2]*os.File
	for i, typ := range []string{"stdout", "stderr"} {
		rot, err := logs.NewRotator(s.Logs.Dir, s.Task+"."+typ, files, size)
		if err != nil {
			c.close()
			return nil, nil, nil, fmt.Errorf("open %s log: %w", typ, err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			rot.Close()
			c.close()
			return nil, nil, nil, err
		}
		ws[i] = w
		c.add(r, rot)
	}
	return ws[0], ws[1], c, nil
}
