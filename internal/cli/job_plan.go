package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobPlanCommand is `job plan`: a dry run with a diff. Exit codes: 0 no
// allocations would be created or destroyed, 1 some would, 255 error.
type JobPlanCommand struct{ Meta }

func (c *JobPlanCommand) Synopsis() string { return "Dry-run a job update to determine its effects" }
func (c *JobPlanCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` job plan [options] <path>

  Asks the scheduler what submitting the jobspec would change, without
  changing anything. Exit code 0: no allocations created or destroyed; 1:
  allocations created or destroyed; 255: error.

Plan Options:

  -diff       Show the diff (default true).
  -verbose    Show unchanged fields and full IDs (with -explain: every
              ranked node, not only the top 20).
  -explain    After the plan, show per task group which filters removed
              how many nodes and how each ranked node scored (Drover only).
  -json, -var 'k=v', -var-file=<path>
`) + "\n" + globalHelp
}

func (c *JobPlanCommand) Run(args []string) int {
	diff, verbose := true, false
	var g jobGetter
	fs := c.FlagSet("job plan")
	fs.BoolVar(&diff, "diff", true, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	var override, explain bool
	fs.BoolVar(&override, "policy-override", false, "")
	fs.BoolVar(&explain, "explain", false, "")
	g.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <path>"))
		c.Ui.Error(commandErrorText(c))
		return 255
	}
	path := fs.Arg(0)
	job, err := g.get(path)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error getting job struct: %s", err))
		return 255
	}
	client, ok := c.apiClient()
	if !ok {
		return 255
	}
	if c.region != "" {
		job.Region = &c.region
	}
	opts := &api.PlanOptions{Diff: diff, PolicyOverride: override}
	var resp *api.JobPlanResponse
	var why *planExplain
	if explain {
		resp, why, err = explainPlan(client, job, opts, verbose)
	} else {
		resp, _, err = client.Jobs().PlanOpts(job, opts, nil)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error during plan: %s", err))
		return 255
	}
	resp.Warnings = jobWarnings(g.warnings, resp.Warnings)
	c.Ui.Output(formatPlan(resp, path, verbose))
	if explain {
		c.Ui.Output("\n" + formatExplain(why, verbose))
	}
	return planExitCode(resp)
}

func planExitCode(resp *api.JobPlanResponse) int {
	if resp.Annotations == nil {
		return 0
	}
	for _, u := range resp.Annotations.DesiredTGUpdates {
		if u.Place+u.Stop+u.Migrate+u.DestructiveUpdate+u.Canary > 0 {
			return 1
		}
	}
	return 0
}

func formatPlan(resp *api.JobPlanResponse, path string, verbose bool) string {
	var b strings.Builder
	if resp.Diff != nil {
		b.WriteString(formatJobDiff(resp.Diff, resp.Annotations, verbose))
		b.WriteString("\n\n")
	}
	b.WriteString("Scheduler dry-run:\n")
	if len(resp.FailedTGAllocs) == 0 {
		b.WriteString("- All tasks successfully allocated.\n")
	} else {
		b.WriteString("- WARNING: Failed to place all allocations.\n")
		b.WriteString(formatFailedTGs(resp.FailedTGAllocs, "  ", "      "))
		b.WriteString("\n")
	}
	if !resp.NextPeriodicLaunch.IsZero() {
		fmt.Fprintf(&b, "- If submitted now, next periodic launch would be at %s (%s).\n",
			formatTime(resp.NextPeriodicLaunch), prettyTimeDiff(resp.NextPeriodicLaunch))
	}
	if resp.Warnings != "" {
		fmt.Fprintf(&b, "\nJob Warnings:\n%s\n", resp.Warnings)
	}
	fmt.Fprintf(&b, "\nJob Modify Index: %d\n", resp.JobModifyIndex)
	b.WriteString("To submit the job with version verification run:\n\n")
	fmt.Fprintf(&b, "%s job run -check-index %d %s\n\n", BinaryName, resp.JobModifyIndex, path)
	b.WriteString("With -check-index the job is registered only if its modify index on the\n")
	b.WriteString("server still equals the one above; a different index means the job was\n")
	b.WriteString("changed since this plan, and the plan may no longer hold.")
	return b.String()
}

