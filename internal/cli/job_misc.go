package cli

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// resolveJob finds a job by exact ID, else by unique prefix, in the CLI's
// namespace (with "*", in any). The job found may be in another namespace
// than the CLI's: follow-up calls about it must use jobQuery/jobWrite.
func resolveJob(client *api.Client, id string) (*api.Job, error) {
	job, _, err := client.Jobs().Info(id, nil)
	if err == nil {
		return job, nil
	}
	stubs, _, lerr := client.Jobs().PrefixList(id)
	if lerr != nil {
		return nil, fmt.Errorf("Error querying job: %w", err)
	}
	info := func(s *api.JobListStub) (*api.Job, error) {
		job, _, err := client.Jobs().Info(s.ID, &api.QueryOptions{Namespace: s.Namespace})
		return job, err
	}
	switch len(stubs) {
	case 0:
		return nil, fmt.Errorf("No job(s) with prefix or ID %q found", id)
	case 1:
		return info(stubs[0])
	}
	var exact []*api.JobListStub
	for _, s := range stubs {
		if s.ID == id {
			exact = append(exact, s)
		}
	}
	if len(exact) == 1 {
		return info(exact[0])
	}
	// With -namespace='*' the matches may span namespaces (the same ID in
	// two of them): then say which is which.
	spans := false
	for _, s := range stubs {
		spans = spans || s.Namespace != stubs[0].Namespace
	}
	rows := []string{"ID|Type|Priority|Status|Submit Date"}
	if spans {
		rows[0] = "ID|Namespace|Type|Priority|Status|Submit Date"
	}
	for _, s := range stubs {
		id := s.ID
		if spans {
			id += "|" + s.Namespace
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%d|%s|%s", id, s.Type, s.Priority, s.Status, formatUnixNano(s.SubmitTime)))
	}
	return nil, fmt.Errorf("Prefix matched multiple jobs\n\n%s", formatList(rows))
}

// jobQuery reads in the job's own namespace, which may not be the CLI's.
func jobQuery(job *api.Job) *api.QueryOptions {
	return &api.QueryOptions{Namespace: deref(job.Namespace)}
}

// jobWrite writes in the job's own namespace, which may not be the CLI's.
func jobWrite(job *api.Job) *api.WriteOptions {
	return &api.WriteOptions{Namespace: deref(job.Namespace)}
}

// JobStopCommand is `job stop`.
type JobStopCommand struct{ Meta }

func (c *JobStopCommand) Synopsis() string { return "Stop a running job" }
func (c *JobStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job stop [options] <job>

  Stops a job and monitors the resulting evaluation.

Stop Options:

  -detach             Print the evaluation ID and exit.
  -purge              Remove the job from the state store instead of only stopping it.
  -no-shutdown-delay  Ignore the group's and tasks' shutdown_delay: the tasks
                      are signalled right after their services are deregistered.
  -yes                Do not ask for confirmation.
  -verbose            Show full IDs.
`) + "\n" + globalHelp
}

func (c *JobStopCommand) Run(args []string) int {
	var detach, purge, noDelay, yes, verbose bool
	fs := c.FlagSet("job stop")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&purge, "purge", false, "")
	fs.BoolVar(&noDelay, "no-shutdown-delay", false, "")
	fs.BoolVar(&yes, "yes", false, "")
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
	id := deref(job.ID)
	if id != fs.Arg(0) && !yes {
		answer, err := c.Ui.Ask(fmt.Sprintf("Are you sure you want to stop job %q? [y/N]", id))
		if err != nil || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y") {
			c.Ui.Output("Cancelling job stop")
			return 0
		}
	}
	evalID, _, err := client.Jobs().DeregisterOpts(id, &api.DeregisterOptions{Purge: purge, NoShutdownDelay: noDelay}, jobWrite(job))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error deregistering job: %s", err))
		return 1
	}
	if evalID == "" {
		return 0
	}
	if detach {
		c.Ui.Output(evalID)
		return 0
	}
	return (&monitor{ui: c.Ui, client: client, verbose: verbose}).monitor(evalID)
}

// JobValidateCommand is `job validate`.
type JobValidateCommand struct{ Meta }

func (c *JobValidateCommand) Synopsis() string { return "Checks if a given job specification is valid" }
func (c *JobValidateCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job validate [options] <path>

  Parses the jobspec and asks the agent to validate it. When no agent can be
  reached, only the local parse is checked. Exit code 1 on any error.

Validate Options:

  -json, -var 'k=v', -var-file=<path>
`) + "\n" + globalHelp
}

func (c *JobValidateCommand) Run(args []string) int {
	var g jobGetter
	fs := c.FlagSet("job validate")
	g.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <path>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	job, err := g.get(fs.Arg(0))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error getting job struct: %s", err))
		return 1
	}
	client, err := c.Client()
	if err == nil {
		var resp *api.JobValidateResponse
		resp, _, err = client.Jobs().Validate(job, nil)
		if err == nil {
			if w := jobWarnings(g.warnings, resp.Warnings); w != "" {
				c.Ui.Output("Job Warnings:\n" + w + "\n")
			}
			if resp.Error != "" || len(resp.ValidationErrors) > 0 {
				msg := resp.Error
				if msg == "" {
					msg = "* " + strings.Join(resp.ValidationErrors, "\n* ")
				}
				c.Ui.Error("Job validation errors:\n" + msg)
				return 1
			}
			c.Ui.Output("Job validation successful")
			return 0
		}
	}
	if job.TaskGroups == nil || len(job.TaskGroups) == 0 {
		c.Ui.Error("Job validation errors:\n* Missing job task groups")
		return 1
	}
	if w := jobWarnings(g.warnings, ""); w != "" {
		c.Ui.Output("Job Warnings:\n" + w + "\n")
	}
	c.Ui.Warn(fmt.Sprintf("Could not validate against an agent (%s); the jobspec parsed cleanly.", err))
	c.Ui.Output("Job validation successful")
	return 0
}

// JobInspectCommand is `job inspect`: the job as API JSON.
type JobInspectCommand struct{ Meta }

func (c *JobInspectCommand) Synopsis() string { return "Inspect a submitted job" }
func (c *JobInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job inspect [options] <job>

  Prints the registered job as API JSON: {"Job": {...}}.

Inspect Options:

  -version=<n>   Show version n of the job.
  -json          Output the bare job object as JSON.
  -t <template>  Format and display the job using a Go template.
`) + "\n" + globalHelp
}

func (c *JobInspectCommand) Run(args []string) int {
	var version int64 = -1
	var out outputFormat
	fs := c.FlagSet("job inspect")
	fs.Int64Var(&version, "version", -1, "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <job>"))
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
	job, err := resolveJob(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if version >= 0 {
		versions, _, _, err := client.Jobs().Versions(deref(job.ID), false, jobQuery(job))
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error retrieving job versions: %s", err))
			return 1
		}
		job = nil
		for _, v := range versions {
			if v.Version != nil && int64(*v.Version) == version {
				job = v
			}
		}
		if job == nil {
			c.Ui.Error(fmt.Sprintf("Job version %d not found", version))
			return 1
		}
	}
	// As Nomad: -json/-t see the job itself; the default wraps it as the
	// body `job run -json` accepts.
	if out.enabled() {
		return out.emit(&c.Meta, job)
	}
	c.Ui.Output(toJSON(map[string]*api.Job{"Job": job}))
	return 0
}
