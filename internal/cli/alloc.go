package cli

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// resolveAlloc finds an allocation by ID or unique prefix.
func resolveAlloc(client *api.Client, id string) (*api.Allocation, error) {
	if len(id) == 1 {
		return nil, fmt.Errorf("Identifier must contain at least two characters.")
	}
	stubs, _, err := client.Allocations().PrefixList(id)
	if err != nil {
		return nil, fmt.Errorf("Error querying allocation: %w", err)
	}
	switch len(stubs) {
	case 0:
		return nil, fmt.Errorf("No allocation(s) with prefix or id %q found", id)
	case 1:
	default:
		return nil, fmt.Errorf("Prefix matched multiple allocations\n\n%s", formatAllocList(stubs, true))
	}
	alloc, _, err := client.Allocations().Info(stubs[0].ID, nil)
	if err != nil {
		return nil, fmt.Errorf("Error querying allocation: %w", err)
	}
	return alloc, nil
}

// resolveAllocArg resolves a command's first argument: an allocation ID
// or prefix, or with -job a job ID, of which a random running allocation
// is taken (as Nomad's alloc logs, fs and exec do).
func resolveAllocArg(client *api.Client, arg string, job bool) (*api.Allocation, error) {
	if !job {
		return resolveAlloc(client, arg)
	}
	stubs, _, err := client.Jobs().Allocations(arg, false, nil)
	if err != nil {
		return nil, fmt.Errorf("Error querying allocations of job %q: %w", arg, err)
	}
	var running []*api.AllocationListStub
	for _, a := range stubs {
		if a.ClientStatus == api.AllocClientStatusRunning {
			running = append(running, a)
		}
	}
	if len(running) == 0 {
		return nil, fmt.Errorf("Job %q has no running allocations", arg)
	}
	alloc, _, err := client.Allocations().Info(running[rand.IntN(len(running))].ID, nil)
	if err != nil {
		return nil, fmt.Errorf("Error querying allocation: %w", err)
	}
	return alloc, nil
}

// AllocStatusCommand is `alloc status`.
type AllocStatusCommand struct{ Meta }

func (c *AllocStatusCommand) Synopsis() string {
	return "Display allocation status information and metadata"
}
func (c *AllocStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` alloc status [options] <allocation>

  Shows an allocation, the state of each task and its recent events.

Alloc Status Options:

  -short     Show the tasks in one table (state and newest event) instead
             of each task's resources and events.
  -stats     Show each running task's CPU and memory use (asked of the
             allocation's node, through the servers when needed).
  -verbose   Full IDs, absolute times, every event, and the scheduler's
             placement metrics.
  -json      Output the allocation as JSON.
  -t <tmpl>  Format and display the allocation using a Go template.
`) + "\n" + globalHelp
}

func (c *AllocStatusCommand) Run(args []string) int {
	var short, verbose, stats bool
	var out outputFormat
	fs := c.FlagSet("alloc status")
	fs.BoolVar(&short, "short", false, "")
	fs.BoolVar(&stats, "stats", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	out.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <allocation>"))
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
	alloc, err := resolveAlloc(client, fs.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, alloc)
	}
	var view allocStatusView
	if alloc.FollowupEvalID != "" {
		// Only for "Reschedule Eligibility": a missing evaluation leaves
		// the row out.
		view.followup, _, _ = client.Evaluations().Info(alloc.FollowupEvalID, nil)
	}
	var statsErr error
	if (!short || stats) && alloc.ClientStatus == api.AllocClientStatusRunning {
		view.usage, statsErr = client.Allocations().Stats(alloc, nil)
		if statsErr != nil {
			view.usage = nil
		}
	}
	c.Ui.Output(formatAllocStatus(alloc, view, short, verbose))
	if statsErr != nil && (stats || verbose) {
		c.Ui.Error(fmt.Sprintf("Couldn't retrieve stats: %s", statsErr))
	}
	if stats {
		if view.usage == nil {
			if statsErr == nil {
				c.Ui.Error("Couldn't retrieve stats: the allocation is not running")
			}
			return 1
		}
		c.Ui.Output(formatAllocUsage(alloc, view.usage))
	}
	return 0
}

// formatAllocUsage is -stats: each task's CPU and memory use against what
// it asked for, and the allocation's total.
func formatAllocUsage(a *api.Allocation, u *api.AllocResourceUsage) string {
	asked := map[string]*api.Resources{}
	if a.Job != nil {
		for _, tg := range a.Job.TaskGroups {
			if deref(tg.Name) == a.TaskGroup {
				for _, t := range tg.Tasks {
					asked[t.Name] = t.Resources
				}
			}
		}
	}
	rows := []string{"Task|CPU|Memory"}
	for _, name := range sortedKeys(u.Tasks) {
		tu := u.Tasks[name].ResourceUsage
		if tu == nil || tu.CpuStats == nil || tu.MemoryStats == nil {
			continue
		}
		cpu, mem := fmt.Sprintf("%.0f MHz", tu.CpuStats.TotalTicks), humanBytes(int64(tu.MemoryStats.RSS))
		if r := asked[name]; r != nil {
			cpu += fmt.Sprintf("/%d MHz", deref(r.CPU))
			mem += fmt.Sprintf("/%d MiB", deref(r.MemoryMB))
		}
		rows = append(rows, fmt.Sprintf("%s|%s (%.1f%%)|%s", name, cpu, tu.CpuStats.Percent, mem))
	}
	if t := u.ResourceUsage; t != nil && t.CpuStats != nil && t.MemoryStats != nil {
		rows = append(rows, fmt.Sprintf("(total)|%.0f MHz (%.1f%%)|%s", t.CpuStats.TotalTicks, t.CpuStats.Percent, humanBytes(int64(t.MemoryStats.RSS))))
	}
	return "\nResource Usage:\n" + formatList(rows)
}

