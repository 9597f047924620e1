package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobStatusCommand is `job status [job]`.
type JobStatusCommand struct{ Meta }

func (c *JobStatusCommand) Synopsis() string { return "Display status information about a job" }
func (c *JobStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job status [options] [job]

  Without a job, lists all jobs. With a job ID (or unique prefix), shows the
  job, a summary per task group and its allocations.

Status Options:

  -short     Only the job's own fields.
  -filter <expr>
             List only the jobs matching this filter expression (the
             language of the API's ?filter=, evaluated on the server
             against each job, e.g. 'Meta.team == "web"'). Lists only.
  -all-allocs  Include allocations of older job versions.
  -evals     List the job's evaluations. Whether or not it is given, the
             reasons allocations are still waiting to be placed are shown
             under "Placement Failure".
  -verbose   Full IDs and absolute times.
  -json      Output the job(s) as JSON: a list of {Summary, Allocations,
             LatestDeployment, Job}, also for a single job.
  -t <tmpl>  Format and display the same list using a Go template.
`) + "\n" + globalHelp
}

func (c *JobStatusCommand) Run(args []string) int {
	var short, verbose, allAllocs, showEvals bool
	var filter string
	var out outputFormat
	fs := c.FlagSet("job status")
	fs.BoolVar(&short, "short", false, "")
	fs.StringVar(&filter, "filter", "", "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.BoolVar(&allAllocs, "all-allocs", false, "")
	fs.BoolVar(&showEvals, "evals", false, "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() > 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes either no arguments or one: <job>"))
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
	if fs.NArg() == 0 {
		if out.enabled() {
			return c.emitJobs(client, out, allAllocs, filter, nil)
		}
		return listJobs(c.Ui.Output, c.Ui.Error, client, filter, c.allNamespaces())
	}
	job, err := resolveJob(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if out.enabled() {
		return c.emitJobs(client, out, allAllocs, "", job)
	}
	text, err := jobStatus(client, job, jobStatusOpts{short: short, verbose: verbose, allAllocs: allAllocs, evals: showEvals})
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	c.Ui.Output(text)
	return 0
}

// jobStatusJSON is one element of `job status -json`, Nomad's shape: the job
// with its summary, allocations and latest deployment.
type jobStatusJSON struct {
	Summary          *api.JobSummary
	Allocations      []*api.AllocationListStub
	LatestDeployment *api.Deployment
	Job              *api.Job
}

// emitJobs prints every job matching filter (or just job) in the -json/-t
// shape.
func (c *JobStatusCommand) emitJobs(client *api.Client, out outputFormat, allAllocs bool, filter string, job *api.Job) int {
	var jobs []*api.Job
	if job != nil {
		jobs = []*api.Job{job}
	} else {
		stubs, _, err := client.Jobs().List(&api.QueryOptions{Filter: filter})
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error querying jobs: %s", err))
			return 1
		}
		for _, s := range stubs {
			j, _, err := client.Jobs().Info(s.ID, &api.QueryOptions{Namespace: s.Namespace})
			if err != nil {
				c.Ui.Error(fmt.Sprintf("Error querying job %q: %s", s.ID, err))
				return 1
			}
			jobs = append(jobs, j)
		}
	}
	list := make([]jobStatusJSON, 0, len(jobs))
	for _, j := range jobs {
		id := deref(j.ID)
		q := &api.QueryOptions{Namespace: deref(j.Namespace)}
		summary, _, err := client.Jobs().Summary(id, q)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error querying job summary: %s", err))
			return 1
		}
		allocs, _, err := client.Jobs().Allocations(id, allAllocs, q)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error querying job allocations: %s", err))
			return 1
		}
		// A job that never had a deployment answers null here, and an
		// agent without deployments at all answers 404: both mean none.
		deployment, _, _ := client.Jobs().LatestDeployment(id, q)
		list = append(list, jobStatusJSON{Summary: summary, Allocations: allocs, LatestDeployment: deployment, Job: j})
	}
	return out.emit(&c.Meta, list)
}

// listJobs prints the jobs matching filter ("" lists all) as a table,
// with a Namespace column when allNS (-namespace='*': the same job ID may
// be listed once per namespace), as Nomad's.
func listJobs(out, errf func(string), client *api.Client, filter string, allNS bool) int {
	jobs, _, err := client.Jobs().List(&api.QueryOptions{Filter: filter})
	if err != nil {
		errf(fmt.Sprintf("Error querying jobs: %s", err))
		return 1
	}
	if len(jobs) == 0 {
		out("No running jobs")
		return 0
	}
	rows := []string{"ID|Type|Priority|Status|Submit Date"}
	if allNS {
		rows[0] = "ID|Namespace|Type|Priority|Status|Submit Date"
	}
	for _, j := range jobs {
		typ := j.Type
		if j.Periodic {
			typ += "/periodic"
		}
		if j.ParameterizedJob {
			typ += "/parameterized"
		}
		id := j.ID
		if allNS {
			id += "|" + j.Namespace
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%d|%s|%s", id, typ, j.Priority, jobStubStatus(j), formatUnixNano(j.SubmitTime)))
	}
	out(formatList(rows))
	return 0
}

func jobStubStatus(j *api.JobListStub) string {
	if j.Stop && j.Status != "dead" {
		return j.Status + " (stopped)"
	}
	return j.Status
}

// jobStatusOpts are job status's flags that shape a single job's view.
type jobStatusOpts struct {
	short, verbose, allAllocs, evals bool
}

func jobStatus(client *api.Client, job *api.Job, o jobStatusOpts) (string, error) {
	verbose := o.verbose
	id := deref(job.ID)
	status := deref(job.Status)
	if deref(job.Stop) && status != "dead" {
		status += " (stopped)"
	}
	rows := []string{
		"ID|" + id,
		"Name|" + deref(job.Name),
		"Submit Date|" + formatUnixNano(deref(job.SubmitTime)),
		"Type|" + deref(job.Type),
		fmt.Sprintf("Priority|%d", deref(job.Priority)),
		"Datacenters|" + strings.Join(job.Datacenters, ","),
		"Namespace|" + deref(job.Namespace),
		"Node Pool|" + deref(job.NodePool),
		"Status|" + status,
		fmt.Sprintf("Periodic|%v", job.IsPeriodic()),
		fmt.Sprintf("Parameterized|%v", job.IsParameterized()),
	}
	if job.Periodic != nil && deref(job.Periodic.Enabled) && job.Periodic.SpecType != nil { // Next dereferences SpecType
		if next, err := job.Periodic.Next(now()); err == nil && !next.IsZero() {
			rows = append(rows, fmt.Sprintf("Next Periodic Launch|%s (%s)", formatTime(next), strings.TrimSuffix(prettyTimeDiff(next), " from now")+" from now"))
		}
	}
	var b strings.Builder
	b.WriteString(formatKV(rows))
	if o.short {
		return b.String(), nil
	}

	summary, _, err := client.Jobs().Summary(id, jobQuery(job))
	if err != nil {
		return "", fmt.Errorf("Error querying job summary: %w", err)
	}
	if summary != nil && len(summary.Summary) > 0 {
		b.WriteString("\n\nSummary\n")
		srows := []string{"Task Group|Queued|Starting|Running|Failed|Complete|Lost|Unknown"}
		for _, tg := range sortedKeys(summary.Summary) {
			s := summary.Summary[tg]
			srows = append(srows, fmt.Sprintf("%s|%d|%d|%d|%d|%d|%d|%d", tg, s.Queued, s.Starting, s.Running, s.Failed, s.Complete, s.Lost, s.Unknown))
		}
		b.WriteString(formatList(srows))
	}
	if job.IsPeriodic() || job.IsParameterized() {
		children := summary.Children
		if children != nil {
			b.WriteString("\n\nChildren Job Summary\n")
			b.WriteString(formatList([]string{"Pending|Running|Dead", fmt.Sprintf("%d|%d|%d", children.Pending, children.Running, children.Dead)}))
		}
		return b.String(), nil
	}

	evals, _, err := client.Jobs().Evaluations(id, jobQuery(job))
	if err != nil {
		return "", fmt.Errorf("Error querying job evaluations: %w", err)
	}
	b.WriteString(jobEvalSections(evals, o.evals, verbose))

	b.WriteString(latestDeploymentSection(client, job, verbose))

	allocs, _, err := client.Jobs().Allocations(id, o.allAllocs, jobQuery(job))
	if err != nil {
		return "", fmt.Errorf("Error querying job allocations: %w", err)
	}
	b.WriteString("\n\nAllocations\n")
	if len(allocs) == 0 {
		b.WriteString("No allocations placed")
		return b.String(), nil
	}
	b.WriteString(formatAllocList(allocs, verbose))
	return b.String(), nil
}

func formatAllocList(allocs []*api.AllocationListStub, verbose bool) string {
	sort.SliceStable(allocs, func(i, j int) bool { return allocs[i].CreateIndex > allocs[j].CreateIndex })
	rows := []string{"ID|Node ID|Task Group|Version|Desired|Status|Created|Modified"}
	for _, a := range allocs {
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s|%s",
			shortID(a.ID, verbose), shortID(a.NodeID, verbose), a.TaskGroup, a.JobVersion,
			a.DesiredStatus, a.ClientStatus, timeColumn(a.CreateTime, verbose), timeColumn(a.ModifyTime, verbose)))
	}
	return formatList(rows)
}
