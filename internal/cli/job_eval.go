package cli

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobEvalCommand is `job eval`: a new evaluation of a job, optionally
// forcing its failed allocations to be replaced now.
type JobEvalCommand struct{ Meta }

func (c *JobEvalCommand) Synopsis() string { return "Force an evaluation for a job" }
func (c *JobEvalCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job eval [options] <job>

  Creates an evaluation of the job: the scheduler runs it again against
  the cluster as it is now. <job> is an ID or a unique ID prefix.

  When ACLs are enabled, this command requires a token with the submit-job
  capability for the job's namespace (read-job to monitor the evaluation).

Eval Options:

  -force-reschedule
    Replace failed allocations now, also those past their reschedule
    attempts and those waiting for a later reschedule, in groups whose
    reschedule policy allows rescheduling.

  -detach
    Print the evaluation ID and exit instead of monitoring it.

  -verbose
    Show full IDs.
`) + "\n" + globalHelp
}

func (c *JobEvalCommand) Run(args []string) int {
	var force, detach, verbose bool
	fs := c.FlagSet("job eval")
	fs.BoolVar(&force, "force-reschedule", false, "")
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
	evalID, _, err := client.Jobs().EvaluateWithOpts(deref(job.ID), api.EvalOptions{ForceReschedule: force}, jobWrite(job))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error evaluating job: %s", err))
		return 1
	}
	if detach {
		c.Ui.Output(fmt.Sprintf("Created eval ID: %q", shortID(evalID, verbose)))
		return 0
	}
	return (&monitor{ui: c.Ui, client: client, verbose: verbose}).monitor(evalID)
}
