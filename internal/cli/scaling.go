package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// The scaling commands: `scaling policy list|info` read the policies the
// server stores from jobs' scaling blocks; `job scaling-events` shows the
// scaling events recorded per group (job scale, autoscalers).

// ScalingPolicyListCommand is `scaling policy list`.
type ScalingPolicyListCommand struct{ Meta }

func (c *ScalingPolicyListCommand) Synopsis() string { return "List scaling policies" }
func (c *ScalingPolicyListCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` scaling policy list [options]

  Lists the scaling policies of the jobs in the namespace ("*" for all).
  A stopped job has no policies listed.

List Options:

  -job <id>     Only the policies of this job.
  -type <type>  Only policies whose type starts with this (horizontal,
                vertical, vertical_cpu, vertical_mem).
`+outputHelp+`
`) + "\n" + globalHelp
}

func (c *ScalingPolicyListCommand) Run(args []string) int {
	var job, typ string
	var out outputFormat
	fs := c.FlagSet("scaling policy list")
	fs.StringVar(&job, "job", "", "")
	fs.StringVar(&typ, "type", "", "")
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
	q := &api.QueryOptions{Params: map[string]string{}}
	if job != "" {
		q.Params["job"] = job
	}
	if typ != "" {
		q.Params["type"] = typ
	}
	policies, _, err := client.Scaling().ListPolicies(q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing scaling policies: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, policies)
	}
	c.Ui.Output(formatScalingPolicies(policies))
	return 0
}

// formatScalingPolicies is Nomad's policy table, sorted by target.
func formatScalingPolicies(policies []*api.ScalingPolicyListStub) string {
	if len(policies) == 0 {
		return "No policies found"
	}
	sorted := append([]*api.ScalingPolicyListStub{}, policies...)
	sort.SliceStable(sorted, func(a, b int) bool {
		ta, tb := formatScalingTarget(sorted[a].Target), formatScalingTarget(sorted[b].Target)
		if ta != tb {
			return ta < tb
		}
		return sorted[a].ID < sorted[b].ID
	})
	rows := []string{"ID|Enabled|Type|Target"}
	for _, p := range sorted {
		rows = append(rows, fmt.Sprintf("%s|%v|%s|%s", p.ID, p.Enabled, p.Type, formatScalingTarget(p.Target)))
	}
	return formatList(rows)
}

// formatScalingTarget prints a target as Key:value pairs, Namespace, Job,
// Group and Task first, any other key after them in name order.
func formatScalingTarget(t map[string]string) string {
	known := []string{"Namespace", "Job", "Group", "Task"}
	var parts []string
	for _, k := range known {
		if v, ok := t[k]; ok {
			parts = append(parts, k+":"+v)
		}
	}
	var rest []string
	for k := range t {
		if !contains(known, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, k+":"+t[k])
	}
	return strings.Join(parts, ",")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ScalingPolicyInfoCommand is `scaling policy info`.
type ScalingPolicyInfoCommand struct{ Meta }

func (c *ScalingPolicyInfoCommand) Synopsis() string { return "Display an individual scaling policy" }
func (c *ScalingPolicyInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` scaling policy info [options] <policy_id>

  Shows one scaling policy: its target, bounds and the policy block the
  autoscaler reads. A unique ID prefix is enough.

Info Options:
`+outputHelp+`
`) + "\n" + globalHelp
}

func (c *ScalingPolicyInfoCommand) Run(args []string) int {
	var out outputFormat
	fs := c.FlagSet("scaling policy info")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <policy_id>"))
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
	policy, err := resolveScalingPolicy(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, policy)
	}
	c.Ui.Output(formatScalingPolicy(policy))
	return 0
}