func marker(typ string) string {
	switch typ {
	case "Added":
		return "+"
	case "Deleted":
		return "-"
	case "Edited":
		return "+/-"
	}
	return ""
}

// prefixed prints "<marker> text" with the marker column aligned.
func prefixed(indent int, typ, text string) string {
	m := marker(typ)
	if m == "" {
		return strings.Repeat(" ", indent) + text
	}
	return strings.Repeat(" ", indent) + m + " " + text
}

func formatJobDiff(d *api.JobDiff, ann *api.PlanAnnotations, verbose bool) string {
	var lines []string
	lines = append(lines, prefixed(0, d.Type, fmt.Sprintf("Job: %q", d.ID)))
	lines = append(lines, formatFieldsAndObjects(d.Fields, d.Objects, 2, verbose)...)
	for _, tg := range d.TaskGroups {
		if tg.Type == "None" && !verbose && len(tg.Updates) == 0 {
			continue
		}
		var desired *api.DesiredUpdates
		if ann != nil {
			desired = ann.DesiredTGUpdates[tg.Name]
		}
		lines = append(lines, prefixed(0, tg.Type, fmt.Sprintf("Task Group: %q%s", tg.Name, formatUpdates(tg.Updates, desired))))
		lines = append(lines, formatFieldsAndObjects(tg.Fields, tg.Objects, 2, verbose)...)
		for _, t := range tg.Tasks {
			if t.Type == "None" && !verbose {
				continue
			}
			ann := ""
			if len(t.Annotations) > 0 {
				ann = " (" + strings.Join(t.Annotations, ", ") + ")"
			}
			lines = append(lines, prefixed(2, t.Type, fmt.Sprintf("Task: %q%s", t.Name, ann)))
			lines = append(lines, formatFieldsAndObjects(t.Fields, t.Objects, 4, verbose)...)
		}
	}
	return strings.Join(lines, "\n")
}

var updateOrder = []string{"create", "destroy", "migrate", "in-place update", "create/destroy update", "canary", "ignore"}

func formatUpdates(updates map[string]uint64, d *api.DesiredUpdates) string {
	if len(updates) == 0 && d != nil {
		updates = map[string]uint64{
			"create": d.Place, "destroy": d.Stop, "migrate": d.Migrate, "in-place update": d.InPlaceUpdate,
			"create/destroy update": d.DestructiveUpdate, "canary": d.Canary, "ignore": d.Ignore,
		}
	}
	var parts []string
	seen := map[string]bool{}
	for _, k := range updateOrder {
		seen[k] = true
		if n := updates[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	for _, k := range sortedKeys(updates) {
		if !seen[k] && updates[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", updates[k], k))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func formatFieldsAndObjects(fields []*api.FieldDiff, objects []*api.ObjectDiff, indent int, verbose bool) []string {
	var lines []string
	var shown []*api.FieldDiff
	for _, f := range fields {
		if f.Type != "None" || verbose {
			shown = append(shown, f)
		}
	}
	sort.SliceStable(shown, func(i, j int) bool { return shown[i].Name < shown[j].Name })
	width := 0
	for _, f := range shown {
		width = max(width, len(f.Name))
	}
	for _, f := range shown {
		var val string
		switch f.Type {
		case "Added":
			val = fmt.Sprintf("%q", f.New)
		case "Deleted":
			val = fmt.Sprintf("%q", f.Old)
		case "Edited":
			val = fmt.Sprintf("%q => %q", f.Old, f.New)
		default:
			val = fmt.Sprintf("%q", f.New)
		}
		if len(f.Annotations) > 0 {
			val += " (" + strings.Join(f.Annotations, ", ") + ")"
		}
		lines = append(lines, prefixed(indent, f.Type, fmt.Sprintf("%-*s %s", width+1, f.Name+":", val)))
	}
	for _, o := range objects {
		if o.Type == "None" && !verbose {
			continue
		}
		lines = append(lines, prefixed(indent, o.Type, o.Name+" {"))
		lines = append(lines, formatFieldsAndObjects(o.Fields, o.Objects, indent+2, verbose)...)
		lines = append(lines, strings.Repeat(" ", indent)+"}")
	}
	return lines
}
