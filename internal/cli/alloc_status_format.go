package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// allocStatusView is what `alloc status` shows besides the allocation
// itself: the running tasks' usage (nil when not asked for or not
// available) and the follow-up evaluation that reschedules a failed
// allocation (nil when there is none).
type allocStatusView struct {
	usage    *api.AllocResourceUsage
	followup *api.Evaluation
}

// formatAllocStatus is the text of `alloc status`: the allocation's fields,
// then (unless short) its addresses, and per task its state, resources
// (used against asked, when the node reported usage) and recent events;
// -short lists the tasks in one table instead, and -verbose adds the
// scheduler's placement metrics.
func formatAllocStatus(a *api.Allocation, v allocStatusView, short, verbose bool) string {
	var b strings.Builder
	b.WriteString(formatKV(allocStatusRows(a, v, verbose)))
	if short {
		b.WriteString("\n\nTasks\n")
		b.WriteString(formatList(allocTaskSummaryRows(a)))
		return b.String()
	}
	if addrs := allocAddressesBlock(a); addrs != "" {
		b.WriteString("\n\n")
		b.WriteString(addrs)
	}
	group := allocGroup(a)
	for _, name := range allocTaskOrder(a) {
		st := a.TaskStates[name]
		lifecycle := ""
		if l := taskLifecycle(group, name); l != "main" {
			lifecycle = " (" + l + ")"
		}
		fmt.Fprintf(&b, "\n\nTask %q%s is %q\n", name, lifecycle, st.State)
		if rows := taskResourceRows(a, group, name, st, v.usage); rows != nil {
			b.WriteString("Task Resources:\n")
			b.WriteString(formatList(rows))
			b.WriteString("\n\n")
		}
		started, finished := "N/A", "N/A"
		if !st.StartedAt.IsZero() {
			started = formatTime(st.StartedAt)
		}
		if !st.FinishedAt.IsZero() {
			finished = formatTime(st.FinishedAt)
		}
		lastRestart := "N/A"
		if !st.LastRestart.IsZero() {
			lastRestart = formatTime(st.LastRestart)
		}
		b.WriteString("Task Events:\n")
		b.WriteString(formatKV([]string{
			"Started At|" + started,
			"Finished At|" + finished,
			fmt.Sprintf("Total Restarts|%d", st.Restarts),
			"Last Restart|" + lastRestart,
		}))
		b.WriteString("\n\nRecent Events:\n")
		events := append([]*api.TaskEvent(nil), st.Events...)
		sort.SliceStable(events, func(i, j int) bool { return events[i].Time > events[j].Time })
		if !verbose && len(events) > 10 {
			events = events[:10]
		}
		erows := []string{"Time|Type|Description"}
		for _, e := range events {
			erows = append(erows, fmt.Sprintf("%s|%s|%s", formatUnixNano(e.Time), e.Type, eventDescription(e)))
		}
		b.WriteString(formatList(erows))
	}
	if verbose {
		if pm := placementMetricsBlock(a.Metrics); pm != "" {
			b.WriteString("\n\n")
			b.WriteString(pm)
		}
	}
	return b.String()
}

// allocStatusRows are the allocation's own fields, Nomad's names and order.
func allocStatusRows(a *api.Allocation, v allocStatusView, verbose bool) []string {
	var version uint64
	if a.Job != nil {
		version = deref(a.Job.Version)
	}
	rows := []string{
		"ID|" + shortID(a.ID, verbose),
		"Eval ID|" + shortID(a.EvalID, verbose),
		"Name|" + a.Name,
		"Node ID|" + shortID(a.NodeID, verbose),
		"Node Name|" + a.NodeName,
		"Job ID|" + a.JobID,
		fmt.Sprintf("Job Version|%d", version),
		"Client Status|" + a.ClientStatus,
		"Client Description|" + orNone(a.ClientDescription),
		"Desired Status|" + a.DesiredStatus,
		"Desired Description|" + orNone(a.DesiredDescription),
		"Created|" + timeColumn(a.CreateTime, verbose),
		"Modified|" + timeColumn(a.ModifyTime, verbose),
	}
	if a.DeploymentID != "" {
		health := "unset"
		if ds := a.DeploymentStatus; ds != nil && ds.Healthy != nil {
			health = "unhealthy"
			if *ds.Healthy {
				health = "healthy"
			}
		}
		rows = append(rows, "Deployment ID|"+shortID(a.DeploymentID, verbose), "Deployment Health|"+health)
		if ds := a.DeploymentStatus; ds != nil && ds.Canary {
			rows = append(rows, "Canary|true")
		}
	}
	if a.NextAllocation != "" {
		rows = append(rows, "Replacement Alloc ID|"+shortID(a.NextAllocation, verbose))
	}
	if a.PreviousAllocation != "" && verbose {
		rows = append(rows, "Previous Alloc ID|"+a.PreviousAllocation)
	}
	if n := rescheduleCount(a); n > 0 {
		attempts := fmt.Sprintf("%d", n)
		if p := allocGroupReschedule(a); p != nil && !deref(p.Unlimited) {
			attempts = fmt.Sprintf("%d/%d", n, deref(p.Attempts))
		}
		rows = append(rows, "Reschedule Attempts|"+attempts)
	}
	if a.FollowupEvalID != "" && v.followup != nil && !v.followup.WaitUntil.IsZero() {
		rows = append(rows, "Reschedule Eligibility|"+prettyTimeDiff(v.followup.WaitUntil))
	}
	if a.PreemptedByAllocation != "" {
		rows = append(rows, "Preempted By|"+shortID(a.PreemptedByAllocation, verbose))
	}
	if len(a.PreemptedAllocations) > 0 {
		ids := make([]string, len(a.PreemptedAllocations))
		for i, id := range a.PreemptedAllocations {
			ids[i] = shortID(id, verbose)
		}
		rows = append(rows, "Preempted Allocations|"+strings.Join(ids, ", "))
	}
	return rows
}

