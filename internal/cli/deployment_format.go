package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// How deployments are printed: the list, the status block and its per-group
// table, shared by `deployment list|status`, `job deployments`, `job status`
// and the deployment monitor of `job run`.

// deploymentTerminal reports whether a deployment has ended: it will not
// change again (a paused one still may).
func deploymentTerminal(status string) bool {
	switch status {
	case api.DeploymentStatusSuccessful, api.DeploymentStatusFailed, api.DeploymentStatusCancelled:
		return true
	}
	return false
}

// formatDeploymentList is the table of `deployment list` and `job
// deployments`, newest first.
func formatDeploymentList(ds []*api.Deployment, verbose bool) string {
	if len(ds) == 0 {
		return "No deployments found"
	}
	sorted := append([]*api.Deployment(nil), ds...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreateIndex > sorted[j].CreateIndex })
	rows := []string{"ID|Job ID|Job Version|Status|Description"}
	for _, d := range sorted {
		rows = append(rows, fmt.Sprintf("%s|%s|%d|%s|%s", shortID(d.ID, verbose), d.JobID, d.JobVersion, d.Status, d.StatusDescription))
	}
	return formatList(rows)
}

// formatDeployment is the status block of `deployment status`: the
// deployment's own fields, then the per-group table under "Deployed".
func formatDeployment(d *api.Deployment, verbose bool) string {
	rows := []string{
		"ID|" + shortID(d.ID, verbose),
		"Job ID|" + d.JobID,
		fmt.Sprintf("Job Version|%d", d.JobVersion),
		"Status|" + d.Status,
		"Description|" + d.StatusDescription,
	}
	return withDeployedGroups(formatKV(rows), d)
}

// formatLatestDeployment is the shorter block `job status` prints under
// "Latest Deployment": the job is already named above it.
func formatLatestDeployment(d *api.Deployment, verbose bool) string {
	rows := []string{
		"ID|" + shortID(d.ID, verbose),
		"Status|" + d.Status,
		"Description|" + d.StatusDescription,
	}
	return withDeployedGroups(formatKV(rows), d)
}

func withDeployedGroups(head string, d *api.Deployment) string {
	if len(d.TaskGroups) == 0 {
		return head
	}
	return head + "\n\nDeployed\n" + formatDeploymentGroups(d)
}

// formatDeploymentGroups is the per-group table. Columns that would say
// nothing are left out, as Nomad does: Auto Revert only when some group
// reverts automatically, Promoted and Canaries only when some group has
// canaries, Progress Deadline only when some group has one.
func formatDeploymentGroups(d *api.Deployment) string {
	var autoRevert, canaries, deadline bool
	for _, s := range d.TaskGroups {
		autoRevert = autoRevert || s.AutoRevert
		canaries = canaries || s.DesiredCanaries > 0
		deadline = deadline || s.ProgressDeadline != 0
	}
	header := []string{"Task Group"}
	if autoRevert {
		header = append(header, "Auto Revert")
	}
	if canaries {
		header = append(header, "Promoted")
	}
	header = append(header, "Desired")
	if canaries {
		header = append(header, "Canaries")
	}
	header = append(header, "Placed", "Healthy", "Unhealthy")
	if deadline {
		header = append(header, "Progress Deadline")
	}
	rows := []string{strings.Join(header, "|")}
	for _, name := range sortedKeys(d.TaskGroups) {
		s := d.TaskGroups[name]
		cols := []string{name}
		if autoRevert {
			cols = append(cols, fmt.Sprint(s.AutoRevert))
		}
		if canaries {
			promoted := "N/A"
			if s.DesiredCanaries > 0 {
				promoted = fmt.Sprint(s.Promoted)
			}
			cols = append(cols, promoted)
		}
		cols = append(cols, fmt.Sprint(s.DesiredTotal))
		if canaries {
			cols = append(cols, fmt.Sprint(s.DesiredCanaries))
		}
		cols = append(cols, fmt.Sprint(s.PlacedAllocs), fmt.Sprint(s.HealthyAllocs), fmt.Sprint(s.UnhealthyAllocs))
		if deadline {
			by := "N/A"
			if !s.RequireProgressBy.IsZero() {
				by = formatTime(s.RequireProgressBy)
			}
			cols = append(cols, by)
		}
		rows = append(rows, strings.Join(cols, "|"))
	}
	return formatList(rows)
}

// formatDeploymentAllocs lists a deployment's allocations with their health,
// for -verbose.
func formatDeploymentAllocs(allocs []*api.AllocationListStub, verbose bool) string {
	if len(allocs) == 0 {
		return "No allocations placed"
	}
	sorted := append([]*api.AllocationListStub(nil), allocs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreateIndex > sorted[j].CreateIndex })
	rows := []string{"ID|Node ID|Task Group|Version|Desired|Status|Healthy|Created|Modified"}
	for _, a := range sorted {
		healthy := "unset"
		if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			healthy = fmt.Sprint(*a.DeploymentStatus.Healthy)
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s|%s|%s",
			shortID(a.ID, verbose), shortID(a.NodeID, verbose), a.TaskGroup, a.JobVersion,
			a.DesiredStatus, a.ClientStatus, healthy, timeColumn(a.CreateTime, verbose), timeColumn(a.ModifyTime, verbose)))
	}
	return formatList(rows)
}

// groupProgress is one group's counters as a plain line of the monitor's
// non-terminal output.
func groupProgress(name string, s *api.DeploymentState) string {
	line := fmt.Sprintf("Task Group %q: Desired %d, Placed %d, Healthy %d, Unhealthy %d", name, s.DesiredTotal, s.PlacedAllocs, s.HealthyAllocs, s.UnhealthyAllocs)
	if s.DesiredCanaries > 0 {
		line += fmt.Sprintf(", Canaries %d, Promoted %v", s.DesiredCanaries, s.Promoted)
	}
	return line
}
