package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobHistoryCommand is `job history`.
type JobHistoryCommand struct{ Meta }

func (c *JobHistoryCommand) Synopsis() string { return "Display all tracked versions of a job" }
func (c *JobHistoryCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job history [options] <job>

  Shows the tracked versions of a job, newest first. With -p each version
  also shows what changed since the version before it.

History Options:

  -p             Display the difference between each version and its predecessor.
  -version=<n>   Display only version n.
  -json          Output the versions as JSON.
  -t <template>  Format and display the versions using a Go template.
`) + "\n" + globalHelp
}

func (c *JobHistoryCommand) Run(args []string) int {
	var diff bool
	var out outputFormat
	var version int64 = -1
	fs := c.FlagSet("job history")
	fs.BoolVar(&diff, "p", false, "")
	out.register(fs)
	fs.Int64Var(&version, "version", -1, "")
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
	versions, diffs, _, err := client.Jobs().Versions(deref(job.ID), diff, jobQuery(job))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving job versions: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, versions)
	}
	var blocks []string
	for i, v := range versions {
		if version >= 0 && int64(deref(v.Version)) != version {
			continue
		}
		var d *api.JobDiff
		if diff && i < len(diffs) {
			d = diffs[i]
		}
		blocks = append(blocks, formatJobVersion(v, d, diff))
	}
	if len(blocks) == 0 {
		c.Ui.Error(fmt.Sprintf("Job %q has no version %d", deref(job.ID), version))
		return 1
	}
	c.Ui.Output(strings.Join(blocks, "\n\n"))
	return 0
}

// formatJobVersion prints one version as a key/value block; with showDiff
// the diff from its predecessor follows (the oldest version has none).
func formatJobVersion(v *api.Job, d *api.JobDiff, showDiff bool) string {
	rows := []string{
		fmt.Sprintf("Version|%d", deref(v.Version)),
		fmt.Sprintf("Stable|%t", deref(v.Stable)),
		fmt.Sprintf("Submit Date|%s", formatUnixNano(deref(v.SubmitTime))),
	}
	if t := v.VersionTag; t != nil {
		rows = append(rows, "Tag Name|"+t.Name)
		if t.Description != "" {
			rows = append(rows, "Tag Description|"+t.Description)
		}
	}
	if showDiff && d != nil && d.Type != "None" {
		rows = append(rows, "Diff|")
		return formatKV(rows) + "\n" + formatJobDiff(d, nil, false)
	}
	return formatKV(rows)
}

// JobRevertCommand is `job revert`.
type JobRevertCommand struct{ Meta }

func (c *JobRevertCommand) Synopsis() string { return "Revert to a prior version of the job" }
func (c *JobRevertCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job revert [options] <job> <version|tag>

  Registers an earlier version of a job (by number or by version tag) as its
  newest version and monitors the resulting evaluation, then its deployment.

Revert Options:

  -detach    Print the evaluation ID and exit.
  -verbose   Show full IDs.
`) + "\n" + globalHelp
}

func (c *JobRevertCommand) Run(args []string) int {
	var detach, verbose bool
	fs := c.FlagSet("job revert")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		c.Ui.Error(flagErrorOr(err, "This command takes two arguments: <job> <version|tag>"))
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
	version, err := strconv.ParseUint(fs.Arg(1), 10, 64)
	if err != nil {
		v, _, terr := client.Jobs().VersionByTag(id, fs.Arg(1), jobQuery(job))
		if terr != nil {
			c.Ui.Error(fmt.Sprintf("Error: %q is neither a version number nor a version tag of job %q", fs.Arg(1), id))
			return 1
		}
		version = deref(v.Version)
	}
	resp, _, err := client.Jobs().Revert(id, version, nil, jobWrite(job), "", "")
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving job version: %s", err))
		return 1
	}
	if resp.EvalID == "" {
		c.Ui.Output(fmt.Sprintf("Job %q reverted to version %d", id, version))
		return 0
	}
	if detach {
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return 0
	}
	mon := c.evalMonitor(client, verbose, true)
	mon.jobModifyIndex = resp.JobModifyIndex
	return mon.monitor(resp.EvalID)
}

// JobScaleCommand is `job scale`.
type JobScaleCommand struct{ Meta }

func (c *JobScaleCommand) Synopsis() string { return "Change the count of a job's task group" }
func (c *JobScaleCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job scale [options] <job> [<group>] <count>

  Sets the count of a task group, registering a new job version, and
  monitors the resulting evaluation, then its deployment. The group may be
  left out when the job has only one.

Scale Options:

  -detach    Print the evaluation ID and exit.
  -verbose   Show full IDs.
`) + "\n" + globalHelp
}

func (c *JobScaleCommand) Run(args []string) int {
	var detach, verbose bool
	fs := c.FlagSet("job scale")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 || fs.NArg() > 3 {
		c.Ui.Error(flagErrorOr(err, "This command takes two or three arguments: <job> [<group>] <count>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	countArg := fs.Arg(fs.NArg() - 1)
	count, err := strconv.Atoi(countArg)
	if err != nil || count < 0 {
		c.Ui.Error(fmt.Sprintf("Invalid count %q: must be a non-negative integer", countArg))
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
	group := ""
	if fs.NArg() == 3 {
		group = fs.Arg(1)
	} else {
		if len(job.TaskGroups) != 1 {
			c.Ui.Error(fmt.Sprintf("Job %q has %d task groups: name the group to scale", deref(job.ID), len(job.TaskGroups)))
			return 1
		}
		group = deref(job.TaskGroups[0].Name)
	}
	msg := fmt.Sprintf("submitted using the %s CLI", BinaryName)
	resp, _, err := client.Jobs().Scale(deref(job.ID), group, &count, msg, false, nil, jobWrite(job))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error submitting scaling request: %s", err))
		return 1
	}
	if resp.Warnings != "" {
		c.Ui.Warn("Job Warnings:\n" + resp.Warnings + "\n")
	}
	if resp.EvalID == "" {
		c.Ui.Output(fmt.Sprintf("Group %q of job %q scaled to %d", group, deref(job.ID), count))
		return 0
	}
	if detach {
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return 0
	}
	mon := c.evalMonitor(client, verbose, true)
	mon.jobModifyIndex = resp.JobModifyIndex
	return mon.monitor(resp.EvalID)
}
