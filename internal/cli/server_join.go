package cli

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// ServerJoinCommand is `server join <address>...`.
type ServerJoinCommand struct{ Meta }

func (c *ServerJoinCommand) Synopsis() string { return "Join server nodes together" }
func (c *ServerJoinCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` server join [options] <addr> [<addr>...]

  Asks the server agent to join the gossip pool of the servers at the given
  serf addresses (host or host:port; port 4648 when missing). Once joined,
  the cluster's leader adds the server to Raft.
`) + "\n" + globalHelp
}

func (c *ServerJoinCommand) Run(args []string) int {
	fs := c.FlagSet("server join")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes at least one argument: <addr> [<addr>...]"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	n, err := client.Agent().Join(fs.Args()...)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error joining: %s", err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Joined %d servers successfully", n))
	return 0
}

// ServerForceLeaveCommand is `server force-leave [-prune] <node>`.
type ServerForceLeaveCommand struct{ Meta }

func (c *ServerForceLeaveCommand) Synopsis() string {
	return "Force a server into the 'left' state"
}
func (c *ServerForceLeaveCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` server force-leave [options] <node>

  Marks a failed server as having left the gossip pool: the cluster's
  leader removes it from Raft and the others stop trying to reach it. The
  node is the member name shown by 'server members' (name.region).

Server Force-Leave Options:

  -prune     Also forget the server at once: it disappears from
             'server members' instead of showing as left.
`) + "\n" + globalHelp
}

func (c *ServerForceLeaveCommand) Run(args []string) int {
	var prune bool
	fs := c.FlagSet("server force-leave")
	fs.BoolVar(&prune, "prune", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		c.Ui.Error(flagErrorOr(err, "This command takes one argument: <node>"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	if err := client.Agent().ForceLeaveWithOptions(fs.Arg(0), api.ForceLeaveOpts{Prune: prune}); err != nil {
		c.Ui.Error(fmt.Sprintf("Error force-leaving server %s: %s", fs.Arg(0), err))
		return 1
	}
	return 0
}