// rescheduleCount is how many times the allocation's line was rescheduled.
func rescheduleCount(a *api.Allocation) int {
	if a.RescheduleTracker == nil {
		return 0
	}
	return len(a.RescheduleTracker.Events)
}

func allocGroup(a *api.Allocation) *api.TaskGroup {
	if a.Job == nil {
		return nil
	}
	for _, tg := range a.Job.TaskGroups {
		if tg != nil && deref(tg.Name) == a.TaskGroup {
			return tg
		}
	}
	return nil
}

func allocGroupReschedule(a *api.Allocation) *api.ReschedulePolicy {
	if tg := allocGroup(a); tg != nil {
		return tg.ReschedulePolicy
	}
	return nil
}

func groupTask(group *api.TaskGroup, name string) *api.Task {
	if group == nil {
		return nil
	}
	for _, t := range group.Tasks {
		if t != nil && t.Name == name {
			return t
		}
	}
	return nil
}

// taskLifecycle names a task's place in the group's lifecycle: "main", or
// its hook with "sidecar" for a sidecar ("prestart sidecar").
func taskLifecycle(group *api.TaskGroup, name string) string {
	t := groupTask(group, name)
	if t == nil || t.Lifecycle == nil || t.Lifecycle.Hook == "" {
		return "main"
	}
	if t.Lifecycle.Sidecar {
		return t.Lifecycle.Hook + " sidecar"
	}
	return t.Lifecycle.Hook
}

// allocTaskOrder lists the tasks in the order they run: prestart, main,
// poststart, poststop, by name within each.
func allocTaskOrder(a *api.Allocation) []string {
	group := allocGroup(a)
	rank := func(name string) int {
		switch strings.Fields(taskLifecycle(group, name))[0] {
		case api.TaskLifecycleHookPrestart:
			return 0
		case "main":
			return 1
		case api.TaskLifecycleHookPoststart:
			return 2
		default:
			return 3
		}
	}
	names := sortedKeys(a.TaskStates)
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	return names
}

