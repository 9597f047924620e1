package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

// deploymentMonitor follows a deployment until it ends, as `job run` does
// after its evaluation and `deployment status -monitor` does. On a terminal
// it redraws one block in place (the deployment and its per-group table,
// refreshed every wait); otherwise it appends a line for each change. Both
// end with the terminal status and the final block.
type deploymentMonitor struct {
	ui      mcli.Ui
	out     io.Writer // the raw stdout the redraws are written to
	client  *api.Client
	verbose bool
	// tty selects redrawing in place; size (columns and rows, 0 unknown)
	// tells how many screen lines a long line takes, so a redraw erases all
	// of it, and whether the block fits on the screen at all: one taller
	// than the screen cannot be erased, so the monitor appends lines instead.
	tty  bool
	size func() (cols, rows int)
	// wait is how long one blocking query waits for a change, so also the
	// refresh period of the timestamp on a terminal.
	wait time.Duration
	// rollbackWait bounds how long a failed deployment that reverts waits
	// for the rollback's deployment to appear.
	rollbackWait time.Duration
}

// deploymentMonitor builds the monitor for this command's stdout.
func (m *Meta) deploymentMonitor(client *api.Client, verbose bool) *deploymentMonitor {
	out := m.writer()
	tty, _, _ := terminalSize(out)
	return &deploymentMonitor{
		ui: m.Ui, out: out, client: client, verbose: verbose, tty: tty,
		size:         func() (int, int) { _, c, r := terminalSize(out); return c, r },
		wait:         2 * time.Second,
		rollbackWait: 30 * time.Second,
	}
}

// follow monitors deployment id to its end: 0 when it succeeded, 1 when it
// failed or was cancelled (also when a rollback it triggered succeeded: the
// version asked for is not running) or on an API error.
func (m *deploymentMonitor) follow(id string) int {
	d, code := m.followOne(id)
	if d == nil || d.Status != api.DeploymentStatusFailed || !rollingBack(d) {
		return code
	}
	next := m.rollbackOf(d)
	if next == nil {
		return 1
	}
	m.ui.Output("")
	m.ui.Info(fmt.Sprintf("==> %s: Monitoring the rollback: deployment %q of job version %d", ts(), shortID(next.ID, m.verbose), next.JobVersion))
	m.followOne(next.ID)
	return 1
}

// rollingBack reports whether a failed deployment's job is being reverted
// to its last stable version (the watcher says so in the description).
func rollingBack(d *api.Deployment) bool {
	return strings.Contains(d.StatusDescription, "rolling back to job version")
}

// rollbackOf waits (bounded) for the job's deployment that follows d.
func (m *deploymentMonitor) rollbackOf(d *api.Deployment) *api.Deployment {
	deadline := time.Now().Add(m.rollbackWait)
	var index uint64
	for time.Now().Before(deadline) {
		start := time.Now()
		latest, meta, err := m.client.Jobs().LatestDeployment(d.JobID, &api.QueryOptions{Namespace: d.Namespace, WaitIndex: index, WaitTime: m.wait})
		if err != nil {
			m.ui.Error(fmt.Sprintf("Error looking up the rollback deployment of job %q: %s", d.JobID, err))
			return nil
		}
		if latest != nil && latest.ID != d.ID && latest.CreateIndex > d.CreateIndex {
			return latest
		}
		index = m.nextIndex(index, meta, start)
	}
	m.ui.Output(fmt.Sprintf("    %s: No rollback deployment of job %q appeared within %s", ts(), d.JobID, m.rollbackWait))
	return nil
}

// nextIndex advances a blocking query's index; when the agent answered at
// once without a newer index (it does not block), it pauses briefly so the
// loop does not spin.
func (m *deploymentMonitor) nextIndex(index uint64, meta *api.QueryMeta, start time.Time) uint64 {
	if meta != nil && meta.LastIndex > index {
		return meta.LastIndex
	}
	if time.Since(start) < 50*time.Millisecond {
		time.Sleep(200 * time.Millisecond)
	}
	return index
}

