package cli

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobDeploymentsCommand is `job deployments`.
type JobDeploymentsCommand struct{ Meta }

func (c *JobDeploymentsCommand) Synopsis() string { return "List deployments for a job" }
func (c *JobDeploymentsCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job deployments [options] <job>

  Lists the deployments of a job (by ID or unique prefix), newest first.

Deployments Options:

  -latest    Show only the latest deployment, in full.
  -all       Include deployments of an earlier job registered under the same
             ID (before a purge).
  -verbose   Show full IDs.
  -json      Output the deployment(s) as JSON.
  -t <tmpl>  Format and display the deployment(s) using a Go template.
`) + "\n" + globalHelp
}

func (c *JobDeploymentsCommand) Run(args []string) int {
	var latest, all, verbose bool
	var out outputFormat
	fs := c.FlagSet("job deployments")
	fs.BoolVar(&latest, "latest", false, "")
	fs.BoolVar(&all, "all", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
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
	q := &api.QueryOptions{Namespace: deref(job.Namespace)}
	if latest {
		d, _, err := client.Jobs().LatestDeployment(deref(job.ID), q)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error retrieving the latest deployment of job %q: %s", deref(job.ID), err))
			return 1
		}
		if out.enabled() {
			return out.emit(&c.Meta, d)
		}
		if d == nil {
			c.Ui.Output(fmt.Sprintf("Job %q has no deployment", deref(job.ID)))
			return 0
		}
		c.Ui.Output(formatDeployment(d, verbose))
		return 0
	}
	ds, _, err := client.Jobs().Deployments(deref(job.ID), all, q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving the deployments of job %q: %s", deref(job.ID), err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, ds)
	}
	c.Ui.Output(formatDeploymentList(ds, verbose))
	return 0
}

// JobPromoteCommand is `job promote`: promote the canaries of the job's
// latest deployment.
type JobPromoteCommand struct{ Meta }

func (c *JobPromoteCommand) Synopsis() string { return "Promote a job's canaries" }
func (c *JobPromoteCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job promote [options] <job>

  Promotes the canaries of the job's latest deployment: the rest of each
  group is then replaced by the new version. Without -group every group is
  promoted. Unless -detach, the evaluation and then the deployment are
  monitored.

Promote Options:

  -group <name>   Promote only this task group's canaries (repeatable).`+deploymentWriteHelp+`
`) + "\n" + globalHelp
}

func (c *JobPromoteCommand) Run(args []string) int {
	w := &deploymentWrite{Meta: c.Meta, verb: "promote"}
	fs := w.FlagSet("job promote")
	fs.BoolVar(&w.detach, "detach", false, "")
	fs.BoolVar(&w.verbose, "verbose", false, "")
	fs.Func("group", "", func(s string) error { w.groups = append(w.groups, s); return nil })
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <job>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := w.apiClient()
	if !ok {
		return 1
	}
	job, err := resolveJob(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	id := deref(job.ID)
	d, _, err := client.Jobs().LatestDeployment(id, &api.QueryOptions{Namespace: deref(job.Namespace)})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving the latest deployment of job %q: %s", id, err))
		return 1
	}
	if d == nil || d.ID == "" {
		c.Ui.Error(fmt.Sprintf("Job %q has no deployment to promote", id))
		return 1
	}
	if deploymentTerminal(d.Status) {
		c.Ui.Error(fmt.Sprintf("The latest deployment of job %q, %q, has already ended (status %q): there is nothing to promote",
			id, shortID(d.ID, w.verbose), d.Status))
		return 1
	}
	return promote(w, client, d)
}

// latestDeploymentSection is the "Latest Deployment" part of `job status`:
// empty when the job has none (or the agent has no deployments).
func latestDeploymentSection(client *api.Client, job *api.Job, verbose bool) string {
	d, _, err := client.Jobs().LatestDeployment(deref(job.ID), &api.QueryOptions{Namespace: deref(job.Namespace)})
	if err != nil || d == nil || d.ID == "" {
		return ""
	}
	// A deployment of an earlier job purged and registered again under the
	// same ID is not this job's.
	if jc := deref(job.CreateIndex); jc != 0 && d.JobCreateIndex != 0 && d.JobCreateIndex != jc {
		return ""
	}
	return "\n\nLatest Deployment\n" + formatLatestDeployment(d, verbose)
}
