package isolate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// enterEnv carries an Enter to the helper.
const enterEnv = "_DROVER_ENTER"

// Enter describes a command to run inside a running task (alloc exec).
type Enter struct {
	// StateRoot and ID find the task's container.
	StateRoot string `json:"state_root"`
	ID        string `json:"id"`
	Cred      Cred   `json:"cred"`
	Env       []string
	Command   []string
	// Caps is the task's capability set: the command gets no other.
	Caps []string
}

// Cmd builds the process: this binary as EnterCommand, which loads the
// task's container and runs the command in it through libcontainer (a
// process joined into the container's namespaces, cgroups and root, with
// the task's user and capabilities), waits for it as its subreaper and
// exits with its status (128+n for a signal). The process's stdio is the
// command's.
func (e *Enter) Cmd() (*exec.Cmd, error) {
	if len(e.Command) == 0 {
		return nil, errors.New("exec: a command is required")
	}
	if err := Available(); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return &exec.Cmd{Path: exe, Args: []string{exe, EnterCommand}, Env: []string{"GOMAXPROCS=2", enterEnv + "=" + string(b)}, Dir: "/"}, nil
}

func enterMain() int {
	// The helper's stderr is the command's: libcontainer's warnings (and
	// the joined process's init's, which it forwards) stay out of it.
	logrus.SetLevel(logrus.ErrorLevel)
	var e Enter
	if err := json.Unmarshal([]byte(os.Getenv(enterEnv)), &e); err != nil {
		fmt.Fprintf(os.Stderr, "drover: cannot enter the task: %v\n", err)
		return 126
	}
	code, err := e.run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "drover: cannot enter the task: %v\n", err)
		return 126
	}
	return code
}

func (e *Enter) run() (int, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return 0, err
	}
	c, err := libcontainer.Load(e.StateRoot, e.ID)
	if err != nil {
		return 0, err
	}
	caps := ociCaps(e.Caps)
	pc := &configs.Capabilities{Bounding: caps}
	if e.Cred.Uid == 0 {
		pc.Effective, pc.Permitted = caps, caps
	}
	p := &libcontainer.Process{
		Args: e.Command, Env: e.Env, Cwd: "/",
		UID: e.Cred.Uid, GID: e.Cred.Gid, AdditionalGroups: e.Cred.Groups, Capabilities: pc,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}
	if err := c.Run(p); err != nil {
		return 0, err
	}
	// A signal to the helper is the agent giving up on the exec (its
	// client went away): the command, a grandchild the agent cannot
	// reach, goes with it.
	sigs := make(chan os.Signal, 1)
	signalNotify(sigs)
	go func() {
		for range sigs {
			_ = p.Signal(unix.SIGKILL)
		}
	}()
	ps, err := p.Wait()
	if ps == nil {
		return 0, err
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}

func signalNotify(c chan os.Signal) {
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
}