// followOne monitors one deployment to its end and returns it with the exit
// code.
func (m *deploymentMonitor) followOne(id string) (*api.Deployment, int) {
	var index uint64
	var last *api.Deployment
	drawn := 0
	for {
		start := time.Now()
		d, meta, err := m.client.Deployments().Info(id, &api.QueryOptions{WaitIndex: index, WaitTime: m.wait})
		if err != nil {
			m.ui.Error(fmt.Sprintf("Error fetching deployment %q: %s", shortID(id, m.verbose), err))
			return nil, 1
		}
		var allocs []*api.AllocationListStub
		if m.verbose && (m.tty || deploymentTerminal(d.Status)) {
			allocs, _, _ = m.client.Deployments().Allocations(d.ID, nil)
		}
		if deploymentTerminal(d.Status) {
			return d, m.finish(d, allocs, drawn)
		}
		if m.tty {
			head := fmt.Sprintf("  Deployment %q in progress...", shortID(d.ID, m.verbose))
			text := head + "\n\n" + indent(ts()+"\n"+m.block(d, allocs), "    ")
			if cols, rows := m.screen(); rows > 0 && screenLines(text, cols) >= rows {
				m.tty = false // too tall to redraw: lines from now on
				m.ui.Output("")
				m.printChanges(nil, d)
			} else {
				drawn = m.redraw(drawn, text)
			}
		} else {
			m.printChanges(last, d)
		}
		last = d
		index = m.nextIndex(index, meta, start)
	}
}

// finish prints the terminal status and the final block.
func (m *deploymentMonitor) finish(d *api.Deployment, allocs []*api.AllocationListStub, drawn int) int {
	id := shortID(d.ID, m.verbose)
	code := 1
	word := d.Status
	if d.Status == api.DeploymentStatusSuccessful {
		code = 0
	}
	body := indent(m.block(d, allocs), "    ")
	if m.tty {
		glyph := "!"
		if code == 0 {
			glyph = "✓"
		}
		m.redraw(drawn, fmt.Sprintf("  %s Deployment %q %s\n\n", glyph, id, word)+indent(ts()+"\n", "    ")+body)
		return code
	}
	m.ui.Info(fmt.Sprintf("==> %s: Deployment %q %s", ts(), id, word))
	m.ui.Output("\n" + body)
	return code
}

// block is the deployment's status block, with its allocations if verbose.
func (m *deploymentMonitor) block(d *api.Deployment, allocs []*api.AllocationListStub) string {
	s := formatDeployment(d, m.verbose)
	if m.verbose {
		s += "\n\nAllocations\n" + formatDeploymentAllocs(allocs, m.verbose)
	}
	return s
}

// printChanges appends a line for the deployment's status and for each
// group whose counters moved since last (everything the first time).
func (m *deploymentMonitor) printChanges(last, d *api.Deployment) {
	id := shortID(d.ID, m.verbose)
	if last == nil || last.Status != d.Status || last.StatusDescription != d.StatusDescription {
		line := fmt.Sprintf("    %s: Deployment %q %s", ts(), id, d.Status)
		if d.StatusDescription != "" {
			line += ": " + d.StatusDescription
		}
		m.ui.Output(line)
	}
	for _, name := range sortedKeys(d.TaskGroups) {
		now := groupProgress(name, d.TaskGroups[name])
		if last != nil {
			if prev, ok := last.TaskGroups[name]; ok && groupProgress(name, prev) == now {
				continue
			}
		}
		m.ui.Output(fmt.Sprintf("    %s: %s", ts(), now))
	}
}

// redraw erases the prev screen lines last drawn and writes text in their
// place; it returns how many screen lines text takes.
func (m *deploymentMonitor) redraw(prev int, text string) int {
	var b strings.Builder
	if prev > 0 {
		// Back to the first column of the first line drawn, then clear to
		// the end of the screen.
		fmt.Fprintf(&b, "\r\x1b[%dA\x1b[J", prev)
	}
	b.WriteString(text)
	b.WriteByte('\n')
	io.WriteString(m.out, b.String())
	cols, _ := m.screen()
	return screenLines(text, cols)
}

// screen is the terminal's size, 0 when unknown.
func (m *deploymentMonitor) screen() (cols, rows int) {
	if m.size == nil {
		return 0, 0
	}
	return m.size()
}

// screenLines counts the lines text takes on a screen width columns wide
// (0: unknown, every line is one).
func screenLines(text string, width int) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		cols := utf8.RuneCountInString(l)
		if width <= 0 || cols <= width {
			n++
			continue
		}
		n += (cols + width - 1) / width
	}
	return n
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
