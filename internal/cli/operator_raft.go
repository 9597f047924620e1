package cli

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// OperatorRaftListPeersCommand is `operator raft list-peers`.
type OperatorRaftListPeersCommand struct{ Meta }

func (c *OperatorRaftListPeersCommand) Synopsis() string {
	return "Display the current Raft peer configuration"
}
func (c *OperatorRaftListPeersCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator raft list-peers [options]

  Lists the servers of the Raft configuration, as the leader sees it: each
  server's name, ID and address, whether it leads and whether it votes.

List Peers Options:

  -stale     Answer from the server asked rather than the leader: with no
             leader (an outage) this is the only way to see the
             configuration the servers hold.

  -json      Output the configuration as JSON.
`) + "\n" + globalHelp
}

func (c *OperatorRaftListPeersCommand) Run(args []string) int {
	fs := c.FlagSet("operator raft list-peers")
	out := outputFormat{noTemplate: true}
	out.register(fs)
	var stale bool
	fs.BoolVar(&stale, "stale", false, "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	conf, err := client.Operator().RaftGetConfiguration(&api.QueryOptions{AllowStale: stale})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error getting peers: %s", err))
		return 1
	}
	if out.enabled() {
		return out.emit(&c.Meta, conf)
	}
	rows := []string{"Node|ID|Address|State|Voter|RaftProtocol"}
	for _, s := range conf.Servers {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%v|%s", s.Node, s.ID, s.Address, state, s.Voter, s.RaftProtocol))
	}
	c.Ui.Output(formatList(rows))
	return 0
}

// OperatorRaftRemovePeerCommand is `operator raft remove-peer`.
type OperatorRaftRemovePeerCommand struct{ Meta }

func (c *OperatorRaftRemovePeerCommand) Synopsis() string {
	return "Remove a server from the Raft configuration"
}
func (c *OperatorRaftRemovePeerCommand) Help() string {
	return strings.TrimSpace(`
Usage: `+BinaryName+` operator raft remove-peer [options]

  Removes a server from the Raft configuration, for a server that failed and
  will not come back. The last voter cannot be removed.

Remove Peer Options:

  -peer-id=<id>          The Raft ID of the server to remove.
  -peer-address=<addr>   The Raft address (IP:port) of the server to remove.
`) + "\n" + globalHelp
}

func (c *OperatorRaftRemovePeerCommand) Run(args []string) int {
	var id, addr string
	fs := c.FlagSet("operator raft remove-peer")
	fs.StringVar(&id, "peer-id", "", "")
	fs.StringVar(&addr, "peer-address", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		c.Ui.Error(flagErrorOr(err, "This command takes no arguments"))
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	if (id == "") == (addr == "") {
		c.Ui.Error("Exactly one of -peer-id and -peer-address must be given")
		c.Ui.Error(commandErrorText(c))
		return 1
	}
	client, ok := c.apiClient()
	if !ok {
		return 1
	}
	var err error
	if id != "" {
		err = client.Operator().RaftRemovePeerByID(id, nil)
	} else {
		err = client.Operator().RaftRemovePeerByAddress(addr, nil)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error removing peer: %s", err))
		return 1
	}
	if id != "" {
		c.Ui.Output(fmt.Sprintf("Removed peer with ID %q", id))
	} else {
		c.Ui.Output(fmt.Sprintf("Removed peer with address %q", addr))
	}
	return 0
}
