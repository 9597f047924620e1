package cli

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// EvalDeleteCommand is `eval delete`.
type EvalDeleteCommand struct{ Meta }

func (c *EvalDeleteCommand) Synopsis() string { return "Delete evaluations by ID or using a filter" }
func (c *EvalDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` eval delete [options] <evaluation_id>

  Deletes evaluations by ID or by filter expression, while the eval broker
  is paused (operator scheduler set-config -pause-eval-broker=true): the
  way out of a flood of evaluations that should never run. An evaluation a
  live allocation still depends on is refused by ID and skipped by filter.

Eval Delete Options:

  -filter=<expr>  Delete the evaluations matching this filter expression
                  (the language of the API's ?filter=), instead of one ID.
  -yes            Do not ask for confirmation before deleting by filter.
`) + "\n" + globalHelp
}

func (c *EvalDeleteCommand) Run(args []string) int {
	var filter string
	var yes bool
	fs := c.FlagSet("eval delete")
	fs.StringVar(&filter, "filter", "", "")
	fs.BoolVar(&yes, "yes", false, "")
	if err := fs.Parse(args); err != nil {
		c.Ui.Error(err.Error())
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	switch {
	case filter == "" && fs.NArg() != 1:
		c.Ui.Error("This command takes one argument, <evaluation_id>, or the -filter flag")
		c.Ui.Error(commandErrorText(c))
		return 1
	case filter != "" && fs.NArg() != 0:
		c.Ui.Error("Evaluations are deleted either by ID or by -filter, not both")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	var count int
	if filter != "" {
		if !yes {
			n, _, err := client.Evaluations().Count(&api.QueryOptions{Filter: filter})
			if err != nil {
				c.Ui.Error(fmt.Sprintf("Error counting evaluations: %s", err))
				return 1
			}
			answer, err := c.Ui.Ask(fmt.Sprintf("Are you sure you want to delete %d evaluations? [y/N]", n.Count))
			if err != nil || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y") {
				c.Ui.Output("Cancelling eval deletion")
				return 0
			}
		}
		resp, _, err := client.Evaluations().DeleteOpts(&api.EvalDeleteRequest{Filter: filter}, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error deleting evaluations: %s", err))
			return 1
		}
		count = resp.Count
	} else {
		if _, err := client.Evaluations().Delete([]string{fs.Arg(0)}, nil); err != nil {
			c.Ui.Error(fmt.Sprintf("Error deleting evaluation: %s", err))
			return 1
		}
		count = 1
	}
	noun := "evaluations"
	if count == 1 {
		noun = "evaluation"
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted %d %s", count, noun))
	return 0
}
