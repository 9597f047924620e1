package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/nomad/api"
	"golang.org/x/sys/unix"
)

// AllocExecCommand is `alloc exec`.
type AllocExecCommand struct{ Meta }

func (c *AllocExecCommand) Synopsis() string { return "Execute commands in task" }
func (c *AllocExecCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` alloc exec [options] <allocation> <command> [args...]

  Runs a command inside a running task and exits with its exit code. The
  task's driver must support it (docker and raw_exec do).

Exec Options:

  -task <task-name>   The task to run in; may be omitted when the allocation
                      has one task.
  -job                Take the first argument as a job ID and use one of its
                      running allocations, chosen at random.
  -i                  Pass stdin to the command (default true).
  -t                  Allocate a terminal (default: when stdin is one).
`) + "\n" + globalHelp
}

func (c *AllocExecCommand) Run(args []string) int {
	var task string
	var stdinOpt bool
	fs := c.FlagSet("alloc exec")
	fs.StringVar(&task, "task", "", "")
	var byJob bool
	fs.BoolVar(&byJob, "job", false, "")
	fs.BoolVar(&stdinOpt, "i", true, "")
	ttyDefault := isTerminal(os.Stdin)
	tty := ttyDefault
	fs.BoolVar(&tty, "t", ttyDefault, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 {
		c.Ui.Error(flagErrorOr(err, "This command takes at least two arguments: <allocation> <command> [args...]"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if tty && !stdinOpt {
		c.Ui.Error("-t needs -i: a terminal without input is not useful")
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	alloc, err := resolveAllocArg(client, fs.Arg(0), byJob)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if task == "" {
		names := allocTaskNames(alloc)
		if len(names) != 1 {
			c.Ui.Error(fmt.Sprintf("Allocation %q is running the following tasks:\n  * %s\n\nPlease specify the task with -task.",
				shortID(alloc.ID, false), strings.Join(names, "\n  * ")))
			return 1
		}
		task = names[0]
	}
	var stdin io.Reader = os.Stdin
	if !stdinOpt {
		stdin = strings.NewReader("")
	}
	stdout, stderr := c.writer(), io.Writer(os.Stderr)

	var sizeCh chan api.TerminalSize
	if tty {
		restore, err := makeRaw(os.Stdin)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error setting the terminal up: %s", err))
			return 1
		}
		defer restore()
		sizeCh = make(chan api.TerminalSize, 1)
		sendSize := func() {
			if ws, err := unix.IoctlGetWinsize(int(os.Stdin.Fd()), unix.TIOCGWINSZ); err == nil {
				select {
				case sizeCh <- api.TerminalSize{Height: int(ws.Row), Width: int(ws.Col)}:
				default:
				}
			}
		}
		sendSize()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				sendSize()
			}
		}()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code, err := client.Allocations().Exec(ctx, alloc, task, tty, fs.Args()[1:], stdin, stdout, stderr, sizeCh, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("failed to exec into task: %v", err))
		return 1
	}
	return code
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// makeRaw puts the terminal in raw mode (keys pass through to the remote
// terminal as typed) and returns how to restore it.
func makeRaw(f *os.File) (func(), error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
