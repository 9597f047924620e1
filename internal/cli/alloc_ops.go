package cli

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// taskArg is the task an allocation operation names: -task or the
// positional argument after the allocation (not both, unless equal).
func taskArg(flagTask string, args []string) (string, error) {
	if len(args) < 2 {
		return flagTask, nil
	}
	if flagTask != "" && flagTask != args[1] {
		return "", fmt.Errorf("the -task flag (%q) and the task argument (%q) disagree: give one", flagTask, args[1])
	}
	return args[1], nil
}

// checkTask refuses a task the allocation does not have.
func checkTask(a *api.Allocation, task string) error {
	if task == "" {
		return nil
	}
	for _, n := range allocTaskNames(a) {
		if n == task {
			return nil
		}
	}
	return fmt.Errorf("Could not find task named: %s, found: %s", task, strings.Join(allocTaskNames(a), ", "))
}

// AllocRestartCommand is `alloc restart`.
type AllocRestartCommand struct{ Meta }

func (c *AllocRestartCommand) Synopsis() string { return "Restart a running allocation" }
func (c *AllocRestartCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` alloc restart [options] <allocation> <task>

  Restarts a running allocation's tasks in place: the named task, or every
  running task. Each restart shows in the task's events (Restart Signaled,
  Restarting) and its restart count; it does not count against the
  restart policy.

Restart Options:

  -task <task-name>   The task to restart (or give it after the allocation).
  -all-tasks          Restart every task of the allocation (refused while
                      one of them is not running: Drover does not run a
                      finished lifecycle task again yet).
  -verbose            Show full IDs.
`) + "\n" + globalHelp
}

func (c *AllocRestartCommand) Run(args []string) int {
	var task string
	var all, verbose bool
	fs := c.FlagSet("alloc restart")
	fs.StringVar(&task, "task", "", "")
	fs.BoolVar(&all, "all-tasks", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 {
		c.Ui.Error(flagErrorOr(err, "This command takes one or two arguments: <allocation> [<task>]"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	task, err := taskArg(task, fs.Args())
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if task != "" && all {
		c.Ui.Error("The -all-tasks option is not allowed when a task name is given")
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	alloc, err := resolveAlloc(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if err := checkTask(alloc, task); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if all {
		err = client.Allocations().RestartAllTasks(alloc, nil)
	} else {
		err = client.Allocations().Restart(alloc, task, nil)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to restart allocation:\n\n%s", err))
		return 1
	}
	return 0
}

// AllocSignalCommand is `alloc signal`.
type AllocSignalCommand struct{ Meta }

func (c *AllocSignalCommand) Synopsis() string { return "Signal a running allocation" }
func (c *AllocSignalCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` alloc signal [options] <allocation> <task>

  Sends a signal to a running allocation's task, or to every running task.
  The task's events show it (Signaling).

Signal Options:

  -s <signal>         The signal, such as SIGUSR1 (default SIGKILL).
  -task <task-name>   The task to signal (or give it after the allocation).
  -verbose            Show full IDs.
`) + "\n" + globalHelp
}

func (c *AllocSignalCommand) Run(args []string) int {
	var task, sig string
	var verbose bool
	fs := c.FlagSet("alloc signal")
	fs.StringVar(&sig, "s", "", "")
	fs.StringVar(&task, "task", "", "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 {
		c.Ui.Error(flagErrorOr(err, "This command takes one or two arguments: <allocation> [<task>]"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	task, err := taskArg(task, fs.Args())
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	alloc, err := resolveAlloc(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if err := checkTask(alloc, task); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if err := client.Allocations().Signal(alloc, nil, task, sig); err != nil {
		c.Ui.Error(fmt.Sprintf("Error signalling allocation: %s", err))
		return 1
	}
	return 0
}

// AllocChecksCommand is `alloc checks`.
type AllocChecksCommand struct{ Meta }

func (c *AllocChecksCommand) Synopsis() string {
	return "Outputs service health check status information"
}
func (c *AllocChecksCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` alloc checks [options] <allocation>

  Shows the latest result of each http and tcp check of the allocation's
  Nomad-native services (provider "nomad"), as its client ran them.

Checks Options:

  -json      Output the checks as JSON.
  -t <tmpl>  Format and display the checks using a Go template.
  -verbose   Show full IDs.
`) + "\n" + globalHelp
}

func (c *AllocChecksCommand) Run(args []string) int {
	var verbose bool
	var out outputFormat
	fs := c.FlagSet("alloc checks")
	fs.BoolVar(&verbose, "verbose", false, "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <allocation>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if err := out.check(); err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	alloc, err := resolveAlloc(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	checks, err := client.Allocations().Checks(alloc.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying allocation checks: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, checks)
	}
	if len(checks) == 0 {
		c.Ui.Output(fmt.Sprintf("No service checks in allocation %s", shortID(alloc.ID, verbose)))
		return 0
	}
	rows := []string{"ID|Check|Task|Status|Mode|Output"}
	for _, id := range sortedKeys(checks) {
		ch := checks[id]
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%s|%s", ch.ID, ch.Check, ch.Task, ch.Status, ch.Mode, strings.TrimSpace(ch.Output)))
	}
	c.Ui.Output(formatList(rows))
	return 0
}