// allocTaskSummaryRows is -short's task table: each task's state and its
// newest event.
func allocTaskSummaryRows(a *api.Allocation) []string {
	group := allocGroup(a)
	rows := []string{"Name|Lifecycle|State|Last Event|Time"}
	for _, name := range allocTaskOrder(a) {
		st := a.TaskStates[name]
		lastType, lastTime := "", ""
		var newest *api.TaskEvent
		for _, e := range st.Events {
			if e != nil && (newest == nil || e.Time >= newest.Time) {
				newest = e
			}
		}
		if newest != nil {
			lastType, lastTime = newest.Type, formatUnixNano(newest.Time)
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%s", name, taskLifecycle(group, name), st.State, lastType, lastTime))
	}
	return rows
}

// allocAddressesBlock lists the group network's ports: label, whether the
// scheduler picked it, and the host address (with the port it maps to in
// the task's namespace or container). Empty without group ports.
func allocAddressesBlock(a *api.Allocation) string {
	if a.AllocatedResources == nil {
		return ""
	}
	shared := a.AllocatedResources.Shared
	var nw *api.NetworkResource
	if len(shared.Networks) > 0 {
		nw = shared.Networks[0]
	}
	hostIP := map[string]string{}
	for _, pm := range shared.Ports {
		hostIP[pm.Label] = pm.HostIP
	}
	rows := []string{"Label|Dynamic|Address"}
	add := func(p api.Port, dynamic string) {
		ip := hostIP[p.Label]
		if ip == "" && nw != nil {
			ip = nw.IP
		}
		addr := fmt.Sprintf("%s:%d", ip, p.Value)
		if p.To > 0 && p.To != p.Value {
			addr += fmt.Sprintf(" -> %d", p.To)
		}
		rows = append(rows, fmt.Sprintf("*%s|%s|%s", p.Label, dynamic, addr))
	}
	if nw != nil {
		for _, p := range nw.ReservedPorts {
			add(p, "no")
		}
		for _, p := range nw.DynamicPorts {
			add(p, "yes")
		}
	}
	if len(rows) == 1 {
		return ""
	}
	title := "Allocation Addresses:"
	if nw != nil && nw.Mode != "" && nw.Mode != "host" {
		title = fmt.Sprintf("Allocation Addresses (mode = %q):", nw.Mode)
	}
	return title + "\n" + formatList(rows)
}

// taskResourceRows is a task's "Task Resources" table: CPU and memory used
// against what it was given when the node reported usage for it, else
// what it was given; the group's disk; task-level port addresses. Nil when
// nothing is known of the task's resources.
func taskResourceRows(a *api.Allocation, group *api.TaskGroup, name string, st *api.TaskState, usage *api.AllocResourceUsage) []string {
	var cpu, mem, memMax int64
	var addrs []string
	if a.AllocatedResources != nil {
		if tr := a.AllocatedResources.Tasks[name]; tr != nil {
			cpu, mem, memMax = tr.Cpu.CpuShares, tr.Memory.MemoryMB, tr.Memory.MemoryMaxMB
			for _, nw := range tr.Networks {
				for _, p := range append(append([]api.Port(nil), nw.ReservedPorts...), nw.DynamicPorts...) {
					addrs = append(addrs, fmt.Sprintf("%s: %s:%d", p.Label, nw.IP, p.Value))
				}
			}
		}
	} else if t := groupTask(group, name); t != nil && t.Resources != nil {
		cpu, mem = int64(deref(t.Resources.CPU)), int64(deref(t.Resources.MemoryMB))
	}
	if cpu == 0 && mem == 0 {
		return nil // nothing known of what the task was given
	}
	cpuCol, memCol := fmt.Sprintf("%d MHz", cpu), fmt.Sprintf("%d MiB", mem)
	if memMax > mem {
		memCol += fmt.Sprintf(" (max %d MiB)", memMax)
	}
	if usage != nil && st != nil && st.State == "running" {
		if tu := usage.Tasks[name]; tu != nil && tu.ResourceUsage != nil {
			ru := tu.ResourceUsage
			if ru.CpuStats != nil {
				cpuCol = fmt.Sprintf("%.0f/%s", ru.CpuStats.TotalTicks, cpuCol)
			}
			if ms := ru.MemoryStats; ms != nil {
				used := ms.RSS
				if used == 0 {
					used = ms.Usage
				}
				memCol = humanBytes(int64(used)) + "/" + memCol
			}
		}
	}
	disk := "N/A"
	if a.AllocatedResources != nil && a.AllocatedResources.Shared.DiskMB > 0 {
		disk = fmt.Sprintf("%d MiB", a.AllocatedResources.Shared.DiskMB)
	} else if group != nil && group.EphemeralDisk != nil && group.EphemeralDisk.SizeMB != nil {
		disk = fmt.Sprintf("%d MiB", *group.EphemeralDisk.SizeMB)
	}
	sort.Strings(addrs)
	return []string{"CPU|Memory|Disk|Addresses", fmt.Sprintf("%s|%s|%s|%s", cpuCol, memCol, disk, strings.Join(addrs, ", "))}
}

// placementMetricsBlock is -verbose's "Placement Metrics": what filtered
// or exhausted nodes, then the scores of the nodes the scheduler ranked
// (best first), one column per scorer.
func placementMetricsBlock(m *api.AllocationMetric) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("Placement Metrics")
	for _, l := range formatAllocMetric(m) {
		b.WriteString("\n  * " + l)
	}
	if len(m.ScoreMetaData) > 0 {
		scorerSet := map[string]bool{}
		for _, s := range m.ScoreMetaData {
			for k := range s.Scores {
				scorerSet[k] = true
			}
		}
		scorers := sortedKeys(scorerSet)
		rows := []string{"Node|" + strings.Join(scorers, "|") + "|final score"}
		metas := append([]*api.NodeScoreMeta(nil), m.ScoreMetaData...)
		sort.SliceStable(metas, func(i, j int) bool { return metas[i].NormScore > metas[j].NormScore })
		for _, s := range metas {
			cols := []string{s.NodeID}
			for _, k := range scorers {
				cols = append(cols, fmt.Sprintf("%.3g", s.Scores[k]))
			}
			cols = append(cols, fmt.Sprintf("%.3g", s.NormScore))
			rows = append(rows, strings.Join(cols, "|"))
		}
		b.WriteString("\n")
		b.WriteString(formatList(rows))
	}
	return b.String()
}