// resolveScalingPolicy finds a policy by ID, else by unique ID prefix among
// the namespace's policies.
func resolveScalingPolicy(client *api.Client, id string) (*api.ScalingPolicy, error) {
	if id != "" {
		if p, _, err := client.Scaling().GetPolicy(id, nil); err == nil {
			return p, nil
		}
	}
	stubs, _, err := client.Scaling().ListPolicies(nil)
	if err != nil {
		return nil, fmt.Errorf("Error querying scaling policy: %w", err)
	}
	var matches []*api.ScalingPolicyListStub
	for _, s := range stubs {
		if id != "" && strings.HasPrefix(s.ID, id) {
			matches = append(matches, s)
		}
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("No scaling policy with prefix or ID %q found", id)
	case 1:
		p, _, err := client.Scaling().GetPolicy(matches[0].ID, nil)
		if err != nil {
			return nil, fmt.Errorf("Error querying scaling policy: %w", err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("Prefix matched multiple scaling policies\n\n%s", formatScalingPolicies(matches))
}

func formatScalingPolicy(p *api.ScalingPolicy) string {
	bound := func(v *int64) string {
		if v == nil {
			return "<none>"
		}
		return strconv.FormatInt(*v, 10)
	}
	rows := []string{
		"ID|" + p.ID,
		"Enabled|" + strconv.FormatBool(p.Enabled == nil || *p.Enabled),
		"Type|" + p.Type,
		"Target|" + formatScalingTarget(p.Target),
		"Min|" + bound(p.Min),
		"Max|" + bound(p.Max),
	}
	policy := "<none>"
	if len(p.Policy) > 0 {
		b, err := json.MarshalIndent(p.Policy, "", "  ")
		if err != nil {
			policy = fmt.Sprintf("Error formatting policy: %s", err)
		} else {
			policy = string(b)
		}
	}
	return formatKV(rows) + "\n\nPolicy:\n" + policy
}

// JobScalingEventsCommand is `job scaling-events`.
type JobScalingEventsCommand struct{ Meta }

func (c *JobScalingEventsCommand) Synopsis() string {
	return "Display the most recent scaling events of a job"
}
func (c *JobScalingEventsCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job scaling-events [options] <job>

  Shows the scaling events recorded for each task group of a job, newest
  first (the server keeps the last 20 per group): job scale commands and
  what autoscalers report, errors included.

Scaling Events Options:

  -verbose   Also show the error flag, message and evaluation ID.
`) + "\n" + globalHelp
}

func (c *JobScalingEventsCommand) Run(args []string) int {
	var verbose bool
	fs := c.FlagSet("job scaling-events")
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
	status, _, err := client.Jobs().ScaleStatus(deref(job.ID), &api.QueryOptions{Namespace: deref(job.Namespace)})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing scaling events: %s", err))
		return 1
	}
	c.Ui.Output(formatScalingEvents(status, verbose))
	return 0
}

// formatScalingEvents lists each group's events (groups by name, events
// newest first) in Nomad's columns.
func formatScalingEvents(status *api.JobScaleStatusResponse, verbose bool) string {
	groups := make([]string, 0, len(status.TaskGroups))
	for g := range status.TaskGroups {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	rows := []string{"Task Group|Count|PrevCount|Date"}
	if verbose {
		rows = []string{"Task Group|Count|PrevCount|Error|Message|Eval ID|Date"}
	}
	for _, g := range groups {
		for _, e := range status.TaskGroups[g].Events {
			count := ""
			if e.Count != nil {
				count = strconv.FormatInt(*e.Count, 10)
			}
			date := formatTime(time.Unix(0, int64(e.Time)))
			if verbose {
				rows = append(rows, fmt.Sprintf("%s|%s|%d|%v|%s|%s|%s", g, count, e.PreviousCount, e.Error,
					strings.NewReplacer("|", "/", "\n", " ").Replace(e.Message), deref(e.EvalID), date))
			} else {
				rows = append(rows, fmt.Sprintf("%s|%s|%d|%s", g, count, e.PreviousCount, date))
			}
		}
	}
	if len(rows) == 1 {
		return "No events found"
	}
	return formatList(rows)
}
