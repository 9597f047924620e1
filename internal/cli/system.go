package cli

import (
	"fmt"
	"strings"
)

// SystemGCCommand is `system gc`.
type SystemGCCommand struct{ Meta }

func (c *SystemGCCommand) Synopsis() string { return "Run the system garbage collection process" }
func (c *SystemGCCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` system gc [options]

  Garbage collects, now and whatever their age, every terminal evaluation
  and allocation, dead job, terminal deployment and down node that may go
  (the server's gc thresholds are ignored). Nothing still running is
  touched. Returns once the collection is committed.
`) + "\n" + globalHelp
}

func (c *SystemGCCommand) Run(args []string) int {
	fs := c.FlagSet("system gc")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	if err := client.System().GarbageCollect(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error running system garbage-collection: %s", err))
		return 1
	}
	return 0
}

// SystemReconcileSummariesCommand is `system reconcile summaries`.
type SystemReconcileSummariesCommand struct{ Meta }

func (c *SystemReconcileSummariesCommand) Synopsis() string {
	return "Reconciles the summaries of all registered jobs"
}
func (c *SystemReconcileSummariesCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` system reconcile summaries [options]

  Recounts every job's summary (allocations per task group and client
  status, children of periodic and parameterized jobs) from the
  allocations in the servers' state.
`) + "\n" + globalHelp
}

func (c *SystemReconcileSummariesCommand) Run(args []string) int {
	fs := c.FlagSet("system reconcile summaries")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	if err := client.System().ReconcileSummaries(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error running system summary reconciliation: %s", err))
		return 1
	}
	c.Ui.Output("Successfully reconciled job summaries")
	return 0
}
