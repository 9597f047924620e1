package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobRunCommand is `job run`: parse, register, monitor the evaluation.
type JobRunCommand struct{ Meta }

func (c *JobRunCommand) Synopsis() string { return "Run a new job or update an existing job" }
func (c *JobRunCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job run [options] <path>

  Submits the jobspec at <path> ("-" reads stdin) and monitors the resulting
  evaluation, then the deployment it started (service jobs with an update
  strategy) until it ends: redrawn in place on a terminal, a line per change
  otherwise. Exit code 0 means everything was placed (and the deployment
  succeeded); 2 means the evaluation failed or some allocations could not be
  placed; 1 means the deployment failed or any other error.

Run Options:

  -detach            Print the evaluation ID and exit without monitoring the
                     evaluation or the deployment.
  -check-index=<n>   Register only if the job's modify index is n (0: new job).
  -output            Print the job as API JSON instead of submitting it.
  -json              The file is API JSON, not HCL.
  -var 'k=v'         Set a variable (repeatable).
  -var-file=<path>   Read variable values from a file (repeatable).
  -verbose           Show full IDs (and the deployment's allocations).
  -policy-override, -preserve-counts
`) + "\n" + globalHelp
}

func (c *JobRunCommand) Run(args []string) int {
	var detach, output, verbose, override, preserve bool
	var checkIndex string
	var g jobGetter
	fs := c.FlagSet("job run")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&output, "output", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.BoolVar(&override, "policy-override", false, "")
	fs.BoolVar(&preserve, "preserve-counts", false, "")
	fs.StringVar(&checkIndex, "check-index", "", "")
	g.register(fs)
	if err := fs.Parse(args); err != nil {
		c.Ui.Error(err.Error())
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if fs.NArg() != 1 {
		c.Ui.Error("This command takes one argument: <path>")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	job, err := g.get(fs.Arg(0))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error getting job struct: %s", err))
		return 1
	}
	if output {
		b, _ := json.MarshalIndent(map[string]*api.Job{"Job": job}, "", "    ")
		c.Ui.Output(string(b))
		return 0
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	if c.region != "" {
		job.Region = &c.region
	}
	if c.namespace != "" && job.Namespace == nil {
		job.Namespace = &c.namespace
	}
	opts := &api.RegisterOptions{PolicyOverride: override, PreserveCounts: preserve, Submission: g.submission}
	if checkIndex != "" {
		var idx uint64
		if _, err := fmt.Sscan(checkIndex, &idx); err != nil {
			c.Ui.Error(fmt.Sprintf("Invalid -check-index %q: must be a number", checkIndex))
			return 1
		}
		opts.EnforceIndex, opts.ModifyIndex = true, idx
	}
	resp, _, err := client.Jobs().RegisterOpts(job, opts, nil)
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "job modify index") {
			// The server's reason, without the client's "Unexpected
			// response code: 400 (...)" around it.
			if i := strings.Index(msg, "Enforcing job modify index"); i >= 0 {
				msg = strings.TrimSuffix(strings.TrimSpace(msg[i:]), ")")
			} else {
				msg = fmt.Sprintf("Enforcing job modify index %s: %s", checkIndex, msg)
			}
			c.Ui.Error(msg)
			c.Ui.Error("Job not updated")
			return 1
		}
		c.Ui.Error(fmt.Sprintf("Error submitting job: %s", err))
		return 1
	}
	if w := jobWarnings(g.warnings, resp.Warnings); w != "" {
		c.Ui.Output("Job Warnings:\n" + w + "\n")
	}
	if resp.EvalID == "" || job.IsPeriodic() || job.IsParameterized() {
		c.Ui.Output("Job registration successful")
		if job.IsPeriodic() && !job.IsParameterized() {
			c.Ui.Output("Periodic job: children are launched on its schedule")
		}
		if job.IsParameterized() {
			c.Ui.Output("Job is parameterized: use `job dispatch` to run it")
		}
		return 0
	}
	if detach {
		c.Ui.Output("Job registration successful")
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return 0
	}
	mon := c.evalMonitor(client, verbose, true)
	mon.jobModifyIndex = resp.JobModifyIndex
	return mon.monitor(resp.EvalID)
}

type helper interface{ Help() string }

// commandErrorText is the hint printed after a usage error: the help of
// the command's whole verb path ("namespace list", not "namespace"), read
// from its usage line up to the first option or argument.
func commandErrorText(c helper) string {
	usage, _, _ := strings.Cut(strings.TrimPrefix(c.Help(), "Usage: "+BinaryName+" "), "\n")
	var verb []string
	for _, w := range strings.Fields(usage) {
		if strings.ContainsAny(w[:1], "[<-") {
			break
		}
		verb = append(verb, w)
	}
	return "For additional help try '" + BinaryName + " " + strings.Join(verb, " ") + " -help'"
}
