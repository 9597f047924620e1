package cli

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// JobRestartCommand is `job restart`: a rolling restart run by the servers
// (PUT /v1/job/<id>/restart), followed here until it ends.
type JobRestartCommand struct{ Meta }

func (c *JobRestartCommand) Synopsis() string { return "Restart or reschedule allocations for a job" }
func (c *JobRestartCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job restart [options] <job>

  Restarts the tasks of a job's running allocations in place, in batches, or
  with -reschedule replaces the allocations through the scheduler. Unlike
  Nomad, the restart runs on the servers: it goes on if this command exits
  and across a change of leader. The command prints its progress until it
  ends.

Restart Options:

  -batch-size=<n|n%>
    Allocations restarted at a time: a count or a percentage. Default 1.

  -batch-wait=<duration|ask>
    Wait between batches, after each batch is running again. "ask" pauses
    after each batch until you confirm. Default 0.

  -group=<name>
    Only restart the allocations of this group.

  -task=<name>
    Only restart this task, in every allocation that runs it.

  -all-tasks
    Also re-run completed lifecycle tasks (not supported: refused).

  -reschedule
    Replace the allocations (new allocations, possibly on other nodes)
    instead of restarting their tasks in place.

  -on-error=<ask|fail>
    When an allocation does not come back: "ask" pauses and asks whether
    to continue, "fail" ends the restart. Default ask.

  -yes
    Do not ask for confirmation before starting.

  -verbose
    Show full IDs.
`) + "\n" + globalHelp
}

func (c *JobRestartCommand) Run(args []string) int {
	var batchSize, batchWait, group, task, onError string
	var allTasks, reschedule, yes, verbose bool
	fs := c.FlagSet("job restart")
	fs.StringVar(&batchSize, "batch-size", "1", "")
	fs.StringVar(&batchWait, "batch-wait", "0s", "")
	fs.StringVar(&group, "group", "", "")
	fs.StringVar(&task, "task", "", "")
	fs.StringVar(&onError, "on-error", structs.JobRestartOnErrorAsk, "")
	fs.BoolVar(&allTasks, "all-tasks", false, "")
	fs.BoolVar(&reschedule, "reschedule", false, "")
	fs.BoolVar(&yes, "yes", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <job>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	body := map[string]any{"BatchSize": batchSize, "BatchWait": batchWait, "Group": group, "Task": task,
		"AllTasks": allTasks, "Reschedule": reschedule, "OnError": onError}
	if batchWait != "ask" {
		if d, err := time.ParseDuration(batchWait); err != nil || d < 0 {
			c.Ui.Error(fmt.Sprintf("Invalid -batch-wait %q: a duration such as 10s, or ask", batchWait))
			return 1
		}
	}
	if _, _, err := structs.ParseBatchSize(batchSize); err != nil {
		c.Ui.Error("Invalid -batch-size: " + err.Error())
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
	if !yes {
		answer, err := c.Ui.Ask(fmt.Sprintf("Are you sure you want to restart job %q? [y/N]", id))
		if err != nil || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y") {
			c.Ui.Output("Cancelling job restart")
			return 0
		}
	}
	path := "/v1/job/" + url.PathEscape(id) + "/restart"
	var r structs.JobRestart
	if _, err := client.Raw().Write(path, body, &r, jobWrite(job)); err != nil {
		c.Ui.Error(fmt.Sprintf("Error starting the restart: %s", err))
		return 1
	}
	what := "Restarting"
	if reschedule {
		what = "Rescheduling"
	}
	c.Ui.Output(fmt.Sprintf("==> %s: %s %d allocations in batches of %d (restart %s)",
		formatTime(time.Now()), what, len(r.Allocs), r.BatchSize, shortID(r.ID, verbose)))
	return c.follow(client, job, path, &r, verbose)
}

// follow prints the restart's progress until it ends, answering its pauses.
func (c *JobRestartCommand) follow(client *api.Client, job *api.Job, path string, r *structs.JobRestart, verbose bool) int {
	seen := map[string]string{}
	lastDesc := ""
	index := r.ModifyIndex
	for {
		for _, a := range r.Allocs {
			if seen[a.AllocID] == a.Status {
				continue
			}
			seen[a.AllocID] = a.Status
			id := shortID(a.AllocID, verbose)
			switch a.Status {
			case structs.JobRestartAllocRestarting:
				if r.JobSpec.Reschedule {
					c.Ui.Output(fmt.Sprintf("    %s: Rescheduling allocation %q for group %q", formatTime(time.Now()), id, a.TaskGroup))
				} else {
					c.Ui.Output(fmt.Sprintf("    %s: Restarting %s in allocation %q for group %q", formatTime(time.Now()),
						strings.Join(a.Tasks, ", "), id, a.TaskGroup))
				}
			case structs.JobRestartAllocDone:
				msg := fmt.Sprintf("    %s: Allocation %q is running again", formatTime(time.Now()), id)
				if a.ReplacementID != "" {
					msg = fmt.Sprintf("    %s: Allocation %q replaced by %q", formatTime(time.Now()), id, shortID(a.ReplacementID, verbose))
				}
				c.Ui.Output(msg)
			case structs.JobRestartAllocFailed:
				c.Ui.Error(fmt.Sprintf("    %s: Allocation %q failed to restart: %s", formatTime(time.Now()), id, a.Error))
			case structs.JobRestartAllocSkipped:
				c.Ui.Output(fmt.Sprintf("    %s: Allocation %q skipped: %s", formatTime(time.Now()), id, a.Error))
			}
		}
		if r.StatusDescription != lastDesc && r.Status == structs.JobRestartStatusRunning && strings.HasPrefix(r.StatusDescription, "batch") {
			c.Ui.Output(fmt.Sprintf("==> %s: %s", formatTime(time.Now()), r.StatusDescription))
		}
		lastDesc = r.StatusDescription
		switch r.Status {
		case structs.JobRestartStatusComplete:
			c.Ui.Output(fmt.Sprintf("==> %s: Finished job restart: %s", formatTime(time.Now()), r.StatusDescription))
			return 0
		case structs.JobRestartStatusFailed:
			c.Ui.Error(fmt.Sprintf("==> %s: Job restart failed: %s", formatTime(time.Now()), r.StatusDescription))
			return 1
		case structs.JobRestartStatusCanceled:
			c.Ui.Error(fmt.Sprintf("==> %s: Job restart canceled: %s", formatTime(time.Now()), r.StatusDescription))
			return 1
		case structs.JobRestartStatusPaused:
			answer, err := c.Ui.Ask(fmt.Sprintf("==> %s: %s. Continue? [y/N]", formatTime(time.Now()), r.StatusDescription))
			target := path
			if err == nil && strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y") {
				target += "/resume"
				_, err = client.Raw().Write(target, nil, r, jobWrite(job))
			} else {
				_, err = client.Raw().Delete(target, r, jobWrite(job))
			}
			if err != nil {
				c.Ui.Error(fmt.Sprintf("Error answering the paused restart: %s", err))
				return 1
			}
			index = r.ModifyIndex
			continue
		}
		var next structs.JobRestart
		qm, err := client.Raw().Query(path, &next, &api.QueryOptions{Namespace: deref(job.Namespace), WaitIndex: index, WaitTime: 30 * time.Second})
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error reading the restart's progress: %s", err))
			return 1
		}
		index = qm.LastIndex
		*r = next
	}
}
