package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// EvalListCommand is `eval list`.
type EvalListCommand struct{ Meta }

func (c *EvalListCommand) Synopsis() string { return "List the evaluations of the cluster" }
func (c *EvalListCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` eval list [options]

  Lists evaluations, newest first.

Eval List Options:

  -job=<id>        Only evaluations of this job.
  -status=<s>      Only evaluations with this status (pending, blocked, complete, failed, canceled).
  -filter=<expr>   Only evaluations matching this filter expression (the
                   language of the API's ?filter=, evaluated on the server,
                   e.g. 'TriggeredBy == "node-update"'); combines with
                   -job and -status.
  -verbose         Show full IDs.
  -json            Output the evaluations as JSON.
  -t <template>    Format and display the evaluations using a Go template.
`) + "\n" + globalHelp
}

func (c *EvalListCommand) Run(args []string) int {
	var job, status, filter string
	var verbose bool
	var out outputFormat
	fs := c.FlagSet("eval list")
	fs.StringVar(&job, "job", "", "")
	fs.StringVar(&status, "status", "", "")
	fs.StringVar(&filter, "filter", "", "")
	fs.BoolVar(&verbose, "verbose", false, "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
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
	// -job and -status travel as terms of the one filter expression (the
	// server refuses its job/status parameters beside ?filter=).
	var filters []string
	if filter != "" {
		if job != "" || status != "" {
			filter = "(" + filter + ")"
		}
		filters = append(filters, filter)
	}
	if job != "" {
		filters = append(filters, fmt.Sprintf("JobID == %q", job))
	}
	if status != "" {
		filters = append(filters, fmt.Sprintf("Status == %q", status))
	}
	evals, _, err := client.Evaluations().List(&api.QueryOptions{Filter: strings.Join(filters, " and ")})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying evaluations: %s", err))
		return 1
	}
	// Filter locally as well: an agent that ignores the filter still answers right.
	matched := evals[:0]
	for _, e := range evals {
		if (job == "" || e.JobID == job) && (status == "" || e.Status == status) {
			matched = append(matched, e)
		}
	}
	sort.SliceStable(matched, func(i, j int) bool { return matched[i].CreateIndex > matched[j].CreateIndex })
	if out.enabled() {
		return out.emit(&c.Meta, matched)
	}
	if len(matched) == 0 {
		c.Ui.Output("No evals found")
		return 0
	}
	c.Ui.Output(formatEvalList(matched, verbose))
	return 0
}

func formatEvalList(evals []*api.Evaluation, verbose bool) string {
	rows := []string{"ID|Priority|Triggered By|Job ID|Namespace|Node ID|Status|Placement Failures"}
	for _, e := range evals {
		rows = append(rows, fmt.Sprintf("%s|%d|%s|%s|%s|%s|%s|%t", shortID(e.ID, verbose), e.Priority, e.TriggeredBy,
			e.JobID, e.Namespace, orNone(shortID(e.NodeID, verbose)), e.Status, len(e.FailedTGAllocs) > 0))
	}
	return formatList(rows)
}

// EvalStatusCommand is `eval status`.
type EvalStatusCommand struct{ Meta }

func (c *EvalStatusCommand) Synopsis() string {
	return "Display evaluation status and placement failure reasons"
}
func (c *EvalStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` eval status [options] <evaluation>

  Shows an evaluation (by ID or unique ID prefix) and, when it could not
  place every allocation, why.

Eval Status Options:

  -verbose   Show full IDs.
  -json      Output the evaluation as JSON.
  -t <tmpl>  Format and display the evaluation using a Go template.
`) + "\n" + globalHelp
}

func (c *EvalStatusCommand) Run(args []string) int {
	var verbose bool
	var out outputFormat
	fs := c.FlagSet("eval status")
	fs.BoolVar(&verbose, "verbose", false, "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <evaluation>"))
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
	id := fs.Arg(0)
	eval, _, err := client.Evaluations().Info(id, nil)
	if err != nil {
		evals, _, lerr := client.Evaluations().PrefixList(id)
		switch {
		case lerr != nil || len(evals) == 0:
			c.Ui.Error(fmt.Sprintf("No evaluation(s) with prefix or id %q found", id))
			return 1
		case len(evals) > 1:
			c.Ui.Error(fmt.Sprintf("Prefix matched multiple evaluations\n\n%s", formatEvalList(evals, verbose)))
			return 1
		}
		if eval, _, err = client.Evaluations().Info(evals[0].ID, nil); err != nil {
			c.Ui.Error(fmt.Sprintf("Error querying evaluation: %s", err))
			return 1
		}
	}
	if out.enabled() {
		return out.emit(&c.Meta, eval)
	}
	c.Ui.Output(formatEvalStatus(eval, verbose))
	return 0
}

func formatEvalStatus(e *api.Evaluation, verbose bool) string {
	rows := []string{
		"ID|" + shortID(e.ID, verbose),
		"Create Time|" + timeColumn(e.CreateTime, verbose),
		"Modify Time|" + timeColumn(e.ModifyTime, verbose),
		"Status|" + e.Status,
		"Status Description|" + orNone(e.StatusDescription),
		"Type|" + e.Type,
		"TriggeredBy|" + e.TriggeredBy,
		"Job ID|" + e.JobID,
		"Namespace|" + e.Namespace,
	}
	if e.NodeID != "" {
		rows = append(rows, "Node ID|"+shortID(e.NodeID, verbose))
	}
	if e.DeploymentID != "" {
		rows = append(rows, "Deployment ID|"+shortID(e.DeploymentID, verbose))
	}
	rows = append(rows, fmt.Sprintf("Priority|%d", e.Priority), fmt.Sprintf("Placement Failures|%t", len(e.FailedTGAllocs) > 0))
	if e.PreviousEval != "" {
		rows = append(rows, "Previous Eval|"+shortID(e.PreviousEval, verbose))
	}
	if e.NextEval != "" {
		rows = append(rows, "Next Eval|"+shortID(e.NextEval, verbose))
	}
	if e.BlockedEval != "" {
		rows = append(rows, "Blocked Eval|"+shortID(e.BlockedEval, verbose))
	}
	out := formatKV(rows)
	if len(e.FailedTGAllocs) > 0 {
		out += "\n\n==> Failed Placements\n" + placementFailureBlock(e.FailedTGAllocs)
		if e.BlockedEval != "" {
			out += fmt.Sprintf("\n\nEvaluation %q waiting for additional capacity to place remainder", shortID(e.BlockedEval, verbose))
		}
	}
	return out
}

// AgentInfoCommand is `agent-info`.
type AgentInfoCommand struct{ Meta }

func (c *AgentInfoCommand) Synopsis() string {
	return "Display status information about the local agent"
}
func (c *AgentInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` agent-info [options]

  Shows the local agent's statistics, section by section.

Agent Info Options:

  -json   Output the full /v1/agent/self answer as JSON.
  -t      Format and display the /v1/agent/self answer using a Go template.
`) + "\n" + globalHelp
}

func (c *AgentInfoCommand) Run(args []string) int {
	var out outputFormat
	fs := c.FlagSet("agent-info")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
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
	self, err := client.Agent().Self()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying agent info: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, self)
	}
	var lines []string
	for _, section := range sortedKeys(self.Stats) {
		lines = append(lines, section)
		stats := self.Stats[section]
		width := 0
		for k := range stats {
			width = max(width, len(k))
		}
		for _, k := range sortedKeys(stats) {
			lines = append(lines, fmt.Sprintf("  %-*s = %s", width, k, stats[k]))
		}
	}
	c.Ui.Output(strings.Join(lines, "\n"))
	return 0
}
