package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobPeriodicForceCommand is `job periodic force`.
type JobPeriodicForceCommand struct{ Meta }

func (c *JobPeriodicForceCommand) Synopsis() string { return "Force the launch of a periodic job" }
func (c *JobPeriodicForceCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job periodic force [options] <job>

  Launches a child of a periodic job now, whatever its schedule and
  prohibit_overlap say, and monitors the child's evaluation.

Periodic Force Options:

  -detach    Print the evaluation ID and exit.
  -verbose   Show full IDs.
`) + "\n" + globalHelp
}

func (c *JobPeriodicForceCommand) Run(args []string) int {
	var detach, verbose bool
	fs := c.FlagSet("job periodic force")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <job>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	job, err := resolveJob(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if job.Periodic == nil || (job.Periodic.Enabled != nil && !*job.Periodic.Enabled) || job.ParameterizedJob != nil {
		c.Ui.Error(fmt.Sprintf("Job %q is not periodic", deref(job.ID)))
		return 1
	}
	evalID, _, err := client.Jobs().PeriodicForce(deref(job.ID), jobWrite(job))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error forcing periodic job %q: %s", deref(job.ID), err))
		return 1
	}
	if detach {
		c.Ui.Output("Force periodic successful")
		c.Ui.Output("Evaluation ID: " + evalID)
		return 0
	}
	return (&monitor{ui: c.Ui, client: client, verbose: verbose}).monitor(evalID)
}

// JobDispatchCommand is `job dispatch`.
type JobDispatchCommand struct {
	Meta
	// Stdin is read for a "-" payload; nil means os.Stdin.
	Stdin io.Reader
}

func (c *JobDispatchCommand) Synopsis() string { return "Dispatch an instance of a parameterized job" }
func (c *JobDispatchCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job dispatch [options] <parameterized job> [input source]

  Dispatches a new instance of a parameterized job. The input source is a
  file whose content becomes the payload, or "-" to read it from stdin.
  Meta is given as -meta key=value, repeatable. Unless -detach is given the
  child's evaluation is monitored.

Dispatch Options:

  -meta <key>=<value>         Meta for the dispatched job; repeatable.
  -idempotency-token <token>  Dispatch at most one live child per token.
  -id-prefix-template <text>  Text placed in the child ID after "dispatch-".
  -priority <n>               Priority of the dispatched job.
  -detach                     Print the dispatched job and evaluation IDs and exit.
  -verbose                    Show full IDs.
`) + "\n" + globalHelp
}

type metaFlags map[string]string

func (m metaFlags) String() string { return "" }
func (m metaFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("meta must be given as key=value, got %q", v)
	}
	m[k] = val
	return nil
}

func (c *JobDispatchCommand) Run(args []string) int {
	var detach, verbose bool
	var token, prefix string
	var priority int
	meta := metaFlags{}
	fs := c.FlagSet("job dispatch")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.Var(meta, "meta", "")
	fs.StringVar(&token, "idempotency-token", "", "")
	fs.StringVar(&prefix, "id-prefix-template", "", "")
	fs.IntVar(&priority, "priority", 0, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 {
		c.Ui.Error(flagErrorOr(err, "This command takes one or two arguments: <parameterized job> [input source]"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	var payload []byte
	if fs.NArg() == 2 {
		var err error
		if src := fs.Arg(1); src == "-" {
			in := c.Stdin
			if in == nil {
				in = os.Stdin
			}
			payload, err = io.ReadAll(in)
		} else {
			payload, err = os.ReadFile(src)
		}
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error reading input data: %v", err))
			return 1
		}
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	var wo *api.WriteOptions
	if token != "" {
		wo = &api.WriteOptions{IdempotencyToken: token}
	}
	resp, _, err := client.Jobs().DispatchOpts(&api.DispatchOptions{
		JobID: fs.Arg(0), Meta: meta, Payload: payload, IdPrefixTemplate: prefix, Priority: priority,
	}, wo)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to dispatch job: %s", err))
		return 1
	}
	evalID := resp.EvalID
	rows := []string{"Dispatched Job ID|" + resp.DispatchedJobID}
	if evalID != "" {
		rows = append(rows, "Evaluation ID|"+shortID(evalID, verbose))
	}
	c.Ui.Output(formatKV(rows))
	if detach || evalID == "" {
		return 0
	}
	c.Ui.Output("")
	return (&monitor{ui: c.Ui, client: client, verbose: verbose}).monitor(evalID)
}