func eventDescription(e *api.TaskEvent) string {
	if e.DisplayMessage != "" {
		return e.DisplayMessage
	}
	if e.Message != "" {
		return e.Message
	}
	if e.Details != nil {
		var parts []string
		for _, k := range sortedKeys(e.Details) {
			parts = append(parts, k+"="+e.Details[k])
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

// AllocLogsCommand is `alloc logs`.
type AllocLogsCommand struct{ Meta }

func (c *AllocLogsCommand) Synopsis() string { return "Streams the logs of a task." }
func (c *AllocLogsCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` alloc logs [options] <allocation> [task]

  Prints a task's stdout (or stderr with -stderr). The task may be omitted
  when the allocation has one task.

Logs Options:

  -job          Take the argument as a job ID and use one of its running
                allocations, chosen at random.
  -stderr       Show stderr instead of stdout.
  -f            Follow the log until the task ends; across a restart of its
                agent it reconnects and resumes where it stopped.
  -tail         Show the end of the log.
  -n=<lines>    With -tail, the number of lines (default 10).
  -c=<bytes>    With -tail, the number of bytes.
`) + "\n" + globalHelp
}

func (c *AllocLogsCommand) Run(args []string) int {
	var stderr, follow, tail bool
	var lines, bytes int64 = -1, -1
	var task string
	fs := c.FlagSet("alloc logs")
	fs.BoolVar(&stderr, "stderr", false, "")
	fs.BoolVar(&follow, "f", false, "")
	fs.BoolVar(&tail, "tail", false, "")
	fs.Int64Var(&lines, "n", -1, "")
	fs.Int64Var(&bytes, "c", -1, "")
	fs.StringVar(&task, "task", "", "")
	var byJob bool
	fs.BoolVar(&byJob, "job", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 {
		c.Ui.Error(flagErrorOr(err, "This command takes one or two arguments: <allocation> [task]"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	alloc, err := resolveAllocArg(client, fs.Arg(0), byJob)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	if fs.NArg() == 2 {
		task = fs.Arg(1)
	}
	if task == "" {
		names := allocTaskNames(alloc)
		if len(names) != 1 {
			c.Ui.Error(fmt.Sprintf("Allocation %q is running the following tasks:\n  * %s\n\nPlease specify the task.",
				shortID(alloc.ID, false), strings.Join(names, "\n  * ")))
			return 1
		}
		task = names[0]
	}
	logType := "stdout"
	if stderr {
		logType = "stderr"
	}
	origin, offset := "start", int64(0)
	if tail {
		if lines < 0 && bytes < 0 {
			lines = 10
		}
		origin, offset = "end", bytes
		if lines >= 0 {
			offset = max(lines*256, 16*1024)
		}
	}
	cancel := make(chan struct{})
	defer close(cancel)
	var frames <-chan *api.StreamFrame
	var errCh <-chan error
	if follow {
		// Resumed across a restart of the agent (its tasks keep running).
		frames, errCh = newLogFollower(client, alloc, task, logType, func(err error) {
			c.Ui.Error(fmt.Sprintf("Lost the log stream (%s); reconnecting", streamErrText(err)))
		}).follow(origin, offset, cancel)
	} else {
		frames, errCh = client.AllocFS().Logs(alloc, false, task, logType, origin, offset, cancel, nil)
	}
	w := c.writer()
	var pending []byte // with -n, held back until the initial chunk is trimmed
	trim := tail && lines >= 0
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				if trim {
					w.Write(lastLines(pending, lines))
				}
				return 0
			}
			if len(f.Data) == 0 {
				continue
			}
			if trim && !follow {
				pending = append(pending, f.Data...)
				continue
			}
			if trim {
				w.Write(lastLines(f.Data, lines))
				trim = false
				continue
			}
			w.Write(f.Data)
		case err := <-errCh:
			if err != nil {
				c.Ui.Error(fmt.Sprintf("Error reading logs: %s", streamErrText(err)))
				return 1
			}
		}
	}
}

func lastLines(b []byte, n int64) []byte {
	s := strings.TrimSuffix(string(b), "\n")
	parts := strings.Split(s, "\n")
	if int64(len(parts)) > n {
		parts = parts[int64(len(parts))-n:]
	}
	if len(parts) == 0 || (len(parts) == 1 && parts[0] == "") {
		return nil
	}
	return []byte(strings.Join(parts, "\n") + "\n")
}

func allocTaskNames(a *api.Allocation) []string {
	var names []string
	if a.Job != nil {
		for _, tg := range a.Job.TaskGroups {
			if deref(tg.Name) == a.TaskGroup {
				for _, t := range tg.Tasks {
					names = append(names, t.Name)
				}
			}
		}
	}
	if len(names) == 0 {
		names = sortedKeys(a.TaskStates)
	}
	return names
}
